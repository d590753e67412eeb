build-asan/src/plan/plan.o: src/plan/plan.c src/plan/plan.h \
 src/lora/lora.h src/backend/backend.h src/model/config.h \
 src/common/dtype.h src/plan/gpu_catalog.h src/backend/cuda/cuda_plan.h \
 src/common/error.h src/engine/activations.h src/engine/model.h \
 src/model/weights.h
src/plan/plan.h:
src/lora/lora.h:
src/backend/backend.h:
src/model/config.h:
src/common/dtype.h:
src/plan/gpu_catalog.h:
src/backend/cuda/cuda_plan.h:
src/common/error.h:
src/engine/activations.h:
src/engine/model.h:
src/model/weights.h:
