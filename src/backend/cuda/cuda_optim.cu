/* cuda_optim.cu — AdamW over the whole flat LoRA buffer in one launch, the Σx² reduction of
 * global-norm clipping, and the clip factor.
 *
 * Mirrors backend/cpu/cpu_optim.c (torch.optim.AdamW: decay applied to the parameter first,
 * bias-corrected moments, eps after the sqrt). The step's factors — lr, lr / (1 − β1^t),
 * sqrt(1 − β2^t), computed by the engine in double exactly as the CPU takes them — and the clip
 * factor are read from the step's scalars in device memory, so a recorded step replays with the
 * new step's values. Each thread updates f32 master, m, v and writes the bf16 compute copy in the
 * same pass (4 f32 reads, 3 f32 + 1 bf16 writes per parameter). sum_squares is deterministic: a
 * grid fixed by n, one double partial per block, one block adding the partials in order. */
#include <math.h>

#include "backend/cuda/cuda_common.cuh"

__global__ void adamw_update_kernel(float *params, bf16 *params_act, float *m, float *v, const float *grads,
                                    const fl_step_scalars *sc, float beta1, float beta2, float eps, float weight_decay,
                                    size_t n) {
    float lr = sc->lr, step_size = sc->adam_step_size, bias2_sqrt = sc->adam_bias2_sqrt, grad_scale = sc->clip_scale;
    if (!isfinite(grad_scale)) return; /* non-finite gradients or loss: the trainer stops; nothing changes */
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float g = grads[i] * grad_scale;
        float p = params[i] * (1.0f - lr * weight_decay);
        float mi = beta1 * m[i] + (1.0f - beta1) * g;
        float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
        m[i] = mi;
        v[i] = vi;
        p = p - step_size * mi / (sqrtf(vi) / bias2_sqrt + eps);
        params[i] = p;
        if (params_act) params_act[i] = __float2bfloat16_rn(p);
    }
}

void adamw_update(float *params, bf16 *params_act, float *m, float *v, const float *grads, const fl_step_scalars *sc,
                  float beta1, float beta2, float eps, float weight_decay, size_t n, cudaStream_t stream) {
    if (!n) return;
    unsigned blocks = fl_cuda_grid_1d(n, 256, 4, (unsigned)fl_cuda.prop.multiProcessorCount * 8);
    adamw_update_kernel<<<blocks, 256, 0, stream>>>(params, params_act, m, v, grads, sc, beta1, beta2, eps, weight_decay,
                                                    n);
    CUDA_LAUNCH_CHECK();
}

/* torch.nn.utils.clip_grad_norm_'s coef = max_norm / (norm + 1e-6), clamped to 1: the CPU's double
 * arithmetic (IEEE sqrt and division on both), so both backends clip by the same f32 factor. */
__global__ void grad_clip_scale_kernel(fl_step_scalars *sc, float max_norm) {
    double sumsq = sc->grad_sumsq, norm = sqrt(sumsq), coef = max_norm / (norm + 1e-6);
    if (!isfinite(sumsq) || !isfinite(sc->loss_sum)) sc->clip_scale = NAN;
    else sc->clip_scale = max_norm > 0.0f && coef < 1.0 ? (float)coef : 1.0f;
}

void grad_clip_scale(fl_step_scalars *sc, float max_norm, cudaStream_t stream) {
    grad_clip_scale_kernel<<<1, 1, 0, stream>>>(sc, max_norm);
    CUDA_LAUNCH_CHECK();
}

#define SS_THREADS 256
#define SS_MAX_BLOCKS 1024

__global__ void sum_squares_partial_kernel(double *partials, const float *x, size_t n) {
    __shared__ double s[SS_THREADS];
    double acc = 0.0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        acc += (double)x[i] * x[i];
    s[threadIdx.x] = acc;
    __syncthreads();
    for (int w = SS_THREADS / 2; w > 0; w >>= 1) {
        if ((int)threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) partials[blockIdx.x] = s[0];
}

__global__ void sum_squares_final_kernel(double *out, const double *partials, int count) {
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        double acc = 0.0;
        for (int i = 0; i < count; i++) acc += partials[i];
        *out = acc;
    }
}

void sum_squares(double *out_dev, const float *x, size_t n, cudaStream_t stream) {
    if (!n) {
        CUDA_CHECK(cudaMemsetAsync(out_dev, 0, sizeof(double), stream));
        fl_cuda_count_op();
        return;
    }
    unsigned blocks = fl_cuda_grid_1d(n, SS_THREADS, 8, SS_MAX_BLOCKS);
    double *partials = (double *)fl_cuda_scratch(FL_SCRATCH_REDUCE, SS_MAX_BLOCKS * sizeof(double));
    sum_squares_partial_kernel<<<blocks, SS_THREADS, 0, stream>>>(partials, x, n);
    CUDA_LAUNCH_CHECK();
    sum_squares_final_kernel<<<1, 32, 0, stream>>>(out_dev, partials, (int)blocks);
    CUDA_LAUNCH_CHECK();
}
