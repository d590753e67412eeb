/* rng.c — array fills over the counter-based generator (see rng.h). */
#include <stddef.h>

#include "common/rng.h"

void fl_rng_fill_uniform(float *out, size_t n, uint64_t stream, float lo, float hi) {
    #pragma omp parallel for schedule(static) if (n > 1 << 16)
    for (size_t i = 0; i < n; i++) out[i] = lo + (hi - lo) * fl_rng_uniform(stream, i);
}
