/* cpu_optim.c — AdamW exactly as torch.optim.AdamW (decoupled weight decay applied to the
 * parameter before the Adam update, bias-corrected moments, eps added after the sqrt). */
#include <math.h>

#include "backend/cpu/cpu_ops.h"

void adamw_update_cpu(float *params, void *params_w, float *m, float *v, const float *grads, float lr, float beta1,
                      float beta2, float eps, float weight_decay, float grad_scale, int step, size_t n) {
    double bias1 = 1.0 - pow(beta1, step), bias2 = 1.0 - pow(beta2, step);
    float step_size = (float)(lr / bias1), bias2_sqrt = (float)sqrt(bias2);
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

/* Fixed blocks summed in a fixed order: the result does not depend on the thread count or on
 * OpenMP's reduction order, so clipping — and resumed runs — are bitwise reproducible. */
double sum_squares_cpu(const float *x, size_t n) {
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
    return total;
}

void adamw_update_cpu_bf16(float *params, void *params_w, float *m, float *v, const float *grads, float lr,
                           float beta1, float beta2, float eps, float weight_decay, float grad_scale, int step,
                           size_t n) {
    adamw_update_cpu(params, NULL, m, v, grads, lr, beta1, beta2, eps, weight_decay, grad_scale, step, n);
    if (params_w) cpu_cast_to_weight_bf16(params_w, params, n);
}
