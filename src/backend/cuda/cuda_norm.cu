/* cuda_norm.cu — embedding gather and RMSNorm forward/backward on bf16 rows, f32 math.
 *
 * Mirrors backend/cpu/cpu_norm.c: y = w·(x·r), r = (mean(x²) + eps)^-1/2 saved in f32;
 * backward dx += r·(w·dy − x·r²·mean(w·dy·x)) (docs/DERIVATIONS.md); w = w_offset + weight in f32
 * (Gemma's 1 + w: the sum is not rounded to bf16, as transformers adds in float32). y (forward) and dy (backward)
 * are rows of stride ld (the K-concatenated [x | x·Aᵀ] of the fused projections). One warp per
 * row, 8 rows per block; rows whose width and stride are multiples of 8 with 16-byte aligned
 * pointers move 8 bf16 per load (the common case), others go element by element. The row is read twice (reduce, then write);
 * the second read hits L1/L2 for C <= 8k. */
#include "backend/cuda/cuda_common.cuh"

#define ROWS_PER_BLOCK 8

__global__ void embedding_forward_kernel(bf16 *out, const int32_t *ids, const bf16 *table, size_t N, int C, int vec) {
    size_t row = (size_t)blockIdx.x * ROWS_PER_BLOCK + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (row >= N) return;
    const bf16 *src = table + (size_t)ids[row] * C;
    bf16 *dst = out + row * C;
    if (vec) {
        for (int c = lane * 8; c < C; c += 256) *(bf16x8 *)(dst + c) = *(const bf16x8 *)(src + c);
    } else {
        for (int c = lane; c < C; c += 32) dst[c] = src[c];
    }
}

__global__ void rmsnorm_forward_kernel(bf16 *out, float *rstd, const bf16 *inp, const bf16 *weight, float w_offset,
                                       float eps, size_t N, int C, int ld_out, int vec) {
    size_t row = (size_t)blockIdx.x * ROWS_PER_BLOCK + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (row >= N) return;
    const bf16 *x = inp + row * C;
    bf16 *y = out + row * ld_out;
    float ss = 0.0f;
    if (vec) {
        for (int c = lane * 8; c < C; c += 256) {
            float f[8];
            bf16x8_to_float(*(const bf16x8 *)(x + c), f);
#pragma unroll
            for (int i = 0; i < 8; i++) ss += f[i] * f[i];
        }
    } else {
        for (int c = lane; c < C; c += 32) {
            float f = __bfloat162float(x[c]);
            ss += f * f;
        }
    }
    ss = warp_reduce_sum(ss);
    float r = rsqrtf(ss / C + eps);
    if (vec) {
        for (int c = lane * 8; c < C; c += 256) {
            float f[8], w[8];
            bf16x8_to_float(*(const bf16x8 *)(x + c), f);
            bf16x8_to_float(*(const bf16x8 *)(weight + c), w);
#pragma unroll
            for (int i = 0; i < 8; i++) f[i] = (w_offset + w[i]) * (f[i] * r);
            *(bf16x8 *)(y + c) = float_to_bf16x8(f);
        }
    } else {
        for (int c = lane; c < C; c += 32)
            y[c] = __float2bfloat16_rn((w_offset + __bfloat162float(weight[c])) * (__bfloat162float(x[c]) * r));
    }
    if (lane == 0) rstd[row] = r;
}

__global__ void rmsnorm_backward_kernel(bf16 *dinp, const bf16 *dout, const bf16 *inp, const bf16 *weight,
                                        float w_offset, const float *rstd, size_t N, int C, int ld_dout, int vec) {
    size_t row = (size_t)blockIdx.x * ROWS_PER_BLOCK + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (row >= N) return;
    const bf16 *x = inp + row * C, *dy = dout + row * ld_dout;
    bf16 *dx = dinp + row * C;
    float r = rstd[row], dot = 0.0f;
    if (vec) {
        for (int c = lane * 8; c < C; c += 256) {
            float xf[8], df[8], wf[8];
            bf16x8_to_float(*(const bf16x8 *)(x + c), xf);
            bf16x8_to_float(*(const bf16x8 *)(dy + c), df);
            bf16x8_to_float(*(const bf16x8 *)(weight + c), wf);
#pragma unroll
            for (int i = 0; i < 8; i++) dot += (w_offset + wf[i]) * df[i] * xf[i];
        }
    } else {
        for (int c = lane; c < C; c += 32)
            dot += (w_offset + __bfloat162float(weight[c])) * __bfloat162float(dy[c]) * __bfloat162float(x[c]);
    }
    dot = warp_reduce_sum(dot);
    float k = r * r * dot / C;
    if (vec) {
        for (int c = lane * 8; c < C; c += 256) {
            float xf[8], df[8], wf[8], acc[8];
            bf16x8_to_float(*(const bf16x8 *)(x + c), xf);
            bf16x8_to_float(*(const bf16x8 *)(dy + c), df);
            bf16x8_to_float(*(const bf16x8 *)(weight + c), wf);
            bf16x8_to_float(*(const bf16x8 *)(dx + c), acc);
#pragma unroll
            for (int i = 0; i < 8; i++) acc[i] += r * ((w_offset + wf[i]) * df[i] - xf[i] * k);
            *(bf16x8 *)(dx + c) = float_to_bf16x8(acc);
        }
    } else {
        for (int c = lane; c < C; c += 32) {
            float v = __bfloat162float(dx[c]) +
                      r * ((w_offset + __bfloat162float(weight[c])) * __bfloat162float(dy[c]) - __bfloat162float(x[c]) * k);
            dx[c] = __float2bfloat16_rn(v);
        }
    }
}

static unsigned row_blocks(size_t N) { return (unsigned)((N + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK); }

void embedding_forward(bf16 *out, const int32_t *ids, const bf16 *table, size_t N, int C, cudaStream_t stream) {
    if (!N) return;
    int vec = C % 8 == 0 && fl_aligned16(out, table);
    embedding_forward_kernel<<<row_blocks(N), 32 * ROWS_PER_BLOCK, 0, stream>>>(out, ids, table, N, C, vec);
    CUDA_LAUNCH_CHECK();
}

void rmsnorm_offset_forward(bf16 *out, float *rstd, const bf16 *inp, const bf16 *weight, float w_offset, float eps,
                            size_t N, int C, int ld_out, cudaStream_t stream) {
    if (!N) return;
    int vec = C % 8 == 0 && ld_out % 8 == 0 && fl_aligned16(out, inp, weight);
    rmsnorm_forward_kernel<<<row_blocks(N), 32 * ROWS_PER_BLOCK, 0, stream>>>(out, rstd, inp, weight, w_offset, eps, N, C,
                                                                              ld_out, vec);
    CUDA_LAUNCH_CHECK();
}

void rmsnorm_offset_backward(bf16 *dinp, const bf16 *dout, const bf16 *inp, const bf16 *weight, float w_offset,
                             const float *rstd, size_t N, int C, int ld_dout, cudaStream_t stream) {
    if (!N) return;
    int vec = C % 8 == 0 && ld_dout % 8 == 0 && fl_aligned16(dinp, dout, inp, weight);
    rmsnorm_backward_kernel<<<row_blocks(N), 32 * ROWS_PER_BLOCK, 0, stream>>>(dinp, dout, inp, weight, w_offset, rstd, N,
                                                                               C, ld_dout, vec);
    CUDA_LAUNCH_CHECK();
}

void rmsnorm_forward(bf16 *out, float *rstd, const bf16 *inp, const bf16 *weight, float eps, size_t N, int C,
                     int ld_out, cudaStream_t stream) {
    rmsnorm_offset_forward(out, rstd, inp, weight, 0.0f, eps, N, C, ld_out, stream);
}

void rmsnorm_backward(bf16 *dinp, const bf16 *dout, const bf16 *inp, const bf16 *weight, const float *rstd, size_t N,
                      int C, int ld_dout, cudaStream_t stream) {
    rmsnorm_offset_backward(dinp, dout, inp, weight, 0.0f, rstd, N, C, ld_dout, stream);
}
