/* cpu_threads.h — the OpenMP environment fastlora runs its CPU kernels under.
 *
 * OpenMP threads that wait at a barrier spin before they sleep (GNU OpenMP: up to GOMP_SPINCOUNT =
 * 300,000 rounds). On an idle machine that saves a wake-up per barrier (~8% of a step measured);
 * on a machine whose cores are shared with other work, a spinning thread burns the time slice the
 * thread it waits for needs, and a step gets several times slower (measured: a bench at load ~11 on
 * 2 cores that did not finish 4 steps in 300 s spinning took 48 s/step with passive waiting). The
 * default here is passive: a small loss on an idle laptop, no collapse on a busy one. A user who
 * sets OMP_WAIT_POLICY or GOMP_SPINCOUNT keeps their choice (docs/BENCHMARKS.md). */
#ifndef FL_CPU_THREADS_H
#define FL_CPU_THREADS_H

/* Call first thing in main: when neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT is set, sets
 * OMP_WAIT_POLICY=passive and re-executes the program (GNU OpenMP reads the variable once, when it
 * is loaded, before main). Returns only when nothing had to change or the re-exec failed. */
void fl_omp_default_environment(char **argv);

#endif
