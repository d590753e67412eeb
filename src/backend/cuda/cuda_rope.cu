/* cuda_rope.cu — rotate-half RoPE in place on the first RD dims of the first n_heads heads (HS
 * each) of bf16 rows of stride ld (q and k of a fused q/k/v row in one launch), f32 angles.
 *
 * Mirrors backend/cpu/cpu_rope.c: element j pairs with j + RD/2, θ = pos·inv_freq[j] (f32, precise
 * sincosf as the CPU's cosf/sinf), c = cosθ·scale, s = sinθ·scale, y[j] = x[j]c − x[j+h]s,
 * y[j+h] = x[j+h]c + x[j]s; dims RD..HS-1 untouched (partial rotary); the backward is the same
 * rotation by −θ. One thread per 8 pairs when RD/2, HS and ld are multiples of 8 and the buffer is
 * 16-byte aligned (HS 64 and 128, RD 96 of 128), else one thread per pair. */
#include "backend/cuda/cuda_common.cuh"

template <int W>
__global__ void rope_kernel(bf16 *x, const int32_t *pos, const float *inv_freq, float scale, size_t N, int n_heads,
                            int HS, int RD, int ld, float sign) {
    int half = RD / 2, groups = half / W;
    size_t total = N * (size_t)n_heads * groups;
    for (size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total; idx += (size_t)gridDim.x * blockDim.x) {
        int g = (int)(idx % groups);
        size_t nh = idx / groups, n = nh / n_heads;
        bf16 *v = x + n * (size_t)ld + (nh % n_heads) * (size_t)HS;
        int j0 = g * W;
        float a[W], b[W];
        if (W == 8) {
            bf16x8_to_float(*(const bf16x8 *)(v + j0), a);
            bf16x8_to_float(*(const bf16x8 *)(v + j0 + half), b);
        } else {
            for (int i = 0; i < W; i++) { a[i] = __bfloat162float(v[j0 + i]); b[i] = __bfloat162float(v[j0 + half + i]); }
        }
        float p = (float)pos[n];
#pragma unroll
        for (int i = 0; i < W; i++) {
            float s, c;
            sincosf(p * inv_freq[j0 + i], &s, &c);
            c *= scale;
            s = sign * (s * scale);
            float ai = a[i], bi = b[i];
            a[i] = ai * c - bi * s;
            b[i] = bi * c + ai * s;
        }
        if (W == 8) {
            *(bf16x8 *)(v + j0) = float_to_bf16x8(a);
            *(bf16x8 *)(v + j0 + half) = float_to_bf16x8(b);
        } else {
            for (int i = 0; i < W; i++) { v[j0 + i] = __float2bfloat16_rn(a[i]); v[j0 + half + i] = __float2bfloat16_rn(b[i]); }
        }
    }
}

static void rope_launch(bf16 *x, const int32_t *pos, const float *inv_freq, float scale, size_t N, int n_heads, int HS,
                        int RD, int ld, float sign, cudaStream_t stream) {
    if (!N || !n_heads) return;
    int half = RD / 2;
    if (half % 8 == 0 && HS % 8 == 0 && ld % 8 == 0 && fl_aligned16(x)) {
        size_t total = N * (size_t)n_heads * (half / 8);
        rope_kernel<8><<<fl_cuda_grid_1d(total, 256, 1, 1u << 20), 256, 0, stream>>>(x, pos, inv_freq, scale, N, n_heads,
                                                                                     HS, RD, ld, sign);
    } else {
        size_t total = N * (size_t)n_heads * half;
        rope_kernel<1><<<fl_cuda_grid_1d(total, 256, 1, 1u << 20), 256, 0, stream>>>(x, pos, inv_freq, scale, N, n_heads,
                                                                                     HS, RD, ld, sign);
    }
    CUDA_LAUNCH_CHECK();
}

void rope_forward(bf16 *x, const int32_t *pos, const float *inv_freq, float scale, size_t N, int n_heads, int HS, int RD,
                  int ld, cudaStream_t stream) {
    rope_launch(x, pos, inv_freq, scale, N, n_heads, HS, RD, ld, 1.0f, stream);
}

void rope_backward(bf16 *dx, const int32_t *pos, const float *inv_freq, float scale, size_t N, int n_heads, int HS,
                   int RD, int ld, cudaStream_t stream) {
    rope_launch(dx, pos, inv_freq, scale, N, n_heads, HS, RD, ld, -1.0f, stream);
}
