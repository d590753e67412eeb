/* backend.h — the backend interface: memory plus the layer ops the model is written over.
 *
 * The transformer's forward and backward (engine/model.c) are host C that call only these
 * functions, so a backend is one struct of function pointers. The CPU backend (backend/cpu/) is
 * the readable reference; a CUDA backend mirrors it op for op, same names, same argument order.
 *
 * Three kinds of buffers:
 *   - "act" buffers hold activations, their gradients, and the small frozen vectors (RMSNorm
 *     weights, q/k/v biases) in the backend's activation type (act_size bytes each): f32 on the
 *     CPU, bf16 on CUDA.
 *   - "weight" buffers hold the frozen matrices (projections, embedding, LM head) and the compute
 *     copy of the LoRA matrices in the backend's weight type (weight_size bytes each): f32 for the
 *     CPU reference, bf16 for the fast CPU backend and for CUDA. Every matmul reads its `weight`
 *     argument in this type and its activations in the act type.
 *   - f32 buffers (`float *`) always hold f32: LoRA master weights, their gradients, AdamW moments,
 *     RMSNorm rstd, attention log-sum-exp, RoPE frequencies, logits returned to the host.
 * Act and weight buffers are `void *`; each backend casts to its types.
 *
 * Conventions for every op:
 *   - argument order: outputs, then inputs, then (frozen) weights, then scalars and dims;
 *   - activation gradients are assigned (`=`) unless the op says `+=`; parameter gradients
 *     (LoRA only — the base is frozen and its ops take no weight-gradient argument) accumulate;
 *   - shapes use the glossary of model/config.h; N = B*T tokens.
 */
#ifndef FL_BACKEND_H
#define FL_BACKEND_H

#include <stddef.h>
#include <stdint.h>

typedef struct fl_backend {
    const char *name;
    size_t act_size;      /* bytes per element of act buffers */
    size_t weight_size;   /* bytes per element of weight buffers */

    /* ---- memory ---- */
    void *(*alloc)(size_t bytes);   /* zero-filled; aborts with a clear message when out of memory */
    void (*free)(void *ptr);
    void (*upload)(void *dst, const void *host_src, size_t bytes);
    void (*download)(void *host_dst, const void *src, size_t bytes);
    void (*copy)(void *dst, const void *src, size_t bytes);   /* within backend memory */
    void (*zero)(void *ptr, size_t bytes);
    void (*synchronize)(void);
    /* n host f32 values -> act / weight buffer (converted), and act back to host f32 */
    void (*upload_act)(void *dst, const float *host_src, size_t n);
    void (*upload_weight)(void *dst, const float *host_src, size_t n);
    void (*download_act)(float *host_dst, const void *src, size_t n);
    /* n f32 values in backend memory -> weight buffer (the LoRA compute copy) */
    void (*cast_to_weight)(void *dst, const float *src, size_t n);

    /* ---- layers ---- */
    /* out (N, C) = table[ids] ; table (V, C) weight-typed */
    void (*embedding_forward)(void *out, const int32_t *ids, const void *table, size_t N, int C);
    /* out (N, C) = weight * x * rstd, rstd (N) = 1/sqrt(mean(x²) + eps) */
    void (*rmsnorm_forward)(void *out, float *rstd, const void *inp, const void *weight, float eps, size_t N, int C);
    /* dinp (N, C) += d(rmsnorm)/dinp · dout  (weight frozen) */
    void (*rmsnorm_backward)(void *dinp, const void *dout, const void *inp, const void *weight, const float *rstd,
                             size_t N, int C);
    /* out (N, OC) = alpha · inp (N, IC) · weightᵀ (OC, IC, weight-typed) + bias (OC, act, may be NULL)
     *              + beta · out */
    void (*matmul_forward)(void *out, const void *inp, const void *weight, const void *bias, float alpha, float beta,
                           size_t N, int IC, int OC);
    /* dinp (N, IC) = alpha · dout (N, OC) · weight (OC, IC, weight-typed) + beta · dinp */
    void (*matmul_backward_input)(void *dinp, const void *dout, const void *weight, float alpha, float beta,
                                  size_t N, int IC, int OC);
    /* dweight (OC, IC) f32 += alpha · doutᵀ (OC, N) · inp (N, IC) — used for LoRA matrices only */
    void (*matmul_backward_weight)(float *dweight, const void *dout, const void *inp, float alpha, size_t N, int IC,
                                   int OC);
    /* In-place rotate-half RoPE on x (N, n_heads, HS) at positions pos (N); inv_freq (HS/2). */
    void (*rope_forward)(void *x, const int32_t *pos, const float *inv_freq, size_t N, int n_heads, int HS);
    /* In-place: dx = RoPEᵀ(dx) (the inverse rotation). */
    void (*rope_backward)(void *dx, const int32_t *pos, const float *inv_freq, size_t N, int n_heads, int HS);
    /* Causal grouped-query attention. q (B,T,NH,HS), k/v (B,T,NKV,HS) -> out (B,T,NH,HS),
     * lse (B,NH,T) log-sum-exp of the scaled scores (saved for backward). Query t of row b sees
     * keys seg_start[b*T+t] .. t, which is how packed documents stay apart. */
    void (*attention_forward)(void *out, float *lse, const void *q, const void *k, const void *v,
                              const int32_t *seg_start, int B, int T, int NH, int NKV, int HS);
    /* dq (B,T,NH,HS), dk/dv (B,T,NKV,HS) assigned. */
    void (*attention_backward)(void *dq, void *dk, void *dv, const void *dout, const void *out, const float *lse,
                               const void *q, const void *k, const void *v, const int32_t *seg_start, int B, int T,
                               int NH, int NKV, int HS);
    /* out (N) = silu(gate) * up */
    void (*swiglu_forward)(void *out, const void *gate, const void *up, size_t N);
    /* dgate, dup (N) from dout (N) */
    void (*swiglu_backward)(void *dgate, void *dup, const void *dout, const void *gate, const void *up, size_t N);
    /* out (N) = inp · keep / (1-p), keep = uniform(stream, i) >= p (common/rng.h). Applying it to a
     * gradient is its backward (same stream, same mask). In place allowed. */
    void (*dropout)(void *out, const void *inp, float p, uint64_t stream, size_t N);
    /* acc (N) += x (N) */
    void (*add_inplace)(void *acc, const void *x, size_t N);
    /* The LM head and cross-entropy, fused and chunked over tokens so the (N, V) logits never exist
     * at once: per chunk, logits = inp · weightᵀ (weight (V, C) weight-typed), loss over tokens whose
     * target != -100, and
     * dinp (N, C) = grad_scale · (softmax - onehot) · weight (dinp NULL: forward only). Returns the
     * sum of the per-token losses and sets *n_counted. `logits_out` (N, V) f32, when not NULL,
     * receives the logits (tests, generation). */
    double (*lm_head_loss)(void *dinp, float *logits_out, const void *inp, const int32_t *targets, const void *weight,
                           float grad_scale, size_t N, int C, int V, size_t *n_counted);
    /* AdamW (decoupled decay, bias correction, step >= 1) over n f32 params; grads are multiplied
     * by grad_scale first (clipping). params_w (may be NULL) receives the updated weight-typed copy. */
    void (*adamw_update)(float *params, void *params_w, float *m, float *v, const float *grads, float lr, float beta1,
                         float beta2, float eps, float weight_decay, float grad_scale, int step, size_t n);
    /* Σ x² in double over an f32 buffer (global-norm clipping). */
    double (*sum_squares)(const float *x, size_t n);

    /* ---- inference (infer/): may be NULL on a backend that lacks it; callers check and say so ---- */
    /* Attention of Tn new queries of ONE sequence against its K/V cache. q (Tn, NH, HS) holds
     * positions start .. start+Tn-1 (RoPE applied); k_cache/v_cache (>= start+Tn, NKV, HS) hold
     * positions 0 .. start+Tn-1 (k with RoPE). out (Tn, NH, HS) assigned: query i sees keys
     * 0 .. start+i. The same math as attention_forward with seg_start 0, without the lse. */
    void (*attention_decode)(void *out, const void *q, const void *k_cache, const void *v_cache, int start, int Tn,
                             int NH, int NKV, int HS);
} fl_backend;

/* The CPU reference backend (OpenMP + BLAS, f32 everywhere). */
const fl_backend *fl_backend_cpu(void);
/* The fast CPU backend: bf16 frozen matrices, f32 activations and accumulation (AVX512-BF16). */
const fl_backend *fl_backend_cpu_bf16(void);
/* device "cpu", "cuda" or "auto"; dtype "bf16" (default, NULL) or "f32" (the CPU reference;
 * CUDA is bf16 only). Errors say which flag would help. (backend/select.c) */
int fl_backend_select_dtype(const char *device, const char *dtype, const fl_backend **out);
/* fl_backend_select_dtype(device, NULL, out) */
int fl_backend_select(const char *device, const fl_backend **out);

#endif
