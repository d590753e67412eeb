/* cuda_compare.c — the worst per-row error of a result against its reference (cuda_compare.h). */
#include "backend/cuda/cuda_compare.h"

#include <math.h>

fl_row_err fl_worst_row_err(const float *got, const float *want, size_t N, int heads, int cols, size_t ld) {
    fl_row_err worst = {0, 0, 0};
    double top = 0;
    for (size_t n = 0; n < N; n++)
        for (int j = 0; j < heads * cols; j++) top = fmax(top, fabs((double)want[n * ld + j]));
    double floor = top > 0 ? 1e-3 * top : 1e-30;
    for (size_t n = 0; n < N; n++)
        for (int h = 0; h < heads; h++) {
            const float *g = got + n * ld + (size_t)h * cols, *w = want + n * ld + (size_t)h * cols;
            double diff = 0, scale = 0;
            for (int i = 0; i < cols; i++) {
                double d = fabs((double)g[i] - w[i]);
                diff = d == d ? fmax(diff, d) : INFINITY; /* NaN never passes */
                if (!isfinite(g[i])) diff = INFINITY;
                scale = fmax(scale, fabs((double)w[i]));
            }
            double e = diff / fmax(scale, floor);
            if (e > worst.err) worst = (fl_row_err){e, n, h};
        }
    return worst;
}
