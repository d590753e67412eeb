/* bench_attention.c — the CPU attention (backend/cpu/cpu_attention.c) alone: forward and backward
 * of one layer at a given shape, best of R runs, in wall time and in process CPU time, with the
 * GEMM rate its causal FLOPs imply (2 products forward, 5 backward, T(T+1)/2 pairs per head).
 * A lab tool, not a test. Any cpu_attention.c can be linked in, so two versions compare side by
 * side (docs/CPU-GEMM.md, "Attention tiles"):
 *
 *   gcc -O3 -march=native -std=c11 -D_GNU_SOURCE -fopenmp -fno-math-errno -fno-trapping-math -Isrc \
 *       dev/cpu/bench_attention.c src/backend/cpu/cpu_attention.c src/backend/cpu/tile_gemm.c \
 *       build/libfastlora.a -ljansson -lpcre2-8 -lcrypto -L/usr/lib/x86_64-linux-gnu/openblas-openmp \
 *       -Wl,-rpath,/usr/lib/x86_64-linux-gnu/openblas-openmp -lopenblas -lm -o build/bench_attention
 *   OMP_NUM_THREADS=2 build/bench_attention B T NH NKV HS [runs [bf16]]     e.g. 1 2048 9 3 64 5
 * With "bf16" it runs the bf16 backend's tiles (cpu_attention_bf16.c) instead; the library's
 * copy of them is linked unless that file is named on the command line too. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/cpu/cpu_ops.h"

static double seconds(clockid_t clock) {
    struct timespec t;
    clock_gettime(clock, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc < 6) {
        fprintf(stderr, "usage: %s B T NH NKV HS [runs [bf16]]\n", argv[0]);
        return 2;
    }
    int B = atoi(argv[1]), T = atoi(argv[2]), NH = atoi(argv[3]), NKV = atoi(argv[4]), HS = atoi(argv[5]);
    int runs = argc > 6 ? atoi(argv[6]) : 5;
    int bf16 = argc > 7 && strcmp(argv[7], "bf16") == 0; /* the bf16 tiles (cpu_attention_bf16.c) */
    if (B < 1 || T < 1 || NH < 1 || NKV < 1 || NH % NKV || HS < 1 || runs < 1) {
        fprintf(stderr, "%s: need B, T, HS >= 1 and NKV dividing NH\n", argv[0]);
        return 2;
    }
    int ld = (NH + 2 * NKV) * HS;
    size_t N = (size_t)B * T, n_qkv = N * ld, n_out = N * (size_t)NH * HS;
    float *qkv = malloc(sizeof(float) * n_qkv), *d = calloc(n_qkv, sizeof(float));
    float *out = malloc(sizeof(float) * n_out), *dout = malloc(sizeof(float) * n_out);
    float *lse = malloc(sizeof(float) * (size_t)B * NH * T);
    int32_t *seg = calloc(N, sizeof(int32_t)); /* one document per row: plain causal attention */
    if (!qkv || !d || !out || !dout || !lse || !seg) {
        fprintf(stderr, "%s: out of memory\n", argv[0]);
        return 1;
    }
    for (size_t i = 0; i < n_qkv; i++) qkv[i] = (float)((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
    for (size_t i = 0; i < n_out; i++) dout[i] = (float)((i * 40503u) % 1000) / 1000.0f - 0.5f;
    const float *q = qkv, *k = q + (size_t)NH * HS, *v = k + (size_t)NKV * HS;
    double best[2][2] = {{1e30, 1e30}, {1e30, 1e30}}; /* [forward, backward][wall, cpu] */
    for (int r = 0; r < runs; r++) {
        double w0 = seconds(CLOCK_MONOTONIC), c0 = seconds(CLOCK_PROCESS_CPUTIME_ID);
        (bf16 ? attention_forward_bf16_tiles : attention_forward_cpu)(out, lse, q, k, v, seg, B, T, NH, NKV, HS, ld, 0.0f);
        double w1 = seconds(CLOCK_MONOTONIC), c1 = seconds(CLOCK_PROCESS_CPUTIME_ID);
        (bf16 ? attention_backward_bf16_tiles : attention_backward_cpu)(d, d + (size_t)NH * HS, d + (size_t)(NH + NKV) * HS, dout, out, lse, q, k, v, seg, B, T, NH,
                               NKV, HS, ld, 0.0f);
        double w2 = seconds(CLOCK_MONOTONIC), c2 = seconds(CLOCK_PROCESS_CPUTIME_ID);
        double t[2][2] = {{w1 - w0, c1 - c0}, {w2 - w1, c2 - c1}};
        for (int p = 0; p < 2; p++)
            for (int c = 0; c < 2; c++) best[p][c] = t[p][c] < best[p][c] ? t[p][c] : best[p][c];
    }
    double product = 2.0 * B * NH * ((double)T * (T + 1) / 2) * HS; /* FLOPs of one causal product */
    printf("B %d T %d NH %d NKV %d HS %d: forward %.1f ms wall (%.1f GFLOP/s), %.1f ms cpu; "
           "backward %.1f ms wall (%.1f GFLOP/s), %.1f ms cpu\n",
           B, T, NH, NKV, HS, 1e3 * best[0][0], 2 * product / best[0][0] / 1e9, 1e3 * best[0][1], 1e3 * best[1][0],
           5 * product / best[1][0] / 1e9, 1e3 * best[1][1]);
    free(qkv); free(d); free(out); free(dout); free(lse); free(seg);
    return 0;
}
