/* bench_gemm_nf4.c — the NF4-weight GEMM against the bf16 GEMM on the same (dequantized) weight.
 *
 * For each shape: forward nt (M tokens × OC × IC) and input gradient nn, NF4 and bf16 timed in
 * alternating rounds (a round = one call of each, in turn), the median of the per-round ratios
 * NF4 / bf16 reported with both median times — the only figure that holds on a shared machine.
 * Also the dequantization alone (GB/s of bf16 written). Not a test: the numbers go to docs/QUANT.md.
 *
 *   gcc -O3 -march=native -fopenmp -std=c11 -D_GNU_SOURCE -Isrc dev/cpu/bench_gemm_nf4.c \
 *       src/backend/cpu/gemm_nf4.c src/backend/cpu/gemm_bf16*.c src/quant/nf4.c src/common/dtype.c \
 *       src/common/error.c src/common/rng.c -lm -lpthread -o build/bench_gemm_nf4
 *   build/bench_gemm_nf4 [-r rounds] [-m M]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/cpu/gemm_bf16.h"
#include "backend/cpu/gemm_nf4.h"
#include "common/rng.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int main(int argc, char **argv) {
    int rounds = 5, M = 1024;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-r")) rounds = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-m")) M = atoi(argv[i + 1]);
    }
    if (rounds > 64) rounds = 64;
    const struct { const char *name; int oc, ic; } shapes[] = {
        {"smollm2 q/o 576x576", 576, 576},      {"smollm2 gate 1536x576", 1536, 576},
        {"smollm2 down 576x1536", 576, 1536},   {"qwen0.5b gate 4864x896", 4864, 896},
        {"qwen0.5b down 896x4864", 896, 4864},
    };
    printf("M = %d, %d alternating rounds, %s dequantization, bf16 GEMM on %s\n", M, rounds,
           __builtin_cpu_supports("avx2") ? "AVX2" : "portable", fl_gemm_bf16_uses_avx512() ? "AVX512_BF16" : "the portable path");
    printf("%-26s %4s %10s %10s %7s %12s\n", "shape", "op", "nf4 ms", "bf16 ms", "ratio", "dequant GB/s");
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int oc = shapes[s].oc, ic = shapes[s].ic;
        size_t nw = (size_t)oc * ic;
        float *w = malloc(nw * sizeof(float));
        fl_rng_fill_uniform(w, nw, fl_rng_stream(1, s, 0, 0), -0.05f, 0.05f);
        fl_nf4_weight W;
        if (fl_nf4_quantize(&W, w, FL_F32, oc, ic, 1, "w")) return 1;
        uint16_t *wb = malloc(nw * 2);
        fl_nf4_dequantize(&W, wb, FL_BF16);
        int kmax = oc > ic ? oc : ic;
        float *A = malloc((size_t)M * kmax * sizeof(float)), *C = malloc((size_t)M * kmax * sizeof(float));
        fl_rng_fill_uniform(A, (size_t)M * kmax, fl_rng_stream(2, s, 0, 0), -1.0f, 1.0f);
        for (int nt = 1; nt >= 0; nt--) {
            double tn[64], tb[64], ratio[64], tq[64];
            for (int r = -1; r < rounds; r++) {   /* round -1 warms up */
                double t0 = now();
                if (nt) fl_gemm_nf4_nt(M, 1.0f, A, ic, &W, 0.0f, C, oc);
                else fl_gemm_nf4_nn(M, 1.0f, A, oc, &W, 0.0f, C, ic);
                double t1 = now();
                if (nt) fl_gemm_bf16_nt(M, oc, ic, 1.0f, A, ic, wb, ic, 0.0f, C, oc);
                else fl_gemm_bf16_nn(M, ic, oc, 1.0f, A, oc, wb, ic, 0.0f, C, ic);
                double t2 = now();
                fl_nf4_dequantize_rows_bf16(&W, 0, oc, wb);
                double t3 = now();
                if (r < 0) continue;
                tn[r] = t1 - t0;
                tb[r] = t2 - t1;
                tq[r] = t3 - t2;
                ratio[r] = tn[r] / tb[r];
            }
            double mq = median(tq, rounds);
            printf("%-26s %4s %10.3f %10.3f %7.3f %12.2f\n", shapes[s].name, nt ? "nt" : "nn", 1e3 * median(tn, rounds),
                   1e3 * median(tb, rounds), median(ratio, rounds), nw * 2 / mq / 1e9);
        }
        free(A); free(C); free(w); free(wb);
        fl_nf4_free(&W);
    }
    return 0;
}
