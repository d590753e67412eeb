build-asan/src/backend/cpu/gemm_bf16.o: src/backend/cpu/gemm_bf16.c \
 src/backend/cpu/gemm_bf16.h src/common/dtype.h
src/backend/cpu/gemm_bf16.h:
src/common/dtype.h:
