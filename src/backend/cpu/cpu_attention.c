/* cpu_attention.c — causal grouped-query attention, O(T) memory: the forward keeps only the
 * output and the log-sum-exp of each query row; the backward recomputes the probabilities.
 *
 *   s_tj = q_t·k_j / sqrt(HS) for seg_start[t] <= j <= t;  p = softmax_j(s);  out_t = Σ_j p_tj v_j
 *   backward: D_t = dout_t·out_t, dp_tj = dout_t·v_j, ds_tj = p_tj (dp_tj − D_t),
 *             dq_t = Σ_j ds_tj k_j / sqrt(HS), dk_j += ds_tj q_t / sqrt(HS), dv_j += p_tj dout_t.
 * Query head h reads key/value head h / (NH/NKV), never a materialized copy. Query t of row b
 * sees keys seg_start[b*T+t] .. t (0 .. t for plain causal attention). q, k, v (and dq, dk, dv) are
 * views with row stride ld_qkv (one fused q/k/v buffer); out and dout are contiguous (N, NH·HS).
 *
 * Blocking: queries go in blocks of QB rows; a block sees keys [0, t_end) and its scores are one
 * (QB, t_end) GEMM, so all the arithmetic runs in sgemm (single-threaded inside our parallel
 * loop). Only the diagonal block computes masked-out entries. Scratch is O(QB·T) per thread, plus
 * the backward's per-head dK/dV partials (cpu_plan.h), summed per group in a fixed order. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/cpu_plan.h"
#include "common/error.h"
#include "common/fastmath.h"

#define QB 32 /* query rows per block (measured: 32 beats 64-256 at T = 256; less causal waste) */

/* S (rows, n_keys) = Q (rows, HS; row stride ldq) · Kᵀ (keys row stride ldk) */
static void scores_gemm(float *S, const float *Q, int ldq, const float *K, int ldk, int rows, int n_keys, int HS) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, n_keys, HS, 1.0f, Q, ldq, K, ldk, 0.0f, S, n_keys);
}

/* P[r][j] = exp(S[r][j]·scale − lse_r) inside [seg_start, t], 0 outside. With lse NULL, computes
 * the row's log-sum-exp first and stores it in lse_out. */
static void masked_softmax_rows(float *P, const float *S, int rows, int n_keys, int t0, const int32_t *seg, float scale,
                                const float *lse_in, float *lse_out) {
    for (int r = 0; r < rows; r++) {
        int t = t0 + r, j0 = seg[r];
        const float *s = S + (size_t)r * n_keys;
        float *p = P + (size_t)r * n_keys;
        float L;
        if (lse_in) {
            L = lse_in[r];
        } else {
            float max = -INFINITY;
            for (int j = j0; j <= t; j++) max = s[j] > max ? s[j] : max;
            max *= scale;
            float sum = 0.0f;
            #pragma omp simd reduction(+ : sum)
            for (int j = j0; j <= t; j++) sum += fl_expf(s[j] * scale - max);
            L = max + logf(sum);
            lse_out[r] = L;
        }
        for (int j = 0; j < j0; j++) p[j] = 0.0f;
        #pragma omp simd
        for (int j = j0; j <= t; j++) p[j] = fl_expf(s[j] * scale - L);
        for (int j = t + 1; j < n_keys; j++) p[j] = 0.0f;
    }
}

void attention_forward_cpu(void *out_, float *lse, const void *q_, const void *k_, const void *v_,
                           const int32_t *seg_start, int B, int T, int NH, int NKV, int HS, int ld_qkv) {
    float *out = out_;
    const float *q = q_, *k = k_, *v = v_;
    int group = NH / NKV, n_blocks = (T + QB - 1) / QB;
    float scale = 1.0f / sqrtf((float)HS);
    int ldq = ld_qkv, ldkv = ld_qkv, ldo = NH * HS;
    #pragma omp parallel
    {
        float *S = fl_malloc(sizeof(float) * QB * (size_t)T), *P = fl_malloc(sizeof(float) * QB * (size_t)T);
        float lse_block[QB];
        #pragma omp for schedule(dynamic, 1) collapse(3)
        for (int b = 0; b < B; b++)
            for (int h = 0; h < NH; h++)
                for (int blk = n_blocks - 1; blk >= 0; blk--) { /* big blocks first: better balance */
                    int t0 = blk * QB, rows = T - t0 < QB ? T - t0 : QB, n_keys = t0 + rows;
                    const float *k_b = k + (size_t)b * T * ldkv + (size_t)(h / group) * HS;
                    const float *v_b = v + (size_t)b * T * ldkv + (size_t)(h / group) * HS;
                    const float *q_blk = q + ((size_t)b * T + t0) * ldq + (size_t)h * HS;
                    scores_gemm(S, q_blk, ldq, k_b, ldkv, rows, n_keys, HS);
                    masked_softmax_rows(P, S, rows, n_keys, t0, seg_start + (size_t)b * T + t0, scale, NULL, lse_block);
                    /* out_blk (rows, HS) = P · V */
                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, HS, n_keys, 1.0f, P, n_keys, v_b, ldkv,
                                0.0f, out + ((size_t)b * T + t0) * ldo + (size_t)h * HS, ldo);
                    memcpy(lse + ((size_t)b * NH + h) * T + t0, lse_block, sizeof(float) * (size_t)rows);
                }
        free(S);
        free(P);
    }
}

/* Per-head dK/dV partials (B, NH, T, HS) each, kept between calls (one step runs at a time). */
static float *grow_partials(size_t n) {
    static float *buf;
    static size_t cap;
    if (n > cap) {
        free(buf);
        cap = n;
        buf = fl_malloc(sizeof(float) * cap);
    }
    return buf;
}

void attention_backward_cpu(void *dq_, void *dk_, void *dv_, const void *dout_, const void *out_, const float *lse,
                            const void *q_, const void *k_, const void *v_, const int32_t *seg_start, int B, int T,
                            int NH, int NKV, int HS, int ld_qkv) {
    float *dq = dq_, *dk = dk_, *dv = dv_;
    const float *dout = dout_, *out = out_, *q = q_, *k = k_, *v = v_;
    int group = NH / NKV, n_blocks = (T + QB - 1) / QB;
    float scale = 1.0f / sqrtf((float)HS);
    int ldq = ld_qkv, ldkv = ld_qkv, ldo = NH * HS;
    /* One task per (batch, query head): B·NH tasks balance better than B·NKV (3 for 2 threads at
     * B = 1 on SmolLM2). A task owns its dq columns and writes its dK/dV contributions into its own
     * partial (T, HS) pair; the heads of a group are then summed in head order, so the result does
     * not depend on the thread count. */
    size_t part_elems = (size_t)T * HS;
    float *parts = grow_partials(fl_cpu_attention_partial_bytes(B, T, NH, HS) / sizeof(float));
    #pragma omp parallel
    {
        float *S = fl_malloc(sizeof(float) * QB * (size_t)T), *P = fl_malloc(sizeof(float) * QB * (size_t)T);
        #pragma omp for schedule(dynamic, 1) collapse(2)
        for (int b = 0; b < B; b++)
            for (int h = 0; h < NH; h++) {
                int kvh = h / group;
                const float *k_b = k + (size_t)b * T * ldkv + (size_t)kvh * HS;
                const float *v_b = v + (size_t)b * T * ldkv + (size_t)kvh * HS;
                float *dk_h = parts + (2 * ((size_t)b * NH + h)) * part_elems; // (T, HS)
                float *dv_h = dk_h + part_elems;                                // (T, HS)
                memset(dk_h, 0, sizeof(float) * 2 * part_elems);
                for (int blk = 0; blk < n_blocks; blk++) {
                    int t0 = blk * QB, rows = T - t0 < QB ? T - t0 : QB, n_keys = t0 + rows;
                    size_t q_off = ((size_t)b * T + t0) * ldq + (size_t)h * HS;
                    size_t o_off = ((size_t)b * T + t0) * ldo + (size_t)h * HS;
                    const float *q_blk = q + q_off, *do_blk = dout + o_off, *o_blk = out + o_off;
                    const float *lse_blk = lse + ((size_t)b * NH + h) * T + t0;
                    scores_gemm(S, q_blk, ldq, k_b, ldkv, rows, n_keys, HS);
                    masked_softmax_rows(P, S, rows, n_keys, t0, seg_start + (size_t)b * T + t0, scale, lse_blk, NULL);
                    /* dV_h += Pᵀ · dO */
                    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, n_keys, HS, rows, 1.0f, P, n_keys, do_blk,
                                ldo, 1.0f, dv_h, HS);
                    /* dP (in S) = dO · Vᵀ;  dS = P ⊙ (dP − D) · scale */
                    scores_gemm(S, do_blk, ldo, v_b, ldkv, rows, n_keys, HS);
                    for (int r = 0; r < rows; r++) {
                        const float *dor = do_blk + (size_t)r * ldo, *orow = o_blk + (size_t)r * ldo;
                        float D = 0.0f;
                        #pragma omp simd reduction(+ : D)
                        for (int e = 0; e < HS; e++) D += dor[e] * orow[e];
                        float *s = S + (size_t)r * n_keys;
                        const float *p = P + (size_t)r * n_keys;
                        #pragma omp simd
                        for (int j = 0; j < n_keys; j++) s[j] = p[j] * (s[j] - D) * scale;
                    }
                    /* dQ_blk = dS · K;  dK_h += dSᵀ · Q_blk */
                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, HS, n_keys, 1.0f, S, n_keys, k_b, ldkv,
                                0.0f, dq + q_off, ldq);
                    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, n_keys, HS, rows, 1.0f, S, n_keys, q_blk, ldq,
                                1.0f, dk_h, HS);
                }
            }
        free(S);
        free(P);
        /* dK, dV (rows of stride ld_qkv) = Σ over the group's heads, in head order */
        #pragma omp for schedule(static) collapse(2)
        for (int b = 0; b < B; b++)
            for (int t = 0; t < T; t++)
                for (int kvh = 0; kvh < NKV; kvh++) {
                    float *dk_row = dk + ((size_t)b * T + t) * ldkv + (size_t)kvh * HS;
                    float *dv_row = dv + ((size_t)b * T + t) * ldkv + (size_t)kvh * HS;
                    const float *first = parts + (2 * ((size_t)b * NH + (size_t)kvh * group)) * part_elems + (size_t)t * HS;
                    memcpy(dk_row, first, sizeof(float) * (size_t)HS);
                    memcpy(dv_row, first + part_elems, sizeof(float) * (size_t)HS);
                    for (int g = 1; g < group; g++) {
                        const float *pk = first + 2 * (size_t)g * part_elems, *pv = pk + part_elems;
                        #pragma omp simd
                        for (int e = 0; e < HS; e++) {
                            dk_row[e] += pk[e];
                            dv_row[e] += pv[e];
                        }
                    }
                }
    }
}
