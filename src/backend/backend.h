/* backend.h — the backend interface: memory plus the layer ops the model is written over.
 *
 * The transformer's forward and backward (engine/model.c) are host C that call only these
 * functions, so a backend is one struct of function pointers. The CPU backend (backend/cpu/) is
 * the readable reference; a CUDA backend mirrors it op for op, same names, same argument order.
 *
 * Conventions for every op:
 *   - argument order: outputs, then inputs, then (frozen) weights, then scalars and dims;
 *   - all buffers are the backend's memory; activations are f32 here (see docs/ARCHITECTURE.md);
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

    /* ---- memory ---- */
    void *(*alloc)(size_t bytes);   /* zero-filled; aborts with a clear message when out of memory */
    void (*free)(void *ptr);
    void (*upload)(void *dst, const void *host_src, size_t bytes);
    void (*download)(void *host_dst, const void *src, size_t bytes);
    void (*copy)(void *dst, const void *src, size_t bytes);   /* within backend memory */
    void (*zero)(void *ptr, size_t bytes);
    void (*synchronize)(void);

    /* ---- layers ---- */
    /* out (N, C) = table[ids] ; table (V, C) */
    void (*embedding_forward)(float *out, const int32_t *ids, const float *table, size_t N, int C);
    /* out (N, C) = weight * x * rstd, rstd (N) = 1/sqrt(mean(x²) + eps) */
    void (*rmsnorm_forward)(float *out, float *rstd, const float *inp, const float *weight, float eps, size_t N, int C);
    /* dinp (N, C) += d(rmsnorm)/dinp · dout  (weight frozen) */
    void (*rmsnorm_backward)(float *dinp, const float *dout, const float *inp, const float *weight, const float *rstd,
                             size_t N, int C);
    /* out (N, OC) = alpha · inp (N, IC) · weightᵀ (OC, IC) + bias (OC, may be NULL) + beta · out */
    void (*matmul_forward)(float *out, const float *inp, const float *weight, const float *bias, float alpha, float beta,
                           size_t N, int IC, int OC);
    /* dinp (N, IC) = alpha · dout (N, OC) · weight (OC, IC) + beta · dinp */
    void (*matmul_backward_input)(float *dinp, const float *dout, const float *weight, float alpha, float beta,
                                  size_t N, int IC, int OC);
    /* dweight (OC, IC) += alpha · doutᵀ (OC, N) · inp (N, IC) — used for LoRA matrices only */
    void (*matmul_backward_weight)(float *dweight, const float *dout, const float *inp, float alpha, size_t N, int IC,
                                   int OC);
    /* In-place rotate-half RoPE on x (N, n_heads, HS) at positions pos (N); inv_freq (HS/2). */
    void (*rope_forward)(float *x, const int32_t *pos, const float *inv_freq, size_t N, int n_heads, int HS);
    /* In-place: dx = RoPEᵀ(dx) (the inverse rotation). */
    void (*rope_backward)(float *dx, const int32_t *pos, const float *inv_freq, size_t N, int n_heads, int HS);
    /* Causal grouped-query attention. q (B,T,NH,HS), k/v (B,T,NKV,HS) -> out (B,T,NH,HS),
     * lse (B,NH,T) log-sum-exp of the scaled scores (saved for backward). Query t sees keys
     * seg_start[b*T+t] .. t (seg_start NULL: 0 .. t), which is how packed documents stay apart. */
    void (*attention_forward)(float *out, float *lse, const float *q, const float *k, const float *v,
                              const int32_t *seg_start, int B, int T, int NH, int NKV, int HS);
    /* dq (B,T,NH,HS), dk/dv (B,T,NKV,HS) assigned. */
    void (*attention_backward)(float *dq, float *dk, float *dv, const float *dout, const float *out, const float *lse,
                               const float *q, const float *k, const float *v, const int32_t *seg_start, int B, int T,
                               int NH, int NKV, int HS);
    /* out (N) = silu(gate) * up */
    void (*swiglu_forward)(float *out, const float *gate, const float *up, size_t N);
    /* dgate, dup (N) from dout (N) */
    void (*swiglu_backward)(float *dgate, float *dup, const float *dout, const float *gate, const float *up, size_t N);
    /* out (N) = inp · keep / (1-p), keep = uniform(stream, i) >= p. Applying it to a gradient is
     * its backward (same stream, same mask). */
    void (*dropout)(float *out, const float *inp, float p, uint64_t stream, size_t N);
    /* acc (N) += x (N) */
    void (*add_inplace)(float *acc, const float *x, size_t N);
    /* The LM head and cross-entropy, fused and chunked over tokens so the (N, V) logits never exist
     * at once: per chunk, logits = inp · weightᵀ, loss over tokens whose target != -100, and
     * dinp (N, C) = grad_scale · (softmax - onehot) · weight (NULL: forward only). Returns the sum
     * of the per-token losses and sets *n_counted. `logits_out` (N, V), when not NULL, receives the
     * logits (tests, generation). */
    double (*lm_head_loss)(float *dinp, float *logits_out, const float *inp, const int32_t *targets, const float *weight,
                           float grad_scale, size_t N, int C, int V, size_t *n_counted);
    /* AdamW (decoupled decay, bias correction, step >= 1) over n params; grads are multiplied by
     * grad_scale first (clipping). */
    void (*adamw_update)(float *params, float *m, float *v, const float *grads, float lr, float beta1, float beta2,
                         float eps, float weight_decay, float grad_scale, int step, size_t n);
    /* Σ x² in double (for global-norm clipping). */
    double (*sum_squares)(const float *x, size_t n);
} fl_backend;

/* The CPU reference backend (OpenMP + BLAS). */
const fl_backend *fl_backend_cpu(void);

#endif
