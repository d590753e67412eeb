build-sm90/tests/test_cuda_plan.o: tests/test_cuda_plan.c \
 src/backend/cuda/cuda_plan.h src/lora/lora.h src/backend/backend.h \
 src/model/config.h src/common/dtype.h tests/test.h
src/backend/cuda/cuda_plan.h:
src/lora/lora.h:
src/backend/backend.h:
src/model/config.h:
src/common/dtype.h:
tests/test.h:
