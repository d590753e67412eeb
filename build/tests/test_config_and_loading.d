build/tests/test_config_and_loading.o: tests/test_config_and_loading.c \
 src/common/error.h src/engine/model.h src/backend/backend.h \
 src/engine/activations.h src/lora/lora.h src/model/config.h \
 src/common/dtype.h src/model/weights.h src/io/file_util.h \
 src/io/safetensors.h tests/test.h
src/common/error.h:
src/engine/model.h:
src/backend/backend.h:
src/engine/activations.h:
src/lora/lora.h:
src/model/config.h:
src/common/dtype.h:
src/model/weights.h:
src/io/file_util.h:
src/io/safetensors.h:
tests/test.h:
