/* cpu_rope.c — rotate-half RoPE (GPT-NeoX / transformers convention, not interleaved pairs), in
 * place on the first n_heads heads of rows of stride ld (q and k of a fused q/k/v row in one call).
 * Of each head (HS values) the first RD rotate — element j pairs with j + RD/2, angle θ = pos ·
 * inv_freq[j] in f32, c = cosθ·scale and s = sinθ·scale rounded to f32 as transformers' cos/sin:
 *   y[j] = x[j]·c − x[j+RD/2]·s,  y[j+RD/2] = x[j+RD/2]·c + x[j]·s   (j < RD/2)
 * and the rest (partial rotary, j >= RD) pass through. The backward is the transposed rotation
 * (angle −θ, same scale). Not the frequencies (engine/model_init.c: fl_rope_inv_freq). */
#include <math.h>

#include "backend/cpu/cpu_ops.h"

static void rope_rotate(float *x, const int32_t *pos, const float *inv_freq, float scale, size_t N, int n_heads, int HS,
                        int RD, int ld, float sign) {
    int half = RD / 2;
    #pragma omp parallel for schedule(static)
    for (size_t n = 0; n < N; n++) {
        float cos_t[512], sin_t[512];   /* RD <= HS <= 1024 */
        for (int j = 0; j < half; j++) {
            float angle = (float)pos[n] * inv_freq[j];
            cos_t[j] = cosf(angle) * scale;
            sin_t[j] = sign * (sinf(angle) * scale);
        }
        for (int h = 0; h < n_heads; h++) {
            float *v = x + n * (size_t)ld + (size_t)h * HS;
            for (int j = 0; j < half; j++) {
                float a = v[j], b = v[j + half];
                v[j] = a * cos_t[j] - b * sin_t[j];
                v[j + half] = b * cos_t[j] + a * sin_t[j];
            }
        }
    }
}

void rope_forward_cpu(void *x, const int32_t *pos, const float *inv_freq, float scale, size_t N, int n_heads, int HS,
                      int RD, int ld) {
    rope_rotate(x, pos, inv_freq, scale, N, n_heads, HS, RD, ld, 1.0f);
}

void rope_backward_cpu(void *dx, const int32_t *pos, const float *inv_freq, float scale, size_t N, int n_heads, int HS,
                       int RD, int ld) {
    rope_rotate(dx, pos, inv_freq, scale, N, n_heads, HS, RD, ld, -1.0f);
}
