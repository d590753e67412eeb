/* cuda_attention_mma.cu — the tensor-core flash-attention forward (FlashAttention-2 scheme) for
 * head sizes 64 and 128 on sm_80+: mma.sync m16n8k16 bf16 -> f32 and ldmatrix, causal, GQA read
 * in place, document boundaries (seg_start), saving lse. Same contract as the simple kernel in
 * cuda_attention.cu, which the tests compare it with: q, k, v rows of stride ld_qkv (a multiple of
 * 8, so every 16-byte cp.async stays aligned), out contiguous.
 *
 * Block = 4 warps = BQ 64 query rows of one (b, h), 16 rows per warp. Q is loaded once into shared
 * memory and then into registers (A fragments); K and V tiles of BK 64 keys are streamed through
 * shared memory with cp.async (V's copy overlaps S = Q·Kᵀ). Per tile each warp computes its 16x64
 * scores in registers, masks them (key j visible to query t iff seg_start[t] <= j <= t; a sliding
 * window arrives folded into seg_start, and key tiles before the block's smallest one are skipped), runs the
 * online softmax in the exp2 domain, converts P in registers into the A fragments of O += P·V (the
 * C layout of m16n8k16 is the A layout's two halves), and reads V with ldmatrix.trans. Shared rows
 * are XOR-swizzled in 16-byte chunks (chunk c of row r stored at c ^ (r & 7)) so each 8-row
 * ldmatrix hits 8 different bank groups. lse = ln2 · (m + log2 l), exactly the CPU's log-sum-exp
 * of the scaled scores. Gemma 2's soft-cap (softcap > 0, the CAP instantiation) caps each scaled
 * score to c·tanh(s/c) before the mask (cuda_mma.cuh score_log2), the lse then of the capped scores.
 *
 * Fragment layouts (PTX ISA, mma.m16n8k16, g = lane/4, c = lane%4):
 *   A 16x16: a0 (g, 2c..2c+1) a1 (g+8, 2c..) a2 (g, 2c+8..) a3 (g+8, 2c+8..)
 *   B 16x8:  b0 (k 2c..2c+1, n g) b1 (k 2c+8.., n g)
 *   C 16x8:  c0,c1 (g, 2c..2c+1) c2,c3 (g+8, 2c..2c+1) */
#include <stdio.h>

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/cuda_mma.cuh"

#define BQ FL_ATTN_BQ
#define BK FL_ATTN_BK

/* rows r0.. r0+63 of head `head` of a (B, T, ·) tensor with row stride ld -> swizzled smem tile
 * (zeros past T) */
template <int HS>
__device__ __forceinline__ void load_tile_async(bf16 *tile, const bf16 *x, int b, int r0, int T, int ld, int head) {
    constexpr int CHUNKS = HS / 8;
    for (int i = threadIdx.x; i < 64 * CHUNKS; i += 128) {
        int r = i / CHUNKS, c = i % CHUNKS, t = r0 + r;
        const bf16 *src = x + ((size_t)b * T + (t < T ? t : 0)) * ld + (size_t)head * HS + c * 8;
        cp_async16(tile + swz<HS>(r, c * 8), src, t < T ? 16 : 0);
    }
}

template <int HS, bool CAP>
__global__ void __launch_bounds__(128) attention_forward_mma_kernel(bf16 *out, float *lse, const bf16 *q, const bf16 *k,
                                                                    const bf16 *v, const int32_t *seg_start, int T,
                                                                    int NH, int NKV, int ld, float softcap) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    bf16 *Qs = (bf16 *)smem_raw, *Ks = Qs + BQ * HS, *Vs = Ks + BK * HS;
    __shared__ int seg_s[BQ];
    __shared__ int kmin_s;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, c = lane & 3;
    const int h = blockIdx.y, b = blockIdx.z, kvh = h / (NH / NKV);
    const int q0 = blockIdx.x * BQ;
    const int q_last = min(T - 1, q0 + BQ - 1);
    const float scale_log2 = rsqrtf((float)HS) * 1.4426950408889634f;
    const float inv_cap = CAP ? rsqrtf((float)HS) / softcap : 0.0f, cap_log2 = CAP ? softcap * 1.4426950408889634f : 0.0f;

    load_tile_async<HS>(Qs, q, b, q0, T, ld, h);
    cp_async_commit();
    if (threadIdx.x < BQ) {
        int t = q0 + threadIdx.x;
        seg_s[threadIdx.x] = t < T ? seg_start[(size_t)b * T + t] : T;
    }
    if (threadIdx.x == 0) kmin_s = T;
    __syncthreads();
    if (threadIdx.x < BQ) atomicMin(&kmin_s, seg_s[threadIdx.x]);
    cp_async_wait<0>();
    __syncthreads();

    /* Q fragments for this warp's 16 rows, all HS/16 k-steps */
    uint32_t qa[HS / 16][4];
#pragma unroll
    for (int kk = 0; kk < HS / 16; kk++) {
        int row = warp * 16 + (lane & 15), col = kk * 16 + (lane >> 4) * 8;
        ldmatrix_x4(qa[kk][0], qa[kk][1], qa[kk][2], qa[kk][3], Qs + swz<HS>(row, col));
    }
    const int row_a = warp * 16 + g, row_b = row_a + 8;  /* this thread's two query rows (tile-local) */
    const int tq_a = q0 + row_a, tq_b = q0 + row_b;
    const int seg_a = seg_s[row_a], seg_b = seg_s[row_b];

    float o[HS / 8][4];
#pragma unroll
    for (int i = 0; i < HS / 8; i++) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.0f;
    float m_a = -INFINITY, m_b = -INFINITY, l_a = 0.0f, l_b = 0.0f;

    const int k_begin = kmin_s / BK * BK;
    for (int k0 = k_begin; k0 <= q_last; k0 += BK) {
        __syncthreads(); /* previous tile fully consumed */
        load_tile_async<HS>(Ks, k, b, k0, T, ld, kvh);
        cp_async_commit();
        load_tile_async<HS>(Vs, v, b, k0, T, ld, kvh);
        cp_async_commit();
        cp_async_wait<1>();
        __syncthreads();

        /* S (16 x 64) = Q Kᵀ */
        float s[BK / 8][4];
#pragma unroll
        for (int i = 0; i < BK / 8; i++) s[i][0] = s[i][1] = s[i][2] = s[i][3] = 0.0f;
#pragma unroll
        for (int kk = 0; kk < HS / 16; kk++) {
#pragma unroll
            for (int np = 0; np < BK / 16; np++) {
                uint32_t b0, b1, b2, b3;
                int row = np * 16 + (lane & 7) + ((lane >> 4) << 3), col = kk * 16 + ((lane >> 3) & 1) * 8;
                ldmatrix_x4(b0, b1, b2, b3, Ks + swz<HS>(row, col));
                mma_bf16(s[2 * np], qa[kk], b0, b1);
                mma_bf16(s[2 * np + 1], qa[kk], b2, b3);
            }
        }
        /* mask + scale into the log2 domain, tile row max */
        float tmax_a = -INFINITY, tmax_b = -INFINITY;
#pragma unroll
        for (int nb = 0; nb < BK / 8; nb++)
#pragma unroll
            for (int e = 0; e < 2; e++) {
                int j = k0 + nb * 8 + 2 * c + e;
                float unused;
                float va = (j >= seg_a && j <= tq_a) ? score_log2<CAP>(s[nb][e], scale_log2, inv_cap, cap_log2, &unused)
                                                     : -INFINITY;
                float vb = (j >= seg_b && j <= tq_b)
                               ? score_log2<CAP>(s[nb][2 + e], scale_log2, inv_cap, cap_log2, &unused)
                               : -INFINITY;
                s[nb][e] = va;
                s[nb][2 + e] = vb;
                tmax_a = fmaxf(tmax_a, va);
                tmax_b = fmaxf(tmax_b, vb);
            }
        tmax_a = fmaxf(tmax_a, __shfl_xor_sync(0xffffffffu, tmax_a, 1));
        tmax_a = fmaxf(tmax_a, __shfl_xor_sync(0xffffffffu, tmax_a, 2));
        tmax_b = fmaxf(tmax_b, __shfl_xor_sync(0xffffffffu, tmax_b, 1));
        tmax_b = fmaxf(tmax_b, __shfl_xor_sync(0xffffffffu, tmax_b, 2));
        float mn_a = fmaxf(m_a, tmax_a), mn_b = fmaxf(m_b, tmax_b);
        float use_a = mn_a == -INFINITY ? 0.0f : mn_a, use_b = mn_b == -INFINITY ? 0.0f : mn_b;
        float corr_a = exp2f(m_a - use_a), corr_b = exp2f(m_b - use_b);
        m_a = mn_a;
        m_b = mn_b;
        l_a *= corr_a;
        l_b *= corr_b;
#pragma unroll
        for (int i = 0; i < HS / 8; i++) {
            o[i][0] *= corr_a; o[i][1] *= corr_a;
            o[i][2] *= corr_b; o[i][3] *= corr_b;
        }
        /* P = exp2(S − m), row sums (per thread; reduced across the quad at the end) */
        uint32_t pa[BK / 16][4];
#pragma unroll
        for (int nb = 0; nb < BK / 8; nb++) {
            float p0 = exp2f(s[nb][0] - use_a), p1 = exp2f(s[nb][1] - use_a);
            float p2 = exp2f(s[nb][2] - use_b), p3 = exp2f(s[nb][3] - use_b);
            l_a += p0 + p1;
            l_b += p2 + p3;
            pa[nb / 2][(nb & 1) * 2 + 0] = pack_bf16(p0, p1);
            pa[nb / 2][(nb & 1) * 2 + 1] = pack_bf16(p2, p3);
        }
        cp_async_wait<0>();
        __syncthreads();
        /* O (16 x HS) += P (16 x 64) · V (64 x HS) */
#pragma unroll
        for (int kk = 0; kk < BK / 16; kk++) {
#pragma unroll
            for (int dp = 0; dp < HS / 16; dp++) {
                uint32_t b0, b1, b2, b3;
                int row = kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8, col = dp * 16 + (lane >> 4) * 8;
                ldmatrix_x4_trans(b0, b1, b2, b3, Vs + swz<HS>(row, col));
                mma_bf16(o[2 * dp], pa[kk], b0, b1);
                mma_bf16(o[2 * dp + 1], pa[kk], b2, b3);
            }
        }
    }
    l_a += __shfl_xor_sync(0xffffffffu, l_a, 1);
    l_a += __shfl_xor_sync(0xffffffffu, l_a, 2);
    l_b += __shfl_xor_sync(0xffffffffu, l_b, 1);
    l_b += __shfl_xor_sync(0xffffffffu, l_b, 2);
    float inv_a = l_a > 0.0f ? 1.0f / l_a : 0.0f, inv_b = l_b > 0.0f ? 1.0f / l_b : 0.0f;
    const float ln2 = 0.6931471805599453f;
#pragma unroll
    for (int i = 0; i < HS / 8; i++) {
        int d = i * 8 + 2 * c;
        if (tq_a < T)
            *(__nv_bfloat162 *)(out + (((size_t)b * T + tq_a) * NH + h) * HS + d) =
                __floats2bfloat162_rn(o[i][0] * inv_a, o[i][1] * inv_a);
        if (tq_b < T)
            *(__nv_bfloat162 *)(out + (((size_t)b * T + tq_b) * NH + h) * HS + d) =
                __floats2bfloat162_rn(o[i][2] * inv_b, o[i][3] * inv_b);
    }
    if (c == 0) {
        if (tq_a < T) lse[((size_t)b * NH + h) * T + tq_a] = ln2 * (m_a + log2f(l_a));
        if (tq_b < T) lse[((size_t)b * NH + h) * T + tq_b] = ln2 * (m_b + log2f(l_b));
    }
}

template <int HS, bool CAP>
static void launch_forward(bf16 *out, float *lse, const bf16 *q, const bf16 *k, const bf16 *v, const int32_t *seg_start,
                           int B, int T, int NH, int NKV, int ld, float softcap, cudaStream_t stream) {
    fl_cuda_launch l = fl_cuda_attn_forward_launch(B, T, NH, HS);
    static int attribute_set; /* per instantiation: dynamic + static shared memory passes 48 KiB at HS 128 */
    if (!attribute_set) {
        CUDA_CHECK(cudaFuncSetAttribute(attention_forward_mma_kernel<HS, CAP>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        (int)l.smem_bytes));
        attribute_set = 1;
    }
    attention_forward_mma_kernel<HS, CAP><<<dim3(l.grid_x, l.grid_y, l.grid_z), l.threads, l.smem_bytes, stream>>>(
        out, lse, q, k, v, seg_start, T, NH, NKV, ld, softcap);
    CUDA_LAUNCH_CHECK();
}

void attention_forward_mma(bf16 *out, float *lse, const bf16 *q, const bf16 *k, const bf16 *v, const int32_t *seg_start,
                           int B, int T, int NH, int NKV, int HS, int ld_qkv, float softcap, cudaStream_t stream) {
    if (!B || !T) return;
    int cap = softcap > 0.0f;
    if (HS == 64 && cap) launch_forward<64, true>(out, lse, q, k, v, seg_start, B, T, NH, NKV, ld_qkv, softcap, stream);
    else if (HS == 64) launch_forward<64, false>(out, lse, q, k, v, seg_start, B, T, NH, NKV, ld_qkv, softcap, stream);
    else if (HS == 128 && cap)
        launch_forward<128, true>(out, lse, q, k, v, seg_start, B, T, NH, NKV, ld_qkv, softcap, stream);
    else if (HS == 128)
        launch_forward<128, false>(out, lse, q, k, v, seg_start, B, T, NH, NKV, ld_qkv, softcap, stream);
    else {
        fprintf(stderr, "fastlora: attention_forward_mma: head size %d not supported (64 or 128)\n", HS);
        abort();
    }
}
