/* cpu_clock.c — the core clock a busy thread runs at, from a chain of dependent integer adds (one
 * cycle each on every x86-64 core since 2003), best of R runs in wall time. What the CPU's FMA peak
 * in docs/BENCHMARKS.md ("The AVX2 machine's ceiling") rests on: peak = cores × clock × FLOP per
 * cycle per core (32 for two 8-lane f32 FMA pipes). A measuring tool, not a test; x86-64 only.
 *
 *   gcc -O2 dev/cpu/cpu_clock.c -o build/cpu_clock && build/cpu_clock [R]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv) {
    int runs = argc > 1 ? atoi(argv[1]) : 5;
    const unsigned long iters = 200000000UL; /* × 16 dependent adds */
    double best = 1e30;
    unsigned long y = 1;
    for (int r = 0; r < (runs > 0 ? runs : 1); r++) {
        double t = now();
        for (unsigned long i = 0; i < iters; i++)
            __asm__ volatile("add %0,%0\n\tadd %0,%0\n\tadd %0,%0\n\tadd %0,%0\n\t"
                             "add %0,%0\n\tadd %0,%0\n\tadd %0,%0\n\tadd %0,%0\n\t"
                             "add %0,%0\n\tadd %0,%0\n\tadd %0,%0\n\tadd %0,%0\n\t"
                             "add %0,%0\n\tadd %0,%0\n\tadd %0,%0\n\tadd %0,%0"
                             : "+r"(y));
        t = now() - t;
        if (t < best) best = t;
    }
    /* the loop's own increment and branch run beside the chain, so this is the clock, not under it */
    printf("%.2f GHz (best of %d: %lu dependent adds in %.3f s)\n", 16.0 * iters / best / 1e9, runs, 16 * iters, best);
    return 0;
}
