/* test_gemm_f32_onednn.c — the f32 backend's GEMM on oneDNN's f32 matmul (fl_onednn_gemm_f32,
 * gemm_onednn.h) and the choice that sends calls there (cpu_sgemm, fl_gemm_f32_takes_onednn),
 * against a double-precision reference.
 *
 * Tolerance per element, the worst case of f32 arithmetic whatever the order of the sums: a K-term
 * dot product in f32 is within γ_K · Σ|a_k b_k| of the exact one (γ_K = K·u / (1 − K·u),
 * u = 2^-24), and alpha's product and beta·C's sum add one rounding each:
 *     |got − ref| <= γ_{K+2} · (|alpha| · Σ_k |a_k b_k| + |beta · c|)
 * No library's order can cross it; a wrong element, a missed k or a dropped alpha or beta lands far
 * above it. With beta == 0, C starts as NaN: the product must not read it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_isa.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/gemm_bf16.h"
#include "backend/cpu/gemm_onednn.h"
#include "test.h"

static uint64_t rng_state = 0x2545f4914f6cdd1dull;
static float frand(void) { /* uniform in [-1, 1) */
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (float)((rng_state >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
}

typedef enum { VIA_ONEDNN, VIA_CPU_SGEMM } gemm_via;

/* One product of the given shape, strides padded by `pad`, compared element by element. Returns 1
 * when every element is within the bound; 0 otherwise; -1 when oneDNN declined the call. */
static int check_product(gemm_via via, int trans_b, int M, int N, int K, float alpha, float beta, int pad) {
    int lda = K + pad, ldb = (trans_b ? K : N) + pad, ldc = N + pad;
    size_t brows = trans_b ? (size_t)N : (size_t)K;
    float *A = malloc(sizeof(float) * (size_t)M * lda), *B = malloc(sizeof(float) * brows * ldb);
    float *C = malloc(sizeof(float) * (size_t)M * ldc), *C0 = malloc(sizeof(float) * (size_t)M * ldc);
    for (size_t i = 0; i < (size_t)M * lda; i++) A[i] = frand() * 2.0f;
    for (size_t i = 0; i < brows * ldb; i++) B[i] = frand() * 0.5f;
    for (size_t i = 0; i < (size_t)M * ldc; i++) C0[i] = C[i] = beta == 0.0f ? NAN : frand();
    int rc = 0;
    if (via == VIA_ONEDNN) rc = fl_onednn_gemm_f32(trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    else cpu_sgemm(trans_b, (size_t)M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    int ok = 1;
    double u = ldexp(1.0, -24), gamma = (K + 2) * u / (1.0 - (K + 2) * u);
    for (int m = 0; m < M && rc == 0 && ok; m++)
        for (int n = 0; n < N; n++) {
            double exact = 0.0, mag = 0.0;
            for (int k = 0; k < K; k++) {
                double b = trans_b ? B[(size_t)n * ldb + k] : B[(size_t)k * ldb + n];
                exact += (double)A[(size_t)m * lda + k] * b;
                mag += fabs((double)A[(size_t)m * lda + k] * b);
            }
            double c0 = beta == 0.0f ? 0.0 : C0[(size_t)m * ldc + n];
            double want = alpha * exact + beta * c0, got = C[(size_t)m * ldc + n];
            double bound = gamma * (fabs(alpha) * mag + fabs(beta * c0));
            if (!(fabs(got - want) <= bound)) {
                printf("    %s %s M %d N %d K %d alpha %g beta %g pad %d: C[%d][%d] = %.9g, want %.9g (bound %.3g)\n",
                       via == VIA_ONEDNN ? "oneDNN" : "cpu_sgemm", trans_b ? "nt" : "nn", M, N, K, alpha, beta, pad, m,
                       n, got, want, bound);
                ok = 0;
                break;
            }
        }
    /* padding columns of C are never written */
    for (int m = 0; m < M && rc == 0 && ok; m++)
        for (int n = N; n < ldc; n++)
            if (memcmp(&C[(size_t)m * ldc + n], &C0[(size_t)m * ldc + n], sizeof(float)) != 0) ok = 0;
    free(A), free(B), free(C), free(C0);
    return rc != 0 ? -1 : ok;
}

static const int dims[] = {1, 3, 17, 64, 100};
static const float alphas[] = {1.0f, 2.0f, -0.5f}, betas[] = {0.0f, 1.0f, 0.5f};

/* Every (M, N, K) of the grid, nt and nn, rotating alpha, beta and padded strides. */
static void run_grid(gemm_via via, int *declined) {
    int i = 0;
    for (int t = 0; t < 2; t++)
        for (size_t a = 0; a < 5; a++)
            for (size_t b = 0; b < 5; b++)
                for (size_t c = 0; c < 5; c++, i++) {
                    float alpha = alphas[i % 3], beta = betas[(i / 3) % 3];
                    int r = check_product(via, t, dims[a], dims[b], dims[c], alpha, beta, i % 4 == 0 ? 0 : i % 7);
                    if (r < 0) {
                        (*declined)++;
                        CHECK_MSG(alpha != 1.0f, "oneDNN declined M %d N %d K %d with alpha 1", dims[a], dims[b], dims[c]);
                    } else {
                        CHECK_MSG(r == 1, "%s M %d N %d K %d", t ? "nt" : "nn", dims[a], dims[b], dims[c]);
                    }
                }
}

/* oneDNN's f32 matmul itself: the grid, then the trainer's shapes (the projections of a small
 * model at 300 tokens, LoRA sides, a ragged LM-head chunk). Calls with alpha != 1 may be declined
 * (oneDNN 3.x: no output scale) and nothing else; the calls it counts show the rest ran there. */
TEST(gemm_f32_onednn_matches_double_reference) {
    if (!fl_onednn_built()) SKIP("this build has no oneDNN (libdnnl-dev)");
    unsigned long before = fl_onednn_calls();
    int declined = 0;
    run_grid(VIA_ONEDNN, &declined);
    static const int shapes[][5] = {/* trans_b, M, N, K, pad */
                                    {1, 300, 960, 624, 0}, {0, 300, 624, 960, 3}, {1, 300, 48, 576, 48},
                                    {0, 300, 16, 576, 0},  {1, 300, 576, 16, 5},  {0, 300, 576, 48, 0},
                                    {1, 77, 4099, 64, 1}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const int *sh = shapes[s];
        float alpha = s % 2 ? 2.0f : 1.0f, beta = s % 3 == 1 ? 1.0f : 0.0f;
        int r = check_product(VIA_ONEDNN, sh[0], sh[1], sh[2], sh[3], alpha, beta, sh[4]);
        if (r < 0) declined++;
        CHECK_MSG(r == 1 || (r < 0 && alpha != 1.0f), "M %d N %d K %d", sh[1], sh[2], sh[3]);
    }
    unsigned long ran = fl_onednn_calls() - before;
    printf("    oneDNN %s (%s): %lu calls, %d declined (alpha != 1 on oneDNN 3)\n", fl_onednn_version(),
           fl_onednn_isa(), ran, declined);
    CHECK_EQ_INT((int)ran + declined, 2 * 125 + 7);
    CHECK(declined == 0 || fl_onednn_version()[0] != '2');
}

/* cpu_sgemm under each choice: `own` never calls oneDNN, `onednn` every call it takes; the same
 * bound either way (OpenBLAS's sums are f32 sums too). */
TEST(gemm_f32_cpu_sgemm_under_each_provider) {
    int declined = 0;
    int saved = fl_gemm_bf16_set_provider(FL_GEMM_PROVIDER_OWN);
    unsigned long before = fl_onednn_calls();
    run_grid(VIA_CPU_SGEMM, &declined);
    CHECK_EQ_INT((int)(fl_onednn_calls() - before), 0);
    CHECK_STR_CONTAINS(fl_gemm_f32_path(), "OpenBLAS");
    if (fl_onednn_built()) {
        fl_gemm_bf16_set_provider(FL_GEMM_PROVIDER_ONEDNN);
        before = fl_onednn_calls();
        run_grid(VIA_CPU_SGEMM, &declined);
        int ran = (int)(fl_onednn_calls() - before), all = fl_onednn_version()[0] == '2'; /* 3.x: alpha 1 only */
        CHECK_MSG(all ? ran == 2 * 125 : ran >= 2 * 125 / 3 - 1, "%d of %d calls on oneDNN", ran, 2 * 125);
        CHECK_STR_CONTAINS(fl_gemm_f32_path(), "oneDNN");
    }
    CHECK_EQ_INT(declined, 0); /* cpu_sgemm computes every call, on OpenBLAS when oneDNN declines */
    fl_gemm_bf16_set_provider(saved);
}

/* Which f32 calls `auto` sends to oneDNN: with oneDNN built, on an AVX2 CPU at its own level, every
 * product with K at least FL_GEMM_ONEDNN_MIN_NK and at least FL_GEMM_F32_ONEDNN_MIN_M rows; none
 * with a rank-sized K (xa·s·Bᵀ, dxa·A — also the stacked q/k/v one at rank 64, K 192), none under
 * a forced lower level, none on other CPUs (unmeasured). */
TEST(gemm_f32_provider_choice) {
    int saved = fl_gemm_bf16_set_provider(FL_GEMM_PROVIDER_AUTO);
    int measured = fl_onednn_built() && fl_cpu_isa_detected() == FL_CPU_ISA_AVX2 &&
                   fl_cpu_isa_active() == FL_CPU_ISA_AVX2;
    CHECK_EQ_INT(fl_gemm_f32_takes_onednn(1024, 960, 624), measured);  /* q/k/v forward */
    CHECK_EQ_INT(fl_gemm_f32_takes_onednn(1024, 48, 576), measured);   /* xa = x·Aᵀ */
    CHECK_EQ_INT(fl_gemm_f32_takes_onednn(512, 49152, 576), measured); /* an LM-head chunk */
    CHECK(!fl_gemm_f32_takes_onednn(1024, 576, 16));                   /* out += xa·s·Bᵀ, rank 16 */
    CHECK(!fl_gemm_f32_takes_onednn(1024, 576, 3 * 64));                /* dx += dxa·A, q/k/v at rank 64 */
    CHECK_EQ_INT(fl_gemm_f32_takes_onednn(1024, 3 * 64, 576), measured); /* xa, q/k/v at rank 64 */
    CHECK(!fl_gemm_f32_takes_onednn(FL_GEMM_F32_ONEDNN_MIN_M - 1, 576, 576));
    CHECK(!fl_gemm_f32_takes_onednn(0, 576, 576));
    fl_cpu_isa_set_cap(FL_CPU_ISA_PORTABLE);
    CHECK(!fl_gemm_f32_takes_onednn(1024, 576, 576) || fl_cpu_isa_detected() == FL_CPU_ISA_PORTABLE);
    fl_cpu_isa_set_cap(-1);
    fl_gemm_bf16_set_provider(FL_GEMM_PROVIDER_ONEDNN);
    CHECK_EQ_INT(fl_gemm_f32_takes_onednn(1, 1, 1), fl_onednn_built());
    fl_gemm_bf16_set_provider(FL_GEMM_PROVIDER_OWN);
    CHECK(!fl_gemm_f32_takes_onednn(1024, 960, 624));
    fl_gemm_bf16_set_provider(saved);
}
