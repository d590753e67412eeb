/* cpu_attention_rows.h — the per-row arithmetic both CPU attentions share (cpu_attention.c with
 * f32 tiles, cpu_attention_bf16.c with bf16 ones): the tile sizes, which keys of a tile a query
 * sees, the forward's online-softmax step and the backward's probabilities and score gradients.
 * The formulas are in cpu_attention.c's header; here they are written once. Not the tiles'
 * products. */
#ifndef FL_CPU_ATTENTION_ROWS_H
#define FL_CPU_ATTENTION_ROWS_H

#include <math.h>
#include <stdint.h>

#include "common/fastmath.h"

/* Tile sizes, measured on a 2-core AVX2 machine (smollm2 shapes, dev/cpu/bench_attention.c):
 * with the library sgemm, QB 64 x KB 256 beat QB 32 (KB 128-512) by 5-20% and untiled keys by
 * 15-40%; with tile_gemm the backward at 1 x 2048 ran within noise of each other (128-156 ms) for
 * (QB, KB) from (32, 128) to (128, 128) and (64, 512), so 64 x 256 stayed. The -D overrides are for
 * such experiments. */
#ifndef FL_ATT_QB
#define FL_ATT_QB 64
#endif
#ifndef FL_ATT_KB
#define FL_ATT_KB 256
#endif
#ifndef FL_ATT_BQB
#define FL_ATT_BQB 64
#endif
#ifndef FL_ATT_BKB
#define FL_ATT_BKB 256
#endif
#define QB FL_ATT_QB   /* forward: query rows per tile */
#define KB FL_ATT_KB   /* forward: keys per tile: at T <= 256 a query block is one tile */
#define BQB FL_ATT_BQB /* backward: query rows per tile */
#define BKB FL_ATT_BKB /* backward: keys per tile */

/* The earliest key any of the `rows` queries from seg[0] on sees: their smallest segment start. */
static inline int att_earliest_key(const int32_t *seg, int rows) {
    int first = seg[0];
    for (int r = 1; r < rows; r++) first = seg[r] < first ? seg[r] : first;
    return first;
}

/* The keys query t sees inside the tile of keys [k0, k0 + nk): [*j0, *j1) relative to k0, maybe
 * empty. seg is the query's segment start. */
static inline void att_tile_range(int t, int seg, int k0, int nk, int *j0, int *j1) {
    int lo = seg > k0 ? seg - k0 : 0, hi = t - k0 + 1 < nk ? t - k0 + 1 : nk;
    lo = lo < nk ? lo : nk; /* a segment that starts past the tile: nothing here (and no write past it) */
    *j0 = lo;
    *j1 = hi > lo ? hi : lo;
}

/* The forward's step for one query row over a tile of nk raw scores s (q·k, unscaled) of which
 * [j0, j1) are seen: s becomes the unnormalized probabilities exp(s' − m) (0 outside the range),
 * the running max and sum move on, and the factor the row's output sums must be multiplied by
 * (the old max's exp relative to the new one) is returned. */
static inline float att_forward_row(float *s, int nk, int j0, int j1, float scale, float softcap, float *run_max,
                                    float *run_sum) {
    float sc = scale;
    if (softcap > 0.0f) { /* s ← c·tanh(s·scale/c): scaled already */
        float inv_cap = scale / softcap;
        for (int j = j0; j < j1; j++) s[j] = softcap * tanhf(s[j] * inv_cap);
        sc = 1.0f;
    }
    float s_max = -INFINITY; /* scale > 0: max(s)·scale is max(s·scale), rounding included */
    #pragma omp simd reduction(max : s_max)
    for (int j = j0; j < j1; j++) s_max = s[j] > s_max ? s[j] : s_max;
    float m = s_max * sc > *run_max ? s_max * sc : *run_max;
    /* rows with no key here yet keep max -inf: their p and sum stay 0 */
    float corr = m == -INFINITY ? 1.0f : fl_expf(*run_max - m), sum = 0.0f;
    for (int j = 0; j < j0; j++) s[j] = 0.0f;
    #pragma omp simd reduction(+ : sum)
    for (int j = j0; j < j1; j++) {
        s[j] = fl_expf(s[j] * sc - m);
        sum += s[j];
    }
    for (int j = j1; j < nk; j++) s[j] = 0.0f;
    *run_sum = *run_sum * corr + sum;
    *run_max = m;
    return corr;
}

/* The backward's step for one query row over a tile of nq keys: p holds the raw scores q·k and
 * ds the raw dp = dO·v; [j0, j1) are seen. p becomes the probabilities (from the row's lse L),
 * ds the score gradients scaled for dq and dk (ds = p (dp − D)·scale, times the soft-cap's
 * 1 − tanh²), both 0 outside the range. */
static inline void att_backward_row(float *p, float *ds, int nq, int j0, int j1, float L, float Dr, float scale,
                                    float softcap) {
    for (int j = 0; j < j0; j++) p[j] = ds[j] = 0.0f;
    if (softcap > 0.0f) {
        float inv_cap = scale / softcap;
        for (int j = j0; j < j1; j++) {
            float th = tanhf(p[j] * inv_cap); /* the forward's tanh, recomputed */
            p[j] = fl_expf(softcap * th - L);
            ds[j] = p[j] * (ds[j] - Dr) * (1.0f - th * th) * scale;
        }
    } else {
        #pragma omp simd
        for (int j = j0; j < j1; j++) {
            p[j] = fl_expf(p[j] * scale - L);
            ds[j] = p[j] * (ds[j] - Dr) * scale;
        }
    }
    for (int j = j1; j < nq; j++) p[j] = ds[j] = 0.0f;
}

/* A query row's output sums times the forward's correction factor (nothing when it is 1). */
static inline void att_rescale_row(float *o, float corr, int HS) {
    if (corr == 1.0f) return;
    #pragma omp simd
    for (int e = 0; e < HS; e++) o[e] *= corr;
}

/* The forward's last step for a query block: each row's output (row stride ldo) is its sums O
 * (rows, HS) divided by the running sum, its lse the running max plus the sum's log. */
static inline void att_forward_finish(float *out, int64_t ldo, float *lse, const float *O, const float *run_max,
                                      const float *run_sum, int rows, int HS) {
    for (int r = 0; r < rows; r++) {
        float inv = 1.0f / run_sum[r], *o = out + r * ldo;
        const float *acc = O + (int64_t)r * HS;
        #pragma omp simd
        for (int e = 0; e < HS; e++) o[e] = acc[e] * inv;
        lse[r] = run_max[r] + logf(run_sum[r]);
    }
}

/* D_t = dO_t·out_t for the T rows of one head (row stride ldo each). */
static inline void att_backward_d(float *D, const float *dout, const float *out, int64_t ldo, int T, int HS) {
    for (int t = 0; t < T; t++) {
        const float *dor = dout + t * ldo, *orow = out + t * ldo;
        float acc = 0.0f;
        #pragma omp simd reduction(+ : acc)
        for (int e = 0; e < HS; e++) acc += dor[e] * orow[e];
        D[t] = acc;
    }
}

#endif
