/* gemm_bf16.c — the public bf16 GEMM entry points: the arguments' edge cases (M or N = 0, K = 0),
 * the thread count, and the path — the blocked driver (gemm_bf16_blocked.c) over the AVX512_BF16
 * kernel (gemm_bf16_avx512.c) or the AVX2 + FMA kernel (gemm_bf16_avx2.c), or the portable C path
 * below; the path is the one of the active instruction-set level (cpu_isa.h) — or oneDNN's matmul
 * (gemm_onednn.c) where FASTLORA_CPU_GEMM's choice (gemm_bf16.h) sends a call there.
 *
 * The portable path computes the same function — bf16(A) · bf16 B, exact products, f32 sums — with
 * plain loops the compiler vectorizes for whatever target it is built for: B blocks are widened to
 * f32 (transposed for nt, so the inner loop runs along N), A rows are rounded to bf16 and widened,
 * and four rows of C accumulate at once so each widened B row is loaded once per four rows.
 */
#include "backend/cpu/gemm_bf16.h"

#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_isa.h"
#include "backend/cpu/gemm_bf16_kernels.h"
#include "backend/cpu/gemm_onednn.h"
#include "common/dtype.h"
#include "common/error.h"

static void portable(int nthreads, int trans_b, int M, int N, int K, float alpha, const float *A, int lda,
                     const uint16_t *B, int ldb, float beta, float *C, int ldc);

/* The micro-kernels of the active level, or NULL for the portable path. */
static const fl_gemm_bf16_kernels *active_kernels(void) {
#if defined(__x86_64__) || defined(__i386__)
    fl_cpu_isa isa = fl_cpu_isa_active();
    if (isa >= FL_CPU_ISA_AVX512_BF16) return &fl_gemm_bf16_avx512_kernels;
    if (isa >= FL_CPU_ISA_AVX2) return &fl_gemm_bf16_avx2_kernels;
#endif
    return NULL;
}

int fl_gemm_bf16_uses_avx512(void) { return fl_cpu_isa_active() >= FL_CPU_ISA_AVX512_BF16; }

/* ---- fastlora's kernels or oneDNN's matmul (FASTLORA_CPU_GEMM) ---- */

static int provider_override = -1;
static int provider_from_env; /* FL_GEMM_PROVIDER_*, or -1 for a value that is none */
static pthread_once_t env_once = PTHREAD_ONCE_INIT;

static void read_env(void) {
    const char *v = getenv("FASTLORA_CPU_GEMM");
    provider_from_env = !v || !*v || !strcmp(v, "auto") ? FL_GEMM_PROVIDER_AUTO
                        : !strcmp(v, "own")             ? FL_GEMM_PROVIDER_OWN
                        : !strcmp(v, "onednn")          ? FL_GEMM_PROVIDER_ONEDNN
                                                        : -1;
}

static int provider_env(void) {
    pthread_once(&env_once, read_env);
    return provider_from_env;
}

int fl_gemm_bf16_check_env(void) {
    const char *v = getenv("FASTLORA_CPU_GEMM");
    if (provider_env() < 0)
        return fl_input_error("FASTLORA_CPU_GEMM=%s: not a CPU GEMM (expected auto, own or onednn)", v);
    if (provider_env() == FL_GEMM_PROVIDER_ONEDNN && !fl_onednn_built())
        return fl_input_error("FASTLORA_CPU_GEMM=onednn: this build has no oneDNN (install libdnnl-dev, then rebuild: "
                              "make clean && make)");
    return 0;
}

int fl_gemm_bf16_set_provider(int provider) {
    int before = provider_override;
    provider_override = provider;
    return before;
}

static int provider(void) {
    if (provider_override >= 0) return provider_override;
    int p = provider_env();
    return p < 0 ? FL_GEMM_PROVIDER_AUTO : p;
}

/* oneDNN on AMX, and the path's name for it: fixed once oneDNN starts. */
static int onednn_amx;
static char onednn_name[64];
static pthread_once_t onednn_once = PTHREAD_ONCE_INIT;

static void probe_onednn(void) {
    onednn_amx = fl_onednn_has_amx();
    snprintf(onednn_name, sizeof onednn_name, "onednn %s", fl_onednn_isa());
}

int fl_gemm_bf16_takes_onednn(int M, int N, int K) {
    int p = provider();
    if (p == FL_GEMM_PROVIDER_OWN || !fl_onednn_built()) return 0;
    if (p == FL_GEMM_PROVIDER_ONEDNN) return 1;
    if (fl_cpu_isa_active() != fl_cpu_isa_detected() || M < 1 || N < FL_GEMM_ONEDNN_MIN_NK || K < FL_GEMM_ONEDNN_MIN_NK)
        return 0;
    pthread_once(&onednn_once, probe_onednn);
    return onednn_amx;
}

int fl_gemm_f32_takes_onednn(int M, int N, int K) {
    int p = provider();
    if (p == FL_GEMM_PROVIDER_OWN || !fl_onednn_built() || M < 1 || N < 1 || K < 1) return 0;
    if (p == FL_GEMM_PROVIDER_ONEDNN) return 1;
    /* measured on AVX2 only: AVX-512 machines keep OpenBLAS until measured there */
    return fl_cpu_isa_detected() == FL_CPU_ISA_AVX2 && fl_cpu_isa_active() == FL_CPU_ISA_AVX2 &&
           M >= FL_GEMM_F32_ONEDNN_MIN_M && K >= FL_GEMM_ONEDNN_MIN_NK;
}

const char *fl_gemm_f32_path(void) {
    static char name[112];
    if (fl_gemm_f32_takes_onednn(4096, 16, 16)) snprintf(name, sizeof name, "oneDNN %s f32 matmul", fl_onednn_isa());
    else if (fl_gemm_f32_takes_onednn(4096, 4096, 4096))
        snprintf(name, sizeof name, "oneDNN %s f32 matmul (OpenBLAS sgemm for K < %d)", fl_onednn_isa(),
                 FL_GEMM_ONEDNN_MIN_NK);
    else return "OpenBLAS sgemm";
    return name;
}

const char *fl_gemm_bf16_path(void) {
    if (fl_gemm_bf16_takes_onednn(4096, 4096, 4096)) {
        pthread_once(&onednn_once, probe_onednn);
        return onednn_name;
    }
    return fl_gemm_bf16_uses_avx512() ? "avx512bf16" : active_kernels() ? "avx2" : "portable";
}

/* C = beta · C over (M, N); beta == 0 writes zeros without reading C. */
static void scale_c(int M, int N, float beta, float *C, int ldc) {
    for (int m = 0; m < M; m++) {
        float *c = C + (size_t)m * ldc;
        for (int n = 0; n < N; n++) c[n] = beta == 0.0f ? 0.0f : beta * c[n];
    }
}

static void gemm_dispatch(int trans_b, int M, int N, int K, float alpha, const float *A, int lda,
                          const uint16_t *B, int ldb, float beta, float *C, int ldc) {
    if (M <= 0 || N <= 0) return;
    if (K <= 0) {
        scale_c(M, N, beta, C, ldc);
        return;
    }
    double flops = 2.0 * M * N * K;
    if (alpha == 1.0f && fl_gemm_bf16_takes_onednn(M, N, K) &&
        fl_onednn_gemm_bf16(trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc) == 0)
        return;
    const fl_gemm_bf16_kernels *k = active_kernels();
    int nthreads = flops < (k ? k->serial_flops : 4e6) ? 1 : omp_get_max_threads();
    if (k) fl_gemm_bf16_blocked(k, nthreads, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    else portable(nthreads, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void fl_gemm_bf16_nt(int M, int N, int K, float alpha, const float *A, int lda, const uint16_t *B, int ldb,
                     float beta, float *C, int ldc) {
    gemm_dispatch(1, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void fl_gemm_bf16_nn(int M, int N, int K, float alpha, const float *A, int lda, const uint16_t *B, int ldb,
                     float beta, float *C, int ldc) {
    gemm_dispatch(0, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

/* ---------------------------------------------------------------- portable path */

enum { P_NC = 256, P_KC = 256, P_MR = 4 };

/* One thread's region: rows [m0, m1), columns [n0, n1). */
static void portable_region(int trans_b, int m0, int m1, int n0, int n1, int K, float alpha, const float *A,
                            int lda, const uint16_t *B, int ldb, float beta, float *C, int ldc) {
    float *bt = fl_gemm_bf16_alloc(sizeof(float) * P_KC * P_NC);      /* widened B block, [k][n] */
    float *ar = fl_gemm_bf16_alloc(sizeof(float) * P_MR * P_KC);      /* P_MR rounded A rows, [r][k] */
    float *acc = fl_gemm_bf16_alloc(sizeof(float) * P_MR * P_NC);     /* [r][n] */
    for (int jc = n0; jc < n1; jc += P_NC) {
        int nc = n1 - jc < P_NC ? n1 - jc : P_NC;
        for (int pc = 0; pc < K; pc += P_KC) {
            int kc = K - pc < P_KC ? K - pc : P_KC;
            if (trans_b) {
                for (int n = 0; n < nc; n++) {
                    const uint16_t *b = B + (size_t)(jc + n) * ldb + pc;
                    for (int k = 0; k < kc; k++) bt[k * nc + n] = fl_bf16_to_f32(b[k]);
                }
            } else {
                for (int k = 0; k < kc; k++) {
                    const uint16_t *b = B + (size_t)(pc + k) * ldb + jc;
                    for (int n = 0; n < nc; n++) bt[k * nc + n] = fl_bf16_to_f32(b[n]);
                }
            }
            for (int m = m0; m < m1; m += P_MR) {
                int mr = m1 - m < P_MR ? m1 - m : P_MR;
                for (int r = 0; r < P_MR; r++)
                    for (int k = 0; k < kc; k++)
                        ar[r * P_KC + k] = r < mr ? fl_bf16_to_f32(fl_f32_to_bf16(A[(size_t)(m + r) * lda + pc + k]))
                                                  : 0.0f;
                for (int i = 0; i < P_MR * P_NC; i++) acc[i] = 0.0f;
                float *a0 = acc, *a1 = acc + P_NC, *a2 = acc + 2 * P_NC, *a3 = acc + 3 * P_NC;
                for (int k = 0; k < kc; k++) {
                    const float *b = bt + (size_t)k * nc;
                    float x0 = ar[k], x1 = ar[P_KC + k], x2 = ar[2 * P_KC + k], x3 = ar[3 * P_KC + k];
                    for (int n = 0; n < nc; n++) {
                        float bn = b[n];
                        a0[n] += x0 * bn;
                        a1[n] += x1 * bn;
                        a2[n] += x2 * bn;
                        a3[n] += x3 * bn;
                    }
                }
                for (int r = 0; r < mr; r++) {
                    float *c = C + (size_t)(m + r) * ldc + jc;
                    const float *s = acc + r * P_NC;
                    if (pc > 0 || beta == 1.0f)
                        for (int n = 0; n < nc; n++) c[n] += alpha * s[n];
                    else if (beta == 0.0f)
                        for (int n = 0; n < nc; n++) c[n] = alpha * s[n];
                    else
                        for (int n = 0; n < nc; n++) c[n] = alpha * s[n] + beta * c[n];
                }
            }
        }
    }
    free(acc);
    free(ar);
    free(bt);
}

/* M, N, K > 0; rows split between the threads, or columns when there are few rows. */
static void portable(int nthreads, int trans_b, int M, int N, int K, float alpha, const float *A, int lda,
                     const uint16_t *B, int ldb, float beta, float *C, int ldc) {
    #pragma omp parallel num_threads(nthreads)
    {
        int nt = omp_get_num_threads(), t = omp_get_thread_num();
        int m0 = 0, m1 = M, n0 = 0, n1 = N;
        if (M >= 4 * nt * P_MR || N < 2 * nt) { /* split rows */
            int per = ((M + nt - 1) / nt + P_MR - 1) / P_MR * P_MR;
            m0 = t * per < M ? t * per : M;
            m1 = m0 + per < M ? m0 + per : M;
        } else { /* few rows: split columns */
            int per = (N + nt - 1) / nt;
            n0 = t * per < N ? t * per : N;
            n1 = n0 + per < N ? n0 + per : N;
        }
        if (m0 < m1 && n0 < n1)
            portable_region(trans_b, m0, m1, n0, n1, K, alpha, A, lda, B, ldb, beta, C, ldc);
    }
}
