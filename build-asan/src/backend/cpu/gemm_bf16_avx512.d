build-asan/src/backend/cpu/gemm_bf16_avx512.o: \
 src/backend/cpu/gemm_bf16_avx512.c src/backend/cpu/gemm_bf16.h
src/backend/cpu/gemm_bf16.h:
