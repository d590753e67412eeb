build-sm90/tests/test_determinism.o: tests/test_determinism.c \
 src/engine/model.h src/backend/backend.h src/engine/activations.h \
 src/lora/lora.h src/model/config.h src/common/dtype.h \
 src/model/weights.h tests/test.h
src/engine/model.h:
src/backend/backend.h:
src/engine/activations.h:
src/lora/lora.h:
src/model/config.h:
src/common/dtype.h:
src/model/weights.h:
tests/test.h:
