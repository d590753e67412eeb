/* bench_tile_gemm.c — tile_gemm (backend/cpu/tile_gemm.c) alone, one core, CPU time: first on
 * operands that stay in L1 (the micro-kernel's rate at k = 64 and 256), then on the attention's own
 * tile products at smollm2's shapes (T 2048, head size 64, fused q/k/v rows of 960 floats) beside
 * OpenBLAS's sgemm on the same operands. A lab tool, not a test:
 *
 *   gcc -O3 -march=native -std=c11 -D_GNU_SOURCE -Isrc dev/cpu/bench_tile_gemm.c \
 *       src/backend/cpu/tile_gemm.c -L/usr/lib/x86_64-linux-gnu/openblas-openmp \
 *       -Wl,-rpath,/usr/lib/x86_64-linux-gnu/openblas-openmp -lopenblas -o build/bench_tile_gemm
 *   OMP_NUM_THREADS=1 build/bench_tile_gemm */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "backend/cpu/tile_gemm.h"

static double cpu_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static float *floats(size_t n, float step) {
    float *p = aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < n; i++) p[i] = step * (float)(i % 13);
    return p;
}

int main(void) {
    /* the micro-kernel: one 6 x 16 block, everything in L1 */
    float *a = floats(6 * 256, 0.001f), *b = floats(256 * 16, 0.002f), *c = floats(6 * 16, 0.0f);
    for (int k = 64; k <= 256; k *= 4) {
        int calls = 200000;
        double t = cpu_seconds();
        for (int r = 0; r < calls; r++) tile_gemm(6, 16, k, a, k, 1, b, 16 * (int64_t)k, c, 16, 1);
        t = cpu_seconds() - t;
        printf("6 x 16 block, k = %3d, in L1: %6.1f GFLOP/s\n", k, 2.0 * 6 * 16 * k * calls / t / 1e9);
    }

    /* the attention's tile products: 64 query rows, 256 keys, head size 64 */
    enum { T = 2048, HS = 64, LD = 960, QB = 64, KB = 256 };
    float *qkv = floats((size_t)T * LD, 0.01f), *P = floats(QB * KB, 0.01f), *C = floats((size_t)KB * LD, 0.0f);
    float *kt = floats((size_t)T * HS, 0), *kc = floats((size_t)T * HS, 0), *qc = floats(QB * HS, 0);
    const float *k_rows = qkv + 576; /* the first kv head's keys */
    tile_pack_transposed(kt, k_rows, LD, T, HS);
    tile_pack_columns(kc, k_rows, LD, T, HS);
    tile_pack_columns(qc, qkv, LD, QB, HS);
    static const char *names[] = {"S = Q.K^T", "O += P.V", "dV += P^T.dO", "dQ += dS.K"};
    for (int which = 0; which < 4; which++) {
        double rate[2];
        for (int lib = 0; lib < 2; lib++) {
            int calls = 2000;
            double t = cpu_seconds();
            for (int r = 0; r < calls; r++) {
                size_t k0 = (size_t)(r % (T / KB)) * KB;
                const float *keys = k_rows + k0 * LD;
                switch (which) {
                case 0:
                    if (lib) cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, QB, KB, HS, 1, qkv, LD, keys, LD, 0, P, KB);
                    else tile_gemm(QB, KB, HS, qkv, LD, 1, kt + k0 * HS, HS * 16, P, KB, 0);
                    break;
                case 1:
                    if (lib) cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, QB, HS, KB, 1, P, KB, keys, LD, 1, C, HS);
                    else tile_gemm(QB, HS, KB, P, KB, 1, kc + k0 * 16, (int64_t)T * 16, C, HS, 1);
                    break;
                case 2:
                    if (lib) cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, KB, HS, QB, 1, P, KB, qkv, LD, 1, C, HS);
                    else tile_gemm(KB, HS, QB, P, 1, KB, qc, QB * 16, C, HS, 1);
                    break;
                default:
                    if (lib) cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, QB, HS, KB, 1, P, KB, keys, LD, 1, C, LD);
                    else tile_gemm(QB, HS, KB, P, KB, 1, kc + k0 * 16, (int64_t)T * 16, C, LD, 1);
                }
            }
            t = cpu_seconds() - t;
            rate[lib] = 2.0 * QB * KB * HS * calls / t / 1e9;
        }
        printf("%-13s tile_gemm %6.1f GFLOP/s, OpenBLAS sgemm %6.1f (%.2fx)\n", names[which], rate[0], rate[1],
               rate[0] / rate[1]);
    }
    free(a); free(b); free(c); free(qkv); free(P); free(C); free(kt); free(kc); free(qc);
    return 0;
}
