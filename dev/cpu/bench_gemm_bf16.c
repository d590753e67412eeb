/* bench_gemm_bf16.c — kernel lab: fl_gemm_bf16_{nt,nn} vs OpenBLAS cblas_sgemm on the model's shapes.
 *
 * Build (from the repo root):
 *   gcc -O3 -march=native -fopenmp -std=c11 -D_GNU_SOURCE -Wall -Wextra -Isrc dev/cpu/bench_gemm_bf16.c \
 *       src/backend/cpu/gemm_bf16*.c src/common/dtype.c \
 *       -L/usr/lib/x86_64-linux-gnu/openblas-openmp -Wl,-rpath,/usr/lib/x86_64-linux-gnu/openblas-openmp \
 *       -lopenblas -lm -o build/bench_gemm_bf16
 * Run:
 *   build/bench_gemm_bf16 [-m 1024,4096] [-r REPEATS] [-s SHAPE_SUBSTRING] [--fallback] [--big]
 * --cputime divides process CPU time by the thread count instead of wall time: with OMP_NUM_THREADS=1
 * on a loaded machine it measures the kernel's per-core speed without the time other processes
 * take (spinning at OpenMP barriers counts as busy, so with threads > 1 it under-reports).
 * --no-blas skips OpenBLAS (its columns then read 0).
 * Tuning: add -DFL_GB_MR=.. -DFL_GB_NV=.. -DFL_GB_KC=.. -DFL_GB_MC=.. -DFL_GB_NC=.. to the build line.
 *
 * Each shape runs both GEMMs REPEATS times (default 5) after one warm-up — more, up to 20x, until
 * the pair has run 2 s — and reports the BEST time (the machine is shared; the best run is the
 * one least disturbed). OpenBLAS gets the same
 * values with B widened to f32, so it does the same arithmetic at f32 width; the bf16 result is
 * checked against it (max |diff| / max |C|, ~1e-3 expected: A is rounded to bf16).
 */
#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/cpu/cpu_isa.h"
#include "backend/cpu/gemm_bf16.h"
#include "common/dtype.h"

typedef struct {
    const char *name;
    int trans_b;   /* 1: C = A·Bᵀ (forward, B (N, K)); 0: C = A·B (input gradient, B (K, N)) */
    int N, K;
    int big;       /* only with --big */
} shape;

static const shape shapes[] = {
    {"q/o proj     fwd nt", 1, 576, 576, 0},
    {"k/v proj     fwd nt", 1, 192, 576, 0},
    {"gate/up      fwd nt", 1, 1536, 576, 0},
    {"down         fwd nt", 1, 576, 1536, 0},
    {"lm head      fwd nt", 1, 49152, 576, 0},
    {"q/o proj     bwd nn", 0, 576, 576, 0},
    {"k/v proj     bwd nn", 0, 576, 192, 0},
    {"gate/up      bwd nn", 0, 576, 1536, 0},
    {"down         bwd nn", 0, 1536, 576, 0},
    {"lm head      bwd nn", 0, 576, 49152, 0},
    {"lora A (r16) fwd nt", 1, 16, 576, 0},
    {"0.5B mlp up  fwd nt", 1, 4864, 896, 1},
    {"0.5B mlp dn  fwd nt", 1, 896, 4864, 1},
    {"7B mlp up    fwd nt", 1, 18944, 3584, 1},
    {"7B mlp dn    bwd nn", 0, 3584, 18944, 1},
};

static int use_cputime, no_blas;   /* --cputime: process CPU seconds / threads instead of wall seconds */
static double now(void) {
    struct timespec t;
    clock_gettime(use_cputime ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC, &t);
    if (use_cputime) return (t.tv_sec + 1e-9 * t.tv_nsec) / omp_get_max_threads();
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static uint64_t rng = 88172645463325252ull;
static float frand(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((rng >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
}

int main(int argc, char **argv) {
    int ms[8] = {1024, 4096}, nm = 2, repeats = 5, big = 0;
    const char *filter = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-m") && i + 1 < argc) {
            nm = 0;
            for (char *p = argv[++i]; *p && nm < 8;) {
                ms[nm++] = (int)strtol(p, &p, 10);
                if (*p == ',') p++;
            }
        } else if (!strcmp(argv[i], "-r") && i + 1 < argc) {
            repeats = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "-s") && i + 1 < argc) {
            filter = argv[++i];
        } else if (!strcmp(argv[i], "--fallback")) {
            fl_cpu_isa_set_cap(FL_CPU_ISA_PORTABLE);
        } else if (!strcmp(argv[i], "--no-blas")) {
            no_blas = 1;
        } else if (!strcmp(argv[i], "--cputime")) {
            use_cputime = 1;
        } else if (!strcmp(argv[i], "--big")) {
            big = 1;
        } else {
            fprintf(stderr, "usage: %s [-m M1,M2] [-r repeats] [-s filter] [--fallback] [--big] [--cputime] [--no-blas]\n", argv[0]);
            return 2;
        }
    }
    printf("threads %d, path %s, best of %d, %s time\n", omp_get_max_threads(),
           fl_gemm_bf16_path(), repeats, use_cputime ? "cpu" : "wall");
    printf("%-20s %6s %6s %6s | %9s %9s %6s | %8s\n", "shape", "M", "N", "K", "bf16 GF/s", "sgemm", "ratio", "relerr");
    double sum_ratio_log = 0;
    int count = 0;
    for (int mi = 0; mi < nm; mi++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            const shape *sh = &shapes[s];
            if (sh->big && !big) continue;
            if (filter && !strstr(sh->name, filter)) continue;
            int M = ms[mi], N = sh->N, K = sh->K;
            size_t nb = (size_t)N * K;
            float *A = malloc(sizeof(float) * (size_t)M * K);
            uint16_t *B = malloc(sizeof(uint16_t) * nb);
            float *Bf = malloc(sizeof(float) * nb);
            float *C1 = malloc(sizeof(float) * (size_t)M * N), *C2 = malloc(sizeof(float) * (size_t)M * N);
            if (!A || !B || !Bf || !C1 || !C2) {
                fprintf(stderr, "out of memory\n");
                return 1;
            }
            for (size_t i = 0; i < (size_t)M * K; i++) A[i] = frand();
            for (size_t i = 0; i < nb; i++) {
                B[i] = fl_f32_to_bf16(frand() * 0.1f);
                Bf[i] = fl_bf16_to_f32(B[i]);
            }
            int ldb = sh->trans_b ? K : N;
            double flops = 2.0 * M * N * K, best1 = 1e30, best2 = 1e30;
            double spent1 = 0, spent2 = 0;
            /* r == 0 is the warm-up; then at least `repeats` runs, more (up to 20x) while a GEMM has
             * taken under a second in all, so short shapes get many chances at a quiet moment */
            for (int r = 0; r <= repeats || (r <= 20 * repeats && spent1 + spent2 < 2.0); r++) {
                double t = now();
                if (sh->trans_b) fl_gemm_bf16_nt(M, N, K, 1.0f, A, K, B, ldb, 0.0f, C1, N);
                else fl_gemm_bf16_nn(M, N, K, 1.0f, A, K, B, ldb, 0.0f, C1, N);
                t = now() - t;
                spent1 += t;
                if (r && t < best1) best1 = t;
                if (no_blas) {
                    best2 = 1e30;
                    continue;
                }
                t = now();
                cblas_sgemm(CblasRowMajor, CblasNoTrans, sh->trans_b ? CblasTrans : CblasNoTrans, M, N, K, 1.0f, A, K,
                            Bf, ldb, 0.0f, C2, N);
                t = now() - t;
                spent2 += t;
                if (r && t < best2) best2 = t;
            }
            double maxd = 0, maxc = 0;
            for (size_t i = 0; i < (no_blas ? 0 : (size_t)M * N); i++) {
                double d = fabs((double)C1[i] - C2[i]);
                if (d > maxd) maxd = d;
                if (fabs(C2[i]) > maxc) maxc = fabs(C2[i]);
            }
            double g1 = flops / best1 / 1e9, g2 = flops / best2 / 1e9;
            if (no_blas) g2 = 0;
            printf("%-20s %6d %6d %6d | %9.1f %9.1f %6.2f | %8.1e\n", sh->name, M, N, K, g1, g2, g2 > 0 ? g1 / g2 : 0.0,
                   maxd / (maxc > 0 ? maxc : 1));
            fflush(stdout);
            if (g2 > 0) {
                sum_ratio_log += log(g1 / g2);
                count++;
            }
            free(C2);
            free(C1);
            free(Bf);
            free(B);
            free(A);
        }
    if (count) printf("geometric-mean ratio over %d shapes: %.2f\n", count, exp(sum_ratio_log / count));
    return 0;
}
