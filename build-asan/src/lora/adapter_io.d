build-asan/src/lora/adapter_io.o: src/lora/adapter_io.c \
 src/lora/adapter_io.h src/lora/lora.h src/backend/backend.h \
 src/model/config.h src/common/dtype.h src/common/error.h \
 src/io/file_util.h src/io/safetensors.h
src/lora/adapter_io.h:
src/lora/lora.h:
src/backend/backend.h:
src/model/config.h:
src/common/dtype.h:
src/common/error.h:
src/io/file_util.h:
src/io/safetensors.h:
