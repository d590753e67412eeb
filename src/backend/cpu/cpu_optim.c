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

double sum_squares_cpu(const float *x, size_t n) {
    double s = 0.0;
    #pragma omp parallel for schedule(static) reduction(+ : s)
    for (size_t i = 0; i < n; i++) s += (double)x[i] * x[i];
    return s;
}
