/* cpu_norm.c — RMSNorm forward and backward (frozen weight).
 *
 * y_i = w_i · x_i · r,  r = (mean(x²) + eps)^-1/2 (computed in f32 like transformers' LlamaRMSNorm).
 * Backward (docs/DERIVATIONS.md): dx_k = r · (w_k dy_k − x_k · r² · mean_i(w_i dy_i x_i)).
 * The offset forms use w_i = w_offset + weight_i, added in f32 (Gemma's x·(1 + w), offset 1); the
 * plain ones are offset 0.
 * Not the embedding (cpu_embedding.c). */
#include <math.h>

#include "backend/cpu/cpu_ops.h"

void rmsnorm_offset_forward_cpu(void *out_, float *rstd, const void *inp_, const void *weight_, float w_offset,
                                float eps, size_t N, int C, int ld_out) {
    float *out = out_;
    const float *inp = inp_, *weight = weight_;
    #pragma omp parallel for schedule(static)
    for (size_t n = 0; n < N; n++) {
        const float *x = inp + n * C;
        float *y = out + n * (size_t)ld_out;
        float ss = 0.0f;
        for (int c = 0; c < C; c++) ss += x[c] * x[c];
        float r = 1.0f / sqrtf(ss / C + eps);
        for (int c = 0; c < C; c++) y[c] = (w_offset + weight[c]) * (x[c] * r);
        rstd[n] = r;
    }
}

void rmsnorm_offset_backward_cpu(void *dinp_, const void *dout_, const void *inp_, const void *weight_, float w_offset,
                                 const float *rstd, size_t N, int C, int ld_dout) {
    float *dinp = dinp_;
    const float *dout = dout_, *inp = inp_, *weight = weight_;
    #pragma omp parallel for schedule(static)
    for (size_t n = 0; n < N; n++) {
        const float *x = inp + n * C, *dy = dout + n * (size_t)ld_dout;
        float *dx = dinp + n * C;
        float r = rstd[n], dot = 0.0f;
        for (int c = 0; c < C; c++) dot += (w_offset + weight[c]) * dy[c] * x[c];
        float k = r * r * dot / C;
        for (int c = 0; c < C; c++) dx[c] += r * ((w_offset + weight[c]) * dy[c] - x[c] * k);
    }
}

void rmsnorm_forward_cpu(void *out, float *rstd, const void *inp, const void *weight, float eps, size_t N, int C,
                         int ld_out) {
    rmsnorm_offset_forward_cpu(out, rstd, inp, weight, 0.0f, eps, N, C, ld_out);
}

void rmsnorm_backward_cpu(void *dinp, const void *dout, const void *inp, const void *weight, const float *rstd,
                          size_t N, int C, int ld_dout) {
    rmsnorm_offset_backward_cpu(dinp, dout, inp, weight, 0.0f, rstd, N, C, ld_dout);
}
