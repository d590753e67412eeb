/* cpu_optim.c — AdamW exactly as torch.optim.AdamW (decoupled weight decay applied to the
 * parameter before the Adam update, bias-corrected moments, eps added after the sqrt). */
#include <math.h>

#include "backend/cpu/cpu_ops.h"

/* The step's factors come from sc (backend.h): lr, lr / (1 − β1^t) and sqrt(1 − β2^t) computed by
 * the engine in double and rounded to f32, and the clipping factor of grad_clip_scale_cpu. */
void adamw_update_cpu(float *params, void *params_w, float *m, float *v, const float *grads, const fl_step_scalars *sc,
                      float beta1, float beta2, float eps, float weight_decay, size_t n) {
    float lr = sc->lr, step_size = sc->adam_step_size, bias2_sqrt = sc->adam_bias2_sqrt, grad_scale = sc->clip_scale;
    if (!isfinite(grad_scale)) return; /* non-finite gradients or loss: the trainer stops; nothing changes */
    #pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) {
        float g = grads[i] * grad_scale;
        float p = params[i] * (1.0f - lr * weight_decay);
        m[i] = beta1 * m[i] + (1.0f - beta1) * g;
        v[i] = beta2 * v[i] + (1.0f - beta2) * g * g;
        params[i] = p - step_size * m[i] / (sqrtf(v[i]) / bias2_sqrt + eps);
    }
    if (params_w && params_w != params) cpu_cast_to_weight(params_w, params, n);
}

/* torch.nn.utils.clip_grad_norm_: coef = max_norm / (norm + 1e-6), clamped to 1. */
void grad_clip_scale_cpu(fl_step_scalars *sc, float max_norm) {
    double norm = sqrt(sc->grad_sumsq), coef = max_norm / (norm + 1e-6);
    if (!isfinite(sc->grad_sumsq) || !isfinite(sc->loss_sum)) sc->clip_scale = NAN;
    else sc->clip_scale = max_norm > 0.0f && coef < 1.0 ? (float)coef : 1.0f;
}

/* Fixed blocks summed in a fixed order: the result does not depend on the thread count or on
 * OpenMP's reduction order, so clipping — and resumed runs — are bitwise reproducible. */
void sum_squares_cpu(double *out, const float *x, size_t n) {
    enum { BLOCKS = 64 };
    double partial[BLOCKS];
    size_t block = (n + BLOCKS - 1) / BLOCKS;
    #pragma omp parallel for schedule(static)
    for (int b = 0; b < BLOCKS; b++) {
        double s = 0.0;
        size_t end = (size_t)(b + 1) * block < n ? (size_t)(b + 1) * block : n;
        for (size_t i = (size_t)b * block; i < end; i++) s += (double)x[i] * x[i];
        partial[b] = s;
    }
    double total = 0.0;
    for (int b = 0; b < BLOCKS; b++) total += partial[b];
    *out = total;
}

void adamw_update_cpu_bf16(float *params, void *params_w, float *m, float *v, const float *grads,
                           const fl_step_scalars *sc, float beta1, float beta2, float eps, float weight_decay,
                           size_t n) {
    adamw_update_cpu(params, NULL, m, v, grads, sc, beta1, beta2, eps, weight_decay, n);
    if (params_w && isfinite(sc->clip_scale)) cpu_cast_to_weight_bf16(params_w, params, n);
}
