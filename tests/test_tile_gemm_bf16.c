/* test_tile_gemm_bf16.c — the bf16 attention tiles' GEMM and packings (backend/cpu/tile_gemm_bf16.c)
 * against double sums of the bf16-rounded operands, on shapes with every edge: odd k (a half-
 * filled last pair), n past one and two 16-column panels, m past the 8-row block, k offsets.
 *
 * Tolerance: the products of two bf16 are exact in f32, so the only error is the f32 sum of k
 * terms: |err| ≤ k·2^-24·Σ|a·b| (checked with k·2^-23). The packings are checked exactly: packing
 * Xᵀ through the transposing packer gives the same words as packing the explicit transpose. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/tile_gemm_bf16.h"
#include "common/dtype.h"
#include "common/rng.h"
#include "test.h"

typedef void (*gemm_fn)(int, int, int, const uint32_t *, int64_t, const uint32_t *, int64_t, float *, int64_t, int);

static float bf(float x) { return fl_bf16_to_f32(fl_f32_to_bf16(x)); }

static void check_one(gemm_fn gemm, const char *name, int m, int n, int k, int accumulate) {
    float *a = malloc(sizeof(float) * m * k), *at = malloc(sizeof(float) * k * m);
    float *b = malloc(sizeof(float) * k * n), *bt = malloc(sizeof(float) * n * k);
    fl_rng_fill_uniform(a, (size_t)m * k, fl_rng_stream(21, m, n, k), -2, 2);
    fl_rng_fill_uniform(b, (size_t)k * n, fl_rng_stream(22, m, n, k), -2, 2);
    for (int i = 0; i < m; i++)
        for (int p = 0; p < k; p++) at[(size_t)p * m + i] = a[(size_t)i * k + p];
    for (int p = 0; p < k; p++)
        for (int j = 0; j < n; j++) bt[(size_t)j * k + p] = b[(size_t)p * n + j];
    int64_t kw = tg16_words(k), lda = kw + 3, panel = kw * TG_NR;
    size_t a_words = (size_t)m * lda, b_words = (size_t)tg_round_up(n) * kw;
    uint32_t *pa = calloc(a_words, 4), *pa2 = calloc(a_words, 4), *pb = calloc(b_words, 4), *pb2 = calloc(b_words, 4);
    tg16_pack_rows(pa, lda, a, k, m, k);
    tg16_pack_rows_transposed(pa2, lda, at, m, k, m);
    tg16_pack_panels(pb, panel, b, n, k, n);
    tg16_pack_panels_transposed(pb2, bt, k, n, k);
    CHECK_MSG(memcmp(pa, pa2, a_words * 4) == 0, "%s %dx%dx%d: A packings differ", name, m, n, k);
    CHECK_MSG(memcmp(pb, pb2, b_words * 4) == 0, "%s %dx%dx%d: B packings differ", name, m, n, k);
    int ldc = n + 5;
    float *c = malloc(sizeof(float) * m * ldc);
    for (int i = 0; i < m * ldc; i++) c[i] = accumulate ? 0.25f * (float)(i % 7) : NAN;
    gemm(m, n, k, pa, lda, pb, panel, c, ldc, accumulate);
    double worst = 0;
    for (int i = 0; i < m; i++) {
        for (int j = 0; j < n; j++) {
            double want = accumulate ? 0.25 * ((i * ldc + j) % 7) : 0, mag = fabs(want);
            for (int p = 0; p < k; p++) {
                double t = (double)bf(a[(size_t)i * k + p]) * bf(b[(size_t)p * n + j]);
                want += t;
                mag += fabs(t);
            }
            double err = fabs(c[i * ldc + j] - want) / (k * ldexp(1.0, -23) * mag + 1e-30);
            worst = err > worst ? err : worst;
        }
        for (int j = n; j < ldc; j++) /* past n: untouched */
            CHECK_MSG(accumulate ? c[i * ldc + j] == 0.25f * (float)((i * ldc + j) % 7) : isnan(c[i * ldc + j]),
                      "%s %dx%dx%d: column %d written", name, m, n, k, j);
    }
    CHECK_MSG(worst <= 1.0, "%s %dx%dx%d acc=%d: error %.3g of the bound", name, m, n, k, accumulate, worst);
    free(a); free(at); free(b); free(bt); free(pa); free(pa2); free(pb); free(pb2); free(c);
}

static void check_all(gemm_fn gemm, const char *name) {
    static const int ms[] = {1, 7, 8, 9, 17, 64}, ns[] = {1, 15, 16, 17, 32, 33, 64, 100}, ks[] = {1, 2, 7, 16, 63, 64, 256};
    for (size_t i = 0; i < sizeof ms / sizeof *ms; i++)
        for (size_t j = 0; j < sizeof ns / sizeof *ns; j++)
            for (size_t l = 0; l < sizeof ks / sizeof *ks; l++) check_one(gemm, name, ms[i], ns[j], ks[l], (int)((i + j + l) % 2));
}

TEST(tile_gemm_bf16_matches_double_sums_all_edges) { check_all(tile_gemm_bf16, "tile_gemm_bf16"); }
TEST(tile_gemm_bf16_portable_matches_double_sums_all_edges) {
    check_all(tile_gemm_bf16_portable, "tile_gemm_bf16_portable");
}

/* A product starting at an even k offset of packed operands reads the pairs from there on. */
TEST(tile_gemm_bf16_offsets_read_from_the_pair) {
    int m = 9, n = 20, k = 50, k0 = 18;
    float *a = malloc(sizeof(float) * m * k), *b = malloc(sizeof(float) * k * n);
    fl_rng_fill_uniform(a, (size_t)m * k, fl_rng_stream(23, 0, 0, 0), -1, 1);
    fl_rng_fill_uniform(b, (size_t)k * n, fl_rng_stream(24, 0, 0, 0), -1, 1);
    int64_t kw = tg16_words(k), panel = kw * TG_NR;
    uint32_t *pa = malloc(4 * (size_t)m * kw), *pb = malloc(4 * (size_t)tg_round_up(n) * kw);
    tg16_pack_rows(pa, kw, a, k, m, k);
    tg16_pack_panels(pb, panel, b, n, k, n);
    float c[9 * 20];
    tile_gemm_bf16(m, n, k - k0, pa + k0 / 2, kw, pb + (k0 / 2) * TG_NR, panel, c, n, 0);
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double want = 0, mag = 0;
            for (int p = k0; p < k; p++) {
                double t = (double)bf(a[i * k + p]) * bf(b[p * n + j]);
                want += t;
                mag += fabs(t);
            }
            CHECK(fabs(c[i * n + j] - want) <= k * ldexp(1.0, -23) * mag);
        }
    free(a); free(b); free(pa); free(pb);
}
