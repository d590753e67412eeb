build/tests/test_cpu_bf16.o: tests/test_cpu_bf16.c src/common/error.h \
 src/engine/model.h src/backend/backend.h src/engine/activations.h \
 src/lora/lora.h src/model/config.h src/common/dtype.h \
 src/model/weights.h src/lora/adapter_io.h tests/test.h
src/common/error.h:
src/engine/model.h:
src/backend/backend.h:
src/engine/activations.h:
src/lora/lora.h:
src/model/config.h:
src/common/dtype.h:
src/model/weights.h:
src/lora/adapter_io.h:
tests/test.h:
