/* cpu_elementwise.c — SwiGLU, dropout and the residual add.
 * silu(g) = g·σ(g);  d silu/dg = σ(g)·(1 + g·(1 − σ(g))). */
#include <math.h>

#include "backend/cpu/cpu_ops.h"
#include "common/rng.h"

void swiglu_forward_cpu(float *out, const float *gate, const float *up, size_t N) {
    #pragma omp parallel for schedule(static)
    for (size_t i = 0; i < N; i++) {
        float g = gate[i];
        out[i] = g / (1.0f + expf(-g)) * up[i];
    }
}

void swiglu_backward_cpu(float *dgate, float *dup, const float *dout, const float *gate, const float *up, size_t N) {
    #pragma omp parallel for schedule(static)
    for (size_t i = 0; i < N; i++) {
        float g = gate[i], sig = 1.0f / (1.0f + expf(-g));
        float d = dout[i];
        dgate[i] = d * up[i] * sig * (1.0f + g * (1.0f - sig));
        dup[i] = d * g * sig;
    }
}

void dropout_cpu(float *out, const float *inp, float p, uint64_t stream, size_t N) {
    float keep_scale = 1.0f / (1.0f - p);
    #pragma omp parallel for schedule(static)
    for (size_t i = 0; i < N; i++) out[i] = fl_rng_uniform(stream, i) >= p ? inp[i] * keep_scale : 0.0f;
}

void add_inplace_cpu(float *acc, const float *x, size_t N) {
    #pragma omp parallel for schedule(static)
    for (size_t i = 0; i < N; i++) acc[i] += x[i];
}
