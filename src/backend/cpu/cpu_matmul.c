/* cpu_matmul.c — the three matmuls of a frozen-base LoRA model: with f32 weights through OpenBLAS
 * sgemm (the reference backend), with bf16 weights through our bf16 GEMM (gemm_bf16.h).
 * HF layout: weight (OC, IC) row-major, so forward is inp · weightᵀ. Activations are f32 in both.
 * Every operand has its own row stride (ld_*), as in BLAS. */
#include <cblas.h>
#ifdef __AVX__
#include <immintrin.h>
#endif
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/gemm_bf16.h"
#include "common/error.h"

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
 * OC, IC is the LoRA rank (4..64). BLAS kernels block for square-ish shapes and reach a fraction of
 * their rate here, so this case has its own kernel: C (P, Q) += alpha · Σ_n X[n, p] · Y[n, q] with P
 * the rank side (small) and Q the model side. The other case (small IC) computes Cᵀ the same way
 * and stores it transposed.
 *
 * Memory decides much of its speed (2·P flops per element of Y): walking a column chunk of Y down
 * its rows touches a new page per row, which the prefetchers do not follow. So Y is read in blocks
 * of NB rows × a group of column chunks, each row's segment contiguously, and copied (inline vector
 * moves, zero-padded past Q) into [chunk][n][CW] panels that stay in L1 while the register tiles
 * sweep them. X is read where it is: a block's NB rows of P values. Register tile: up to PR rows of
 * C × one chunk of CW = 2 vectors (AVX2: 6 × 16 in 12 ymm, AVX-512: 12 × 32 in 24 zmm), named
 * accumulators (GCC keeps an array of vectors on the stack), fused multiply-adds where the target
 * has them; the last rows of P run a tile of exactly the rows left. The tile's sums over the NB
 * rows are added into the group's f32 sums; after all N rows C += alpha · sums, one rounding of a
 * product and one of the sum (not contracted: -std=c11), which docs/DISTRIBUTED.md's bit-for-bit
 * equality of micro-batch accumulation relies on. Threads own whole column groups, and every
 * element is summed over n in the same order (NB-row blocks in turn), so the result does not
 * depend on the thread count. Same f32 arithmetic as sgemm, different summation order. */
#ifdef __AVX512F__
#define VW 16 /* floats per vector */
#define PR 12 /* rows of C per register tile */
#else
#define VW 8
#define PR 6
#endif
typedef float vnf __attribute__((vector_size(VW * 4)));
#define CW (2 * VW) /* columns per chunk */
#define NB 128      /* rows of X and Y per block (measured: 64-256 within noise, 128 best on AVX2) */
#define GROUP_MAX 8 /* chunks per column group at most: the Y panels of a block stay in L2 */

static inline vnf loadv(const float *p) {
    vnf v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void storev(float *p, vnf v) { memcpy(p, &v, sizeof v); }

/* all lanes = *p */
static inline vnf broadcastv(const float *p) {
#if VW == 16
    return (vnf)_mm512_set1_ps(*p);
#elif defined(__AVX__)
    return (vnf)_mm256_broadcast_ss(p);
#else
    vnf v;
    for (int i = 0; i < VW; i++) v[i] = *p;
    return v;
#endif
}

/* acc + a·b, one rounding where the target has FMA */
static inline vnf fmav(vnf a, vnf b, vnf acc) {
#if VW == 16
    return (vnf)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)acc);
#elif defined(__FMA__)
    return (vnf)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)acc);
#else
    return acc + a * b;
#endif
}

/* sums (pr rows, stride ld_sums; CW columns) += Xbᵀ · Yp over nb rows: Xb (nb, ldx) the block's X
 * rows from column p0 (the first pr values of each are used), Yp (nb, CW) one chunk's panel.
 * pr is a constant in each instantiation (rank_tile below), so the rows past it vanish. */
static inline __attribute__((always_inline)) void rank_tile_rows(float *sums, int ld_sums, const float *Xb, size_t ldx,
                                                                 const float *Yp, int nb, const int pr) {
    vnf z = {0};
    vnf c00 = z, c01 = z, c10 = z, c11 = z, c20 = z, c21 = z, c30 = z, c31 = z, c40 = z, c41 = z, c50 = z, c51 = z;
#if PR == 12
    vnf c60 = z, c61 = z, c70 = z, c71 = z, c80 = z, c81 = z, c90 = z, c91 = z, c100 = z, c101 = z, c110 = z, c111 = z;
#endif
    for (int n = 0; n < nb; n++) {
        const float *x = Xb + (size_t)n * ldx, *y = Yp + (size_t)n * CW;
        vnf y0 = loadv(y), y1 = loadv(y + VW), a;
#define FL_RANK_ROW(r)                        \
    if (pr > r) {                             \
        a = broadcastv(x + r);                \
        c##r##0 = fmav(a, y0, c##r##0);       \
        c##r##1 = fmav(a, y1, c##r##1);       \
    }
        FL_RANK_ROW(0) FL_RANK_ROW(1) FL_RANK_ROW(2) FL_RANK_ROW(3) FL_RANK_ROW(4) FL_RANK_ROW(5)
#if PR == 12
        FL_RANK_ROW(6) FL_RANK_ROW(7) FL_RANK_ROW(8) FL_RANK_ROW(9) FL_RANK_ROW(10) FL_RANK_ROW(11)
#endif
#undef FL_RANK_ROW
    }
    vnf acc[PR][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51},
#if PR == 12
                      {c60, c61}, {c70, c71}, {c80, c81}, {c90, c91}, {c100, c101}, {c110, c111},
#endif
    };
    for (int k = 0; k < pr; k++) {
        float *c = sums + (size_t)k * ld_sums;
        storev(c, loadv(c) + acc[k][0]);
        storev(c + VW, loadv(c + VW) + acc[k][1]);
    }
}

/* rank_tile_rows with pr (1 .. PR) turned into a constant */
static void rank_tile(float *sums, int ld_sums, const float *Xb, size_t ldx, const float *Yp, int nb, int pr) {
    switch (pr) {
#define FL_RANK_CASE(r) \
    case r: rank_tile_rows(sums, ld_sums, Xb, ldx, Yp, nb, r); break;
    FL_RANK_CASE(1) FL_RANK_CASE(2) FL_RANK_CASE(3) FL_RANK_CASE(4) FL_RANK_CASE(5)
#if PR == 12
    FL_RANK_CASE(6) FL_RANK_CASE(7) FL_RANK_CASE(8) FL_RANK_CASE(9) FL_RANK_CASE(10) FL_RANK_CASE(11)
#endif
#undef FL_RANK_CASE
    default: rank_tile_rows(sums, ld_sums, Xb, ldx, Yp, nb, PR); break;
    }
}

/* C[p][q] (or C[q][p] when transposed_store) += alpha · Σ_n X[n·ldx + p] · Y[n·ldy + q],
 * p in [0, P), q in [0, Q). */
static void small_rank_tn(float *C, int ldc, int transposed_store, const float *X, int ldx, const float *Y, int ldy,
                          float alpha, size_t N, int P, int Q) {
    int n_chunks = (Q + CW - 1) / CW;
    #pragma omp parallel
    {
        /* column groups: a multiple of the thread count, each at most GROUP_MAX chunks */
        int threads = omp_get_num_threads();
        int n_groups = (n_chunks + GROUP_MAX - 1) / GROUP_MAX;
        n_groups = (n_groups + threads - 1) / threads * threads;
        if (n_groups > n_chunks) n_groups = n_chunks;
        int per_group = (n_chunks + n_groups - 1) / n_groups;
        float *Yp = fl_malloc(sizeof(float) * NB * CW * (size_t)per_group);
        float *sums = fl_malloc(sizeof(float) * (size_t)P * CW * (size_t)per_group);
        int ld_sums = CW * per_group;
        #pragma omp for schedule(static)
        for (int g = 0; g < n_groups; g++) {
            int c0 = g * per_group, nc = n_chunks - c0 < per_group ? n_chunks - c0 : per_group;
            if (nc <= 0) continue;
            int q0 = c0 * CW, nq = Q - q0 < nc * CW ? Q - q0 : nc * CW;
            int full = nq / CW; /* chunks without columns past Q */
            memset(sums, 0, sizeof(float) * (size_t)P * ld_sums);
            for (size_t n0 = 0; n0 < N; n0 += NB) {
                int nb = N - n0 < NB ? (int)(N - n0) : NB;
                for (int n = 0; n < nb; n++) {
                    const float *y = Y + (n0 + n) * (size_t)ldy + q0;
                    float *yp = Yp + (size_t)n * CW;
                    for (int c = 0; c < full; c++) {
                        storev(yp + (size_t)c * NB * CW, loadv(y + c * CW));
                        storev(yp + (size_t)c * NB * CW + VW, loadv(y + c * CW + VW));
                    }
                    if (full < nc) {
                        float *t = yp + (size_t)full * NB * CW;
                        int w = nq - full * CW;
                        for (int j = 0; j < CW; j++) t[j] = j < w ? y[full * CW + j] : 0.0f;
                    }
                }
                const float *Xb = X + n0 * (size_t)ldx;
                for (int c = 0; c < nc; c++)
                    for (int p0 = 0; p0 < P; p0 += PR)
                        rank_tile(sums + (size_t)p0 * ld_sums + c * CW, ld_sums, Xb + p0, (size_t)ldx,
                                  Yp + (size_t)c * NB * CW, nb, P - p0 < PR ? P - p0 : PR);
            }
            for (int p = 0; p < P; p++)
                for (int j = 0; j < nq; j++) {
                    float *c = transposed_store ? &C[(size_t)(q0 + j) * ldc + p] : &C[(size_t)p * ldc + q0 + j];
                    *c += alpha * sums[(size_t)p * ld_sums + j];
                }
        }
        free(Yp);
        free(sums);
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
