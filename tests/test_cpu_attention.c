/* test_cpu_attention.c — the CPU attention (backend/cpu/cpu_attention.c) against a direct
 * double-precision evaluation of its formula, at lengths that span several query and key tiles
 * (QB 64, KB 256), with documents packed into rows (segment starts inside and across tiles), GQA,
 * and q/k/v in one padded buffer; and the same bits for 1 and 2 threads. The finite-difference
 * check (test_gradcheck.c) covers the calculus at a tiny size; this covers the tiling. With a sliding
 * window W the op gets engine/model.h's fl_window_key_start as its seg_start while the reference
 * applies transformers' rule itself: key j visible to query t iff seg <= j, t - W < j <= t. With a
 * soft-cap c (Gemma 2) the reference caps each scaled score, s' = c·tanh(s/c), before the softmax
 * (as transformers' eager_attention_forward does, before the mask) and multiplies its gradient by
 * 1 − tanh²(s/c).
 *
 * Tolerances: outputs are convex combinations of v (|v| <= 1) and gradients sums of at most T
 * terms of O(1), all accumulated in f32 with an online softmax: the error is a few f32 ulps per
 * term, ~ T · 2^-24 ≈ 4e-5 at T = 600; checked to 2e-4 of the largest reference entry. The cap adds
 * one f32 tanh per score (a few ulps, |ds'/ds| <= 1 only shrinks the gradient): the same bound. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_ops.h"
#include "common/dtype.h"
#include "common/rng.h"
#include "engine/model.h"
#include "test.h"

typedef struct { int B, T, NH, NKV, HS, pad; const int *doc_starts; int n_docs; int window; float cap; } attn_shape;

/* The reference: out, lse and dq/dk/dv (into dqkv, same layout as qkv) in double; out_abs and
 * dqkv_abs get the sums of the terms' magnitudes (Σ p|v|, Σ |ds||k|, ...), the scale of the error
 * one rounding of p or ds per term makes (the bf16 tiles). */
static void reference(const attn_shape *s, const float *qkv, const float *dout, const int32_t *seg, double *out,
                      double *lse, double *dqkv, double *out_abs, double *dqkv_abs) {
    int ld = (s->NH + 2 * s->NKV) * s->HS + s->pad, group = s->NH / s->NKV, HS = s->HS, T = s->T;
    double scale = 1.0 / sqrt((double)HS);
    double *p = malloc(sizeof(double) * T), *dp = malloc(sizeof(double) * T), *dcap = malloc(sizeof(double) * T);
    memset(dqkv, 0, sizeof(double) * (size_t)s->B * T * ld);
    memset(dqkv_abs, 0, sizeof(double) * (size_t)s->B * T * ld);
    for (int b = 0; b < s->B; b++)
        for (int h = 0; h < s->NH; h++) {
            int qo = h * HS, ko = s->NH * HS + (h / group) * HS, vo = (s->NH + s->NKV) * HS + (h / group) * HS;
            for (int t = 0; t < T; t++) {
                const float *qt = qkv + ((size_t)b * T + t) * ld + qo;
                int j0 = seg[b * T + t];
                if (s->window > 0 && t - s->window + 1 > j0) j0 = t - s->window + 1; /* kv_idx > q_idx - W */
                double m = -INFINITY, sum = 0;
                for (int j = j0; j <= t; j++) {
                    const float *kj = qkv + ((size_t)b * T + j) * ld + ko;
                    double d = 0;
                    for (int e = 0; e < HS; e++) d += (double)qt[e] * kj[e];
                    p[j] = d * scale;
                    dcap[j] = 1;
                    if (s->cap > 0) { /* s' = c·tanh(s/c), ds'/ds = 1 − tanh² */
                        double th = tanh(p[j] / s->cap);
                        p[j] = s->cap * th;
                        dcap[j] = 1 - th * th;
                    }
                    m = p[j] > m ? p[j] : m;
                }
                for (int j = j0; j <= t; j++) sum += exp(p[j] - m);
                lse[((size_t)b * s->NH + h) * T + t] = m + log(sum);
                double *o = out + ((size_t)b * T + t) * s->NH * HS + qo, D = 0;
                double *oa = out_abs + ((size_t)b * T + t) * s->NH * HS + qo;
                const float *dot = dout + ((size_t)b * T + t) * s->NH * HS + qo;
                for (int e = 0; e < HS; e++) o[e] = oa[e] = 0;
                for (int j = j0; j <= t; j++) {
                    p[j] = exp(p[j] - m) / sum;
                    const float *vj = qkv + ((size_t)b * T + j) * ld + vo;
                    for (int e = 0; e < HS; e++) {
                        o[e] += p[j] * vj[e];
                        oa[e] += p[j] * fabs(vj[e]);
                    }
                }
                for (int e = 0; e < HS; e++) D += dot[e] * o[e];
                for (int j = j0; j <= t; j++) {
                    const float *vj = qkv + ((size_t)b * T + j) * ld + vo, *kj = vj - vo + ko;
                    double d = 0;
                    for (int e = 0; e < HS; e++) d += (double)dot[e] * vj[e];
                    dp[j] = p[j] * (d - D) * dcap[j] * scale;
                    double *dq = dqkv + ((size_t)b * T + t) * ld + qo, *dk = dqkv + ((size_t)b * T + j) * ld + ko;
                    double *dv = dqkv + ((size_t)b * T + j) * ld + vo;
                    double *aq = dq - dqkv + dqkv_abs, *ak = dk - dqkv + dqkv_abs, *av = dv - dqkv + dqkv_abs;
                    for (int e = 0; e < HS; e++) {
                        dq[e] += dp[j] * kj[e];
                        dk[e] += dp[j] * qt[e];
                        dv[e] += p[j] * dot[e];
                        aq[e] += fabs(dp[j] * kj[e]);
                        ak[e] += fabs(dp[j] * qt[e]);
                        av[e] += fabs(p[j] * dot[e]);
                    }
                }
            }
        }
    free(p);
    free(dp);
    free(dcap);
}

static double max_err(const float *got, const double *want, size_t n, size_t stride, int width, double *max_ref) {
    double worst = 0;
    *max_ref = 0;
    for (size_t i = 0; i < n; i++) {
        if (stride && (int)(i % stride) >= width) continue;
        worst = fmax(worst, fabs(got[i] - want[i]));
        *max_ref = fmax(*max_ref, fabs(want[i]));
    }
    return worst;
}

/* The worst of |got − want| − bound·abs (≤ 0 when every element is within bound of its terms'
 * magnitude), over the same elements as max_err. */
static double excess(const float *got, const double *want, const double *abs, double bound, size_t n, size_t stride,
                     int width) {
    double worst = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        if (stride && (int)(i % stride) >= width) continue;
        worst = fmax(worst, fabs(got[i] - want[i]) - bound * abs[i]);
    }
    return worst;
}

/* bf16_tiles: the bf16 backend's tiles (cpu_attention_bf16.c) instead of the f32 ones, on inputs
 * already bf16 (so the reference sees the values those tiles multiply). What remains is one bf16
 * rounding (≤ 2^-9 relative) of p or ds in each term of out, dq, dk and dv: each is checked to
 * 2^-8 of its terms' summed magnitudes, plus the f32 bound above. A transpose, a wrong pair or a
 * panel offset moves whole terms: far outside it. */
static void check_shape_with(const attn_shape *s, int bf16_tiles) {
    int ld = (s->NH + 2 * s->NKV) * s->HS + s->pad, width = ld - s->pad;
    size_t N = (size_t)s->B * s->T, n_qkv = N * ld, n_out = N * s->NH * s->HS, n_lse = (size_t)s->B * s->NH * s->T;
    float *qkv = malloc(sizeof(float) * n_qkv), *dout = malloc(sizeof(float) * n_out);
    fl_rng_fill_uniform(qkv, n_qkv, fl_rng_stream(11, s->T, s->NH, s->HS), -1, 1);
    fl_rng_fill_uniform(dout, n_out, fl_rng_stream(12, s->T, s->NH, s->HS), -1, 1);
    if (bf16_tiles) {
        for (size_t i = 0; i < n_qkv; i++) qkv[i] = fl_bf16_to_f32(fl_f32_to_bf16(qkv[i]));
        for (size_t i = 0; i < n_out; i++) dout[i] = fl_bf16_to_f32(fl_f32_to_bf16(dout[i]));
    }
    for (size_t n = 0; n < N; n++)
        for (int e = width; e < ld; e++) qkv[n * ld + e] = NAN; /* padding: never read */
    int32_t *seg = malloc(sizeof(int32_t) * N);
    for (int b = 0; b < s->B; b++)
        for (int t = 0; t < s->T; t++) {
            int start = 0;
            if (b == s->B - 1) /* the last row holds several documents */
                for (int d = 0; d < s->n_docs; d++)
                    if (s->doc_starts[d] <= t) start = s->doc_starts[d];
            seg[b * s->T + t] = start;
        }
    double *out_ref = malloc(sizeof(double) * n_out), *lse_ref = malloc(sizeof(double) * n_lse);
    double *d_ref = malloc(sizeof(double) * n_qkv), *out_abs = malloc(sizeof(double) * n_out);
    double *d_abs = malloc(sizeof(double) * n_qkv);
    reference(s, qkv, dout, seg, out_ref, lse_ref, d_ref, out_abs, d_abs);
    int32_t *key_start = malloc(sizeof(int32_t) * N); /* what the engine hands the op */
    fl_window_key_start(key_start, seg, (size_t)s->B, s->T, s->window);

    float *out = malloc(sizeof(float) * n_out), *lse = malloc(sizeof(float) * n_lse);
    float *d[2] = {malloc(sizeof(float) * n_qkv), malloc(sizeof(float) * n_qkv)};
    int threads = omp_get_max_threads();
    for (int run = 0; run < 2; run++) {
        omp_set_num_threads(run == 0 ? 1 : (threads > 1 ? threads : 2));
        const float *q = qkv, *k = q + s->NH * s->HS, *v = k + s->NKV * s->HS;
        (bf16_tiles ? attention_forward_bf16_tiles : attention_forward_cpu)(out, lse, q, k, v, key_start, s->B, s->T,
                                                                            s->NH, s->NKV, s->HS, ld, s->cap);
        for (size_t i = 0; i < n_qkv; i++) d[run][i] = 0.0f;
        (bf16_tiles ? attention_backward_bf16_tiles : attention_backward_cpu)(d[run], d[run] + s->NH * s->HS, d[run] + (s->NH + s->NKV) * s->HS, dout, out, lse, q, k,
                               v, key_start, s->B, s->T, s->NH, s->NKV, s->HS, ld, s->cap);
    }
    omp_set_num_threads(threads);
    double ref_max, bound = bf16_tiles ? ldexp(1.0, -8) : 0.0;
    double e_out = max_err(out, out_ref, n_out, 0, 0, &ref_max);
    double x_out = excess(out, out_ref, out_abs, bound, n_out, 0, 0);
    CHECK_MSG(x_out <= 2e-4 * ref_max, "T=%d W=%d cap=%g bf16=%d: out max error %g of %g", s->T, s->window, s->cap,
              bf16_tiles, e_out, ref_max);
    double e_lse = max_err(lse, lse_ref, n_lse, 0, 0, &ref_max);
    CHECK_MSG(e_lse <= 2e-4 * fmax(ref_max, 1.0), "T=%d W=%d cap=%g: lse max error %g of %g", s->T, s->window, s->cap, e_lse, ref_max);
    double e_d = max_err(d[1], d_ref, n_qkv, ld, width, &ref_max);
    double x_d = excess(d[1], d_ref, d_abs, bound, n_qkv, ld, width);
    CHECK_MSG(x_d <= 2e-4 * ref_max, "T=%d W=%d cap=%g bf16=%d: dq|dk|dv max error %g of %g", s->T, s->window, s->cap,
              bf16_tiles, e_d, ref_max);
    int same = 1;
    for (size_t i = 0; i < n_qkv; i++) same &= (int)((i % ld) >= (size_t)width || d[0][i] == d[1][i]);
    CHECK_MSG(same, "T=%d W=%d cap=%g: 1 and 2 threads give different gradients", s->T, s->window, s->cap);
    for (size_t n = 0; n < N; n++)
        for (int e = width; e < ld; e++) CHECK(d[1][n * ld + e] == 0.0f); /* padding not written */
    free(qkv); free(dout); free(seg); free(key_start); free(out_ref); free(lse_ref); free(d_ref); free(out_abs); free(d_abs);
    free(out); free(lse); free(d[0]); free(d[1]);
}

static int bf16_pass; /* the shapes below run again on the bf16 tiles (the last test) */
static void check_shape(const attn_shape *s) { check_shape_with(s, bf16_pass); }

TEST(cpu_attention_tiles_match_double_reference_gqa_documents) {
    /* documents start inside a key tile (130), on a tile edge (256), inside a later query block
     * (300: the query blocks from 320 on skip key tile 0), and at the last token */
    static const int docs[] = {0, 130, 256, 300, 599};
    check_shape(&(attn_shape){2, 600, 4, 2, 16, 3, docs, 5, 0, 0});
}

TEST(cpu_attention_tiles_match_double_reference_odd_lengths) {
    static const int docs[] = {0, 31, 33, 257, 511};
    check_shape(&(attn_shape){1, 513, 3, 1, 8, 0, docs, 5, 0, 0}); /* T = 2·KB + 1, MQA */
    check_shape(&(attn_shape){3, 37, 2, 2, 64, 1, docs, 2, 0, 0});  /* one key tile, ragged query block */
    check_shape(&(attn_shape){1, 70, 2, 1, 20, 2, docs, 3, 0, 0});  /* head size 20: a part-filled 16-column panel */
}

/* Sliding windows (Mistral): W = 1 (each query sees itself only), W dividing neither tile (100
 * against QB 64 / KB 256: windows begin mid-tile, and from t = 356 on whole key tiles lie before
 * the window), W = KB + 1 over documents that cut the window short, and W >= T (the plain causal
 * numbers). Same tolerance: the window only removes terms. */
TEST(cpu_attention_sliding_window_matches_double_reference) {
    static const int docs[] = {0, 130, 256, 300, 599};
    check_shape(&(attn_shape){1, 70, 2, 1, 16, 1, docs, 1, 1, 0});
    check_shape(&(attn_shape){2, 600, 4, 2, 16, 3, docs, 5, 100, 0});
    check_shape(&(attn_shape){1, 600, 3, 1, 8, 0, docs, 4, 257, 0});
    check_shape(&(attn_shape){1, 37, 2, 2, 20, 2, docs, 1, 5, 0});
    check_shape(&(attn_shape){1, 70, 2, 1, 16, 0, docs, 1, 70, 0});
    check_shape(&(attn_shape){1, 70, 2, 1, 16, 0, docs, 1, 1000, 0});
}

/* Gemma 2's attention soft-cap: caps that bind hard on these scores (|s| up to ~1.5 here: 0.5),
 * that bend them (2) and Gemma 2's own 50 (close to no cap), over packed documents, GQA, windows
 * shorter than T (mid-tile and across key tiles) and the tile-spanning lengths above. */
TEST(cpu_attention_softcap_matches_double_reference) {
    static const int docs[] = {0, 130, 256, 300, 599};
    static const float caps[] = {0.5f, 2.0f, 50.0f};
    for (int i = 0; i < 3; i++) {
        float c = caps[i];
        check_shape(&(attn_shape){2, 600, 4, 2, 16, 3, docs, 5, 0, c});
        check_shape(&(attn_shape){2, 600, 4, 2, 16, 3, docs, 5, 100, c});
        check_shape(&(attn_shape){1, 513, 3, 1, 8, 0, docs, 5, 257, c});
        check_shape(&(attn_shape){3, 37, 2, 2, 64, 1, docs, 2, 5, c});
        check_shape(&(attn_shape){1, 70, 2, 1, 20, 2, docs, 3, 0, c});
    }
}

/* The bf16 backend's tiles (cpu_attention_bf16.c) on every shape above: documents, odd lengths,
 * windows and caps. At this CPU's kernel level (vdpbf16ps on AVX512_BF16, plain C below). */
TEST(cpu_attention_bf16_tiles_match_double_reference) {
    bf16_pass = 1;
    test_cpu_attention_tiles_match_double_reference_gqa_documents();
    test_cpu_attention_tiles_match_double_reference_odd_lengths();
    test_cpu_attention_sliding_window_matches_double_reference();
    test_cpu_attention_softcap_matches_double_reference();
    bf16_pass = 0;
}
