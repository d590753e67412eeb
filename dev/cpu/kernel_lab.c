/* kernel_lab.c — the bf16 micro-kernel alone, on L1/L2-resident packed panels, in CPU time.
 * Build: gcc -O3 -march=native -fopenmp -std=c11 -D_GNU_SOURCE -Isrc [-DFL_GB_MR=.. -DFL_GB_NV=.. -DFL_GB_KC=..] \
 *            dev/cpu/kernel_lab.c -o build/kernel_lab
 * Prints GFLOP/s of one core for: the kernel on one A and one B micro-panel (all L1), and the
 * kernel sweeping a packed A block (MC rows, L2) against one B micro-panel, as in the driver. */
#include "../../src/backend/cpu/gemm_bf16_avx512.c"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void *xaligned(size_t bytes) { return aligned_alloc(64, (bytes + 63) / 64 * 64); }

static double cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

int main(void) {
    int kc = KC, kcp = kc / 2;
    size_t astride = (size_t)(kc / 32) * MR * 16;
    int npanels = 576 / NR;
    uint32_t *ap = xaligned(4 * astride * (MC / MR)), *bp = xaligned(4 * (size_t)kcp * NR * npanels);
    for (size_t i = 0; i < astride * (MC / MR); i++) ap[i] = 0x3f813f7fu + (uint32_t)(i & 3);
    for (size_t i = 0; i < (size_t)kcp * NR * npanels; i++) bp[i] = 0x3c013bffu + (uint32_t)(i & 7);
    float *C = xaligned(4 * (size_t)MC * NR * npanels);
    memset(C, 0, 4 * (size_t)MC * NR * npanels);
    for (int mode = 0; mode < 3; mode++) {
        double best = 1e30;
        for (int rep = 0; rep < 20; rep++) {
            int calls = 2000;
            double t = cpu_now();
            for (int i = 0; i < calls; i++) {
                int ir = mode ? (i % (MC / MR)) : 0, jr = mode == 2 ? (i / (MC / MR)) % npanels : 0;
                kernel(kc, ap + ir * astride, bp + (size_t)jr * kcp * NR, C + (size_t)ir * MR * NR * npanels + jr * NR,
                       NR * npanels, MR, NR, 1.0f, 1.0f);
            }
            t = cpu_now() - t;
            if (t < best) best = t;
        }
        printf("MR=%d NR=%d KC=%d MC=%d %-24s %.1f GFLOP/s\n", MR, NR, KC, MC,
               mode == 2 ? "A block x 576-col B block:" : mode ? "A block (L2) x B panel:" : "one A, one B panel:", 2000.0 * 2 * MR * NR * kc / best / 1e9);
    }
    return 0;
}
