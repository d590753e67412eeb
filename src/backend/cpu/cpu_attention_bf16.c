/* cpu_attention_bf16.c — the bf16 backend's attention: cpu_attention.c's algorithm (same formulas,
 * masks, windows, soft-cap, tiles and online softmax, the row arithmetic shared through
 * cpu_attention_rows.h) with every tile product on bf16 operands and f32 sums (tile_gemm_bf16.h):
 * Q, K, V, dO, the probabilities P and the score gradients dS are rounded to bf16 where they enter
 * a product, as a bf16 model's attention in transformers computes them; scores, the softmax, the
 * lse, D = dO·out and every sum stay f32. On a CPU with AVX512_BF16 the products run on vdpbf16ps
 * at twice the f32 tiles' rate; elsewhere the backend op runs the f32 attention instead (the bf16
 * tiles would only be widened again), while the *_bf16_tiles entry points run these tiles on any
 * CPU (plain C below AVX512_BF16), so the tests check this file everywhere.
 *
 * What differs from the f32 file is only where the operands live. Every operand is packed in bf16
 * pair words along its product's inner dimension: per (batch row, kv head) Kᵀ and Vᵀ in 16-key
 * panels (for S = Q·Kᵀ and dP = dO·Vᵀ) and K, V in 16-column panels along the keys (for dQ = dS·K
 * and O = P·V); per query head its Q and dO rows (the scores' left operands) and Qᵀ, dOᵀ (the
 * left operands of dKᵀ = Qᵀ·dS and dVᵀ = dOᵀ·P); per tile P and dS as panels along the queries and
 * dS as rows. The backward therefore accumulates dKᵀ and dVᵀ, (HS, T) per query head, and the
 * group sum at the end transposes them into dK and dV's rows. Threading, the order of every sum
 * and so the thread-count independence are the f32 file's. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/attention_rows_bf16.h"
#include "backend/cpu/cpu_attention_rows.h"
#include "backend/cpu/cpu_isa.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/cpu_plan.h"
#include "backend/cpu/cpu_scratch.h"
#include "backend/cpu/tile_gemm_bf16.h"
#include "common/error.h"

/* The f32 file's tiles (cpu_attention_rows.h), which must also start on a pair word and a panel. */
_Static_assert(KB % TG_NR == 0 && BKB % TG_NR == 0 && QB % 2 == 0 && BQB % 2 == 0, "tiles start on words and panels");
/* The row strides of the forward's f32 score tile and the backward's P and dS tiles: not a power
 * of two (cpu_plan.h). */
#define LD_FWD_TILE (KB + 8)
#define LD_TILE (BKB + 8)

void attention_forward_bf16_tiles(void *out_, float *lse, const void *q_, const void *k_, const void *v_,
                                  const int32_t *seg_start, int B, int T, int NH, int NKV, int HS, int ld_qkv,
                                  float softcap) {
    float *out = out_;
    const float *q = q_, *k = k_, *v = v_;
    int group = NH / NKV, n_blocks = (T + QB - 1) / QB, fused = softcap == 0.0f && att_rows_bf16_fused();
    float scale = 1.0f / sqrtf((float)HS);
    int ldq = ld_qkv, ldkv = ld_qkv, ldo = NH * HS;
    int64_t kw_hs = tg16_words(HS), kw_t = tg16_words(T);
    /* per (batch row, kv head): Kᵀ in key panels (t16, kw_hs words), V in column panels along the keys */
    size_t kt_words = (size_t)tg_round_up(T) * kw_hs, vp_words = (size_t)tg_round_up(HS) * kw_t;
    size_t per_kv = kt_words + vp_words;
    uint32_t *packs = cpu_alloc_scratch(sizeof(uint32_t) * B * NKV * per_kv);
    #pragma omp parallel
    {
        #pragma omp for schedule(static) collapse(2)
        for (int b = 0; b < B; b++)
            for (int kvh = 0; kvh < NKV; kvh++) {
                uint32_t *kt = packs + ((size_t)b * NKV + kvh) * per_kv;
                size_t src = (size_t)b * T * ldkv + (size_t)kvh * HS;
                tg16_pack_panels_transposed(kt, k + src, ldkv, T, HS);
                tg16_pack_panels(kt + kt_words, kw_t * TG_NR, v + src, ldkv, T, HS);
            }
        float *S = fl_malloc(sizeof(float) * QB * LD_FWD_TILE); /* a tile's scores, row stride LD_FWD_TILE */
        float *O = fl_malloc(sizeof(float) * QB * (size_t)HS); /* unnormalized output rows */
        uint32_t *q_words = fl_malloc(sizeof(uint32_t) * QB * (size_t)kw_hs); /* the block's Q rows */
        uint32_t *p_words = fl_malloc(sizeof(uint32_t) * QB * (KB / 2));      /* a tile's P rows */
        float run_max[QB], run_sum[QB];
        #pragma omp for schedule(dynamic, 1) collapse(3)
        for (int b = 0; b < B; b++)
            for (int h = 0; h < NH; h++)
                for (int blk = n_blocks - 1; blk >= 0; blk--) { /* big blocks first: better balance */
                    int t0 = blk * QB, rows = T - t0 < QB ? T - t0 : QB, n_keys = t0 + rows;
                    const int32_t *seg = seg_start + (size_t)b * T + t0;
                    const uint32_t *kt = packs + ((size_t)b * NKV + h / group) * per_kv, *vp = kt + kt_words;
                    tg16_pack_rows(q_words, kw_hs, q + ((size_t)b * T + t0) * ldq + (size_t)h * HS, ldq, rows, HS);
                    int k_first = att_earliest_key(seg, rows) / KB * KB;
                    for (int r = 0; r < rows; r++) { run_max[r] = -INFINITY; run_sum[r] = 0.0f; }
                    memset(O, 0, sizeof(float) * (size_t)rows * HS);
                    for (int k0 = k_first; k0 < n_keys; k0 += KB) {
                        int nk = n_keys - k0 < KB ? n_keys - k0 : KB;
                        /* S (rows, nk) = Q_blk · K_tileᵀ */
                        tile_gemm_bf16(rows, nk, HS, q_words, kw_hs, kt + (int64_t)(k0 / TG_NR) * kw_hs * TG_NR,
                                       kw_hs * TG_NR, S, LD_FWD_TILE, 0);
                        int64_t kw_nk = tg16_words(nk);
                        for (int r = 0; r < rows; r++) { /* each row's P packed while it is in L1 */
                            float *s = S + (size_t)r * LD_FWD_TILE;
                            int j0, j1;
                            att_tile_range(t0 + r, seg[r], k0, nk, &j0, &j1);
                            float corr;
                            if (fused) { /* attention_rows_bf16.h: the step and its packing in registers */
                                corr = att_forward_row_bf16(s, nk, j0, j1, scale, &run_max[r], &run_sum[r],
                                                            p_words + r * kw_nk);
                            } else {
                                corr = att_forward_row(s, nk, j0, j1, scale, softcap, &run_max[r], &run_sum[r]);
                                tg16_pack_rows(p_words + r * kw_nk, kw_nk, s, LD_FWD_TILE, 1, nk);
                            }
                            att_rescale_row(O + (size_t)r * HS, corr, HS);
                        }
                        /* O (rows, HS) += P · V_tile */
                        tile_gemm_bf16(rows, HS, nk, p_words, kw_nk, vp + (int64_t)(k0 / 2) * TG_NR, kw_t * TG_NR, O,
                                       HS, 1);
                    }
                    att_forward_finish(out + ((size_t)b * T + t0) * ldo + (size_t)h * HS, ldo,
                                       lse + ((size_t)b * NH + h) * T + t0, O, run_max, run_sum, rows, HS);
                }
        free(S);
        free(O);
        free(q_words);
        free(p_words);
    }
    cpu_free(packs);
}

/* dK and dV's rows (stride ld) of kv head kvh = Σ over its group's query heads, in head order, of
 * their transposed partials (HS, T; row stride ldp); t in blocks of 16, so each partial row's 64 bytes serve 16 t. */
static void sum_transposed_partials(float *dst, int64_t ld, const float *first, size_t head_stride, int group,
                                    int64_t ldp, int HS, int t_begin, int t_end) {
    for (int t = t_begin; t < t_end; t++) {
        float *row = dst + (int64_t)t * ld;
        for (int e = 0; e < HS; e++) {
            const float *src = first + e * ldp + t;
            float acc = src[0];
            for (int g = 1; g < group; g++) acc += src[(size_t)g * head_stride];
            row[e] = acc;
        }
    }
}

void attention_backward_bf16_tiles(void *dq_, void *dk_, void *dv_, const void *dout_, const void *out_,
                                   const float *lse, const void *q_, const void *k_, const void *v_,
                                   const int32_t *seg_start, int B, int T, int NH, int NKV, int HS, int ld_qkv,
                                   float softcap) {
    float *dq = dq_, *dk = dk_, *dv = dv_;
    const float *dout = dout_, *out = out_, *q = q_, *k = k_, *v = v_;
    int group = NH / NKV, fused = softcap == 0.0f && att_rows_bf16_fused(); /* attention_rows_bf16.h */
    float scale = 1.0f / sqrtf((float)HS);
    int ldq = ld_qkv, ldkv = ld_qkv, ldo = NH * HS;
    int64_t kw_hs = tg16_words(HS), kw_t = tg16_words(T);
    /* per (batch row, query head): dKᵀ and dVᵀ partials, (HS, T) each with row stride ldp, kept
     * between calls; Qᵀ and dOᵀ rows ldp / 2 words apart (cpu_plan.h: no power-of-two strides) */
    int64_t ldp = (int64_t)fl_cpu_attention_row_ld(T), ldt = ldp / 2;
    size_t part_elems = (size_t)ldp * HS;
    float *parts = fl_cpu_scratch(FL_CPU_SCRATCH_ATTN_PARTIALS, fl_cpu_attention_partial_bytes(B, T, NH, HS));
    /* per (batch row, kv head): Kᵀ and Vᵀ in key panels, K in column panels along the keys */
    size_t kt_words = (size_t)tg_round_up(T) * kw_hs, kc_words = (size_t)tg_round_up(HS) * kw_t;
    size_t per_kv = 2 * kt_words + kc_words;
    uint32_t *packs = cpu_alloc_scratch(sizeof(uint32_t) * B * NKV * per_kv);
    #pragma omp parallel
    {
        #pragma omp for schedule(static) collapse(2)
        for (int b = 0; b < B; b++)
            for (int kvh = 0; kvh < NKV; kvh++) {
                uint32_t *kt = packs + ((size_t)b * NKV + kvh) * per_kv;
                size_t src = (size_t)b * T * ldkv + (size_t)kvh * HS;
                tg16_pack_panels_transposed(kt, k + src, ldkv, T, HS);
                tg16_pack_panels_transposed(kt + kt_words, v + src, ldkv, T, HS);
                tg16_pack_panels(kt + 2 * kt_words, kw_t * TG_NR, k + src, ldkv, T, HS);
            }
        /* a tile's P and dS, row stride LD_TILE */
        float *P = fl_malloc(sizeof(float) * BQB * LD_TILE), *dS = fl_malloc(sizeof(float) * BQB * LD_TILE);
        float *D = fl_malloc(sizeof(float) * (size_t)T);
        /* a tile's P and dS as panels along the queries, and dS as rows */
        size_t panel_words = (size_t)(BQB / 2) * BKB;
        uint32_t *p_panels = cpu_alloc_scratch(sizeof(uint32_t) * (2 * panel_words + (size_t)BQB * (BKB / 2)));
        uint32_t *ds_panels = p_panels + panel_words, *ds_words = ds_panels + panel_words;
        /* the task's Q and dO as rows (T, kw_hs) and transposed (HS, ldt), and its dQ sums (T, HS) */
        size_t row_words = (size_t)T * kw_hs, col_words = (size_t)HS * ldt;
        uint32_t *q_words = cpu_alloc_scratch(sizeof(uint32_t) * 2 * (row_words + col_words));
        uint32_t *do_words = q_words + row_words, *qt_words = do_words + row_words, *dot_words = qt_words + col_words;
        float *dq_rows = cpu_alloc_scratch(sizeof(float) * (size_t)T * HS);
        #pragma omp for schedule(dynamic, 1) collapse(2)
        for (int b = 0; b < B; b++)
            for (int h = 0; h < NH; h++) {
                const uint32_t *kt = packs + ((size_t)b * NKV + h / group) * per_kv, *vt = kt + kt_words;
                const uint32_t *kc = kt + 2 * kt_words;
                const float *q_h = q + (size_t)b * T * ldq + (size_t)h * HS;
                const float *do_h = dout + (size_t)b * T * ldo + (size_t)h * HS, *o_h = out + (size_t)b * T * ldo + (size_t)h * HS;
                const float *lse_h = lse + ((size_t)b * NH + h) * T;
                const int32_t *seg = seg_start + (size_t)b * T;
                float *dkt_h = parts + (2 * ((size_t)b * NH + h)) * part_elems; // (HS, T)
                float *dvt_h = dkt_h + part_elems;                               // (HS, T)
                memset(dkt_h, 0, sizeof(float) * 2 * part_elems);
                att_backward_d(D, do_h, o_h, ldo, T, HS);
                tg16_pack_rows(q_words, kw_hs, q_h, ldq, T, HS);
                tg16_pack_rows(do_words, kw_hs, do_h, ldo, T, HS);
                tg16_pack_rows_transposed(qt_words, ldt, q_h, ldq, T, HS);
                tg16_pack_rows_transposed(dot_words, ldt, do_h, ldo, T, HS);
                memset(dq_rows, 0, sizeof(float) * (size_t)T * HS);
                for (int k0 = 0; k0 < T; k0 += BKB) {
                    int nk = T - k0 < BKB ? T - k0 : BKB;
                    const uint32_t *kt_tile = kt + (int64_t)(k0 / TG_NR) * kw_hs * TG_NR;
                    const uint32_t *vt_tile = vt + (int64_t)(k0 / TG_NR) * kw_hs * TG_NR;
                    for (int t0 = k0 / BQB * BQB; t0 < T; t0 += BQB) { /* the query blocks that see these keys */
                        int rows = T - t0 < BQB ? T - t0 : BQB;
                        if (att_earliest_key(seg + t0, rows) >= k0 + nk) continue; /* every row's segment starts after the tile */
                        /* keys past the block's last query are masked for all its rows: leave them out */
                        int nq = t0 + rows - k0 < nk ? t0 + rows - k0 : nk;
                        /* P = Q_blk · K_tileᵀ, dP (in dS) = dO_blk · V_tileᵀ */
                        tile_gemm_bf16(rows, nq, HS, q_words + t0 * kw_hs, kw_hs, kt_tile, kw_hs * TG_NR, P, LD_TILE, 0);
                        tile_gemm_bf16(rows, nq, HS, do_words + t0 * kw_hs, kw_hs, vt_tile, kw_hs * TG_NR, dS, LD_TILE,
                                       0);
                        /* p and ds a pair of rows at a time, packed while the pair is in L1: P and dS
                         * as panels along the queries (one word row per pair), dS as rows */
                        int64_t tile_panel = tg16_words(rows) * TG_NR, kw_nq = tg16_words(nq);
                        for (int r0 = 0; r0 < rows; r0 += 2) {
                            int pair = rows - r0 < 2 ? 1 : 2;
                            float *p_r = P + (size_t)r0 * LD_TILE, *ds_r = dS + (size_t)r0 * LD_TILE;
                            if (fused) { /* the same values, computed and packed in registers */
                                int j0[2], j1[2];
                                for (int i = 0; i < pair; i++)
                                    att_tile_range(t0 + r0 + i, seg[t0 + r0 + i], k0, nq, &j0[i], &j1[i]);
                                att_backward_pair_bf16(p_r, ds_r, LD_TILE, pair, nq, j0, j1, lse_h + t0 + r0,
                                                       D + t0 + r0, scale, p_panels + (r0 / 2) * TG_NR,
                                                       ds_panels + (r0 / 2) * TG_NR, tile_panel,
                                                       ds_words + (int64_t)r0 * kw_nq, kw_nq);
                                continue;
                            }
                            for (int r = r0; r < r0 + pair; r++) {
                                int j0, j1;
                                att_tile_range(t0 + r, seg[t0 + r], k0, nq, &j0, &j1);
                                att_backward_row(P + (size_t)r * LD_TILE, dS + (size_t)r * LD_TILE, nq, j0, j1,
                                                 lse_h[t0 + r], D[t0 + r], scale, softcap);
                            }
                            tg16_pack_panels(p_panels + (r0 / 2) * TG_NR, tile_panel, p_r, LD_TILE, pair, nq);
                            tg16_pack_panels(ds_panels + (r0 / 2) * TG_NR, tile_panel, ds_r, LD_TILE, pair, nq);
                            tg16_pack_rows(ds_words + (int64_t)r0 * kw_nq, kw_nq, ds_r, LD_TILE, pair, nq);
                        }
                        /* dVᵀ_tile += dO_blkᵀ · P;  dKᵀ_tile += Q_blkᵀ · dS;  dQ_blk += dS · K_tile */
                        tile_gemm_bf16(HS, nq, rows, dot_words + t0 / 2, ldt, p_panels, tile_panel, dvt_h + k0, ldp, 1);
                        tile_gemm_bf16(HS, nq, rows, qt_words + t0 / 2, ldt, ds_panels, tile_panel, dkt_h + k0, ldp, 1);
                        tile_gemm_bf16(rows, HS, nq, ds_words, kw_nq, kc + (int64_t)(k0 / 2) * TG_NR, kw_t * TG_NR,
                                       dq_rows + (size_t)t0 * HS, HS, 1);
                    }
                }
                float *dq_h = dq + (size_t)b * T * ldq + (size_t)h * HS;
                for (int t = 0; t < T; t++)
                    memcpy(dq_h + (size_t)t * ldq, dq_rows + (size_t)t * HS, sizeof(float) * (size_t)HS);
            }
        free(P);
        free(dS);
        free(D);
        cpu_free(p_panels);
        cpu_free(q_words);
        cpu_free(dq_rows);
        /* dK, dV (rows of stride ld_qkv) = Σ over the group's heads of the transposed partials */
        int n_tblk = (T + 15) / 16;
        #pragma omp for schedule(static) collapse(3)
        for (int b = 0; b < B; b++)
            for (int kvh = 0; kvh < NKV; kvh++)
                for (int tb = 0; tb < n_tblk; tb++) {
                    int t_begin = tb * 16, t_end = t_begin + 16 < T ? t_begin + 16 : T;
                    const float *first = parts + (2 * ((size_t)b * NH + (size_t)kvh * group)) * part_elems;
                    size_t off = (size_t)b * T * ldkv + (size_t)kvh * HS;
                    sum_transposed_partials(dk + off, ldkv, first, 2 * part_elems, group, ldp, HS, t_begin, t_end);
                    sum_transposed_partials(dv + off, ldkv, first + part_elems, 2 * part_elems, group, ldp, HS,
                                            t_begin, t_end);
                }
    }
    cpu_free(packs);
}

/* The bf16 backend's ops: these tiles where vdpbf16ps runs them, the f32 tiles elsewhere. */
static int bf16_tiles_pay(void) { return fl_cpu_isa_active() >= FL_CPU_ISA_AVX512_BF16; }

void attention_forward_cpu_bf16(void *out, float *lse, const void *q, const void *k, const void *v,
                                const int32_t *seg_start, int B, int T, int NH, int NKV, int HS, int ld_qkv,
                                float softcap) {
    (bf16_tiles_pay() ? attention_forward_bf16_tiles : attention_forward_cpu)(out, lse, q, k, v, seg_start, B, T, NH,
                                                                              NKV, HS, ld_qkv, softcap);
}

void attention_backward_cpu_bf16(void *dq, void *dk, void *dv, const void *dout, const void *out, const float *lse,
                                 const void *q, const void *k, const void *v, const int32_t *seg_start, int B, int T,
                                 int NH, int NKV, int HS, int ld_qkv, float softcap) {
    (bf16_tiles_pay() ? attention_backward_bf16_tiles : attention_backward_cpu)(dq, dk, dv, dout, out, lse, q, k, v,
                                                                                seg_start, B, T, NH, NKV, HS, ld_qkv,
                                                                                softcap);
}
