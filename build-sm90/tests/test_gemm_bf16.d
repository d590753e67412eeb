build-sm90/tests/test_gemm_bf16.o: tests/test_gemm_bf16.c \
 src/backend/cpu/gemm_bf16.h src/common/dtype.h tests/test.h
src/backend/cpu/gemm_bf16.h:
src/common/dtype.h:
tests/test.h:
