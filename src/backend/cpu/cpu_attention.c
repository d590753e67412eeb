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
 * Tiling: queries in blocks of QB rows, keys in blocks of KB; one (QB, KB) tile of scores is a
 * small sgemm (single-threaded inside our parallel loop) whose result stays in L1/L2 however long
 * the sequence. Tiles entirely above the diagonal are skipped; only diagonal tiles compute
 * masked-out entries. The forward runs the keys of a query block with an online softmax (running
 * max and sum, the output rescaled when the max grows), so each score is exponentiated once. The
 * backward takes one (batch row, query head) per task and runs key blocks in the outer loop: the
 * block's dK/dV rows stay in cache while the query blocks that see it stream past, and dQ
 * accumulates in place. Scratch is O(QB·KB) per thread, plus the backward's per-head dK/dV
 * partials (cpu_plan.h), summed per group in a fixed order, so results do not depend on the
 * thread count. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/cpu_plan.h"
#include "common/error.h"
#include "common/fastmath.h"

/* Tile sizes, measured on a 2-core AVX2 machine (dev lab, smollm2 shapes, 3 alternating rounds):
 * QB 64 x KB 256 ran the 30 layers' attention in ~0.52 s at 4 x 256 and ~6.3 s at 1 x 2048, vs
 * 0.53-0.68 s and 6.7-8.3 s for QB 32 (KB 128-512) and 0.6-0.74 s / 8.2-10.6 s before key tiling
 * (QB 32, one tile of all keys). 64-row tiles keep sgemm near its small-matrix rate (61-78 vs 49-62
 * GFLOP/s on one core); their diagonal waste is bounded by the tile. */
#define QB 64  /* query rows per tile */
#define KB 256 /* keys per tile: at T <= 256 a query block is one tile */

/* S (rows, n_keys; ld_s) = Q (rows, HS; row stride ldq) · Kᵀ (keys row stride ldk) */
static void scores_gemm(float *S, int ld_s, const float *Q, int ldq, const float *K, int ldk, int rows, int n_keys,
                        int HS) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, n_keys, HS, 1.0f, Q, ldq, K, ldk, 0.0f, S, ld_s);
}

/* The keys query t sees inside the tile of keys [k0, k0 + nk): [*j0, *j1) relative to k0, maybe
 * empty. seg is the query's segment start. */
static inline void tile_range(int t, int seg, int k0, int nk, int *j0, int *j1) {
    int lo = seg > k0 ? seg - k0 : 0, hi = t - k0 + 1 < nk ? t - k0 + 1 : nk;
    *j0 = lo;
    *j1 = hi > lo ? hi : lo;
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
        float *S = fl_malloc(sizeof(float) * QB * KB);
        float *O = fl_malloc(sizeof(float) * QB * (size_t)HS); /* unnormalized output rows */
        float run_max[QB], run_sum[QB];
        #pragma omp for schedule(dynamic, 1) collapse(3)
        for (int b = 0; b < B; b++)
            for (int h = 0; h < NH; h++)
                for (int blk = n_blocks - 1; blk >= 0; blk--) { /* big blocks first: better balance */
                    int t0 = blk * QB, rows = T - t0 < QB ? T - t0 : QB, n_keys = t0 + rows;
                    const int32_t *seg = seg_start + (size_t)b * T + t0;
                    const float *k_b = k + (size_t)b * T * ldkv + (size_t)(h / group) * HS;
                    const float *v_b = v + (size_t)b * T * ldkv + (size_t)(h / group) * HS;
                    const float *q_blk = q + ((size_t)b * T + t0) * ldq + (size_t)h * HS;
                    int k_first = seg[0]; /* the earliest key any row of the block sees */
                    for (int r = 1; r < rows; r++) k_first = seg[r] < k_first ? seg[r] : k_first;
                    k_first = k_first / KB * KB;
                    for (int r = 0; r < rows; r++) { run_max[r] = -INFINITY; run_sum[r] = 0.0f; }
                    memset(O, 0, sizeof(float) * (size_t)rows * HS);
                    for (int k0 = k_first; k0 < n_keys; k0 += KB) {
                        int nk = n_keys - k0 < KB ? n_keys - k0 : KB;
                        scores_gemm(S, nk, q_blk, ldq, k_b + (size_t)k0 * ldkv, ldkv, rows, nk, HS);
                        for (int r = 0; r < rows; r++) {
                            float *s = S + (size_t)r * nk;
                            int j0, j1;
                            tile_range(t0 + r, seg[r], k0, nk, &j0, &j1);
                            float m = run_max[r];
                            for (int j = j0; j < j1; j++) m = s[j] * scale > m ? s[j] * scale : m;
                            /* rows with no key here yet keep max -inf: their p and sum stay 0 */
                            float corr = m == -INFINITY ? 1.0f : fl_expf(run_max[r] - m), sum = 0.0f;
                            for (int j = 0; j < j0; j++) s[j] = 0.0f;
                            #pragma omp simd reduction(+ : sum)
                            for (int j = j0; j < j1; j++) {
                                s[j] = fl_expf(s[j] * scale - m);
                                sum += s[j];
                            }
                            for (int j = j1; j < nk; j++) s[j] = 0.0f;
                            run_sum[r] = run_sum[r] * corr + sum;
                            run_max[r] = m;
                            if (corr != 1.0f) {
                                float *o = O + (size_t)r * HS;
                                #pragma omp simd
                                for (int e = 0; e < HS; e++) o[e] *= corr;
                            }
                        }
                        /* O (rows, HS) += P · V_tile */
                        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, HS, nk, 1.0f, S, nk,
                                    v_b + (size_t)k0 * ldkv, ldkv, 1.0f, O, HS);
                    }
                    float *lse_blk = lse + ((size_t)b * NH + h) * T + t0;
                    for (int r = 0; r < rows; r++) {
                        float inv = 1.0f / run_sum[r], *o = out + ((size_t)b * T + t0 + r) * ldo + (size_t)h * HS;
                        const float *acc = O + (size_t)r * HS;
                        #pragma omp simd
                        for (int e = 0; e < HS; e++) o[e] = acc[e] * inv;
                        lse_blk[r] = run_max[r] + logf(run_sum[r]);
                    }
                }
        free(S);
        free(O);
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
    int group = NH / NKV;
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
        float *P = fl_malloc(sizeof(float) * QB * KB), *dS = fl_malloc(sizeof(float) * QB * KB);
        float *D = fl_malloc(sizeof(float) * (size_t)T);
        #pragma omp for schedule(dynamic, 1) collapse(2)
        for (int b = 0; b < B; b++)
            for (int h = 0; h < NH; h++) {
                int kvh = h / group;
                const float *k_b = k + (size_t)b * T * ldkv + (size_t)kvh * HS;
                const float *v_b = v + (size_t)b * T * ldkv + (size_t)kvh * HS;
                const float *q_h = q + (size_t)b * T * ldq + (size_t)h * HS;
                const float *do_h = dout + (size_t)b * T * ldo + (size_t)h * HS, *o_h = out + (size_t)b * T * ldo + (size_t)h * HS;
                const float *lse_h = lse + ((size_t)b * NH + h) * T;
                const int32_t *seg = seg_start + (size_t)b * T;
                float *dq_h = dq + (size_t)b * T * ldq + (size_t)h * HS;
                float *dk_h = parts + (2 * ((size_t)b * NH + h)) * part_elems; // (T, HS)
                float *dv_h = dk_h + part_elems;                                // (T, HS)
                memset(dk_h, 0, sizeof(float) * 2 * part_elems);
                for (int t = 0; t < T; t++) {
                    const float *dor = do_h + (size_t)t * ldo, *orow = o_h + (size_t)t * ldo;
                    float acc = 0.0f;
                    #pragma omp simd reduction(+ : acc)
                    for (int e = 0; e < HS; e++) acc += dor[e] * orow[e];
                    D[t] = acc;
                    memset(dq_h + (size_t)t * ldq, 0, sizeof(float) * (size_t)HS);
                }
                for (int k0 = 0; k0 < T; k0 += KB) {
                    int nk = T - k0 < KB ? T - k0 : KB;
                    const float *k_tile = k_b + (size_t)k0 * ldkv, *v_tile = v_b + (size_t)k0 * ldkv;
                    for (int t0 = k0 / QB * QB; t0 < T; t0 += QB) { /* the query blocks that see these keys */
                        int rows = T - t0 < QB ? T - t0 : QB;
                        int seg_min = seg[t0];
                        for (int r = 1; r < rows; r++) seg_min = seg[t0 + r] < seg_min ? seg[t0 + r] : seg_min;
                        if (seg_min >= k0 + nk) continue; /* every row's segment starts after the tile */
                        /* keys past the block's last query are masked for all its rows: leave them out */
                        int nq = t0 + rows - k0 < nk ? t0 + rows - k0 : nk;
                        const float *q_blk = q_h + (size_t)t0 * ldq, *do_blk = do_h + (size_t)t0 * ldo;
                        scores_gemm(P, nq, q_blk, ldq, k_tile, ldkv, rows, nq, HS);
                        /* dP (in dS) = dO · V_tileᵀ */
                        scores_gemm(dS, nq, do_blk, ldo, v_tile, ldkv, rows, nq, HS);
                        for (int r = 0; r < rows; r++) {
                            float *p = P + (size_t)r * nq, *ds = dS + (size_t)r * nq;
                            float L = lse_h[t0 + r], Dr = D[t0 + r];
                            int j0, j1;
                            tile_range(t0 + r, seg[t0 + r], k0, nq, &j0, &j1);
                            for (int j = 0; j < j0; j++) p[j] = ds[j] = 0.0f;
                            #pragma omp simd
                            for (int j = j0; j < j1; j++) {
                                p[j] = fl_expf(p[j] * scale - L);
                                ds[j] = p[j] * (ds[j] - Dr) * scale;
                            }
                            for (int j = j1; j < nq; j++) p[j] = ds[j] = 0.0f;
                        }
                        /* dV_tile += Pᵀ · dO;  dK_tile += dSᵀ · Q_blk;  dQ_blk += dS · K_tile */
                        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, nq, HS, rows, 1.0f, P, nq, do_blk, ldo, 1.0f,
                                    dv_h + (size_t)k0 * HS, HS);
                        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, nq, HS, rows, 1.0f, dS, nq, q_blk, ldq, 1.0f,
                                    dk_h + (size_t)k0 * HS, HS);
                        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, HS, nq, 1.0f, dS, nq, k_tile, ldkv,
                                    1.0f, dq_h + (size_t)t0 * ldq, ldq);
                    }
                }
            }
        free(P);
        free(dS);
        free(D);
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
