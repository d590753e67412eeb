build-asan/src/io/safetensors.o: src/io/safetensors.c \
 src/io/safetensors.h src/common/dtype.h src/common/error.h \
 src/io/file_util.h
src/io/safetensors.h:
src/common/dtype.h:
src/common/error.h:
src/io/file_util.h:
