/* cpu_matmul.c — the three matmuls of a frozen-base LoRA model: with f32 weights through OpenBLAS
 * sgemm (the reference backend), with bf16 weights through our bf16 GEMM (gemm_bf16.h).
 * HF layout: weight (OC, IC) row-major, so forward is inp · weightᵀ. Activations are f32 in both.
 * Every operand has its own row stride (ld_*), as in BLAS. */
#include <cblas.h>
#include <string.h>

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/gemm_bf16.h"

/* out = beta·out + bias (rows of stride ld), so the GEMM that follows can accumulate with beta = 1.
 * beta == 0 writes without reading out (it may hold NaN). Shared with cpu_matmul_nf4.c. */
void cpu_prefill_bias(float *out, const float *bias, float beta, size_t N, int OC, int ld) {
    #pragma omp parallel for schedule(static)
    for (size_t n = 0; n < N; n++)
        for (int o = 0; o < OC; o++)
            out[n * ld + o] = (beta == 0.0f ? 0.0f : beta * out[n * ld + o]) + bias[o];
}

void matmul_forward_cpu(void *out_, const void *inp, const void *weight, const void *bias_, float alpha, float beta,
                        size_t N, int IC, int OC, int ld_out, int ld_inp, int ld_w) {
    float *out = out_;
    const float *bias = bias_;
    if (bias) {
        cpu_prefill_bias(out, bias, beta, N, OC, ld_out);
        beta = 1.0f;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)N, OC, IC, alpha, inp, ld_inp, weight, ld_w, beta, out,
                ld_out);
}

void matmul_backward_input_cpu(void *dinp, const void *dout, const void *weight, float alpha, float beta, size_t N,
                               int IC, int OC, int ld_dinp, int ld_dout, int ld_w) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)N, IC, OC, alpha, dout, ld_dout, weight, ld_w, beta, dinp,
                ld_dinp);
}

/* ---- LoRA weight gradients: one side is the rank ----------------------------------------------
 * dweight (OC, IC) += alpha · doutᵀ · inp sums N (thousands of tokens) outer products, and one of
 * OC, IC is the LoRA rank (4..64). BLAS kernels block for square-ish shapes and reach ~1/3 of
 * their rate here, so this case has its own kernel: C (P, Q) += alpha · Σ_n X[n, p] · Y[n, q] with P
 * small, vectorized over Q in chunks of two vectors (2 × 16 floats with AVX-512, 2 × 8 with AVX2)
 * with 4 x 2 vector accumulators held across the whole n loop (each Y chunk loaded once per 4
 * rows of C). The other case (small IC) computes Cᵀ the same way and stores it transposed. Same
 * f32 arithmetic, different summation order than sgemm. */
#ifdef __AVX512F__
#define VW 16
#else
#define VW 8
#endif
typedef float vnf __attribute__((vector_size(VW * 4)));
#define CW (2 * VW) /* columns per chunk */

static inline vnf loadv(const float *p) {
    vnf v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* C[p][q] (or C[q][p] when transposed_store) += alpha · Σ_n X[n·ldx + p] · Y[n·ldy + q],
 * p in [0, P), q in [0, Q). */
static void small_rank_tn(float *C, int ldc, int transposed_store, const float *X, int ldx, const float *Y, int ldy,
                          float alpha, size_t N, int P, int Q) {
    int q_chunks = (Q + CW - 1) / CW, p_blocks = (P + 3) / 4;
    #pragma omp parallel for collapse(2) schedule(static)
    for (int qc = 0; qc < q_chunks; qc++)
        for (int pb = 0; pb < p_blocks; pb++) {
            int q0 = qc * CW, p0 = pb * 4, np = P - p0 < 4 ? P - p0 : 4;
            float out[4][CW];
            if (Q - q0 >= CW) {
                vnf acc[4][2] = {{{0}}};
                for (size_t n = 0; n < N; n++) {
                    const float *y = Y + n * (size_t)ldy + q0, *x = X + n * (size_t)ldx + p0;
                    vnf y0 = loadv(y), y1 = loadv(y + VW);
                    for (int k = 0; k < 4; k++) {
                        float xv = k < np ? x[k] : 0.0f;
                        acc[k][0] += xv * y0;
                        acc[k][1] += xv * y1;
                    }
                }
                for (int k = 0; k < np; k++) {
                    memcpy(out[k], &acc[k][0], sizeof(vnf));
                    memcpy(out[k] + VW, &acc[k][1], sizeof(vnf));
                }
            } else { /* ragged last chunk */
                int nq = Q - q0;
                for (int k = 0; k < np; k++)
                    for (int j = 0; j < nq; j++) out[k][j] = 0.0f;
                for (size_t n = 0; n < N; n++) {
                    const float *y = Y + n * (size_t)ldy + q0, *x = X + n * (size_t)ldx + p0;
                    for (int k = 0; k < np; k++)
                        for (int j = 0; j < nq; j++) out[k][j] += x[k] * y[j];
                }
            }
            int nq = Q - q0 < CW ? Q - q0 : CW;
            for (int k = 0; k < np; k++)
                for (int j = 0; j < nq; j++) {
                    float *c = transposed_store ? &C[(size_t)(q0 + j) * ldc + p0 + k] : &C[(size_t)(p0 + k) * ldc + q0 + j];
                    *c += alpha * out[k][j];
                }
        }
}

void matmul_backward_weight_cpu(float *dweight, const void *dout, const void *inp, float alpha, size_t N, int IC,
                                int OC, int ld_dout, int ld_inp) {
    if (OC <= 64 && OC <= IC) /* dlora_a (R, IC) = doutᵀ (R, N) · inp */
        small_rank_tn(dweight, IC, 0, dout, ld_dout, inp, ld_inp, alpha, N, OC, IC);
    else if (IC <= 64) /* dlora_b (OC, R) = doutᵀ · xa: computed as (R, OC) and stored transposed */
        small_rank_tn(dweight, IC, 1, inp, ld_inp, dout, ld_dout, alpha, N, IC, OC);
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
