/* cpu_norm.c — RMSNorm forward and backward (frozen weight).
 *
 * y_i = w_i · x_i · r,  r = (mean(x²) + eps)^-1/2 (computed in f32 like transformers' LlamaRMSNorm).
 * Backward (docs/DERIVATIONS.md): dx_k = r · (w_k dy_k − x_k · r² · mean_i(w_i dy_i x_i)).
 * Not the embedding (cpu_embedding.c). */
#include <math.h>

#include "backend/cpu/cpu_ops.h"

void rmsnorm_forward_cpu(void *out_, float *rstd, const void *inp_, const void *weight_, float eps, size_t N, int C,
                         int ld_out) {
    float *out = out_;
    const float *inp = inp_, *weight = weight_;
    #pragma omp parallel for schedule(static)
    for (size_t n = 0; n < N; n++) {
        const float *x = inp + n * C;
        float *y = out + n * (size_t)ld_out;
        float ss = 0.0f;
        for (int c = 0; c < C; c++) ss += x[c] * x[c];
        float r = 1.0f / sqrtf(ss / C + eps);
        for (int c = 0; c < C; c++) y[c] = weight[c] * (x[c] * r);
        rstd[n] = r;
    }
}

void rmsnorm_backward_cpu(void *dinp_, const void *dout_, const void *inp_, const void *weight_, const float *rstd,
                          size_t N, int C, int ld_dout) {
    float *dinp = dinp_;
    const float *dout = dout_, *inp = inp_, *weight = weight_;
    #pragma omp parallel for schedule(static)
    for (size_t n = 0; n < N; n++) {
        const float *x = inp + n * C, *dy = dout + n * (size_t)ld_dout;
        float *dx = dinp + n * C;
        float r = rstd[n], dot = 0.0f;
        for (int c = 0; c < C; c++) dot += weight[c] * dy[c] * x[c];
        float k = r * r * dot / C;
        for (int c = 0; c < C; c++) dx[c] += r * (weight[c] * dy[c] - x[c] * k);
    }
}
