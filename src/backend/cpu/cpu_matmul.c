/* cpu_matmul.c — the three matmuls of a frozen-base LoRA model: with f32 weights through cpu_sgemm
 * (the reference backend: OpenBLAS's sgemm, or oneDNN's f32 matmul where FASTLORA_CPU_GEMM's choice
 * sends a call, gemm_bf16.h), with bf16 weights through our bf16 GEMM (gemm_bf16.h).
 * HF layout: weight (OC, IC) row-major, so forward is inp · weightᵀ. Activations are f32 in both.
 * Every operand has its own row stride (ld_*), as in BLAS. The LoRA weight gradients, where one
 * side is the rank, run on their own kernel (rank_grad.h). */
#include <cblas.h>
#include <limits.h>

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/gemm_bf16.h"
#include "backend/cpu/gemm_onednn.h"
#include "backend/cpu/rank_grad.h"
#include "common/error.h"

/* out = beta·out + bias (rows of stride ld), so the GEMM that follows can accumulate with beta = 1.
 * beta == 0 writes without reading out (it may hold NaN). Shared with cpu_matmul_nf4.c. */
void cpu_prefill_bias(float *out, const float *bias, float beta, size_t N, int OC, int ld) {
    #pragma omp parallel for schedule(static)
    for (size_t n = 0; n < N; n++)
        for (int o = 0; o < OC; o++)
            out[n * ld + o] = (beta == 0.0f ? 0.0f : beta * out[n * ld + o]) + bias[o];
}

void cpu_sgemm(int trans_b, size_t M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
               float beta, float *C, int ldc) {
    if (M <= (size_t)INT_MAX && fl_gemm_f32_takes_onednn((int)M, N, K) &&
        fl_onednn_gemm_f32(trans_b, (int)M, N, K, alpha, A, lda, B, ldb, beta, C, ldc) == 0)
        return;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, (int)M, N, K, alpha, A, lda, B, ldb,
                beta, C, ldc);
}

void matmul_forward_cpu(void *out_, const void *inp, const void *weight, const void *bias_, float alpha, float beta,
                        size_t N, int IC, int OC, int ld_out, int ld_inp, int ld_w) {
    float *out = out_;
    const float *bias = bias_;
    if (bias) {
        cpu_prefill_bias(out, bias, beta, N, OC, ld_out);
        beta = 1.0f;
    }
    cpu_sgemm(1, N, OC, IC, alpha, inp, ld_inp, weight, ld_w, beta, out, ld_out);
}

void matmul_backward_input_cpu(void *dinp, const void *dout, const void *weight, float alpha, float beta, size_t N,
                               int IC, int OC, int ld_dinp, int ld_dout, int ld_w) {
    cpu_sgemm(0, N, IC, OC, alpha, dout, ld_dout, weight, ld_w, beta, dinp, ld_dinp);
}

void matmul_backward_weight_cpu(float *dweight, const void *dout, const void *inp, float alpha, size_t N, int IC,
                                int OC, int ld_dout, int ld_inp) {
    if (OC <= 64 && OC <= IC) /* dlora_a (R, IC) = doutᵀ (R, N) · inp */
        fl_rank_grad_tn(dweight, IC, 0, dout, ld_dout, inp, ld_inp, alpha, N, OC, IC);
    else if (IC <= 64) /* dlora_b (OC, R) = doutᵀ · xa: computed as (R, OC) and stored transposed */
        fl_rank_grad_tn(dweight, IC, 1, inp, ld_inp, dout, ld_dout, alpha, N, IC, OC);
    else
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, OC, IC, (int)N, alpha, dout, ld_dout, inp, ld_inp, 1.0f,
                    dweight, IC);
}

/* ---- bf16 weights ---- */

void matmul_forward_cpu_bf16(void *out_, const void *inp, const void *weight, const void *bias, float alpha,
                             float beta, size_t N, int IC, int OC, int ld_out, int ld_inp, int ld_w) {
    float *out = out_;
    if (bias) {
        cpu_prefill_bias(out, bias, beta, N, OC, ld_out);
        beta = 1.0f;
    }
    fl_gemm_bf16_nt((int)N, OC, IC, alpha, inp, ld_inp, weight, ld_w, beta, out, ld_out);
}

void matmul_backward_input_cpu_bf16(void *dinp, const void *dout, const void *weight, float alpha, float beta,
                                    size_t N, int IC, int OC, int ld_dinp, int ld_dout, int ld_w) {
    fl_gemm_bf16_nn((int)N, IC, OC, alpha, dout, ld_dout, weight, ld_w, beta, dinp, ld_dinp);
}
