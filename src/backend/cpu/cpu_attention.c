/* cpu_attention.c — causal grouped-query attention, O(T) memory: the forward keeps only the
 * output and the log-sum-exp of each query row; the backward recomputes the probabilities.
 *
 *   s_tj = q_t·k_j / sqrt(HS) for seg_start[t] <= j <= t;  p = softmax_j(s);  out_t = Σ_j p_tj v_j
 *   backward: D_t = dout_t·out_t, dp_tj = dout_t·v_j, ds_tj = p_tj (dp_tj − D_t),
 *             dq_t = Σ_j ds_tj k_j / sqrt(HS), dk_j += ds_tj q_t / sqrt(HS), dv_j += p_tj dout_t.
 * With a soft-cap c > 0 (Gemma 2's attn_logit_softcapping) the softmax sees s'_tj = c·tanh(s_tj/c)
 * (before the mask: masked keys stay out either way), the lse is of s', and the backward recomputes
 * s' and multiplies ds_tj by ds'/ds = 1 − tanh²(s_tj/c). c = 0 runs the uncapped code unchanged.
 * Query head h reads key/value head h / (NH/NKV), never a materialized copy. Query t of row b
 * sees keys seg_start[b*T+t] .. t (0 .. t for plain causal attention; on a sliding-window layer the
 * engine passes max(document start, t - W + 1), engine/model.h fl_window_key_start, so the tile
 * skipping below also skips every key tile before a query block's window). q, k, v (and dq, dk, dv) are
 * views with row stride ld_qkv (one fused q/k/v buffer); out and dout are contiguous (N, NH·HS).
 *
 * Tiling: queries in blocks of QB rows, keys in blocks of KB; one (QB, KB) tile of scores is a
 * small GEMM (tile_gemm.h, single-threaded inside our parallel loop) whose result stays in L1/L2
 * however long the sequence. Those GEMMs read their right-hand operands from panels packed once
 * per call — Kᵀ, Vᵀ, K and V of each (batch row, kv head) — or once per tile for a query block's
 * own Q and dO rows (QB·HS floats against the tile's 5·QB·KB·HS multiply-adds), where a library
 * sgemm packs both operands of every product again. Tiles entirely above the diagonal are
 * skipped; only diagonal tiles compute masked-out entries. The forward runs the keys of a query
 * block with an online softmax (running max and sum, the output rescaled when the max grows), so
 * each score is exponentiated once. The backward takes one (batch row, query head) per task and
 * runs key blocks in the outer loop: the block's dK/dV rows stay in cache while the query blocks
 * that see it stream past, and dQ accumulates in place. Scratch is O(QB·KB) per thread, plus the
 * packed operands and the backward's per-head dK/dV partials (cpu_plan.h; a slot of the scratch
 * arena, cpu_scratch.h), summed per group in a fixed order, so results do not depend on the
 * thread count. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_attention_rows.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/cpu_plan.h"
#include "backend/cpu/cpu_scratch.h"
#include "backend/cpu/tile_gemm.h"
#include "common/error.h"
#include "common/fastmath.h"

_Static_assert(KB % TG_NR == 0 && BKB % TG_NR == 0, "key tiles start on a packed panel (scores_gemm)");

/* S (rows, n_keys; ld_s) = X (rows, HS; row stride ldx) · Yᵀ for the keys [k0, k0 + n_keys) of a
 * (batch row, kv head) whose Yᵀ (Kᵀ or Vᵀ) is packed in `yt` (tile_pack_transposed; k0 a multiple
 * of TG_NR). */
static void scores_gemm(float *S, int ld_s, const float *X, int ldx, const float *yt, int k0, int rows, int n_keys,
                        int HS) {
    tile_gemm(rows, n_keys, HS, X, ldx, 1, yt + (int64_t)k0 * HS, (int64_t)HS * TG_NR, S, ld_s, 0);
}

void attention_forward_cpu(void *out_, float *lse, const void *q_, const void *k_, const void *v_,
                           const int32_t *seg_start, int B, int T, int NH, int NKV, int HS, int ld_qkv,
                           float softcap) {
    float *out = out_;
    const float *q = q_, *k = k_, *v = v_;
    int group = NH / NKV, n_blocks = (T + QB - 1) / QB;
    float scale = 1.0f / sqrtf((float)HS);
    int ldq = ld_qkv, ldkv = ld_qkv, ldo = NH * HS;
    /* per (batch row, kv head): Kᵀ in key panels (t16, HS), V in column panels (T, hs16) */
    size_t kt_elems = (size_t)tg_round_up(T) * HS, vc_elems = (size_t)T * tg_round_up(HS);
    float *packs = cpu_alloc_scratch(sizeof(float) * B * NKV * (kt_elems + vc_elems));
    #pragma omp parallel
    {
        #pragma omp for schedule(static) collapse(2)
        for (int b = 0; b < B; b++)
            for (int kvh = 0; kvh < NKV; kvh++) {
                float *kt = packs + ((size_t)b * NKV + kvh) * (kt_elems + vc_elems);
                tile_pack_transposed(kt, k + (size_t)b * T * ldkv + (size_t)kvh * HS, ldkv, T, HS);
                tile_pack_columns(kt + kt_elems, v + (size_t)b * T * ldkv + (size_t)kvh * HS, ldkv, T, HS);
            }
        float *S = fl_malloc(sizeof(float) * QB * KB);
        float *O = fl_malloc(sizeof(float) * QB * (size_t)HS); /* unnormalized output rows */
        float *q_rows = fl_malloc(sizeof(float) * QB * (size_t)HS); /* the block's Q rows, contiguous */
        float run_max[QB], run_sum[QB];
        #pragma omp for schedule(dynamic, 1) collapse(3)
        for (int b = 0; b < B; b++)
            for (int h = 0; h < NH; h++)
                for (int blk = n_blocks - 1; blk >= 0; blk--) { /* big blocks first: better balance */
                    int t0 = blk * QB, rows = T - t0 < QB ? T - t0 : QB, n_keys = t0 + rows;
                    const int32_t *seg = seg_start + (size_t)b * T + t0;
                    const float *kt = packs + ((size_t)b * NKV + h / group) * (kt_elems + vc_elems);
                    const float *vc = kt + kt_elems;
                    const float *q_src = q + ((size_t)b * T + t0) * ldq + (size_t)h * HS;
                    for (int r = 0; r < rows; r++)
                        memcpy(q_rows + (size_t)r * HS, q_src + (size_t)r * ldq, sizeof(float) * (size_t)HS);
                    int k_first = att_earliest_key(seg, rows) / KB * KB;
                    for (int r = 0; r < rows; r++) { run_max[r] = -INFINITY; run_sum[r] = 0.0f; }
                    memset(O, 0, sizeof(float) * (size_t)rows * HS);
                    for (int k0 = k_first; k0 < n_keys; k0 += KB) {
                        int nk = n_keys - k0 < KB ? n_keys - k0 : KB;
                        scores_gemm(S, nk, q_rows, HS, kt, k0, rows, nk, HS);
                        for (int r = 0; r < rows; r++) {
                            float *s = S + (size_t)r * nk;
                            int j0, j1;
                            att_tile_range(t0 + r, seg[r], k0, nk, &j0, &j1);
                            float corr = att_forward_row(s, nk, j0, j1, scale, softcap, &run_max[r], &run_sum[r]);
                            att_rescale_row(O + (size_t)r * HS, corr, HS);
                        }
                        /* O (rows, HS) += P · V_tile */
                        tile_gemm(rows, HS, nk, S, nk, 1, vc + (size_t)k0 * TG_NR, (int64_t)T * TG_NR, O, HS, 1);
                    }
                    att_forward_finish(out + ((size_t)b * T + t0) * ldo + (size_t)h * HS, ldo,
                                       lse + ((size_t)b * NH + h) * T + t0, O, run_max, run_sum, rows, HS);
                }
        free(S);
        free(O);
        free(q_rows);
    }
    cpu_free(packs);
}

void attention_backward_cpu(void *dq_, void *dk_, void *dv_, const void *dout_, const void *out_, const float *lse,
                            const void *q_, const void *k_, const void *v_, const int32_t *seg_start, int B, int T,
                            int NH, int NKV, int HS, int ld_qkv, float softcap) {
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
    /* per-head dK/dV partials (B, NH, T, HS) each, kept between calls */
    float *parts = fl_cpu_scratch(FL_CPU_SCRATCH_ATTN_PARTIALS, fl_cpu_attention_partial_bytes(B, T, NH, HS));
    /* per (batch row, kv head): Kᵀ and Vᵀ in key panels (t16, HS) each, K in column panels (T, hs16) */
    size_t kt_elems = (size_t)tg_round_up(T) * HS, kc_elems = (size_t)T * tg_round_up(HS);
    size_t pack_elems = 2 * kt_elems + kc_elems; /* fl_cpu_attention_pack_bytes (cpu_plan.h) in all */
    float *packs = cpu_alloc_scratch(sizeof(float) * B * NKV * pack_elems);
    #pragma omp parallel
    {
        #pragma omp for schedule(static) collapse(2)
        for (int b = 0; b < B; b++)
            for (int kvh = 0; kvh < NKV; kvh++) {
                float *kt = packs + ((size_t)b * NKV + kvh) * pack_elems;
                const float *k_b = k + (size_t)b * T * ldkv + (size_t)kvh * HS;
                tile_pack_transposed(kt, k_b, ldkv, T, HS);
                tile_pack_transposed(kt + kt_elems, v + (size_t)b * T * ldkv + (size_t)kvh * HS, ldkv, T, HS);
                tile_pack_columns(kt + 2 * kt_elems, k_b, ldkv, T, HS);
            }
        float *P = fl_malloc(sizeof(float) * BQB * BKB), *dS = fl_malloc(sizeof(float) * BQB * BKB);
        float *D = fl_malloc(sizeof(float) * (size_t)T);
        /* the query block's Q and dO rows in column panels (BQB, hs16) each */
        size_t blk_elems = (size_t)BQB * tg_round_up(HS);
        float *q_cols = cpu_alloc_scratch(sizeof(float) * 2 * blk_elems), *do_cols = q_cols + blk_elems;
        /* the task's Q and dO rows and its dQ sums, contiguous (T, HS) each: read by every key
         * block, they stream from cache far better than rows of ld_qkv / NH·HS floats */
        float *q_rows = cpu_alloc_scratch(sizeof(float) * 3 * (size_t)T * HS), *do_rows = q_rows + (size_t)T * HS;
        float *dq_rows = do_rows + (size_t)T * HS;
        #pragma omp for schedule(dynamic, 1) collapse(2)
        for (int b = 0; b < B; b++)
            for (int h = 0; h < NH; h++) {
                int kvh = h / group;
                const float *kt = packs + ((size_t)b * NKV + kvh) * pack_elems, *vt = kt + kt_elems;
                const float *kc = kt + 2 * kt_elems;
                const float *q_h = q + (size_t)b * T * ldq + (size_t)h * HS;
                const float *do_h = dout + (size_t)b * T * ldo + (size_t)h * HS, *o_h = out + (size_t)b * T * ldo + (size_t)h * HS;
                const float *lse_h = lse + ((size_t)b * NH + h) * T;
                const int32_t *seg = seg_start + (size_t)b * T;
                float *dq_h = dq + (size_t)b * T * ldq + (size_t)h * HS;
                float *dk_h = parts + (2 * ((size_t)b * NH + h)) * part_elems; // (T, HS)
                float *dv_h = dk_h + part_elems;                                // (T, HS)
                memset(dk_h, 0, sizeof(float) * 2 * part_elems);
                att_backward_d(D, do_h, o_h, ldo, T, HS);
                for (int t = 0; t < T; t++) {
                    memcpy(q_rows + (size_t)t * HS, q_h + (size_t)t * ldq, sizeof(float) * (size_t)HS);
                    memcpy(do_rows + (size_t)t * HS, do_h + (size_t)t * ldo, sizeof(float) * (size_t)HS);
                }
                memset(dq_rows, 0, sizeof(float) * (size_t)T * HS);
                for (int k0 = 0; k0 < T; k0 += BKB) {
                    int nk = T - k0 < BKB ? T - k0 : BKB;
                    for (int t0 = k0 / BQB * BQB; t0 < T; t0 += BQB) { /* the query blocks that see these keys */
                        int rows = T - t0 < BQB ? T - t0 : BQB;
                        if (att_earliest_key(seg + t0, rows) >= k0 + nk) continue; /* every row's segment starts after the tile */
                        /* keys past the block's last query are masked for all its rows: leave them out */
                        int nq = t0 + rows - k0 < nk ? t0 + rows - k0 : nk;
                        const float *q_blk = q_rows + (size_t)t0 * HS, *do_blk = do_rows + (size_t)t0 * HS;
                        scores_gemm(P, nq, q_blk, HS, kt, k0, rows, nq, HS);
                        /* dP (in dS) = dO · V_tileᵀ */
                        scores_gemm(dS, nq, do_blk, HS, vt, k0, rows, nq, HS);
                        for (int r = 0; r < rows; r++) {
                            float *p = P + (size_t)r * nq, *ds = dS + (size_t)r * nq;
                            float L = lse_h[t0 + r], Dr = D[t0 + r];
                            int j0, j1;
                            att_tile_range(t0 + r, seg[t0 + r], k0, nq, &j0, &j1);
                            att_backward_row(p, ds, nq, j0, j1, L, Dr, scale, softcap);
                        }
                        /* dV_tile += Pᵀ · dO;  dK_tile += dSᵀ · Q_blk;  dQ_blk += dS · K_tile */
                        tile_pack_columns(q_cols, q_blk, HS, rows, HS);
                        tile_pack_columns(do_cols, do_blk, HS, rows, HS);
                        int64_t blk_panel = (int64_t)rows * TG_NR;
                        tile_gemm(nq, HS, rows, P, 1, nq, do_cols, blk_panel, dv_h + (size_t)k0 * HS, HS, 1);
                        tile_gemm(nq, HS, rows, dS, 1, nq, q_cols, blk_panel, dk_h + (size_t)k0 * HS, HS, 1);
                        tile_gemm(rows, HS, nq, dS, nq, 1, kc + (size_t)k0 * TG_NR, (int64_t)T * TG_NR,
                                  dq_rows + (size_t)t0 * HS, HS, 1);
                    }
                }
                for (int t = 0; t < T; t++)
                    memcpy(dq_h + (size_t)t * ldq, dq_rows + (size_t)t * HS, sizeof(float) * (size_t)HS);
            }
        free(P);
        free(dS);
        free(D);
        cpu_free(q_cols);
        cpu_free(q_rows);
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
    cpu_free(packs);
}
