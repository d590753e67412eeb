/* test_tile_gemm.c — the attention tiles' GEMM (backend/cpu/tile_gemm.c) against a double-precision
 * sum, for both packings, both ways of reading A (row-major and transposed), overwrite and
 * accumulate, and every edge the kernel has: m not a multiple of its 6 rows, n not a multiple of
 * its 16-column panels, k = 1. The dispatched kernel (AVX2 + FMA here) and the portable one are
 * both checked, and C outside its m × n block must stay untouched.
 *
 * Tolerance: the classic bound for a sum of k products rounded in f32 (u = 2^-24), plus one more
 * rounding for adding into C: |error| ≤ (k + 1) · u · (Σ_p |a_p·b_p| + |c|), checked per element
 * (a wrong index or a dropped term breaks it by orders of magnitude: inputs are in [-1, 1]). */
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/tile_gemm.h"
#include "common/rng.h"
#include "test.h"

typedef void (*gemm_fn)(int, int, int, const float *, int64_t, int64_t, const float *, int64_t, float *, int64_t, int);

/* One product: A (m × k) from a row-major buffer read directly or as a transpose, B (k × n) packed
 * either from B itself (column panels) or from Bᵀ (transposed panels). */
static void check_case(gemm_fn gemm, const char *name, int m, int n, int k, int a_transposed, int b_from_transpose,
                       int accumulate) {
    int lda = (a_transposed ? m : k) + 3, ldb = (b_from_transpose ? k : n) + 5, ldc = n + 2;
    int a_rows = a_transposed ? k : m, b_rows = b_from_transpose ? n : k;
    float *a = malloc(sizeof(float) * (size_t)a_rows * lda), *bsrc = malloc(sizeof(float) * (size_t)b_rows * ldb);
    float *c = malloc(sizeof(float) * (size_t)(m + 1) * ldc);
    fl_rng_fill_uniform(a, (size_t)a_rows * lda, fl_rng_stream(11, m, n, k), -1.0f, 1.0f);
    fl_rng_fill_uniform(bsrc, (size_t)b_rows * ldb, fl_rng_stream(12, m, n, k), -1.0f, 1.0f);
    fl_rng_fill_uniform(c, (size_t)(m + 1) * ldc, fl_rng_stream(13, m, n, k), -1.0f, 1.0f);
    float *c0 = malloc(sizeof(float) * (size_t)(m + 1) * ldc);
    memcpy(c0, c, sizeof(float) * (size_t)(m + 1) * ldc);

    size_t packed = b_from_transpose ? (size_t)tg_round_up(n) * k : (size_t)k * tg_round_up(n);
    float *bp = malloc(sizeof(float) * packed);
    int64_t b_panel;
    if (b_from_transpose) {
        tile_pack_transposed(bp, bsrc, ldb, n, k); /* bsrc is Bᵀ (n × k) */
        b_panel = (int64_t)k * TG_NR;
    } else {
        tile_pack_columns(bp, bsrc, ldb, k, n); /* bsrc is B (k × n) */
        b_panel = (int64_t)k * TG_NR;
    }
    int64_t a_row = a_transposed ? 1 : lda, a_col = a_transposed ? lda : 1;
    gemm(m, n, k, a, a_row, a_col, bp, b_panel, c, ldc, accumulate);

    double worst = 0; /* the largest error as a multiple of its bound */
    int untouched = 1;
    for (int i = 0; i < m + 1; i++)
        for (int j = 0; j < ldc; j++) {
            size_t at = (size_t)i * ldc + j;
            if (i == m || j >= n) {
                untouched &= c[at] == c0[at];
                continue;
            }
            double want = accumulate ? c0[at] : 0.0, magnitude = fabs(want);
            for (int p = 0; p < k; p++) {
                double av = a[(size_t)i * a_row + (size_t)p * a_col];
                double bv = b_from_transpose ? bsrc[(size_t)j * ldb + p] : bsrc[(size_t)p * ldb + j];
                want += av * bv;
                magnitude += fabs(av * bv);
            }
            double bound = (k + 1) * 0x1p-24 * magnitude + 1e-30, e = fabs(c[at] - want) / bound;
            worst = e > worst ? e : worst;
        }
    CHECK_MSG(worst <= 1.0, "%s m=%d n=%d k=%d a%s b%s %s: error %.3g x its bound", name, m, n, k,
              a_transposed ? "ᵀ" : "", b_from_transpose ? "ᵀ-packed" : "-packed", accumulate ? "+=" : "=", worst);
    CHECK_MSG(untouched, "%s m=%d n=%d k=%d: wrote outside C's m x n block", name, m, n, k);
    free(a); free(bsrc); free(c); free(c0); free(bp);
}

static void check_all(gemm_fn gemm, const char *name) {
    static const int ms[] = {1, 5, 6, 7, 13, 64, 257}, ns[] = {1, 8, 15, 16, 17, 64, 250}, ks[] = {1, 7, 64, 300};
    for (size_t mi = 0; mi < sizeof ms / sizeof *ms; mi++)
        for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++)
            for (size_t ki = 0; ki < sizeof ks / sizeof *ks; ki++) {
                int variant = (int)(mi + ni + ki); /* every orientation and mode, spread over the shapes */
                check_case(gemm, name, ms[mi], ns[ni], ks[ki], variant & 1, (variant >> 1) & 1, (int)(mi & 1));
                check_case(gemm, name, ms[mi], ns[ni], ks[ki], !(variant & 1), !((variant >> 1) & 1), !(mi & 1));
            }
}

TEST(tile_gemm_matches_double_sums_all_edges) { check_all(tile_gemm, "tile_gemm"); }

TEST(tile_gemm_portable_matches_double_sums_all_edges) { check_all(tile_gemm_portable, "tile_gemm_portable"); }

TEST(tile_gemm_packs_zero_the_padding) {
    float x[3 * 5], dst[16 * 5];
    for (int i = 0; i < 15; i++) x[i] = (float)(i + 1);
    memset(dst, 0xff, sizeof dst);
    tile_pack_transposed(dst, x, 5, 3, 5); /* 3 rows -> one panel of 16, rows 3..15 zero */
    for (int p = 0; p < 5; p++)
        for (int j = 0; j < TG_NR; j++) CHECK(dst[p * TG_NR + j] == (j < 3 ? x[j * 5 + p] : 0.0f));
    memset(dst, 0xff, sizeof dst);
    tile_pack_columns(dst, x, 5, 3, 5); /* 5 columns -> one panel of 16, columns 5..15 zero */
    for (int p = 0; p < 3; p++)
        for (int j = 0; j < TG_NR; j++) CHECK(dst[p * TG_NR + j] == (j < 5 ? x[p * 5 + j] : 0.0f));
}
