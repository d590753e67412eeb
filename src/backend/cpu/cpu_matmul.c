/* cpu_matmul.c — the three matmuls of a frozen-base LoRA model: with f32 weights through OpenBLAS
 * sgemm (the reference backend), with bf16 weights through our AVX512-BF16 GEMM (gemm_bf16.h).
 * HF layout: weight (OC, IC) row-major, so forward is inp · weightᵀ. Activations are f32 in both. */
#include <cblas.h>

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/gemm_bf16.h"

/* out = beta·out + bias, so the GEMM that follows can accumulate with beta = 1. */
static void prefill_bias(float *out, const float *bias, float beta, size_t N, int OC) {
    #pragma omp parallel for schedule(static)
    for (size_t n = 0; n < N; n++)
        for (int o = 0; o < OC; o++) out[n * OC + o] = beta * out[n * OC + o] + bias[o];
}

void matmul_forward_cpu(void *out_, const void *inp, const void *weight, const void *bias_, float alpha, float beta,
                        size_t N, int IC, int OC) {
    float *out = out_;
    const float *bias = bias_;
    if (bias) {
        prefill_bias(out, bias, beta, N, OC);
        beta = 1.0f;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)N, OC, IC, alpha, inp, IC, weight, IC, beta, out, OC);
}

void matmul_backward_input_cpu(void *dinp, const void *dout, const void *weight, float alpha, float beta, size_t N,
                               int IC, int OC) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)N, IC, OC, alpha, dout, OC, weight, IC, beta, dinp, IC);
}

void matmul_backward_weight_cpu(float *dweight, const void *dout, const void *inp, float alpha, size_t N, int IC,
                                int OC) {
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, OC, IC, (int)N, alpha, dout, OC, inp, IC, 1.0f, dweight, IC);
}

/* ---- bf16 weights ---- */

void matmul_forward_cpu_bf16(void *out_, const void *inp, const void *weight, const void *bias, float alpha,
                             float beta, size_t N, int IC, int OC) {
    float *out = out_;
    if (bias) {
        prefill_bias(out, bias, beta, N, OC);
        beta = 1.0f;
    }
    fl_gemm_bf16_nt((int)N, OC, IC, alpha, inp, IC, weight, IC, beta, out, OC);
}

void matmul_backward_input_cpu_bf16(void *dinp, const void *dout, const void *weight, float alpha, float beta,
                                    size_t N, int IC, int OC) {
    fl_gemm_bf16_nn((int)N, IC, OC, alpha, dout, OC, weight, IC, beta, dinp, IC);
}
