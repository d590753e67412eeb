build-asan/src/engine/activations.o: src/engine/activations.c \
 src/engine/activations.h src/backend/backend.h src/lora/lora.h \
 src/model/config.h src/common/dtype.h
src/engine/activations.h:
src/backend/backend.h:
src/lora/lora.h:
src/model/config.h:
src/common/dtype.h:
