/* test_nf4_gemm.c — the NF4-weight GEMMs (backend/cpu/gemm_nf4.h) against a float64 reference.
 *
 * The reference multiplies bf16(A) by the bf16 dequantization of W (fl_nf4_dequantize, itself
 * checked bit for bit against bitsandbytes in test_nf4.c) in double precision. Tolerance per
 * element, as for the bf16 GEMM (test_gemm_bf16.c): products of two bf16 are exact in f32 and only
 * the f32 summation differs, so |C - ref| <= 1e-5 · sqrt(K) · max|a| · max|w| · |alpha| + 1e-6 · |ref|.
 * With beta = 0, C starts as NaN so any read of it fails. The tiled dequantization must equal the
 * scalar one bit for bit, on the AVX2 path and the portable path.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_isa.h"
#include "backend/cpu/gemm_nf4.h"
#include "common/dtype.h"
#include "common/rng.h"
#include "test.h"

static fl_nf4_weight make_weight(int64_t rows, int64_t cols, uint64_t seed) {
    float *w = malloc(sizeof(float) * (size_t)(rows * cols));
    fl_rng_fill_uniform(w, (size_t)(rows * cols), fl_rng_stream(seed, 1, 2, 3), -0.05f, 0.05f);
    for (int64_t r = 0; r < rows; r += 5) w[r * cols] *= 40.0f;   /* outliers: blocks of very different scale */
    fl_nf4_weight W;
    CHECK_EQ_INT(fl_nf4_quantize(&W, w, FL_F32, rows, cols, 1, "w"), 0);
    free(w);
    return W;
}

TEST(nf4_dequantize_rows_bf16_exact) {
    const int64_t shapes[][2] = {{1, 7}, {3, 64}, {17, 70}, {40, 128}, {9, 1000}, {130, 96}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int64_t rows = shapes[s][0], cols = shapes[s][1];
        fl_nf4_weight W = make_weight(rows, cols, 10 + s);
        uint16_t *ref = malloc(2 * (size_t)(rows * cols)), *got = malloc(2 * (size_t)(rows * cols));
        fl_nf4_dequantize(&W, ref, FL_BF16);
        for (int portable = 0; portable < 2; portable++) {
            fl_cpu_isa_set_cap(portable ? FL_CPU_ISA_PORTABLE : -1);
            int64_t r0 = rows > 2 ? 1 : 0, r1 = rows;
            memset(got, 0xff, 2 * (size_t)(rows * cols));
            fl_nf4_dequantize_rows_bf16(&W, r0, r1, got);
            CHECK_MSG(!memcmp(got, ref + r0 * cols, 2 * (size_t)((r1 - r0) * cols)), "%lldx%lld rows %lld.. (portable %d)",
                      (long long)rows, (long long)cols, (long long)r0, portable);
        }
        fl_cpu_isa_set_cap(-1);
        free(ref);
        free(got);
        fl_nf4_free(&W);
    }
}

/* One GEMM call of each orientation against float64. */
static void check_gemm(int nt, int M, int64_t OC, int64_t IC, float alpha, float beta, uint64_t seed) {
    fl_nf4_weight W = make_weight(OC, IC, seed);
    int64_t K = nt ? IC : OC, N = nt ? OC : IC;
    int lda = (int)K + 3, ldc = (int)N + 5;
    float *A = malloc(sizeof(float) * (size_t)M * lda), *C = malloc(sizeof(float) * (size_t)M * ldc);
    float *C0 = malloc(sizeof(float) * (size_t)M * ldc), *wf = malloc(sizeof(float) * (size_t)(OC * IC));
    fl_rng_fill_uniform(A, (size_t)M * lda, fl_rng_stream(seed, 7, 0, 0), -1.0f, 1.0f);
    fl_rng_fill_uniform(C0, (size_t)M * ldc, fl_rng_stream(seed, 8, 0, 0), -1.0f, 1.0f);
    if (beta == 0.0f)
        for (size_t i = 0; i < (size_t)M * ldc; i++) C0[i] = NAN;
    memcpy(C, C0, sizeof(float) * (size_t)M * ldc);
    uint16_t *wb = malloc(2 * (size_t)(OC * IC));
    fl_nf4_dequantize(&W, wb, FL_BF16);
    double amax = 0, wmax = 0;
    for (int64_t i = 0; i < OC * IC; i++) { wf[i] = fl_bf16_to_f32(wb[i]); wmax = fmax(wmax, fabs(wf[i])); }
    for (size_t i = 0; i < (size_t)M * lda; i++) amax = fmax(amax, fabs(A[i]));
    if (nt) fl_gemm_nf4_nt(M, alpha, A, lda, &W, beta, C, ldc);
    else fl_gemm_nf4_nn(M, alpha, A, lda, &W, beta, C, ldc);
    double tol_abs = 1e-5 * sqrt((double)K) * amax * wmax * fabs(alpha);
    int bad = 0;
    for (int m = 0; m < M && bad < 5; m++)
        for (int64_t n = 0; n < N && bad < 5; n++) {
            double ref = 0;
            for (int64_t k = 0; k < K; k++) {
                double a = fl_bf16_to_f32(fl_f32_to_bf16(A[(size_t)m * lda + k]));
                double w = nt ? wf[n * IC + k] : wf[k * IC + n];
                ref += a * w;
            }
            ref = alpha * ref + (beta == 0.0f ? 0.0 : beta * (double)C0[(size_t)m * ldc + n]);
            double got = C[(size_t)m * ldc + n];
            if (!(fabs(got - ref) <= tol_abs + 1e-6 * fabs(ref))) {
                bad++;
                CHECK_MSG(0, "%s M=%d OC=%lld IC=%lld: C[%d,%lld] = %.9g, ref %.9g", nt ? "nt" : "nn", M, (long long)OC,
                          (long long)IC, m, (long long)n, got, ref);
            }
        }
    free(A); free(C); free(C0); free(wf); free(wb);
    fl_nf4_free(&W);
}

TEST(nf4_gemm_against_float64) {
    /* small and ragged (cols not a multiple of 64: blocks cross rows), real-shaped, and more rows
     * of W than one tile (2048) so both orientations run several tiles */
    const struct { int M; int64_t OC, IC; float alpha, beta; } cases[] = {
        {1, 1, 7, 1.0f, 0.0f},   {7, 33, 70, 0.5f, 1.0f},   {17, 96, 128, 1.0f, 0.0f},
        {64, 192, 576, 1.0f, 0.3f}, {30, 2100, 64, -1.0f, 1.0f}, {5, 2050, 96, 2.0f, 0.0f},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int nt = 0; nt < 2; nt++)
            check_gemm(nt, cases[i].M, cases[i].OC, cases[i].IC, cases[i].alpha, cases[i].beta, 100 + i);
}
