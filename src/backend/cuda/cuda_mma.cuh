/* cuda_mma.cuh — the tensor-core building blocks shared by the flash-attention kernels
 * (cuda_attention_mma.cu forward, cuda_attention_bwd_mma.cu backward): cp.async copies into shared
 * memory, ldmatrix loads, the mma.sync m16n8k16 bf16 -> f32 product, bf16 packing, and the XOR
 * swizzle of the shared tiles. Device code only; not the kernels themselves.
 *
 * Tiles hold rows of HS bf16 in 16-byte chunks; chunk c of row r is stored at chunk c ^ (r & 7), so
 * the 8 rows one ldmatrix 8x8 matrix reads (8 consecutive rows, one chunk each) fall into 8
 * different 16-byte bank groups: conflict-free for both the plain and the .trans loads.
 *
 * Fragment layouts (PTX ISA, mma.m16n8k16, g = lane/4, c = lane%4):
 *   A 16x16: a0 (g, 2c..2c+1) a1 (g+8, 2c..) a2 (g, 2c+8..) a3 (g+8, 2c+8..)
 *   B 16x8:  b0 (k 2c..2c+1, n g) b1 (k 2c+8.., n g)
 *   C 16x8:  c0,c1 (g, 2c..2c+1) c2,c3 (g+8, 2c..2c+1)
 * The C fragments of two adjacent 8-column blocks are, packed to bf16, the A fragment of one
 * 16-wide k-step: that is how probabilities computed in registers feed the next product. */
#ifndef FL_CUDA_MMA_CUH
#define FL_CUDA_MMA_CUH

#include <stdint.h>

#include "backend/cuda/cuda_common.cuh"

__device__ __forceinline__ uint32_t smem_u32(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

/* element offset of (row, col) in a swizzled tile of rows of HS bf16; col a multiple of 8 */
template <int HS> __device__ __forceinline__ int swz(int row, int col) {
    return row * HS + ((((col >> 3) ^ (row & 7))) << 3);
}

/* 16 bytes global -> shared, bypassing L1; src_bytes 0 zero-fills the destination */
__device__ __forceinline__ void cp_async16(void *dst, const void *src, int src_bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_u32(dst)), "l"(src), "r"(src_bytes));
}
/* 4 bytes global -> shared (per-row scalars); src_bytes 0 zero-fills */
__device__ __forceinline__ void cp_async4(void *dst, const void *src, int src_bytes) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_u32(dst)), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
/* waits until at most N of this thread's committed groups are still in flight */
template <int N> __device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

__device__ __forceinline__ void ldmatrix_x4(uint32_t &r0, uint32_t &r1, uint32_t &r2, uint32_t &r3, const void *p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(smem_u32(p)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t &r0, uint32_t &r1, uint32_t &r2, uint32_t &r3, const void *p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(smem_u32(p)));
}
/* c (16x8 f32) += a (16x16 bf16) · b (16x8 bf16) */
__device__ __forceinline__ void mma_bf16(float *c, const uint32_t *a, uint32_t b0, uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *(uint32_t *)&v;
}

/* The three operand loads of a warp's 16-row strip, as the attention kernels use them:
 *   A (16 x 16) from rows row0..row0+15, columns col0..col0+15 of a swizzled tile;
 *   B for two 8-column blocks whose n index is a tile ROW (rows n0..n0+15, k = columns k0..k0+15):
 *     S = Q·Kᵀ reads K this way;
 *   B for two 8-column blocks whose n index is a tile COLUMN (k = rows k0..k0+15, n = columns
 *     n0..n0+15), through ldmatrix.trans: O = P·V reads V this way.
 * (b0, b1) belong to the first 8-column block, (b2, b3) to the second. */
template <int HS> __device__ __forceinline__ void load_a(uint32_t *a, const bf16 *tile, int row0, int col0, int lane) {
    ldmatrix_x4(a[0], a[1], a[2], a[3], tile + swz<HS>(row0 + (lane & 15), col0 + (lane >> 4) * 8));
}
template <int HS>
__device__ __forceinline__ void load_b_rows(uint32_t *b, const bf16 *tile, int n0, int k0, int lane) {
    ldmatrix_x4(b[0], b[1], b[2], b[3], tile + swz<HS>(n0 + (lane & 7) + ((lane >> 4) << 3), k0 + ((lane >> 3) & 1) * 8));
}
template <int HS>
__device__ __forceinline__ void load_b_cols(uint32_t *b, const bf16 *tile, int k0, int n0, int lane) {
    ldmatrix_x4_trans(b[0], b[1], b[2], b[3], tile + swz<HS>(k0 + (lane & 7) + ((lane >> 3) & 1) * 8, n0 + (lane >> 4) * 8));
}

/* A score in the log2 domain of the softmax and its soft-cap factor: s·scale_log2 and 1 without a
 * cap; under Gemma 2's soft-cap c (inv_cap = scale / c, cap_log2 = c·log2 e) c·tanh(s·scale/c)·log2 e
 * and ds'/ds = 1 − tanh². CAP is a template flag so that uncapped kernels carry no tanh (the capped
 * dK/dV kernel at HS 128 spills 16 bytes: docs/CUDA.md). */
template <bool CAP>
__device__ __forceinline__ float score_log2(float s, float scale_log2, float inv_cap, float cap_log2, float *dcap) {
    if (!CAP) {
        *dcap = 1.0f;
        return s * scale_log2;
    }
    float th = tanhf(s * inv_cap);
    *dcap = 1.0f - th * th;
    return cap_log2 * th;
}

#endif
