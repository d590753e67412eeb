/* cpu_elementwise.c — SwiGLU, dropout and the residual add.
 * silu(g) = g·σ(g);  d silu/dg = σ(g)·(1 + g·(1 − σ(g))). */
#include <math.h>

#include "backend/cpu/cpu_ops.h"
#include "common/fastmath.h"
#include "common/rng.h"

void swiglu_forward_cpu(void *out_, const void *gate_, const void *up_, size_t N) {
    float *out = out_;
    const float *gate = gate_, *up = up_;
    #pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < N; i++) {
        float g = gate[i];
        out[i] = g / (1.0f + fl_expf(-g)) * up[i];
    }
}

void swiglu_backward_cpu(void *dgate_, void *dup_, const void *dout_, const void *gate_, const void *up_, size_t N) {
    float *dgate = dgate_, *dup = dup_;
    const float *dout = dout_, *gate = gate_, *up = up_;
    #pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < N; i++) {
        float g = gate[i], sig = 1.0f / (1.0f + fl_expf(-g));
        float d = dout[i];
        dgate[i] = d * up[i] * sig * (1.0f + g * (1.0f - sig));
        dup[i] = d * g * sig;
    }
}

void dropout_cpu(void *out_, const void *inp_, float p, uint64_t stream, size_t N) {
    float *out = out_;
    const float *inp = inp_;
    float keep_scale = 1.0f / (1.0f - p);
    #pragma omp parallel for schedule(static)
    for (size_t i = 0; i < N; i++) out[i] = fl_rng_uniform(stream, i) >= p ? inp[i] * keep_scale : 0.0f;
}

void add_inplace_cpu(void *acc_, const void *x_, size_t N) {
    float *acc = acc_;
    const float *x = x_;
    #pragma omp parallel for schedule(static)
    for (size_t i = 0; i < N; i++) acc[i] += x[i];
}
