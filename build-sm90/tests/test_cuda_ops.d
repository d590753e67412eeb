build-sm90/tests/test_cuda_ops.o: tests/test_cuda_ops.c \
 src/backend/backend.h src/backend/cuda/cuda_info.h src/common/error.h \
 src/common/rng.h src/engine/model.h src/engine/activations.h \
 src/lora/lora.h src/model/config.h src/common/dtype.h \
 src/model/weights.h src/io/safetensors.h src/lora/adapter_io.h \
 tests/test.h
src/backend/backend.h:
src/backend/cuda/cuda_info.h:
src/common/error.h:
src/common/rng.h:
src/engine/model.h:
src/engine/activations.h:
src/lora/lora.h:
src/model/config.h:
src/common/dtype.h:
src/model/weights.h:
src/io/safetensors.h:
src/lora/adapter_io.h:
tests/test.h:
