/* cuda_loss.cu — the LM head fused with softmax cross-entropy, chunked over tokens.
 *
 * Mirrors backend/cpu/cpu_loss.c. Chunks are as large as memory allows — the whole batch when its
 * bf16 logits fit the budget of cuda_plan.h (4 GiB, fixed: the chunking depends on the shapes alone;
 * 8192 tokens of a 152k vocabulary are 2.5 GB, one chunk), else N split into equal chunks — so the
 * dX GEMM's output (rows, C) has enough tiles to fill the GPU. Per chunk of `rows` tokens:
 *   1. logits (rows, V) bf16 = inp · weightᵀ                         (cuBLASLt, f32 accumulate)
 *   2. one block per row, two passes over its logits: (1) the max and Σexp together, online in f32
 *      (per thread one rescale per 8 logits, then across the block), loss_row = lse − logit[target];
 *      (2) when a gradient is wanted, the row overwritten in place by
 *      grad_scale·(softmax − onehot) (zeros for ignored rows, target < 0)
 *   3. dinp (rows, C) = dlogits · weight                              (cuBLASLt)
 * The per-row losses go to a device array (copied to token_loss when the caller asks; 0 for ignored
 * rows); one block then sums them in a fixed order into a
 * double, counts the rows and adds both to the step's scalars (deterministic). grad_scale is read
 * from the step's scalars on the device, so nothing here depends on a host value that changes
 * between steps. The full (N, V) logits exist only when the caller asks for them (logits_out,
 * f32, tests and generation), and then come from an f32-output GEMM. With a soft-cap (Gemma 2's
 * final_logit_softcapping, cap > 0) every logit z read in (1)/(2) is zc = cap·tanh(z/cap) in f32 and
 * the gradient row carries the chain factor dzc/dz = 1 − (zc/cap)²; logits_out receives zc. */
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/cuda_info.h"

#define XENT_THREADS 512

/* z -> cap·tanh(z/cap) (cap > 0), else z */
__device__ __forceinline__ float soft_cap(float z, float cap) { return cap > 0.0f ? cap * tanhf(z / cap) : z; }

__global__ void soft_cap_f32_kernel(float *z, size_t n, float cap) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) z[i] = soft_cap(z[i], cap);
}

__global__ void softmax_xent_kernel(bf16 *logits, float *row_loss, const int32_t *targets, const fl_step_scalars *sc,
                                    int V, int write_grad, int vec, float cap) {
    __shared__ float red[32];
    float grad_scale = write_grad ? sc->grad_scale : 0.0f;
    size_t r = blockIdx.x;
    bf16 *row = logits + r * (size_t)V;
    int32_t target = targets[r];
    if (target < 0) {
        if (write_grad)
            for (int i = threadIdx.x; i < V; i += blockDim.x) row[i] = __float2bfloat16_rn(0.0f);
        if (threadIdx.x == 0) row_loss[r] = 0.0f;
        return;
    }
    /* pass 1: online max / sum of exp per thread, then combined across the block */
    float m = -INFINITY, s = 0.0f;
    if (vec) {
        for (int i = threadIdx.x * 8; i < V; i += blockDim.x * 8) {
            float f[8];
            bf16x8_to_float(*(const bf16x8 *)(row + i), f);
#pragma unroll
            for (int k = 0; k < 8; k++) f[k] = soft_cap(f[k], cap);
            float cm = f[0];
#pragma unroll
            for (int k = 1; k < 8; k++) cm = fmaxf(cm, f[k]);
            float nm = fmaxf(m, cm);
            s *= expf(m - nm);
#pragma unroll
            for (int k = 0; k < 8; k++) s += expf(f[k] - nm);
            m = nm;
        }
    } else {
        for (int i = threadIdx.x; i < V; i += blockDim.x) {
            float x = soft_cap(__bfloat162float(row[i]), cap);
            float nm = fmaxf(m, x);
            s = s * expf(m - nm) + expf(x - nm);
            m = nm;
        }
    }
    float row_max = block_reduce_max(m, red);
    float scaled = m == -INFINITY ? 0.0f : s * expf(m - row_max);
    float sum = block_reduce_sum(scaled, red);
    float lse = row_max + logf(sum);
    float target_logit = soft_cap(__bfloat162float(row[target]), cap);
    __syncthreads(); /* everyone read row[target] before it is overwritten */
    if (threadIdx.x == 0) row_loss[r] = lse - target_logit;
    if (!write_grad) return;
    /* pass 2: dlogits = grad_scale · (softmax − onehot), in place */
    float inv = 1.0f / sum;
    if (vec) {
        for (int i = threadIdx.x * 8; i < V; i += blockDim.x * 8) {
            float f[8];
            bf16x8_to_float(*(const bf16x8 *)(row + i), f);
#pragma unroll
            for (int k = 0; k < 8; k++) {
                float zc = soft_cap(f[k], cap), chain = cap > 0.0f ? 1.0f - (zc / cap) * (zc / cap) : 1.0f;
                f[k] = (grad_scale * expf(zc - row_max) * inv - (i + k == target ? grad_scale : 0.0f)) * chain;
            }
            *(bf16x8 *)(row + i) = float_to_bf16x8(f);
        }
    } else {
        for (int i = threadIdx.x; i < V; i += blockDim.x) {
            float zc = soft_cap(__bfloat162float(row[i]), cap), chain = cap > 0.0f ? 1.0f - (zc / cap) * (zc / cap) : 1.0f;
            float p = grad_scale * expf(zc - row_max) * inv;
            row[i] = __float2bfloat16_rn((p - (i == target ? grad_scale : 0.0f)) * chain);
        }
    }
}

/* One block: Σ row_loss in double (fixed order per thread, fixed tree), count of targets >= 0, both
 * added to the step's scalars. */
__global__ void loss_sum_kernel(fl_step_scalars *sc, const float *row_loss, const int32_t *targets, size_t N) {
    __shared__ double dsum[1024];
    __shared__ unsigned long long dcnt[1024];
    double s = 0.0;
    unsigned long long c = 0;
    for (size_t i = threadIdx.x; i < N; i += blockDim.x) {
        s += (double)row_loss[i];
        c += targets[i] >= 0;
    }
    dsum[threadIdx.x] = s;
    dcnt[threadIdx.x] = c;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w >>= 1) {
        if ((int)threadIdx.x < w) {
            dsum[threadIdx.x] += dsum[threadIdx.x + w];
            dcnt[threadIdx.x] += dcnt[threadIdx.x + w];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        sc->loss_sum += dsum[0];
        sc->n_counted += (double)dcnt[0];
    }
}

/* The logits budget: a constant (cuda_plan.h), so the chunks of (N, V) depend on the shapes alone
 * and every process, step and recording runs the same GEMMs. Tests override it. */
static size_t budget_override;
extern "C" void fl_cuda_set_lm_head_budget(size_t bytes) { budget_override = bytes; }

static size_t head_budget(void) { return budget_override ? budget_override : fl_cuda_lm_head_budget(); }

void lm_head_loss(bf16 *dinp, float *logits_out, float *token_loss, fl_step_scalars *sc, const bf16 *inp,
                  const int32_t *targets, const bf16 *weight, size_t N, int C, int V, cudaStream_t stream) {
    lm_head_loss_softcap(dinp, logits_out, token_loss, sc, inp, targets, weight, 0.0f, N, C, V, stream);
}

void lm_head_loss_softcap(bf16 *dinp, float *logits_out, float *token_loss, fl_step_scalars *sc, const bf16 *inp,
                          const int32_t *targets, const bf16 *weight, float softcap, size_t N, int C, int V,
                          cudaStream_t stream) {
    if (!N) return;
    size_t budget = head_budget(), rows_max = fl_cuda_lm_head_chunk_rows(N, V, budget);
    char *scratch = (char *)fl_cuda_scratch(FL_SCRATCH_LM_LOGITS, fl_cuda_lm_head_scratch_bytes(N, V, budget));
    bf16 *logits = (bf16 *)scratch;
    float *row_loss = (float *)(scratch + (rows_max * (size_t)V * 2 + 255) / 256 * 256);
    for (size_t n0 = 0; n0 < N; n0 += rows_max) {
        size_t rows = N - n0 < rows_max ? N - n0 : rows_max;
        matmul_forward(logits, inp + n0 * C, weight, NULL, 1.0f, 0.0f, rows, C, V, V, C, C, stream);
        if (logits_out) {
            /* f32 logits for the caller: the same product with an f32 output */
            matmul_forward_f32out(logits_out + n0 * (size_t)V, inp + n0 * C, weight, rows, C, V, stream);
            if (softcap > 0.0f) {
                size_t n = rows * (size_t)V;
                soft_cap_f32_kernel<<<fl_cuda_grid_1d(n, 256, 1, (unsigned)fl_cuda.prop.multiProcessorCount * 16), 256, 0,
                                      stream>>>(logits_out + n0 * (size_t)V, n, softcap);
                CUDA_LAUNCH_CHECK();
            }
        }
        int vec = V % 8 == 0 && fl_aligned16(logits);
        softmax_xent_kernel<<<(unsigned)rows, XENT_THREADS, 0, stream>>>(logits, row_loss + n0, targets + n0, sc, V,
                                                                         dinp != NULL, vec, softcap);
        CUDA_LAUNCH_CHECK();
        if (dinp) matmul_backward_input(dinp + n0 * C, logits, weight, 1.0f, 0.0f, rows, C, V, C, V, C, stream);
    }
    if (sc) {
        loss_sum_kernel<<<1, 1024, 0, stream>>>(sc, row_loss, targets, N);
        CUDA_LAUNCH_CHECK();
    }
    if (token_loss) CUDA_CHECK(cudaMemcpyAsync(token_loss, row_loss, N * sizeof(float), cudaMemcpyDeviceToDevice, stream));
}
