/* test_gemm_bf16.c — the bf16 GEMM (backend/cpu/gemm_bf16.h) against a double-precision reference.
 *
 * The reference uses the SAME bf16-rounded inputs (A rounded with fl_f32_to_bf16, RNE), so the
 * only difference left is the order and precision of the f32 sums. Tolerance per element:
 *     |got - ref| <= 1e-5 · sqrt(K) · max|a| · max|b| · |alpha| + 1e-6 · |ref|
 * (products of bf16 are exact in f32; each f32 add loses <= 2^-24 relative; that bound holds with
 * a wide margin for these random inputs, while any wrong element, a truncating instead of RNE
 * rounding of A, or a missed k shows up orders of magnitude above it).
 * With beta == 0, C starts as NaN: the kernel must not read it. Every shape runs nt and nn, on the
 * AVX512_BF16 kernel (when the CPU has it) and on the forced portable path.
 */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "backend/cpu/cpu_isa.h"
#include "backend/cpu/gemm_bf16.h"
#include "backend/cpu/gemm_onednn.h"
#include "common/dtype.h"
#include "test.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static float frand(void) { /* uniform in [-1, 1) */
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (float)((rng_state >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
}

/* Runs one GEMM and compares every element; returns 1 when all match. */
static int check_gemm(int trans_b, int M, int N, int K, float alpha, float beta, int lda_pad, int ldb_pad,
                      int ldc_pad) {
    int lda = K + lda_pad, ldb = (trans_b ? K : N) + ldb_pad, ldc = N + ldc_pad;
    size_t brows = trans_b ? (size_t)N : (size_t)K;
    float *A = malloc(sizeof(float) * (size_t)M * lda);
    uint16_t *B = malloc(sizeof(uint16_t) * brows * ldb);
    float *C = malloc(sizeof(float) * (size_t)M * ldc);
    float *C0 = malloc(sizeof(float) * (size_t)M * ldc);
    double maxa = 0, maxb = 0;
    for (size_t i = 0; i < (size_t)M * lda; i++) {
        A[i] = frand() * 3.0f;
        double x = fabs(fl_bf16_to_f32(fl_f32_to_bf16(A[i])));
        if (x > maxa) maxa = x;
    }
    for (size_t i = 0; i < brows * ldb; i++) {
        B[i] = fl_f32_to_bf16(frand() * 0.5f);
        double x = fabs(fl_bf16_to_f32(B[i]));
        if (x > maxb) maxb = x;
    }
    for (size_t i = 0; i < (size_t)M * ldc; i++) C0[i] = C[i] = beta == 0.0f ? NAN : frand();

    if (trans_b) fl_gemm_bf16_nt(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    else fl_gemm_bf16_nn(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);

    double atol = 1e-5 * sqrt((double)K) * maxa * maxb * fabs(alpha);
    /* reference operands as doubles, both k-contiguous: ad (M, K), bd (N, K) */
    double *ad = malloc(sizeof(double) * (size_t)M * K), *bd = malloc(sizeof(double) * (size_t)N * K);
    for (int m = 0; m < M; m++)
        for (int k = 0; k < K; k++) ad[(size_t)m * K + k] = fl_bf16_to_f32(fl_f32_to_bf16(A[(size_t)m * lda + k]));
    for (int n = 0; n < N; n++)
        for (int k = 0; k < K; k++)
            bd[(size_t)n * K + k] = fl_bf16_to_f32(trans_b ? B[(size_t)n * ldb + k] : B[(size_t)k * ldb + n]);
    int ok = 1;
    for (int m = 0; m < M && ok; m++) {
        for (int n = 0; n < N; n++) {
            const double *a = ad + (size_t)m * K, *b = bd + (size_t)n * K;
            double s0 = 0, s1 = 0, s2 = 0, s3 = 0;   /* four sums: the compiler vectorizes them */
            int k = 0;
            for (; k + 4 <= K; k += 4) {
                s0 += a[k] * b[k];
                s1 += a[k + 1] * b[k + 1];
                s2 += a[k + 2] * b[k + 2];
                s3 += a[k + 3] * b[k + 3];
            }
            for (; k < K; k++) s0 += a[k] * b[k];
            double s = (s0 + s1) + (s2 + s3);
            double ref = alpha * s + (beta == 0.0f ? 0.0 : beta * (double)C0[(size_t)m * ldc + n]);
            double got = C[(size_t)m * ldc + n];
            if (!(fabs(got - ref) <= atol + 1e-6 * fabs(ref))) {
                CHECK_MSG(0, "%s M=%d N=%d K=%d alpha=%g beta=%g ld=(%d,%d,%d): C[%d][%d] = %.9g, ref %.9g (atol %g)",
                          trans_b ? "nt" : "nn", M, N, K, alpha, beta, lda, ldb, ldc, m, n, got, ref, atol);
                ok = 0;
                break;
            }
        }
    }
    free(bd);
    free(ad);
    /* the padding columns of C are never written */
    for (int m = 0; m < M && ok; m++)
        for (int n = N; n < ldc; n++) {
            float x = C[(size_t)m * ldc + n], y = C0[(size_t)m * ldc + n];
            if (!(x == y || (isnan(x) && isnan(y)))) {
                CHECK_MSG(0, "%s M=%d N=%d K=%d: padding C[%d][%d] written", trans_b ? "nt" : "nn", M, N, K, m, n);
                ok = 0;
                break;
            }
        }
    free(C0);
    free(C);
    free(B);
    free(A);
    return ok;
}

static const int small_dims[] = {1, 3, 17, 31, 33, 64, 100};
#define NSMALL ((int)(sizeof small_dims / sizeof small_dims[0]))

/* Every (M, N, K) from small_dims, both layouts, rotating alpha/beta and ragged leading dims. */
static void run_small_grid(void) {
    static const float alphas[] = {1.0f, 0.5f, -1.25f, 1.0f};
    static const float betas[] = {0.0f, 1.0f, 0.0f, -0.75f};
    int i = 0, failures = 0;
    for (int a = 0; a < NSMALL; a++)
        for (int b = 0; b < NSMALL; b++)
            for (int c = 0; c < NSMALL; c++, i++)
                for (int tb = 0; tb < 2; tb++) {
                    int v = (i + tb) % 4, pad = (i % 3 == 0) ? 0 : 1 + i % 5;
                    failures += !check_gemm(tb, small_dims[a], small_dims[b], small_dims[c], alphas[v], betas[v], pad,
                                            (pad * 3) % 7, pad == 0 ? 0 : 9 - pad);
                    if (failures > 5) return;
                }
}

/* Shapes that cross the kernel's blocks: several K blocks with an odd tail, N past one packed B
 * block, M past one packed A block, threads splitting M, or N (few rows; N past two B blocks),
 * the model's own widths. */
static void run_large_shapes(int big) {
    static const int shapes[][3] = {
        {128, 576, 576}, {100, 1536, 576}, {460, 100, 1101}, {64, 2100, 576}, {100, 576, 1536},
        {257, 192, 576}, {33, 49, 4097}, {4096, 16, 576}, {4096, 576, 8}, {2, 3000, 70}, {100, 4200, 64},
        {8, 2080, 6000}, /* several groups of K blocks */
    };
    int n = (int)(sizeof shapes / sizeof shapes[0]);
    if (!big) n = 4;
    for (int s = 0; s < n; s++)
        for (int tb = 0; tb < 2; tb++) {
            check_gemm(tb, shapes[s][0], shapes[s][1], shapes[s][2], 1.0f, 0.0f, 0, 0, 0);
            check_gemm(tb, shapes[s][0], shapes[s][1], shapes[s][2], 0.75f, 1.0f, 5, 3, 1);
        }
}

/* Round-to-nearest-even of A: ties 1 + 2^-8 -> 1 and 1 + 3·2^-8 -> 1 + 2^-6; exact results. */
static void run_rounding(void) {
    const float a[4] = {1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, -(1.0f + 0x1p-8f), 1.0f + 0x1p-8f + 0x1p-20f};
    const float want[4] = {1.0f, 1.0f + 0x1p-6f, -1.0f, 1.0f + 0x1p-7f};
    uint16_t one = fl_f32_to_bf16(1.0f);
    for (int i = 0; i < 4; i++) {
        float c = NAN;
        fl_gemm_bf16_nt(1, 1, 1, 1.0f, &a[i], 1, &one, 1, 0.0f, &c, 1);
        CHECK_MSG(c == want[i], "nt rounding of %.9g: got %.9g want %.9g", a[i], c, want[i]);
        c = NAN;
        fl_gemm_bf16_nn(1, 1, 1, 1.0f, &a[i], 1, &one, 1, 0.0f, &c, 1);
        CHECK_MSG(c == want[i], "nn rounding of %.9g: got %.9g want %.9g", a[i], c, want[i]);
    }
}

TEST(gemm_bf16_small_grid) { run_small_grid(); }
TEST(gemm_bf16_large_shapes) { run_large_shapes(1); }
TEST(gemm_bf16_rounding) { run_rounding(); }

TEST(gemm_bf16_k_zero_and_thread_counts) {
    /* K == 0: C = beta · C */
    float c[6] = {1, 2, 3, 4, 5, 6};
    fl_gemm_bf16_nt(2, 3, 0, 1.0f, NULL, 1, NULL, 1, 2.0f, c, 3);
    CHECK(c[0] == 2.0f && c[5] == 12.0f);
    fl_gemm_bf16_nn(2, 3, 0, 1.0f, NULL, 1, NULL, 1, 0.0f, c, 3);
    CHECK(c[0] == 0.0f && c[5] == 0.0f);
    /* thread counts other than the machine's, and a call from inside a parallel region */
    int saved = omp_get_max_threads();
    static const int counts[] = {1, 3, 5};
    for (int i = 0; i < 3; i++) {
        omp_set_num_threads(counts[i]);
        check_gemm(1, 517, 300, 333, 1.0f, 0.0f, 1, 2, 3);
        check_gemm(0, 40, 700, 333, 1.0f, 1.0f, 1, 2, 3);
    }
    omp_set_num_threads(saved);
    int ok_all = 1;
    #pragma omp parallel num_threads(2) reduction(&& : ok_all)
    {
        #pragma omp critical
        ok_all = check_gemm(omp_get_thread_num(), 200, 100, 96, 1.0f, 0.0f, 0, 0, 0) && ok_all;
    }
    CHECK(ok_all);
}

TEST(gemm_bf16_fallback) {
    int saved = fl_gemm_bf16_set_provider(FL_GEMM_PROVIDER_OWN); /* the portable path, even under FASTLORA_CPU_GEMM=onednn */
    fl_cpu_isa_set_cap(FL_CPU_ISA_PORTABLE);
    CHECK(!fl_gemm_bf16_uses_avx512());
    run_rounding();
    run_small_grid();
    run_large_shapes(0);
    fl_cpu_isa_set_cap(-1);
    fl_gemm_bf16_set_provider(saved);
}

/* oneDNN's matmul (gemm_onednn.h) for every call it takes, against the same reference and bound
 * (its sums run in another order): the grid, the shapes, the rounding ties. The calls it counts
 * show they ran there; those with alpha != 1 are declined by contract and run on our kernels. */
TEST(gemm_bf16_onednn) {
    if (!fl_onednn_built()) SKIP("this build has no oneDNN (libdnnl-dev)");
    float a = 1.0f, c = 0.0f;
    uint16_t one = fl_f32_to_bf16(1.0f);
    if (fl_onednn_gemm_bf16(1, 1, 1, 1, 1.0f, &a, 1, &one, 1, 0.0f, &c, 1) != 0) {
        static char why[128];
        snprintf(why, sizeof why, "oneDNN has no bf16 matmul at its instruction set here (%s)", fl_onednn_isa());
        SKIP(why);
    }
    CHECK(c == 1.0f);
    unsigned long before = fl_onednn_calls();
    fl_gemm_bf16_set_provider(FL_GEMM_PROVIDER_ONEDNN);
    CHECK_STR_CONTAINS(fl_gemm_bf16_path(), "onednn");
    run_rounding();
    run_small_grid();
    run_large_shapes(1);
    fl_gemm_bf16_set_provider(-1);
    unsigned long ran = fl_onednn_calls() - before;
    printf("    oneDNN %s (%s): %lu calls\n", fl_onednn_version(), fl_onednn_isa(), ran);
    CHECK(ran >= 8 + 343);
}

/* Which calls go to oneDNN: `own` none, `onednn` all, `auto` the dense ones where oneDNN has AMX
 * and the kernel level is this CPU's own (never under a forced lower level), never a rank-sized
 * LoRA side GEMM. */
TEST(gemm_bf16_provider_choice) {
    fl_gemm_bf16_set_provider(FL_GEMM_PROVIDER_OWN);
    CHECK(!fl_gemm_bf16_takes_onednn(4096, 4096, 4096));
    fl_gemm_bf16_set_provider(FL_GEMM_PROVIDER_ONEDNN);
    CHECK_EQ_INT(fl_gemm_bf16_takes_onednn(1, 1, 1), fl_onednn_built());
    fl_gemm_bf16_set_provider(FL_GEMM_PROVIDER_AUTO);
    int uncapped = fl_cpu_isa_active() == fl_cpu_isa_detected();
    CHECK_EQ_INT(fl_gemm_bf16_takes_onednn(1024, 576, 576), fl_onednn_built() && uncapped && fl_onednn_has_amx());
    CHECK(!fl_gemm_bf16_takes_onednn(1024, 48, 576));  /* xa = x·Aᵀ, rank 16 x 3 */
    CHECK(!fl_gemm_bf16_takes_onednn(1024, 576, 64));
    fl_cpu_isa_set_cap(FL_CPU_ISA_PORTABLE);
    CHECK(!fl_gemm_bf16_takes_onednn(4096, 4096, 4096) || fl_cpu_isa_detected() == FL_CPU_ISA_PORTABLE);
    fl_cpu_isa_set_cap(-1);
    fl_gemm_bf16_set_provider(-1);
}
