/* cpu_elementwise.c — SwiGLU and GeGLU, dropout, scaling and the residual add.
 * silu(g) = g·σ(g);  d silu/dg = σ(g)·(1 + g·(1 − σ(g))). SwiGLU reads the fused gate/up projection's
 * rows [gate (FF) | up (FF)] and writes its gradient in the same layout; GeGLU likewise with
 * gelu_tanh(g) = g/2·(1 + tanh(u)), u = √(2/π)·(g + 0.044715·g³) (PyTorch's approximate="tanh");
 * d gelu_tanh/dg = (1 + t)/2 + g/2·(1 − t²)·√(2/π)·(1 + 3·0.044715·g²), t = tanh(u). */
#include <math.h>

#include "backend/cpu/cpu_ops.h"
#include "common/fastmath.h"
#include "common/rng.h"

void swiglu_forward_cpu(void *out_, const void *gate_up_, size_t N, int FF) {
    float *out = out_;
    const float *gate_up = gate_up_;
    #pragma omp parallel for schedule(static)
    for (size_t n = 0; n < N; n++) {
        const float *gate = gate_up + n * 2 * (size_t)FF, *up = gate + FF;
        float *o = out + n * (size_t)FF;
        #pragma omp simd
        for (int i = 0; i < FF; i++) {
            float g = gate[i];
            o[i] = g / (1.0f + fl_expf(-g)) * up[i];
        }
    }
}

void swiglu_backward_cpu(void *dgate_up_, const void *dout_, const void *gate_up_, size_t N, int FF) {
    float *dgate_up = dgate_up_;
    const float *dout = dout_, *gate_up = gate_up_;
    #pragma omp parallel for schedule(static)
    for (size_t n = 0; n < N; n++) {
        const float *gate = gate_up + n * 2 * (size_t)FF, *up = gate + FF, *d = dout + n * (size_t)FF;
        float *dgate = dgate_up + n * 2 * (size_t)FF, *dup = dgate + FF;
        #pragma omp simd
        for (int i = 0; i < FF; i++) {
            float g = gate[i], sig = 1.0f / (1.0f + fl_expf(-g));
            dgate[i] = d[i] * up[i] * sig * (1.0f + g * (1.0f - sig));
            dup[i] = d[i] * g * sig;
        }
    }
}

#define GELU_K0 0.7978845608028654f /* √(2/π) */
#define GELU_K1 0.044715f

void geglu_forward_cpu(void *out_, const void *gate_up_, size_t N, int FF) {
    float *out = out_;
    const float *gate_up = gate_up_;
    #pragma omp parallel for schedule(static)
    for (size_t n = 0; n < N; n++) {
        const float *gate = gate_up + n * 2 * (size_t)FF, *up = gate + FF;
        float *o = out + n * (size_t)FF;
        for (int i = 0; i < FF; i++) {
            float g = gate[i];
            o[i] = 0.5f * g * (1.0f + tanhf(GELU_K0 * (g + GELU_K1 * g * g * g))) * up[i];
        }
    }
}

void geglu_backward_cpu(void *dgate_up_, const void *dout_, const void *gate_up_, size_t N, int FF) {
    float *dgate_up = dgate_up_;
    const float *dout = dout_, *gate_up = gate_up_;
    #pragma omp parallel for schedule(static)
    for (size_t n = 0; n < N; n++) {
        const float *gate = gate_up + n * 2 * (size_t)FF, *up = gate + FF, *d = dout + n * (size_t)FF;
        float *dgate = dgate_up + n * 2 * (size_t)FF, *dup = dgate + FF;
        for (int i = 0; i < FF; i++) {
            float g = gate[i], t = tanhf(GELU_K0 * (g + GELU_K1 * g * g * g));
            float act = 0.5f * g * (1.0f + t);
            float dact = 0.5f * (1.0f + t) + 0.5f * g * (1.0f - t * t) * GELU_K0 * (1.0f + 3.0f * GELU_K1 * g * g);
            dgate[i] = d[i] * up[i] * dact;
            dup[i] = d[i] * act;
        }
    }
}

void scale_2d_cpu(void *x_, float alpha, size_t rows, int cols, int ld) {
    float *x = x_;
    #pragma omp parallel for schedule(static)
    for (size_t r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) x[r * (size_t)ld + c] *= alpha;
}

void dropout_cpu(void *out_, const void *inp_, float p, const uint64_t *stream_, size_t rows, int cols, int ld_inp) {
    float *out = out_;
    const float *inp = inp_;
    uint64_t stream = *stream_;
    float keep_scale = 1.0f / (1.0f - p);
    #pragma omp parallel for schedule(static)
    for (size_t r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) {
            size_t i = r * (size_t)cols + c;
            out[i] = fl_rng_uniform(stream, i) >= p ? inp[r * (size_t)ld_inp + c] * keep_scale : 0.0f;
        }
}

void scale_rows_cpu(void *x_, const float *w, size_t rows, int cols) {
    float *x = x_;
    #pragma omp parallel for schedule(static)
    for (size_t r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) x[r * (size_t)cols + c] *= w[r];
}

void add_inplace_cpu(void *acc_, const void *x_, size_t rows, int cols, int ld_acc) {
    float *acc = acc_;
    const float *x = x_;
    #pragma omp parallel for schedule(static)
    for (size_t r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) acc[r * (size_t)ld_acc + c] += x[r * (size_t)cols + c];
}
