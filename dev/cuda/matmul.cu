/* matmul.cu — the matrix ceiling: the backend's cuBLASLt bf16 path on a large square product and on
 * every GEMM shape of a Qwen2.5-1.5B / Qwen2.5-7B LoRA step at 4 x 2048 tokens (base projections,
 * the rank-16 LoRA products, the LM-head chunk), in TFLOP/s against the 989 TFLOP/s datasheet peak.
 * The first line is what scripts/device-check quotes as "measured matmul rate". */
#include "lab.h"

int main(void) {
    lab_init();
    double big = fl_cuda_measure_matmul_tflops(8192, 8192, 8192, 20);
    printf("matmul_rate_tflops %.1f (8192^3 bf16, cuBLASLt, median of 20)\n", big);
    struct { const char *name; int m, n, k; } shapes[] = {
        {"1.5b qkv  N x 2048 <- 1536", 8192, 2048, 1536}, {"1.5b o    N x 1536 <- 1536", 8192, 1536, 1536},
        {"1.5b gate N x 8960 <- 1536", 8192, 8960, 1536}, {"1.5b down N x 1536 <- 8960", 8192, 1536, 8960},
        {"7b q      N x 3584 <- 3584", 8192, 3584, 3584}, {"7b gate   N x 18944 <- 3584", 8192, 18944, 3584},
        {"7b down   N x 3584 <- 18944", 8192, 3584, 18944}, {"lora A    N x 16 <- 3584", 8192, 16, 3584},
        {"lora B    N x 3584 <- 16", 8192, 3584, 16}, {"lm head   832 x 152064 <- 3584", 832, 152064, 3584},
    };
    for (auto &sh : shapes)
        printf("%-32s %7.1f TFLOP/s\n", sh.name, fl_cuda_measure_matmul_tflops(sh.m, sh.n, sh.k, 10));
    return 0;
}
