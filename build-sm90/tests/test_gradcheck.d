build-sm90/tests/test_gradcheck.o: tests/test_gradcheck.c \
 src/backend/backend.h src/backend/cpu/cpu_ops.h src/common/rng.h \
 src/engine/model.h src/engine/activations.h src/lora/lora.h \
 src/model/config.h src/common/dtype.h src/model/weights.h tests/test.h
src/backend/backend.h:
src/backend/cpu/cpu_ops.h:
src/common/rng.h:
src/engine/model.h:
src/engine/activations.h:
src/lora/lora.h:
src/model/config.h:
src/common/dtype.h:
src/model/weights.h:
tests/test.h:
