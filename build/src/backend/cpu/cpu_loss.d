build/src/backend/cpu/cpu_loss.o: src/backend/cpu/cpu_loss.c \
 src/backend/cpu/cpu_ops.h src/backend/cpu/gemm_bf16.h src/common/error.h
src/backend/cpu/cpu_ops.h:
src/backend/cpu/gemm_bf16.h:
src/common/error.h:
