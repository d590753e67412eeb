/* bench_rank_grad.c — times the LoRA weight-gradient GEMMs (matmul_backward_weight_cpu in
 * cpu_matmul.c: one side is the rank, fl_rank_grad_tn in rank_grad.c; FASTLORA_CPU_ISA picks the
 * instance) on the shapes of a smollm2-135m step at 4 x 256, rank 16.
 * A lab tool, not part of the product: per shape the best of 30 calls in thread CPU time (robust on
 * a shared machine with OMP_NUM_THREADS=1), and GFLOP/s.
 *
 *   gcc -O3 -march=native -std=c11 -D_GNU_SOURCE -fopenmp -fno-math-errno -fno-trapping-math -Isrc \
 *       dev/cpu/bench_rank_grad.c src/backend/cpu/rank_grad.c build/libfastlora.a -ljansson -lpcre2-8 \
 *       -lcrypto -L/usr/lib/x86_64-linux-gnu/openblas-openmp -Wl,-rpath,/usr/lib/x86_64-linux-gnu/openblas-openmp \
 *       -lopenblas -lm -o build/bench_rank_grad
 *   OMP_NUM_THREADS=1 build/bench_rank_grad
 * For a side by side, build a second copy with `git show REV:src/backend/cpu/rank_grad.c` in place
 * of the current file and alternate the two.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "backend/cpu/cpu_ops.h"

static double thread_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(void) {
    const int N = 1024, R = 16;
    /* {IC, OC, ld_inp}: dA of q/o (576), dB of q/o, dA with inp a column block of [x | x·Aᵀ],
     * dB of gate/up (1536), dA of down (1536), dB of k/v (192) */
    const int shapes[][3] = {{576, R, 576}, {R, 576, R}, {576, R, 576 + R}, {R, 1536, R}, {1536, R, 1536}, {R, 192, R}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int IC = shapes[s][0], OC = shapes[s][1], ld_inp = shapes[s][2], ld_dout = OC;
        float *dout = malloc(sizeof(float) * (size_t)N * ld_dout), *inp = malloc(sizeof(float) * (size_t)N * ld_inp);
        float *dw = calloc((size_t)OC * IC, sizeof(float));
        if (!dout || !inp || !dw) return 1;
        for (size_t i = 0; i < (size_t)N * ld_dout; i++) dout[i] = (float)(i % 13) * 0.1f - 0.6f;
        for (size_t i = 0; i < (size_t)N * ld_inp; i++) inp[i] = (float)(i % 7) * 0.1f - 0.3f;
        double best = 1e30;
        for (int rep = 0; rep < 30; rep++) {
            double t0 = thread_seconds();
            matmul_backward_weight_cpu(dw, dout, inp, 1.0f, (size_t)N, IC, OC, ld_dout, ld_inp);
            double t = thread_seconds() - t0;
            if (t < best) best = t;
        }
        printf("N %d  IC %4d  OC %4d  ld_inp %4d: %7.1f us  %5.1f GFLOP/s\n", N, IC, OC, ld_inp, best * 1e6,
               2.0 * N * IC * OC / best * 1e-9);
        free(dout);
        free(inp);
        free(dw);
    }
    return 0;
}
