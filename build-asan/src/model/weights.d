build-asan/src/model/weights.o: src/model/weights.c src/model/weights.h \
 src/backend/backend.h src/model/config.h src/common/dtype.h \
 src/common/error.h src/common/rng.h src/io/file_util.h \
 src/io/safetensors.h
src/model/weights.h:
src/backend/backend.h:
src/model/config.h:
src/common/dtype.h:
src/common/error.h:
src/common/rng.h:
src/io/file_util.h:
src/io/safetensors.h:
