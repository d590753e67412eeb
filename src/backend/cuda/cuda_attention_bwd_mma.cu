/* cuda_attention_bwd_mma.cu — the tensor-core attention backward (FlashAttention-2 scheme) for head
 * sizes 64 and 128 on sm_80+: mma.sync m16n8k16 bf16 -> f32 with ldmatrix (cuda_mma.cuh), causal,
 * GQA read in place, document boundaries (seg_start), probabilities recomputed from the forward's
 * lse. Deterministic: no float atomics, every output element is summed by one thread in a fixed
 * order. Not the forward (cuda_attention_mma.cu) and not the fallback for other head sizes (the
 * simple kernels of cuda_attention.cu).
 *
 * Math (the CPU spec, backend/cpu/cpu_attention.c), with s the scaled score of query t, key j:
 *   P = exp(s − lse_t) on seg_start[t] <= j <= t, D_t = Σ_d dO_t·O_t, dP = dO·Vᵀ, dS = P∘(dP − D),
 *   dV = Pᵀ·dO, dK = dSᵀ·Q / √HS, dQ = dS·K / √HS.
 * Under Gemma 2's soft-cap c (the CAP instantiations) s is c·tanh(s/c) and dS carries the factor
 * 1 − tanh²(s/c) (cuda_mma.cuh score_log2).
 * Scores run in the log2 domain as in the forward: P = exp2(q·k · log2e/√HS − lse·log2e).
 *
 * Two passes instead of FlashAttention-2's atomic dQ accumulation:
 *   dkv  block = 4 warps = 64 keys of one (b, query head); the K and V tiles stay in shared memory
 *        while Q and dO tiles of 64 queries stream through a double buffer (cp.async). Each warp
 *        owns 16 keys and computes Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ (16 x 64) in registers, turns them into
 *        Pᵀ and dSᵀ, re-packs those as bf16 A fragments and accumulates dV += Pᵀ·dO and
 *        dK += dSᵀ·Q (dO and Q through ldmatrix.trans). Query tiles before the keys (causal) and
 *        tiles whose every query starts its document (or its sliding window, folded into
 *        seg_start by the engine) after the last key are never visited.
 *   dq   block = 4 warps = 64 queries of one (b, head): Q and dO stay resident, K and V tiles of 64
 *        keys stream through a double buffer; S = Q·Kᵀ, dP = dO·Vᵀ, dS, then dQ += dS·K (K through
 *        ldmatrix.trans). Blocks start with the last query tiles (the longest rows).
 * The split recomputes Q·Kᵀ and dO·Vᵀ once more (7 matrix products instead of 5) and buys
 * reproducibility without atomics. With GQA each dkv block still handles ONE query head (so the
 * grid has NH, not NKV, blocks per key tile and stays balanced under the causal mask) and writes
 * f32 partials; a small kernel sums each kv head's group in head order.
 *
 * Layouts (the backend interface): q/k/v and dq/dk/dv are views of one fused q/k/v buffer, token n
 * of head h at base + n·ld_qkv + h·HS (each of the six its own base);
 * dout and out are contiguous (N, NH·HS); lse is (B, NH, T) f32. Rows must be 16-byte aligned
 * (the dispatch checks pointers and ld % 8). Tile and launch arithmetic: cuda_plan.c. */
#include <limits.h>
#include <stdio.h>

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/cuda_info.h"
#include "backend/cuda/cuda_mma.cuh"

#define BKV FL_ATTN_BWD_BKV
#define BQ FL_ATTN_BWD_BQ
#define CHUNK FL_ATTN_SEG_CHUNK

constexpr float LOG2E = 1.4426950408889634f;

/* 2^x on the special-function unit (ex2.approx, subnormal results flushed to 0): probabilities
 * that small contribute nothing at bf16 anyway, and the plain exp2f's subnormal handling costs
 * registers the dK/dV kernel does not have */
__device__ __forceinline__ float fast_exp2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

/* rows r0 .. r0+ROWS-1 (rows >= T read as zeros) of a strided head view -> swizzled shared tile;
 * x points at row 0 of this (b, head), row t at x + t·ld */
template <int HS, int ROWS>
__device__ __forceinline__ void load_rows_async(bf16 *tile, const bf16 *x, size_t ld, int r0, int T) {
    constexpr int CHUNKS = HS / 8;
    for (int i = threadIdx.x; i < ROWS * CHUNKS; i += 128) {
        int r = i / CHUNKS, c = i % CHUNKS, t = r0 + r;
        cp_async16(tile + swz<HS>(r, c * 8), x + (size_t)(t < T ? t : 0) * ld + c * 8, t < T ? 16 : 0);
    }
}

/* s (16 x N) = A1·B1ᵀ and dp (16 x N) = A2·B2ᵀ for one warp's 16 rows row0.. of the tiles A1, A2
 * against the N rows of the tiles B1, B2 (all rows of HS): Sᵀ and dPᵀ in the dK/dV pass (A = K, V;
 * B = Q, dO), S and dP in the dQ pass (A = Q, dO; B = K, V). */
template <int HS, int N>
__device__ __forceinline__ void two_strip_products(float (&s)[N / 8][4], float (&dp)[N / 8][4], const bf16 *A1,
                                                   const bf16 *A2, int row0, const bf16 *B1, const bf16 *B2, int lane) {
#pragma unroll
    for (int i = 0; i < N / 8; i++)
#pragma unroll
        for (int e = 0; e < 4; e++) s[i][e] = dp[i][e] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < HS / 16; kk++) {
        uint32_t a1[4], a2[4];
        load_a<HS>(a1, A1, row0, kk * 16, lane);
        load_a<HS>(a2, A2, row0, kk * 16, lane);
#pragma unroll
        for (int np = 0; np < N / 16; np++) {
            uint32_t b1[4], b2[4];
            load_b_rows<HS>(b1, B1, np * 16, kk * 16, lane);
            mma_bf16(s[2 * np], a1, b1[0], b1[1]);
            mma_bf16(s[2 * np + 1], a1, b1[2], b1[3]);
            load_b_rows<HS>(b2, B2, np * 16, kk * 16, lane);
            mma_bf16(dp[2 * np], a2, b2[0], b2[1]);
            mma_bf16(dp[2 * np + 1], a2, b2[2], b2[3]);
        }
    }
}

/* acc (16 x HS) += a (16 x K, packed bf16 A fragments) · tile (K rows x HS, read through
 * ldmatrix.trans): dV += Pᵀ·dO, dK += dSᵀ·Q, dQ += dS·K */
template <int HS, int K>
__device__ __forceinline__ void strip_times_tile(float (&acc)[HS / 8][4], const uint32_t (&a)[K / 16][4],
                                                 const bf16 *tile, int lane) {
#pragma unroll
    for (int kk = 0; kk < K / 16; kk++) {
#pragma unroll
        for (int dd = 0; dd < HS / 16; dd++) {
            uint32_t b[4];
            load_b_cols<HS>(b, tile, kk * 16, dd * 16, lane);
            mma_bf16(acc[2 * dd], a[kk], b[0], b[1]);
            mma_bf16(acc[2 * dd + 1], a[kk], b[2], b[3]);
        }
    }
}

/* ---- prep: D, lse·log2e, seg_start minima ---- */

/* Block = one chunk of CHUNK queries of row b, all heads. Consecutive threads take consecutive
 * 8-element pieces of one (query, head) row, so the HS/8 pieces of a row sit in aligned lanes of
 * one warp and a shuffle tree sums them. */
template <int HS>
__global__ void __launch_bounds__(256) attention_bwd_prep_kernel(float *L2, float *D, int32_t *seg_min,
                                                                 const bf16 *dout, const bf16 *out, const float *lse,
                                                                 const int32_t *seg_start, int T, int NH, int seg_chunks) {
    constexpr int PIECES = HS / 8; /* 8 or 16: divides 32 */
    const int b = blockIdx.z, t0 = blockIdx.x * CHUNK, rows = min(CHUNK, T - t0);
    const int items = rows * NH * PIECES, padded = (items + 255) / 256 * 256;
    for (int i = threadIdx.x; i < padded; i += 256) {
        float sum = 0.0f;
        int r = 0, h = 0;
        if (i < items) {
            int rh = i / PIECES, piece = i % PIECES;
            r = rh / NH;
            h = rh % NH;
            size_t off = (((size_t)b * T + t0 + r) * NH + h) * HS + piece * 8;
            float a[8], o[8];
            bf16x8_to_float(*(const bf16x8 *)(dout + off), a);
            bf16x8_to_float(*(const bf16x8 *)(out + off), o);
#pragma unroll
            for (int e = 0; e < 8; e++) sum += a[e] * o[e];
        }
#pragma unroll
        for (int o = PIECES / 2; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
        if (i < items && i % PIECES == 0) {
            size_t row = ((size_t)b * NH + h) * T + t0 + r;
            D[row] = sum;
            L2[row] = lse[row] * LOG2E;
        }
    }
    if (threadIdx.x < 32) {
        int m = threadIdx.x < rows ? seg_start[(size_t)b * T + t0 + threadIdx.x] : INT_MAX;
        m = __reduce_min_sync(0xffffffffu, m);
        if (threadIdx.x == 0) seg_min[(size_t)b * seg_chunks + blockIdx.x] = m;
    }
}

/* ---- dK, dV ---- */

/* The first query tile at or after qt (tiles of QT queries) holding a query that sees a key
 * <= k_last, i.e. whose chunk minimum of seg_start is <= k_last; n_qt when none. Uniform across
 * the block (every thread reads the same minima). */
template <int QT>
__device__ __forceinline__ int next_visible_tile(int qt, int n_qt, int k_last, const int32_t *seg_min_b, int seg_chunks) {
    for (; qt < n_qt; qt++) {
        int c0 = qt * (QT / CHUNK), c1 = min(seg_chunks, c0 + QT / CHUNK), m = INT_MAX;
        for (int c = c0; c < c1; c++) m = min(m, seg_min_b[c]);
        if (m <= k_last) return qt;
    }
    return n_qt;
}

template <int HS, int QT>
__device__ __forceinline__ void load_query_tile(bf16 *Qs, bf16 *dOs, float *Ls, float *Ds, int *Ss, const bf16 *q_bh,
                                                size_t ld_q, const bf16 *do_bh, size_t ld_do, const float *L_bh,
                                                const float *D_bh, const int32_t *seg_b, int q0, int T) {
    load_rows_async<HS, QT>(Qs, q_bh, ld_q, q0, T);
    load_rows_async<HS, QT>(dOs, do_bh, ld_do, q0, T);
    for (int i = threadIdx.x; i < QT; i += 128) {
        int t = q0 + i, ok = t < T;
        cp_async4(Ls + i, L_bh + (ok ? t : 0), ok ? 4 : 0);
        cp_async4(Ds + i, D_bh + (ok ? t : 0), ok ? 4 : 0);
        cp_async4(Ss + i, seg_b + (ok ? t : 0), ok ? 4 : 0);
    }
}

template <int HS, int QT, bool CAP>
__global__ void __launch_bounds__(128)
    attention_bwd_dkv_kernel(bf16 *dk, bf16 *dv, float *dk_part, float *dv_part, const bf16 *q, const bf16 *k,
                             const bf16 *v, const bf16 *dout, const float *L2, const float *D, const int32_t *seg_start,
                             const int32_t *seg_min, int T, int NH, int NKV, int ld_qkv, int seg_chunks,
                             float softcap) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    bf16 *Ks = (bf16 *)smem_raw, *Vs = Ks + BKV * HS;
    bf16 *Qs = Vs + BKV * HS, *dOs = Qs + 2 * QT * HS; /* [2][QT * HS] each */
    float *Ls = (float *)(dOs + 2 * QT * HS), *Ds = Ls + 2 * QT;
    int *Ss = (int *)(Ds + 2 * QT);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, c = lane & 3;
    const int h = blockIdx.y, b = blockIdx.z, kvh = h / (NH / NKV);
    const int k0 = blockIdx.x * BKV, k_last = min(T - 1, k0 + BKV - 1);
    const float scale_log2 = rsqrtf((float)HS) * LOG2E;
    const float inv_cap = CAP ? rsqrtf((float)HS) / softcap : 0.0f, cap_log2 = CAP ? softcap * LOG2E : 0.0f;

    const bf16 *q_bh = q + (size_t)b * T * ld_qkv + (size_t)h * HS;
    const bf16 *do_bh = dout + (size_t)b * T * NH * HS + (size_t)h * HS;
    const float *L_bh = L2 + ((size_t)b * NH + h) * T, *D_bh = D + ((size_t)b * NH + h) * T;
    const int32_t *seg_b = seg_start + (size_t)b * T, *seg_min_b = seg_min + (size_t)b * seg_chunks;

    load_rows_async<HS, BKV>(Ks, k + (size_t)b * T * ld_qkv + (size_t)kvh * HS, ld_qkv, k0, T);
    load_rows_async<HS, BKV>(Vs, v + (size_t)b * T * ld_qkv + (size_t)kvh * HS, ld_qkv, k0, T);
    cp_async_commit();

    const int n_qt = (T + QT - 1) / QT;
    int qt = next_visible_tile<QT>(k0 / QT, n_qt, k_last, seg_min_b, seg_chunks);
    if (qt < n_qt)
        load_query_tile<HS, QT>(Qs, dOs, Ls, Ds, Ss, q_bh, ld_qkv, do_bh, (size_t)NH * HS, L_bh, D_bh, seg_b, qt * QT, T);
    cp_async_commit();

    float dk_acc[HS / 8][4], dv_acc[HS / 8][4];
#pragma unroll
    for (int i = 0; i < HS / 8; i++)
#pragma unroll
        for (int e = 0; e < 4; e++) dk_acc[i][e] = dv_acc[i][e] = 0.0f;
    const int j_a = k0 + warp * 16 + g, j_b = j_a + 8; /* this thread's two keys */

    for (int buf = 0; qt < n_qt; buf ^= 1) {
        const int q0 = qt * QT;
        const int nxt = next_visible_tile<QT>(qt + 1, n_qt, k_last, seg_min_b, seg_chunks);
        if (nxt < n_qt) /* the other buffer was released by the barrier ending the previous step */
            load_query_tile<HS, QT>(Qs + (buf ^ 1) * QT * HS, dOs + (buf ^ 1) * QT * HS, Ls + (buf ^ 1) * QT,
                                    Ds + (buf ^ 1) * QT, Ss + (buf ^ 1) * QT, q_bh, ld_qkv, do_bh, (size_t)NH * HS, L_bh,
                                    D_bh, seg_b, nxt * QT, T);
        cp_async_commit();
        cp_async_wait<1>(); /* K/V and this step's tile have landed (only the prefetch may fly) */
        __syncthreads();
        const bf16 *Qb = Qs + buf * QT * HS, *dOb = dOs + buf * QT * HS;
        const float *Lb = Ls + buf * QT, *Db = Ds + buf * QT;
        const int *Sb = Ss + buf * QT;

        /* Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ for this warp's 16 keys x QT queries */
        float s[QT / 8][4], dp[QT / 8][4];
        two_strip_products<HS, QT>(s, dp, Ks, Vs, warp * 16, Qb, dOb, lane);
        /* Pᵀ and dSᵀ, packed as bf16 A fragments (rows = keys, k = queries) */
        uint32_t pa[QT / 16][4], da[QT / 16][4];
#pragma unroll
        for (int nb = 0; nb < QT / 8; nb++) {
            const int tl = nb * 8 + 2 * c; /* tile-local query of elements 0 and 2; +1 for 1 and 3 */
            const float2 L = *(const float2 *)(Lb + tl), Dv = *(const float2 *)(Db + tl);
            const int2 sg = *(const int2 *)(Sb + tl);
            float p[4], ds[4];
#pragma unroll
            for (int e = 0; e < 2; e++) {
                const int t = q0 + tl + e, seg = e ? sg.y : sg.x;
                const float Lt = e ? L.y : L.x, Dt = e ? Dv.y : Dv.x;
                const bool ok = t < T;
                float dca, dcb;
                const float sa = score_log2<CAP>(s[nb][e], scale_log2, inv_cap, cap_log2, &dca);
                const float sb = score_log2<CAP>(s[nb][2 + e], scale_log2, inv_cap, cap_log2, &dcb);
                p[e] = ok && j_a <= t && seg <= j_a ? fast_exp2(sa - Lt) : 0.0f;
                p[2 + e] = ok && j_b <= t && seg <= j_b ? fast_exp2(sb - Lt) : 0.0f;
                ds[e] = p[e] * (dp[nb][e] - Dt) * dca;
                ds[2 + e] = p[2 + e] * (dp[nb][2 + e] - Dt) * dcb;
            }
            pa[nb / 2][(nb & 1) * 2 + 0] = pack_bf16(p[0], p[1]);
            pa[nb / 2][(nb & 1) * 2 + 1] = pack_bf16(p[2], p[3]);
            da[nb / 2][(nb & 1) * 2 + 0] = pack_bf16(ds[0], ds[1]);
            da[nb / 2][(nb & 1) * 2 + 1] = pack_bf16(ds[2], ds[3]);
        }
        /* dV += Pᵀ·dO, dK += dSᵀ·Q (k = queries, n = head dims) */
        strip_times_tile<HS, QT>(dv_acc, pa, dOb, lane);
        strip_times_tile<HS, QT>(dk_acc, da, Qb, lane);
        __syncthreads(); /* every warp is done with this buffer before the next step refills it */
        qt = nxt;
    }
    cp_async_wait<0>();

    const float scale = rsqrtf((float)HS);
#pragma unroll
    for (int i = 0; i < HS / 8; i++) {
        const int d = i * 8 + 2 * c;
        if (dk_part) { /* GQA: f32 partials (B, T, NH, HS) of this query head */
            if (j_a < T) {
                size_t off = (((size_t)b * T + j_a) * NH + h) * HS + d;
                *(float2 *)(dk_part + off) = make_float2(dk_acc[i][0] * scale, dk_acc[i][1] * scale);
                *(float2 *)(dv_part + off) = make_float2(dv_acc[i][0], dv_acc[i][1]);
            }
            if (j_b < T) {
                size_t off = (((size_t)b * T + j_b) * NH + h) * HS + d;
                *(float2 *)(dk_part + off) = make_float2(dk_acc[i][2] * scale, dk_acc[i][3] * scale);
                *(float2 *)(dv_part + off) = make_float2(dv_acc[i][2], dv_acc[i][3]);
            }
        } else { /* NH == NKV: this head's rows of dK, dV directly */
            if (j_a < T) {
                size_t off = ((size_t)b * T + j_a) * ld_qkv + (size_t)kvh * HS + d;
                *(__nv_bfloat162 *)(dk + off) = __floats2bfloat162_rn(dk_acc[i][0] * scale, dk_acc[i][1] * scale);
                *(__nv_bfloat162 *)(dv + off) = __floats2bfloat162_rn(dv_acc[i][0], dv_acc[i][1]);
            }
            if (j_b < T) {
                size_t off = ((size_t)b * T + j_b) * ld_qkv + (size_t)kvh * HS + d;
                *(__nv_bfloat162 *)(dk + off) = __floats2bfloat162_rn(dk_acc[i][2] * scale, dk_acc[i][3] * scale);
                *(__nv_bfloat162 *)(dv + off) = __floats2bfloat162_rn(dv_acc[i][2], dv_acc[i][3]);
            }
        }
    }
}

/* dK, dV (strided bf16) of each kv head = Σ over its NH/NKV query heads' f32 partials, in head
 * order; one thread per 8 dims of a (token, kv head) row. */
__global__ void attention_bwd_gqa_reduce_kernel(bf16 *dk, bf16 *dv, const float *dk_part, const float *dv_part,
                                                size_t n_items, int NH, int NKV, int HS, int ld_qkv) {
    const int pieces = HS / 8, group = NH / NKV;
    for (size_t it = (size_t)blockIdx.x * blockDim.x + threadIdx.x; it < n_items; it += (size_t)gridDim.x * blockDim.x) {
        const int piece = (int)(it % pieces), kvh = (int)(it / pieces % NKV);
        const size_t n = it / pieces / NKV; /* token b*T + t */
        float sk[8] = {0}, sv[8] = {0};
        for (int gi = 0; gi < group; gi++) {
            size_t off = (n * NH + (size_t)kvh * group + gi) * HS + piece * 8;
            const float4 *pk = (const float4 *)(dk_part + off), *pv = (const float4 *)(dv_part + off);
            float4 k0 = pk[0], k1 = pk[1], v0 = pv[0], v1 = pv[1];
            sk[0] += k0.x; sk[1] += k0.y; sk[2] += k0.z; sk[3] += k0.w;
            sk[4] += k1.x; sk[5] += k1.y; sk[6] += k1.z; sk[7] += k1.w;
            sv[0] += v0.x; sv[1] += v0.y; sv[2] += v0.z; sv[3] += v0.w;
            sv[4] += v1.x; sv[5] += v1.y; sv[6] += v1.z; sv[7] += v1.w;
        }
        size_t out = n * ld_qkv + (size_t)kvh * HS + piece * 8;
        *(bf16x8 *)(dk + out) = float_to_bf16x8(sk);
        *(bf16x8 *)(dv + out) = float_to_bf16x8(sv);
    }
}

/* ---- dQ ---- */

template <int HS, bool CAP>
__global__ void __launch_bounds__(128)
    attention_bwd_dq_kernel(bf16 *dq, const bf16 *q, const bf16 *k, const bf16 *v, const bf16 *dout, const float *L2,
                            const float *D, const int32_t *seg_start, const int32_t *seg_min, int T, int NH, int NKV,
                            int ld_qkv, int seg_chunks, float softcap) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    bf16 *Qs = (bf16 *)smem_raw, *dOs = Qs + BQ * HS;
    bf16 *Ks = dOs + BQ * HS, *Vs = Ks + 2 * BKV * HS; /* [2][BKV * HS] each */
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, c = lane & 3;
    const int h = blockIdx.y, b = blockIdx.z, kvh = h / (NH / NKV);
    const int q0 = (gridDim.x - 1 - blockIdx.x) * BQ; /* last (longest) query tiles first */
    const int q_last = min(T - 1, q0 + BQ - 1);
    const float scale_log2 = rsqrtf((float)HS) * LOG2E;
    const float inv_cap = CAP ? rsqrtf((float)HS) / softcap : 0.0f, cap_log2 = CAP ? softcap * LOG2E : 0.0f;

    const bf16 *k_bh = k + (size_t)b * T * ld_qkv + (size_t)kvh * HS;
    const bf16 *v_bh = v + (size_t)b * T * ld_qkv + (size_t)kvh * HS;
    load_rows_async<HS, BQ>(Qs, q + (size_t)b * T * ld_qkv + (size_t)h * HS, ld_qkv, q0, T);
    load_rows_async<HS, BQ>(dOs, dout + (size_t)b * T * NH * HS + (size_t)h * HS, (size_t)NH * HS, q0, T);
    cp_async_commit();

    /* first key tile: the smallest document start among this tile's queries */
    const int32_t *seg_min_b = seg_min + (size_t)b * seg_chunks;
    int kmin = INT_MAX;
    for (int ch = q0 / CHUNK; ch < min(seg_chunks, (q0 + BQ) / CHUNK); ch++) kmin = min(kmin, seg_min_b[ch]);
    const int k_begin = kmin / BKV * BKV;
    load_rows_async<HS, BKV>(Ks, k_bh, ld_qkv, k_begin, T);
    load_rows_async<HS, BKV>(Vs, v_bh, ld_qkv, k_begin, T);
    cp_async_commit();

    const int tq_a = q0 + warp * 16 + g, tq_b = tq_a + 8; /* this thread's two queries */
    const size_t row_a = ((size_t)b * NH + h) * T + tq_a, row_b = row_a + 8;
    /* rows past T see nothing: seg INT_MAX fails seg <= j */
    const int seg_a = tq_a < T ? seg_start[(size_t)b * T + tq_a] : INT_MAX;
    const int seg_b = tq_b < T ? seg_start[(size_t)b * T + tq_b] : INT_MAX;
    const float L_a = tq_a < T ? L2[row_a] : 0.0f, L_b = tq_b < T ? L2[row_b] : 0.0f;
    const float D_a = tq_a < T ? D[row_a] : 0.0f, D_b = tq_b < T ? D[row_b] : 0.0f;

    float dq_acc[HS / 8][4];
#pragma unroll
    for (int i = 0; i < HS / 8; i++) dq_acc[i][0] = dq_acc[i][1] = dq_acc[i][2] = dq_acc[i][3] = 0.0f;

    int buf = 0;
    for (int k0 = k_begin; k0 <= q_last; k0 += BKV, buf ^= 1) {
        if (k0 + BKV <= q_last) { /* prefetch the next key tile into the buffer freed by the last barrier */
            load_rows_async<HS, BKV>(Ks + (buf ^ 1) * BKV * HS, k_bh, ld_qkv, k0 + BKV, T);
            load_rows_async<HS, BKV>(Vs + (buf ^ 1) * BKV * HS, v_bh, ld_qkv, k0 + BKV, T);
        }
        cp_async_commit();
        cp_async_wait<1>();
        __syncthreads();
        const bf16 *Kb = Ks + buf * BKV * HS, *Vb = Vs + buf * BKV * HS;

        /* S = Q·Kᵀ and dP = dO·Vᵀ for this warp's 16 queries x BKV keys */
        float s[BKV / 8][4], dp[BKV / 8][4];
        two_strip_products<HS, BKV>(s, dp, Qs, dOs, warp * 16, Kb, Vb, lane);
        /* dS, packed as bf16 A fragments (rows = queries, k = keys) */
        uint32_t da[BKV / 16][4];
#pragma unroll
        for (int nb = 0; nb < BKV / 8; nb++) {
            float ds[4];
#pragma unroll
            for (int e = 0; e < 2; e++) {
                const int j = k0 + nb * 8 + 2 * c + e;
                float dca, dcb;
                const float sa = score_log2<CAP>(s[nb][e], scale_log2, inv_cap, cap_log2, &dca);
                const float sb = score_log2<CAP>(s[nb][2 + e], scale_log2, inv_cap, cap_log2, &dcb);
                float pa = seg_a <= j && j <= tq_a ? fast_exp2(sa - L_a) : 0.0f;
                float pb = seg_b <= j && j <= tq_b ? fast_exp2(sb - L_b) : 0.0f;
                ds[e] = pa * (dp[nb][e] - D_a) * dca;
                ds[2 + e] = pb * (dp[nb][2 + e] - D_b) * dcb;
            }
            da[nb / 2][(nb & 1) * 2 + 0] = pack_bf16(ds[0], ds[1]);
            da[nb / 2][(nb & 1) * 2 + 1] = pack_bf16(ds[2], ds[3]);
        }
        /* dQ += dS·K (k = keys, n = head dims) */
        strip_times_tile<HS, BKV>(dq_acc, da, Kb, lane);
        __syncthreads();
    }
    cp_async_wait<0>();

    const float scale = rsqrtf((float)HS);
#pragma unroll
    for (int i = 0; i < HS / 8; i++) {
        const int d = i * 8 + 2 * c;
        if (tq_a < T)
            *(__nv_bfloat162 *)(dq + ((size_t)b * T + tq_a) * ld_qkv + (size_t)h * HS + d) =
                __floats2bfloat162_rn(dq_acc[i][0] * scale, dq_acc[i][1] * scale);
        if (tq_b < T)
            *(__nv_bfloat162 *)(dq + ((size_t)b * T + tq_b) * ld_qkv + (size_t)h * HS + d) =
                __floats2bfloat162_rn(dq_acc[i][2] * scale, dq_acc[i][3] * scale);
    }
}

/* ---- launchers ---- */

template <typename K> static void set_smem(K kernel, size_t bytes) {
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
}

template <int HS, int QT, bool CAP>
static void launch(bf16 *dq, bf16 *dk, bf16 *dv, const bf16 *dout, const bf16 *out, const float *lse, const bf16 *q,
                   const bf16 *k, const bf16 *v, const int32_t *seg_start, int B, int T, int NH, int NKV, int ld_qkv,
                   float softcap, const fl_cuda_attn_bwd_plan &p, cudaStream_t stream) {
    static int attributes_set; /* per instantiation: dynamic shared memory above 48 KiB is opt-in */
    if (!attributes_set) {
        set_smem(attention_bwd_dkv_kernel<HS, QT, CAP>, p.dkv.smem_bytes);
        set_smem(attention_bwd_dq_kernel<HS, CAP>, p.dq.smem_bytes);
        attributes_set = 1;
    }
    unsigned char *scratch = (unsigned char *)fl_cuda_scratch(FL_SCRATCH_ATTN, p.scratch_bytes);
    float *L2 = (float *)(scratch + p.off_L2), *D = (float *)(scratch + p.off_D);
    int32_t *seg_min = (int32_t *)(scratch + p.off_seg_min);
    float *dk_part = p.gqa_partials ? (float *)(scratch + p.off_dk_part) : NULL;
    float *dv_part = p.gqa_partials ? (float *)(scratch + p.off_dv_part) : NULL;

    attention_bwd_prep_kernel<HS><<<dim3(p.prep.grid_x, p.prep.grid_y, p.prep.grid_z), p.prep.threads, 0, stream>>>(
        L2, D, seg_min, dout, out, lse, seg_start, T, NH, p.seg_chunks);
    CUDA_LAUNCH_CHECK();
    attention_bwd_dkv_kernel<HS, QT, CAP><<<dim3(p.dkv.grid_x, p.dkv.grid_y, p.dkv.grid_z), p.dkv.threads,
                                            p.dkv.smem_bytes, stream>>>(dk, dv, dk_part, dv_part, q, k, v, dout, L2, D,
                                                                        seg_start, seg_min, T, NH, NKV, ld_qkv,
                                                                        p.seg_chunks, softcap);
    CUDA_LAUNCH_CHECK();
    attention_bwd_dq_kernel<HS, CAP><<<dim3(p.dq.grid_x, p.dq.grid_y, p.dq.grid_z), p.dq.threads, p.dq.smem_bytes,
                                       stream>>>(dq, q, k, v, dout, L2, D, seg_start, seg_min, T, NH, NKV, ld_qkv,
                                                 p.seg_chunks, softcap);
    CUDA_LAUNCH_CHECK();
    if (p.gqa_partials) {
        attention_bwd_gqa_reduce_kernel<<<p.reduce.grid_x, p.reduce.threads, 0, stream>>>(
            dk, dv, dk_part, dv_part, (size_t)B * T * NKV * (HS / 8), NH, NKV, HS, ld_qkv);
        CUDA_LAUNCH_CHECK();
    }
}

void attention_backward_mma(bf16 *dq, bf16 *dk, bf16 *dv, const bf16 *dout, const bf16 *out, const float *lse,
                            const bf16 *q, const bf16 *k, const bf16 *v, const int32_t *seg_start, int B, int T, int NH,
                            int NKV, int HS, int ld_qkv, float softcap, cudaStream_t stream) {
    if (!B || !T) return;
    if (!fl_cuda_attn_mma_supported(HS) || NKV <= 0 || NH % NKV || ld_qkv % 8 ||
        !fl_aligned16(q, k, v, dout) || !fl_aligned16(dq, dk, dv, out)) {
        fprintf(stderr,
                "fastlora: attention_backward_mma: unsupported shape NH=%d NKV=%d HS=%d ld_qkv=%d (HS 64 or 128, "
                "NH %% NKV == 0, 16-byte aligned rows)\n",
                NH, NKV, HS, ld_qkv);
        abort();
    }
    fl_cuda_attn_bwd_plan p = fl_cuda_attn_bwd_make_plan(B, T, NH, NKV, HS);
    /* the plan's query tile picks the instantiation; a plan without one is a build bug */
    int cap = softcap > 0.0f;
    if (HS == 64 && p.dkv_q_tile == 64 && cap)
        launch<64, 64, true>(dq, dk, dv, dout, out, lse, q, k, v, seg_start, B, T, NH, NKV, ld_qkv, softcap, p, stream);
    else if (HS == 64 && p.dkv_q_tile == 64)
        launch<64, 64, false>(dq, dk, dv, dout, out, lse, q, k, v, seg_start, B, T, NH, NKV, ld_qkv, softcap, p, stream);
    else if (HS == 128 && p.dkv_q_tile == 64 && cap)
        launch<128, 64, true>(dq, dk, dv, dout, out, lse, q, k, v, seg_start, B, T, NH, NKV, ld_qkv, softcap, p, stream);
    else if (HS == 128 && p.dkv_q_tile == 64)
        launch<128, 64, false>(dq, dk, dv, dout, out, lse, q, k, v, seg_start, B, T, NH, NKV, ld_qkv, softcap, p, stream);
    else {
        fprintf(stderr, "fastlora: attention_backward_mma: no kernel for HS %d with query tile %d\n", HS, p.dkv_q_tile);
        abort();
    }
}
