/* cuda_attention.cu — causal grouped-query attention with document boundaries, O(T) memory: the
 * simple (CUDA-core, f32 math) kernels and the dispatch between them and the tensor-core forward
 * and backward of cuda_attention_mma.cu and cuda_attention_bwd_mma.cu.
 *
 * Mirrors backend/cpu/cpu_attention.c (see its header for the math). Query t of row b sees keys
 * seg_start[b*T+t] .. t (its document's start, or on a sliding-window layer the engine's
 * max(document start, t - W + 1): the same kernels, the same tile skipping); query head h reads key/value head h / (NH/NKV) in place (no repeated
 * copies). q, k, v, dq, dk, dv are views with row stride ld_qkv (one fused q/k/v buffer: token n,
 * head h at base + n·ld_qkv + h·HS); out and dout are contiguous (N, NH·HS). The forward saves lse
 * (B, NH, T); the backward recomputes probabilities from it.
 *
 * Simple kernels, 8 warps per block, K/V (or Q/dout) tiles of 32 rows staged in shared memory as
 * f32 with rows padded to HS+1 floats so that "lane j reads row j" is bank-conflict free:
 *   forward      one warp per query row: lane = key of the tile for the scores, lane = head dim
 *                for the output accumulation (probabilities broadcast by shuffles), online softmax;
 *   backward dq  one warp per query row, same walk: p = exp(s − lse), ds = p (dout·v − D) / √HS;
 *   backward dkv one warp per key row of a kv head, walking every query head of its group and
 *                every query that sees the key: dv += p·dout, dk += ds·q.
 * Splitting the backward into a dq pass and a dk/dv pass costs a second QKᵀ and dout·Vᵀ but needs
 * no atomics, so results are bitwise reproducible (the determinism test depends on it).
 * D = rowsum(dout ∘ out) is computed once by its own small kernel into the scratch arena.
 *
 * Soft-cap (softcap > 0, Gemma 2's attn_logit_softcapping): every kernel here caps the scaled score,
 * s' = c·tanh(s/c), before the mask's online softmax, and the backward multiplies ds by
 * 1 − tanh²(s/c), as the CPU op; so do the tensor-core kernels (their CAP instantiations). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_common.cuh"

#define SW FL_ATTN_SIMPLE_WARPS
#define TILE 32

/* Loads rows r0..r0+31 (head `head`) of a (B, T, ·) bf16 tensor with row stride ld into a padded
 * f32 tile; rows outside [0, T) become zeros. */
__device__ __forceinline__ void load_tile(float *tile, const bf16 *x, int b, int r0, int T, int ld, int head, int HS) {
    for (int i = threadIdx.x; i < TILE * HS; i += blockDim.x) {
        int r = i / HS, d = i % HS, t = r0 + r;
        float v = 0.0f;
        if (t >= 0 && t < T) v = __bfloat162float(x[((size_t)b * T + t) * ld + (size_t)head * HS + d]);
        tile[r * (HS + 1) + d] = v;
    }
}

__global__ void attention_forward_simple_kernel(bf16 *out, float *lse, const bf16 *q, const bf16 *k, const bf16 *v,
                                                const int32_t *seg_start, int T, int NH, int NKV, int HS, int ld,
                                                float softcap) {
    extern __shared__ float smem[];
    float *Ks = smem, *Vs = Ks + TILE * (HS + 1), *Qw = Vs + TILE * (HS + 1);
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    int h = blockIdx.y, b = blockIdx.z, kvh = h / (NH / NKV);
    int t0 = blockIdx.x * SW, t = t0 + warp;
    int last = min(T - 1, t0 + SW - 1);
    int kmin = T;
    for (int i = t0; i <= last; i++) kmin = min(kmin, (int)seg_start[(size_t)b * T + i]);
    int valid = t < T, j0 = valid ? seg_start[(size_t)b * T + t] : 0;
    float *qv = Qw + warp * 2 * HS;
    const float scale = rsqrtf((float)HS);
    if (valid)
        for (int d = lane; d < HS; d += 32) qv[d] = __bfloat162float(q[((size_t)b * T + t) * ld + (size_t)h * HS + d]);
    float m = -INFINITY, l = 0.0f, acc[8]; /* HS <= 256: dims lane + 32i */
#pragma unroll
    for (int i = 0; i < 8; i++) acc[i] = 0.0f;
    for (int base = kmin; base <= last; base += TILE) {
        __syncthreads();
        load_tile(Ks, k, b, base, T, ld, kvh, HS);
        load_tile(Vs, v, b, base, T, ld, kvh, HS);
        __syncthreads();
        if (!valid) continue;
        int j = base + lane;
        float s = -INFINITY;
        if (j >= j0 && j <= t) {
            float dot = 0.0f;
            const float *kr = Ks + lane * (HS + 1);
            for (int d = 0; d < HS; d++) dot += qv[d] * kr[d];
            s = dot * scale;
            if (softcap > 0.0f) s = softcap * tanhf(s / softcap);
        }
        float tile_max = warp_reduce_max(s);
        if (tile_max == -INFINITY) continue;
        float m_new = fmaxf(m, tile_max), corr = expf(m - m_new);
        float p = s == -INFINITY ? 0.0f : expf(s - m_new);
        l = l * corr + warp_reduce_sum(p);
#pragma unroll
        for (int i = 0; i < 8; i++) acc[i] *= corr;
        for (int jj = 0; jj < TILE; jj++) {
            float pj = __shfl_sync(0xffffffffu, p, jj);
            if (pj == 0.0f) continue;
            const float *vr = Vs + jj * (HS + 1);
#pragma unroll
            for (int i = 0; i < 8; i++)
                if (lane + 32 * i < HS) acc[i] += pj * vr[lane + 32 * i];
        }
        m = m_new;
    }
    if (!valid) return;
    float inv = 1.0f / l;
#pragma unroll
    for (int i = 0; i < 8; i++)
        if (lane + 32 * i < HS) out[(((size_t)b * T + t) * NH + h) * HS + lane + 32 * i] = __float2bfloat16_rn(acc[i] * inv);
    if (lane == 0) lse[((size_t)b * NH + h) * T + t] = m + logf(l);
}

/* D (B, NH, T) = Σ_d dout·out per query row and head; one warp per (row, head). */
__global__ void attention_rowdot_kernel(float *D, const bf16 *dout, const bf16 *out, int B, int T, int NH, int HS) {
    size_t wid = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    int lane = threadIdx.x & 31;
    if (wid >= (size_t)B * T * NH) return;
    int h = (int)(wid % NH);
    size_t row = wid / NH; /* b*T + t */
    const bf16 *a = dout + wid * HS, *o = out + wid * HS;
    float s = 0.0f;
    for (int d = lane; d < HS; d += 32) s += __bfloat162float(a[d]) * __bfloat162float(o[d]);
    s = warp_reduce_sum(s);
    int b = (int)(row / T), t = (int)(row % T);
    if (lane == 0) D[((size_t)b * NH + h) * T + t] = s;
}

__global__ void attention_backward_dq_simple_kernel(bf16 *dq, const bf16 *dout, const float *lse, const float *D,
                                                    const bf16 *q, const bf16 *k, const bf16 *v,
                                                    const int32_t *seg_start, int T, int NH, int NKV, int HS, int ld,
                                                    float softcap) {
    extern __shared__ float smem[];
    float *Ks = smem, *Vs = Ks + TILE * (HS + 1), *W = Vs + TILE * (HS + 1);
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    int h = blockIdx.y, b = blockIdx.z, kvh = h / (NH / NKV);
    int t0 = blockIdx.x * SW, t = t0 + warp;
    int last = min(T - 1, t0 + SW - 1);
    int kmin = T;
    for (int i = t0; i <= last; i++) kmin = min(kmin, (int)seg_start[(size_t)b * T + i]);
    int valid = t < T, j0 = valid ? seg_start[(size_t)b * T + t] : 0;
    float *qv = W + warp * 2 * HS, *dov = qv + HS;
    const float scale = rsqrtf((float)HS);
    float L = 0.0f, Dt = 0.0f;
    if (valid) {
        size_t q_off = ((size_t)b * T + t) * ld + (size_t)h * HS, o_off = (((size_t)b * T + t) * NH + h) * HS;
        for (int d = lane; d < HS; d += 32) {
            qv[d] = __bfloat162float(q[q_off + d]);
            dov[d] = __bfloat162float(dout[o_off + d]);
        }
        L = lse[((size_t)b * NH + h) * T + t];
        Dt = D[((size_t)b * NH + h) * T + t];
    }
    float acc[8];
#pragma unroll
    for (int i = 0; i < 8; i++) acc[i] = 0.0f;
    for (int base = kmin; base <= last; base += TILE) {
        __syncthreads();
        load_tile(Ks, k, b, base, T, ld, kvh, HS);
        load_tile(Vs, v, b, base, T, ld, kvh, HS);
        __syncthreads();
        if (!valid) continue;
        int j = base + lane;
        float ds = 0.0f;
        if (j >= j0 && j <= t) {
            const float *kr = Ks + lane * (HS + 1), *vr = Vs + lane * (HS + 1);
            float s = 0.0f, dp = 0.0f;
            for (int d = 0; d < HS; d++) {
                s += qv[d] * kr[d];
                dp += dov[d] * vr[d];
            }
            float sc = s * scale, dcap = 1.0f;
            if (softcap > 0.0f) {
                float th = tanhf(sc / softcap);
                sc = softcap * th;
                dcap = 1.0f - th * th;
            }
            float p = expf(sc - L);
            ds = p * (dp - Dt) * dcap * scale;
        }
        for (int jj = 0; jj < TILE; jj++) {
            float dsj = __shfl_sync(0xffffffffu, ds, jj);
            if (dsj == 0.0f) continue;
            const float *kr = Ks + jj * (HS + 1);
#pragma unroll
            for (int i = 0; i < 8; i++)
                if (lane + 32 * i < HS) acc[i] += dsj * kr[lane + 32 * i];
        }
    }
    if (!valid) return;
#pragma unroll
    for (int i = 0; i < 8; i++)
        if (lane + 32 * i < HS) dq[((size_t)b * T + t) * ld + (size_t)h * HS + lane + 32 * i] = __float2bfloat16_rn(acc[i]);
}

__global__ void attention_backward_dkv_simple_kernel(bf16 *dk, bf16 *dv, const bf16 *dout, const float *lse,
                                                     const float *D, const bf16 *q, const bf16 *k, const bf16 *v,
                                                     const int32_t *seg_start, int T, int NH, int NKV, int HS, int ld,
                                                     float softcap) {
    extern __shared__ float smem[];
    float *Qs = smem, *Os = Qs + TILE * (HS + 1), *W = Os + TILE * (HS + 1);
    __shared__ float Ls[TILE], Ds[TILE];
    __shared__ int Ss[TILE];
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    int kvh = blockIdx.y, b = blockIdx.z, group = NH / NKV;
    int j = blockIdx.x * SW + warp, jfirst = blockIdx.x * SW;
    int valid = j < T;
    float *kv = W + warp * 2 * HS, *vv = kv + HS;
    const float scale = rsqrtf((float)HS);
    if (valid) {
        size_t off = ((size_t)b * T + j) * ld + (size_t)kvh * HS;
        for (int d = lane; d < HS; d += 32) {
            kv[d] = __bfloat162float(k[off + d]);
            vv[d] = __bfloat162float(v[off + d]);
        }
    }
    float dk_acc[8], dv_acc[8];
#pragma unroll
    for (int i = 0; i < 8; i++) dk_acc[i] = dv_acc[i] = 0.0f;
    /* query tiles whose every query sees no key of this block (a document or a sliding window that
     * starts after the block's last key) are skipped; the test is uniform across the block */
    const int jlast = min(T - 1, jfirst + SW - 1);
    for (int h = kvh * group; h < (kvh + 1) * group; h++)
        for (int base = jfirst; base < T; base += TILE) {
            int tile_first = T;
            for (int i = 0; i < TILE && base + i < T; i++) tile_first = min(tile_first, (int)seg_start[(size_t)b * T + base + i]);
            if (tile_first > jlast) continue;
            __syncthreads();
            load_tile(Qs, q, b, base, T, ld, h, HS);
            load_tile(Os, dout, b, base, T, NH * HS, h, HS);
            if (threadIdx.x < TILE) {
                int t = base + threadIdx.x;
                Ls[threadIdx.x] = t < T ? lse[((size_t)b * NH + h) * T + t] : 0.0f;
                Ds[threadIdx.x] = t < T ? D[((size_t)b * NH + h) * T + t] : 0.0f;
                Ss[threadIdx.x] = t < T ? seg_start[(size_t)b * T + t] : T;
            }
            __syncthreads();
            if (!valid) continue;
            int t = base + lane;
            float p = 0.0f, ds = 0.0f;
            if (t < T && t >= j && Ss[lane] <= j) {
                const float *qr = Qs + lane * (HS + 1), *orow = Os + lane * (HS + 1);
                float s = 0.0f, dp = 0.0f;
                for (int d = 0; d < HS; d++) {
                    s += qr[d] * kv[d];
                    dp += orow[d] * vv[d];
                }
                float sc = s * scale, dcap = 1.0f;
                if (softcap > 0.0f) {
                    float th = tanhf(sc / softcap);
                    sc = softcap * th;
                    dcap = 1.0f - th * th;
                }
                p = expf(sc - Ls[lane]);
                ds = p * (dp - Ds[lane]) * dcap * scale;
            }
            for (int tt = 0; tt < TILE; tt++) {
                float pt = __shfl_sync(0xffffffffu, p, tt), dst = __shfl_sync(0xffffffffu, ds, tt);
                if (pt == 0.0f && dst == 0.0f) continue;
                const float *qr = Qs + tt * (HS + 1), *orow = Os + tt * (HS + 1);
#pragma unroll
                for (int i = 0; i < 8; i++)
                    if (lane + 32 * i < HS) {
                        dv_acc[i] += pt * orow[lane + 32 * i];
                        dk_acc[i] += dst * qr[lane + 32 * i];
                    }
            }
        }
    if (!valid) return;
    size_t off = ((size_t)b * T + j) * ld + (size_t)kvh * HS;
#pragma unroll
    for (int i = 0; i < 8; i++)
        if (lane + 32 * i < HS) {
            dk[off + lane + 32 * i] = __float2bfloat16_rn(dk_acc[i]);
            dv[off + lane + 32 * i] = __float2bfloat16_rn(dv_acc[i]);
        }
}

static void check_heads(int NH, int NKV, int HS, const char *op) {
    /* The simple kernels take any head size up to 256: every per-dimension loop is strided by 32
     * with a bound check (lane + 32i < HS), so small heads (the HF fixtures' HS 8 and 16) work too. */
    if (NKV <= 0 || NH % NKV || HS <= 0 || HS > 256) {
        fprintf(stderr, "fastlora: %s: unsupported heads NH=%d NKV=%d HS=%d (need NH %% NKV == 0, 1 <= HS <= 256)\n",
                op, NH, NKV, HS);
        abort();
    }
}

template <typename K> static void allow_smem(K kernel, size_t bytes) {
    if (bytes > 48 * 1024) CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
}

void attention_forward_simple(bf16 *out, float *lse, const bf16 *q, const bf16 *k, const bf16 *v,
                              const int32_t *seg_start, int B, int T, int NH, int NKV, int HS, int ld_qkv,
                              float softcap, cudaStream_t stream) {
    check_heads(NH, NKV, HS, "attention_forward");
    if (!B || !T) return;
    fl_cuda_launch l = fl_cuda_attn_simple_launch(B, T, NH, HS);
    allow_smem(attention_forward_simple_kernel, l.smem_bytes);
    attention_forward_simple_kernel<<<dim3(l.grid_x, l.grid_y, l.grid_z), l.threads, l.smem_bytes, stream>>>(
        out, lse, q, k, v, seg_start, T, NH, NKV, HS, ld_qkv, softcap);
    CUDA_LAUNCH_CHECK();
}

void attention_backward_simple(bf16 *dq, bf16 *dk, bf16 *dv, const bf16 *dout, const bf16 *out, const float *lse,
                               const bf16 *q, const bf16 *k, const bf16 *v, const int32_t *seg_start, int B, int T,
                               int NH, int NKV, int HS, int ld_qkv, float softcap, cudaStream_t stream) {
    check_heads(NH, NKV, HS, "attention_backward");
    if (!B || !T) return;
    size_t rows = (size_t)B * T * NH;
    float *D = (float *)fl_cuda_scratch(FL_SCRATCH_ATTN, rows * sizeof(float));
    attention_rowdot_kernel<<<(unsigned)((rows * 32 + 255) / 256), 256, 0, stream>>>(D, dout, out, B, T, NH, HS);
    CUDA_LAUNCH_CHECK();
    fl_cuda_launch lq = fl_cuda_attn_simple_launch(B, T, NH, HS);
    allow_smem(attention_backward_dq_simple_kernel, lq.smem_bytes);
    attention_backward_dq_simple_kernel<<<dim3(lq.grid_x, lq.grid_y, lq.grid_z), lq.threads, lq.smem_bytes, stream>>>(
        dq, dout, lse, D, q, k, v, seg_start, T, NH, NKV, HS, ld_qkv, softcap);
    CUDA_LAUNCH_CHECK();
    fl_cuda_launch lk = fl_cuda_attn_simple_launch(B, T, NKV, HS);
    allow_smem(attention_backward_dkv_simple_kernel, lk.smem_bytes);
    attention_backward_dkv_simple_kernel<<<dim3(lk.grid_x, lk.grid_y, lk.grid_z), lk.threads, lk.smem_bytes, stream>>>(
        dk, dv, dout, lse, D, q, k, v, seg_start, T, NH, NKV, HS, ld_qkv, softcap);
    CUDA_LAUNCH_CHECK();
}

/* ---- dispatch ---- */

static int attn_mode = -1; /* 1: mma forward where supported, 0: simple everywhere; -1: read FL_CUDA_ATTN */

extern "C" void fl_cuda_set_attention_variant(const char *name) {
    attn_mode = name && !strcmp(name, "simple") ? 0 : 1;
}

static int use_mma(int HS, int ld_qkv, const void *q, const void *k, const void *v, const void *out) {
    if (attn_mode < 0) fl_cuda_set_attention_variant(getenv("FL_CUDA_ATTN"));
    return attn_mode && fl_cuda_attn_mma_supported(HS) && ld_qkv % 8 == 0 && fl_aligned16(q, k, v, out);
}

extern "C" const char *fl_cuda_attention_variant(void) {
    if (attn_mode < 0) fl_cuda_set_attention_variant(getenv("FL_CUDA_ATTN"));
    return attn_mode ? "mma" : "simple";
}

void attention_forward(bf16 *out, float *lse, const bf16 *q, const bf16 *k, const bf16 *v, const int32_t *seg_start, int B,
                       int T, int NH, int NKV, int HS, int ld_qkv, float softcap, cudaStream_t stream) {
    if (use_mma(HS, ld_qkv, q, k, v, out))
        attention_forward_mma(out, lse, q, k, v, seg_start, B, T, NH, NKV, HS, ld_qkv, softcap, stream);
    else attention_forward_simple(out, lse, q, k, v, seg_start, B, T, NH, NKV, HS, ld_qkv, softcap, stream);
}

void attention_backward(bf16 *dq, bf16 *dk, bf16 *dv, const bf16 *dout, const bf16 *out, const float *lse, const bf16 *q,
                        const bf16 *k, const bf16 *v, const int32_t *seg_start, int B, int T, int NH, int NKV, int HS,
                        int ld_qkv, float softcap, cudaStream_t stream) {
    /* FL_CUDA_ATTN_BWD=simple keeps the simple backward under the tensor-core forward */
    static int bwd_simple = -1;
    if (bwd_simple < 0) bwd_simple = getenv("FL_CUDA_ATTN_BWD") && !strcmp(getenv("FL_CUDA_ATTN_BWD"), "simple");
    if (!bwd_simple && use_mma(HS, ld_qkv, q, k, v, out) && fl_aligned16(dq, dk, dv, dout))
        attention_backward_mma(dq, dk, dv, dout, out, lse, q, k, v, seg_start, B, T, NH, NKV, HS, ld_qkv, softcap,
                               stream);
    else attention_backward_simple(dq, dk, dv, dout, out, lse, q, k, v, seg_start, B, T, NH, NKV, HS, ld_qkv, softcap,
                                   stream);
}
