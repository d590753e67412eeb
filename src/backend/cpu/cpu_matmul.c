/* cpu_matmul.c — the three matmuls of a frozen-base LoRA model, through OpenBLAS sgemm.
 * HF layout: weight (OC, IC) row-major, so forward is inp · weightᵀ. */
#include <cblas.h>

#include "backend/cpu/cpu_ops.h"

void matmul_forward_cpu(void *out_, const void *inp, const void *weight, const void *bias_, float alpha, float beta,
                        size_t N, int IC, int OC) {
    float *out = out_;
    const float *bias = bias_;
    if (bias) {
        /* out = alpha·inp·Wᵀ + bias + beta·out: fold the bias in first so one GEMM pass does the rest. */
        #pragma omp parallel for schedule(static)
        for (size_t n = 0; n < N; n++)
            for (int o = 0; o < OC; o++) out[n * OC + o] = beta * out[n * OC + o] + bias[o];
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
