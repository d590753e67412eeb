build/src/backend/cpu/cpu_matmul.o: src/backend/cpu/cpu_matmul.c \
 src/backend/cpu/cpu_ops.h src/backend/cpu/gemm_bf16.h
src/backend/cpu/cpu_ops.h:
src/backend/cpu/gemm_bf16.h:
