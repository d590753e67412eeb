build-asan/src/engine/model.o: src/engine/model.c src/engine/model.h \
 src/backend/backend.h src/engine/activations.h src/lora/lora.h \
 src/model/config.h src/common/dtype.h src/model/weights.h \
 src/common/error.h src/common/rng.h src/lora/adapter_io.h
src/engine/model.h:
src/backend/backend.h:
src/engine/activations.h:
src/lora/lora.h:
src/model/config.h:
src/common/dtype.h:
src/model/weights.h:
src/common/error.h:
src/common/rng.h:
src/lora/adapter_io.h:
