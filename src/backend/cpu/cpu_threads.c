/* cpu_threads.c — the default OpenMP wait policy (see cpu_threads.h). */
#include "backend/cpu/cpu_threads.h"

#include <stdlib.h>
#include <unistd.h>

void fl_omp_default_environment(char **argv) {
    if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT")) return;
    if (setenv("OMP_WAIT_POLICY", "passive", 1) != 0) return;
    execv("/proc/self/exe", argv);
    /* exec failed (no /proc): run on under the runtime's default, as before */
    unsetenv("OMP_WAIT_POLICY");
}
