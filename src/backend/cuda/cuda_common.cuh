/* cuda_common.cuh — what every .cu file of the CUDA backend shares: the bf16 type, the backend's
 * context (device, stream, cuBLASLt handle, scratch arena), small device helpers, and the
 * launchers of every op (one per backend.h entry, defined in the file named beside it).
 *
 * Launchers mirror the CPU reference (backend/cpu/cpu_ops.h): same op name without the _cpu
 * suffix, same argument order, and the stream last. Act buffers are bf16 (backend.h), f32 buffers
 * float. cuda_backend.cu binds them into the interface as <op>_cuda (context stream). Not a public
 * header: plain C sees only backend.h and cuda_info.h.
 */
#ifndef FL_CUDA_COMMON_CUH
#define FL_CUDA_COMMON_CUH

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_plan.h"

typedef __nv_bfloat16 bf16;

/* ---- context (cuda_context.cu) ---- */

typedef struct {
    int device;
    cudaDeviceProp prop;
    cudaStream_t stream;          /* every op is enqueued here; nothing inside a step synchronizes */
    cublasLtHandle_t lt;
    void *workspace;              /* cuBLASLt workspace, FL_CUDA_WORKSPACE_BYTES */
    size_t workspace_bytes;
    size_t live_bytes, peak_bytes;  /* backend alloc()/free() and the scratch arena */
    int recording;                /* between capture_begin and capture_end: ops are recorded, not run */
    int record_failed;            /* something during this recording could not be recorded */
    unsigned scratch_generation;  /* bumped whenever a scratch slot is freed to grow: recordings made
                                     before point at freed memory and must not replay (cuda_graph.cu) */
    unsigned long long ops;       /* operations enqueued outside recordings (fl_cuda_count_op) */
} fl_cuda_context;

extern fl_cuda_context fl_cuda;

/* Initializes the context once; 0 when a device is usable (cudaGetDeviceCount > 0 and the first
 * calls succeed), -1 otherwise (the binary then runs on the CPU). */
int fl_cuda_init(void);

/* Scratch arena slots: each a growing device buffer reused across calls, so ops never allocate in
 * the steady state. Growing synchronizes (first steps only); while recording it cannot, so the
 * recording is marked failed (the engine runs a step op by op before recording it, so every slot
 * has its size by then). */
typedef enum {
    FL_SCRATCH_LM_LOGITS = 0,   /* bf16 logits chunk + per-row losses */
    FL_SCRATCH_REDUCE,          /* reduction partials and results */
    FL_SCRATCH_STAGING,         /* f32 staging for upload_act / download_act */
    FL_SCRATCH_ATTN,            /* attention backward: D = rowsum(dout * out) */
    FL_SCRATCH_NF4,             /* one dequantized bf16 tile of an NF4 weight (cuda_nf4.cu) */
    FL_SCRATCH_COUNT
} fl_scratch_slot;
void *fl_cuda_scratch(fl_scratch_slot slot, size_t bytes);

/* Device allocation with the OOM message; counted in live/peak bytes. */
void *fl_cuda_malloc_checked(size_t bytes, const char *what, const char *func, const char *file, int line);
void fl_cuda_free_counted(void *ptr);
#define FL_CUDA_MALLOC(bytes, what) fl_cuda_malloc_checked((bytes), (what), __func__, __FILE__, __LINE__)

/* ---- device helpers ---- */

__device__ __forceinline__ float warp_reduce_sum(float x) {
    for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
    return x;
}
__device__ __forceinline__ float warp_reduce_max(float x) {
    for (int o = 16; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
    return x;
}
/* Sum over the block (blockDim.x a multiple of 32, <= 1024); every thread gets the result.
 * `shared` holds 32 floats. */
__device__ __forceinline__ float block_reduce_sum(float x, float *shared) {
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    x = warp_reduce_sum(x);
    __syncthreads();
    if (lane == 0) shared[warp] = x;
    __syncthreads();
    x = lane < warps ? shared[lane] : 0.0f;
    return warp_reduce_sum(x);
}
__device__ __forceinline__ float block_reduce_max(float x, float *shared) {
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    x = warp_reduce_max(x);
    __syncthreads();
    if (lane == 0) shared[warp] = x;
    __syncthreads();
    x = lane < warps ? shared[lane] : -INFINITY;
    return warp_reduce_max(x);
}

/* 16-byte vectors of 8 bf16: the unit of every memory-bound kernel's loads and stores. */
struct __align__(16) bf16x8 { __nv_bfloat162 h[4]; };

__device__ __forceinline__ void bf16x8_to_float(const bf16x8 &v, float *f) {
#pragma unroll
    for (int i = 0; i < 4; i++) {
        float2 t = __bfloat1622float2(v.h[i]);
        f[2 * i] = t.x;
        f[2 * i + 1] = t.y;
    }
}
__device__ __forceinline__ bf16x8 float_to_bf16x8(const float *f) {
    bf16x8 v;
#pragma unroll
    for (int i = 0; i < 4; i++) v.h[i] = __floats2bfloat162_rn(f[2 * i], f[2 * i + 1]);
    return v;
}
/* 1 when every pointer is 16-byte aligned, so the bf16x8 path is legal. */
static inline int fl_aligned16(const void *a, const void *b = NULL, const void *c = NULL, const void *d = NULL) {
    return (((uintptr_t)a | (uintptr_t)b | (uintptr_t)c | (uintptr_t)d) & 15) == 0;
}

/* The counter-based hash of common/rng.h, on the device (bit-identical: same integer ops). */
__device__ __forceinline__ uint64_t fl_hash64_dev(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}
__device__ __forceinline__ float fl_rng_uniform_dev(uint64_t stream, uint64_t index) {
    return (float)(fl_hash64_dev(stream ^ (index * 0xd1b54a32d192ed03ull)) >> 40) * (1.0f / 16777216.0f);
}

/* ---- launchers: one per backend.h op, stream last ---- */

/* cuda_memory.cu */
void convert_f32_to_bf16(bf16 *dst, const float *src, size_t n, cudaStream_t stream);
void convert_bf16_to_f32(float *dst, const bf16 *src, size_t n, cudaStream_t stream);
/* for each block: dst (rows, cols; ld) bf16 = scale · src (rows, cols) f32 — one launch per
 * FL_CUDA_CAST_BLOCKS blocks */
void convert_f32_to_bf16_2d(const fl_cast_block *blocks, int n, float scale, int cols, cudaStream_t stream);
/* cuda_norm.cu */
void embedding_forward(bf16 *out, const int32_t *ids, const bf16 *table, size_t N, int C, cudaStream_t stream);
void rmsnorm_forward(bf16 *out, float *rstd, const bf16 *inp, const bf16 *weight, float eps, size_t N, int C,
                     int ld_out, cudaStream_t stream);
void rmsnorm_backward(bf16 *dinp, const bf16 *dout, const bf16 *inp, const bf16 *weight, const float *rstd, size_t N,
                      int C, int ld_dout, cudaStream_t stream);
/* cuda_matmul.cu (cuBLASLt); ld_* are the operands' row strides (backend.h) */
void matmul_forward(bf16 *out, const bf16 *inp, const bf16 *weight, const bf16 *bias, float alpha, float beta, size_t N,
                    int IC, int OC, int ld_out, int ld_inp, int ld_w, cudaStream_t stream);
void matmul_backward_input(bf16 *dinp, const bf16 *dout, const bf16 *weight, float alpha, float beta, size_t N, int IC,
                           int OC, int ld_dinp, int ld_dout, int ld_w, cudaStream_t stream);
void matmul_backward_weight(float *dweight, const bf16 *dout, const bf16 *inp, float alpha, size_t N, int IC, int OC,
                            int ld_dout, int ld_inp, cudaStream_t stream);
/* out (N, OC) f32 = inp · weightᵀ (the LM head's logits when a caller wants them in f32) */
void matmul_forward_f32out(float *out, const bf16 *inp, const bf16 *weight, size_t N, int IC, int OC,
                           cudaStream_t stream);
/* cuda_rope.cu */
void rope_forward(bf16 *x, const int32_t *pos, const float *inv_freq, float scale, size_t N, int n_heads, int HS, int RD,
                  int ld, cudaStream_t stream);
void rope_backward(bf16 *dx, const int32_t *pos, const float *inv_freq, float scale, size_t N, int n_heads, int HS,
                   int RD, int ld, cudaStream_t stream);
/* cuda_attention.cu (dispatch: mma kernels for HS 64/128 on sm_80+, simple kernels otherwise; softcap
 * as backend.h attention_forward, 0: none) */
/* q, k, v and dq, dk, dv: token n, head h at base + n·ld_qkv + h·HS; out, dout contiguous (N, NH·HS) */
void attention_forward(bf16 *out, float *lse, const bf16 *q, const bf16 *k, const bf16 *v, const int32_t *seg_start, int B,
                       int T, int NH, int NKV, int HS, int ld_qkv, float softcap, cudaStream_t stream);
void attention_backward(bf16 *dq, bf16 *dk, bf16 *dv, const bf16 *dout, const bf16 *out, const float *lse, const bf16 *q,
                        const bf16 *k, const bf16 *v, const int32_t *seg_start, int B, int T, int NH, int NKV, int HS,
                        int ld_qkv, float softcap, cudaStream_t stream);
/* the variants, for the lab and the tests (FL_CUDA_ATTN=simple|mma picks one at run time) */
void attention_forward_simple(bf16 *out, float *lse, const bf16 *q, const bf16 *k, const bf16 *v,
                              const int32_t *seg_start, int B, int T, int NH, int NKV, int HS, int ld_qkv,
                              float softcap, cudaStream_t stream);
void attention_backward_simple(bf16 *dq, bf16 *dk, bf16 *dv, const bf16 *dout, const bf16 *out, const float *lse,
                               const bf16 *q, const bf16 *k, const bf16 *v, const int32_t *seg_start, int B, int T,
                               int NH, int NKV, int HS, int ld_qkv, float softcap, cudaStream_t stream);
void attention_forward_mma(bf16 *out, float *lse, const bf16 *q, const bf16 *k, const bf16 *v, const int32_t *seg_start,
                           int B, int T, int NH, int NKV, int HS, int ld_qkv, float softcap, cudaStream_t stream);
/* cuda_attention_bwd_mma.cu: the tensor-core backward (HS 64/128), same layouts as attention_backward
 * (ld_qkv a multiple of 8, 16-byte aligned bases) */
void attention_backward_mma(bf16 *dq, bf16 *dk, bf16 *dv, const bf16 *dout, const bf16 *out, const float *lse,
                            const bf16 *q, const bf16 *k, const bf16 *v, const int32_t *seg_start, int B, int T, int NH,
                            int NKV, int HS, int ld_qkv, float softcap, cudaStream_t stream);
/* cuda_elementwise.cu */
/* gate_up (N, 2FF) rows [gate | up]; dgate_up likewise */
void rmsnorm_offset_forward(bf16 *out, float *rstd, const bf16 *inp, const bf16 *weight, float w_offset, float eps,
                            size_t N, int C, int ld_out, cudaStream_t stream);
void rmsnorm_offset_backward(bf16 *dinp, const bf16 *dout, const bf16 *inp, const bf16 *weight, float w_offset,
                             const float *rstd, size_t N, int C, int ld_dout, cudaStream_t stream);
void geglu_forward(bf16 *out, const bf16 *gate_up, size_t N, int FF, cudaStream_t stream);
void geglu_backward(bf16 *dgate_up, const bf16 *dout, const bf16 *gate_up, size_t N, int FF, cudaStream_t stream);
void scale_2d(bf16 *x, float alpha, size_t rows, int cols, int ld, cudaStream_t stream);
void swiglu_forward(bf16 *out, const bf16 *gate_up, size_t N, int FF, cudaStream_t stream);
void swiglu_backward(bf16 *dgate_up, const bf16 *dout, const bf16 *gate_up, size_t N, int FF, cudaStream_t stream);
/* out (rows, cols) contiguous = mask(inp (rows, cols; ld_inp)), mask index r·cols + c, the mask's
 * stream read from device memory (*stream_key) */
void dropout(bf16 *out, const bf16 *inp, float p, const uint64_t *stream_key, size_t rows, int cols, int ld_inp,
             cudaStream_t stream);
/* acc (rows, cols; ld_acc) += x (rows, cols) */
void add_inplace(bf16 *acc, const bf16 *x, size_t rows, int cols, int ld_acc, cudaStream_t stream);
/* x (rows, cols) row r *= w[r] (w device memory, f32) */
void scale_rows(bf16 *x, const float *w, size_t rows, int cols, cudaStream_t stream);
/* cuda_loss.cu: enqueues everything; sc (device memory) gives grad_scale and receives += the loss
 * sum and the counted tokens (sc may be NULL when dinp is NULL) */
void lm_head_loss(bf16 *dinp, float *logits_out, float *token_loss, fl_step_scalars *sc, const bf16 *inp,
                  const int32_t *targets, const bf16 *weight, size_t N, int C, int V, cudaStream_t stream);
void lm_head_loss_softcap(bf16 *dinp, float *logits_out, float *token_loss, fl_step_scalars *sc, const bf16 *inp,
                          const int32_t *targets, const bf16 *weight, float softcap, size_t N, int C, int V,
                          cudaStream_t stream);
/* cuda_optim.cu: AdamW with the step's factors and the clip factor read from sc (device memory) */
void adamw_update(float *params, bf16 *params_act, float *m, float *v, const float *grads, const fl_step_scalars *sc,
                  float beta1, float beta2, float eps, float weight_decay, size_t n, cudaStream_t stream);
/* Σ x² into *out_dev (double), deterministic (fixed two-stage tree) */
void sum_squares(double *out_dev, const float *x, size_t n, cudaStream_t stream);
/* sc->clip_scale from sc->grad_sumsq and sc->loss_sum (backend.h grad_clip_scale), one thread */
void grad_clip_scale(fl_step_scalars *sc, float max_norm, cudaStream_t stream);

#endif
