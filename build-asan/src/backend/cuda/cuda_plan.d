build-asan/src/backend/cuda/cuda_plan.o: src/backend/cuda/cuda_plan.c \
 src/backend/cuda/cuda_plan.h src/lora/lora.h src/backend/backend.h \
 src/model/config.h src/common/dtype.h src/engine/activations.h
src/backend/cuda/cuda_plan.h:
src/lora/lora.h:
src/backend/backend.h:
src/model/config.h:
src/common/dtype.h:
src/engine/activations.h:
