build-asan/src/lora/lora.o: src/lora/lora.c src/lora/lora.h \
 src/backend/backend.h src/model/config.h src/common/dtype.h \
 src/common/error.h src/common/rng.h
src/lora/lora.h:
src/backend/backend.h:
src/model/config.h:
src/common/dtype.h:
src/common/error.h:
src/common/rng.h:
