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

#include "quant/nf4.h"

/* The scalars of one optimizer step that live in backend memory (one block per model, allocated
 * with `alloc`): ops read their per-step inputs from it and write their results into it, so nothing
 * inside a step needs a value on the host, and a step recorded once (capture_begin below) replays
 * with new values. The host fills the inputs with one upload before the step and reads the results
 * back once after it (engine/step.c). */
typedef struct {
    /* inputs, uploaded by the host before the ops that read them */
    float grad_scale;       /* lm_head_loss: the factor on d(loss_sum)/d(logits), 1 / counted tokens */
    float lr;               /* adamw_update: the learning rate */
    float adam_step_size;   /* adamw_update: lr / (1 - beta1^t), rounded from double */
    float adam_bias2_sqrt;  /* adamw_update: sqrt(1 - beta2^t), rounded from double */
    /* results, written by ops */
    float clip_scale;       /* grad_clip_scale: AdamW's factor on the gradients; NaN: skip the update */
    float unused;
    double loss_sum;        /* lm_head_loss: += Σ per-token loss over counted tokens */
    double n_counted;       /* lm_head_loss: += tokens with target != -100 */
    double grad_sumsq;      /* sum_squares of the LoRA gradients (the model points it here) */
} fl_step_scalars;

/* One block of the LoRA B compute copy (cast_to_weight_2d): rows x cols f32 values, contiguous in
 * backend memory, written scaled into a weight buffer's rows of stride ld. */
typedef struct {
    void *dst;              /* weight-typed, (rows, cols; ld) */
    const float *src;       /* (rows, cols) */
    size_t rows;
    int ld;
} fl_cast_block;

/* What a backend says about the device it runs on (describe below): for the bench's header, memory
 * limit and MFU, and for records. */
typedef struct {
    char name[192];          /* as the driver reports it: "NVIDIA H200"; the CPU's model name ("cpu" when unknown) */
    int compute_capability;  /* CUDA: major*10+minor (90 for Hopper); 0 on the CPU */
    size_t mem_free;         /* device memory free and total (CUDA: cudaMemGetInfo, other processes included); */
    size_t mem_total;        /* 0 on the CPU: host memory is the bench's business */
    /* A peak the backend measures itself (the CPU: no vendor figure to quote). peak_method is
     * non-empty when it can ("sgemm rate (OpenBLAS, 1536^3, 8 threads)"); peak_tflops and
     * peak_source are filled only when describe is asked to measure. A GPU's peak is its catalog
     * figure (plan/gpu_catalog.h), looked up by the caller from name: here 0 and "". */
    char peak_method[128];
    double peak_tflops;      /* TFLOP/s; 0 when not measured */
    char peak_source[256];   /* what peak_tflops is, as the bench prints it after "MFU x%" */
} fl_device_info;

/* Counters over a run of steps (read_counters below); 0 where a backend does not count. */
typedef struct {
    size_t peak_bytes;       /* the most bytes the backend's allocations held since the last reset
                              * (CUDA); 0 on the CPU, whose figure is the process's resident peak */
    unsigned long long ops;  /* operations enqueued so far, outside recordings (CUDA: kernels, GEMMs,
                              * copies, graph launches); 0 on the CPU */
} fl_device_counters;

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
    /* dst (rows, width bytes; row stride ld_dst bytes) = src (rows, width; ld_src) within backend
     * memory: a column block of one matrix into another (Qwen3's q and k out of the q/k/v rows and
     * back, engine/model.c). The regions do not overlap. */
    void (*copy_2d)(void *dst, size_t ld_dst, const void *src, size_t ld_src, size_t width, size_t rows);
    void (*zero)(void *ptr, size_t bytes);
    void (*synchronize)(void);
    /* n host f32 values -> act / weight buffer (converted), and act back to host f32 */
    void (*upload_act)(void *dst, const float *host_src, size_t n);
    void (*upload_weight)(void *dst, const float *host_src, size_t n);
    void (*download_act)(float *host_dst, const void *src, size_t n);
    /* n f32 values in backend memory -> weight buffer (the LoRA compute copy) */
    void (*cast_to_weight)(void *dst, const float *src, size_t n);

    /* For each of n blocks (host array): dst (rows, cols; ld) = scale · src (rows, cols), weight-typed
     * from f32 — the LoRA B compute copies inside the fused projections' weights (engine/projection.c),
     * all of them in one call. */
    void (*cast_to_weight_2d)(const fl_cast_block *blocks, int n, float scale, int cols);

    /* ---- layers ---- */
    /* Leading dimensions: an `ld_*` argument is the row stride, in elements, of the named matrix
     * (>= its column count); the matmuls take one per operand, so a projection can read or write a
     * column block of a wider buffer (the fused q/k/v and gate/up rows, the K-concatenated LoRA
     * operands [x | x·Aᵀ] and [W | s·B] of docs/ARCHITECTURE.md). Matrices without an ld are
     * contiguous. */

    /* out (N, C) = table[ids] ; table (V, C) weight-typed */
    void (*embedding_forward)(void *out, const int32_t *ids, const void *table, size_t N, int C);
    /* out (N, C; ld_out) = weight * x * rstd, rstd (N) = 1/sqrt(mean(x²) + eps); inp (N, C) */
    void (*rmsnorm_forward)(void *out, float *rstd, const void *inp, const void *weight, float eps, size_t N, int C,
                            int ld_out);
    /* dinp (N, C) += d(rmsnorm)/dinp · dout (N, C; ld_dout)  (weight frozen) */
    void (*rmsnorm_backward)(void *dinp, const void *dout, const void *inp, const void *weight, const float *rstd,
                             size_t N, int C, int ld_dout);
    /* The same with y = (w_offset + weight) · x · rstd, the sum in f32 before the product (Gemma's
     * x·(1 + w), offset 1; the ops above are offset 0). The engine calls these for every norm. */
    void (*rmsnorm_offset_forward)(void *out, float *rstd, const void *inp, const void *weight, float w_offset,
                                   float eps, size_t N, int C, int ld_out);
    void (*rmsnorm_offset_backward)(void *dinp, const void *dout, const void *inp, const void *weight, float w_offset,
                                    const float *rstd, size_t N, int C, int ld_dout);
    /* out (N, OC; ld_out) = alpha · inp (N, IC; ld_inp) · weightᵀ (OC, IC; ld_w, weight-typed)
     *                       + bias (OC, act, may be NULL) + beta · out */
    void (*matmul_forward)(void *out, const void *inp, const void *weight, const void *bias, float alpha, float beta,
                           size_t N, int IC, int OC, int ld_out, int ld_inp, int ld_w);
    /* dinp (N, IC; ld_dinp) = alpha · dout (N, OC; ld_dout) · weight (OC, IC; ld_w, weight-typed)
     *                         + beta · dinp */
    void (*matmul_backward_input)(void *dinp, const void *dout, const void *weight, float alpha, float beta,
                                  size_t N, int IC, int OC, int ld_dinp, int ld_dout, int ld_w);
    /* The same two products with an NF4 frozen weight (quant/nf4.h: w->rows = OC, w->cols = IC), its
     * arrays in backend memory (fl_nf4_view over the backend's copy of the host storage). The weight is
     * dequantized as bitsandbytes does for the backend's weight type — f32 products code · scale
     * (`cpu`, bitsandbytes' compute dtype float32) or those rounded to bf16 (`cpu-bf16`, CUDA: compute
     * dtype bfloat16) — tile by tile of rows into scratch right before the tile's GEMM; no full copy
     * of the weight exists.
     *   forward:  out (N, OC; ld_out) = alpha · inp (N, IC; ld_inp) · Wᵀ + bias (OC, may be NULL) + beta · out
     *   backward: dinp (N, IC; ld_dinp) = alpha · dout (N, OC; ld_dout) · W + beta · dinp */
    void (*matmul_nf4_forward)(void *out, const void *inp, const fl_nf4_weight *w, const void *bias, float alpha,
                               float beta, size_t N, int ld_out, int ld_inp);
    void (*matmul_nf4_backward_input)(void *dinp, const void *dout, const fl_nf4_weight *w, float alpha, float beta,
                                      size_t N, int ld_dinp, int ld_dout);
    /* dweight (OC, IC) f32 += alpha · doutᵀ (OC, N; ld_dout) · inp (N, IC; ld_inp) — LoRA matrices only */
    void (*matmul_backward_weight)(float *dweight, const void *dout, const void *inp, float alpha, size_t N, int IC,
                                   int OC, int ld_dout, int ld_inp);
    /* In-place rotate-half RoPE on the first RD dims of each of the first n_heads heads (HS each) of
     * every row of x (N rows of stride ld), at positions pos (N); inv_freq (RD/2); cos and sin times
     * scale (longrope's attention factor; 1 otherwise). Dims RD..HS-1 pass through (partial rotary:
     * Phi-4-mini's RD = 0.75·HS). One call rotates q and k together: they are adjacent in a q/k/v row
     * (NH + NKV heads). */
    void (*rope_forward)(void *x, const int32_t *pos, const float *inv_freq, float scale, size_t N, int n_heads, int HS,
                         int RD, int ld);
    /* In-place: dx = RoPEᵀ(dx) (scale times the inverse rotation), same layout. */
    void (*rope_backward)(void *dx, const int32_t *pos, const float *inv_freq, float scale, size_t N, int n_heads,
                          int HS, int RD, int ld);
    /* Causal grouped-query attention over one q/k/v buffer: token n (= b·T + t), head h of q is at
     * q + n·ld_qkv + h·HS elements, of k and v likewise (their own bases, NKV heads, same ld_qkv).
     * out (N, NH·HS) contiguous, lse (B, NH, T) log-sum-exp of the scaled scores (saved for
     * backward). Query t of row b sees keys seg_start[b*T+t] .. t, which is how packed documents
     * stay apart, and how a sliding window applies (the engine passes max(document start,
     * t - W + 1): engine/model.h fl_window_key_start); key tiles before every query's first key are
     * skipped. softcap > 0 (Gemma 2's attn_logit_softcapping) caps each scaled score
     * s = q·k/sqrt(HS) to softcap·tanh(s/softcap) before the mask and the softmax (the lse is of the
     * capped scores); softcap 0: no cap. */
    void (*attention_forward)(void *out, float *lse, const void *q, const void *k, const void *v,
                              const int32_t *seg_start, int B, int T, int NH, int NKV, int HS, int ld_qkv,
                              float softcap);
    /* dq, dk, dv assigned, laid out as q, k, v (stride ld_qkv: one dqkv buffer); dout, out
     * contiguous (N, NH·HS). softcap as in the forward: the softmax's gradient is multiplied by
     * 1 − tanh²(s/softcap) on its way to dq and dk. */
    void (*attention_backward)(void *dq, void *dk, void *dv, const void *dout, const void *out, const float *lse,
                               const void *q, const void *k, const void *v, const int32_t *seg_start, int B, int T,
                               int NH, int NKV, int HS, int ld_qkv, float softcap);
    /* out (N, FF) = silu(gate) * up, gate_up (N, 2FF) rows [gate | up] (the fused projection's output) */
    void (*swiglu_forward)(void *out, const void *gate_up, size_t N, int FF);
    /* dgate_up (N, 2FF) rows [dgate | dup] from dout (N, FF) */
    void (*swiglu_backward)(void *dgate_up, const void *dout, const void *gate_up, size_t N, int FF);
    /* GeGLU: out (N, FF) = gelu_tanh(gate) * up (PyTorch's gelu approximate="tanh", Gemma's
     * gelu_pytorch_tanh), same layouts as swiglu_forward / swiglu_backward. */
    void (*geglu_forward)(void *out, const void *gate_up, size_t N, int FF);
    void (*geglu_backward)(void *dgate_up, const void *dout, const void *gate_up, size_t N, int FF);
    /* In place: x (rows, cols; ld) *= alpha (Gemma's embedding scale, the query's attention scale) */
    void (*scale_2d)(void *x, float alpha, size_t rows, int cols, int ld);
    /* out (rows, cols) contiguous = inp (rows, cols; ld_inp) · keep / (1-p), keep of element (r, c) =
     * uniform(*stream, r·cols + c) >= p (common/rng.h) — the index ignores ld_inp, so a strided view
     * draws the mask of the contiguous matrix. Applying it to a gradient is its backward (same
     * stream, same mask). In place allowed when ld_inp == cols. `stream` (1 value) is in backend
     * memory: the model uploads each micro-batch's streams, so a recorded step draws new masks. */
    void (*dropout)(void *out, const void *inp, float p, const uint64_t *stream, size_t rows, int cols, int ld_inp);
    /* acc (rows, cols; ld_acc) += x (rows, cols) contiguous */
    void (*add_inplace)(void *acc, const void *x, size_t rows, int cols, int ld_acc);
    /* x (rows, cols) contiguous: row r *= w[r] (w (rows) f32 in backend memory). Per-token weights of
     * the LM head's input gradient (a preference loss weighs each sequence's log-probability). */
    void (*scale_rows)(void *x, const float *w, size_t rows, int cols);
    /* The LM head and cross-entropy, fused and chunked over tokens so that the (N, V) logits need
     * not exist at once: per chunk, logits = inp · weightᵀ (weight (V, C) weight-typed), loss over
     * tokens whose target != -100, and dinp (N, C) = sc->grad_scale · (softmax - onehot) · weight
     * (dinp NULL: forward only). Adds the sum of the per-token losses to sc->loss_sum and the
     * counted tokens to sc->n_counted (sc in backend memory; NULL when dinp is NULL and nobody wants
     * the loss). `logits_out` (N, V) f32, when not NULL, receives the logits (tests, generation);
     * `token_loss` (N) f32 in backend memory, when not NULL, each token's loss (0 where the target
     * is -100): a sequence's log-probability is minus the sum over its tokens. */
    void (*lm_head_loss)(void *dinp, float *logits_out, float *token_loss, fl_step_scalars *sc, const void *inp,
                         const int32_t *targets, const void *weight, size_t N, int C, int V);
    /* The same with the logits soft-capped first (Gemma 2's final_logit_softcapping, softcap > 0):
     * zc = softcap·tanh(z/softcap) in f32 is what the loss, logits_out and the softmax see, and the
     * gradient through it is dzc/dz = 1 − (zc/softcap)²; softcap 0 is lm_head_loss. */
    void (*lm_head_loss_softcap)(void *dinp, float *logits_out, float *token_loss, fl_step_scalars *sc, const void *inp,
                                 const int32_t *targets, const void *weight, float softcap, size_t N, int C, int V);
    /* Σ x² in double over an f32 buffer into *out (backend memory), in a fixed order (deterministic). */
    void (*sum_squares)(double *out, const float *x, size_t n);
    /* torch.nn.utils.clip_grad_norm_'s factor from sc->grad_sumsq: sc->clip_scale = min(1, max_norm /
     * (sqrt(grad_sumsq) + 1e-6)) in double, rounded to f32 (1 when max_norm <= 0); NaN when the
     * gradients' or the loss's sum is not finite, which makes adamw_update leave everything as is. */
    void (*grad_clip_scale)(fl_step_scalars *sc, float max_norm);
    /* AdamW (decoupled decay, bias correction) over n f32 params, reading sc->lr, sc->adam_step_size,
     * sc->adam_bias2_sqrt and sc->clip_scale (the factor on the gradients); a clip_scale that is not
     * finite changes nothing. params_w (may be NULL) receives the updated weight-typed copy. */
    void (*adamw_update)(float *params, void *params_w, float *m, float *v, const float *grads,
                         const fl_step_scalars *sc, float beta1, float beta2, float eps, float weight_decay, size_t n);

    /* ---- recording a whole step (may be NULL: the engine then runs every step op by op) ----
     * Between capture_begin and capture_end the ops above are recorded, not run; capture_replay runs
     * the recording again, reading whatever the recorded buffers then hold. Uploads inside a
     * recording must come from alloc_host memory (its address is what is recorded). Not recorded:
     * download, free, synchronize. */
    void *(*alloc_host)(size_t bytes);     /* zero-filled host memory that uploads may be recorded from */
    void (*free_host)(void *ptr);
    int (*capture_begin)(void);            /* 0: recording; -1: not available now (FL_CUDA_GRAPHS=0, ...) */
    void *(*capture_end)(void);            /* the recording, or NULL when it failed (it then ran nothing) */
    /* 0: replayed; -1: the recording is stale (memory it points at was freed since, e.g. a backend
     * scratch buffer grew), nothing ran: the caller frees it and runs the step op by op */
    int (*capture_replay)(void *graph);
    void (*capture_free)(void *graph);

    /* ---- inference (infer/): may be NULL on a backend that lacks it; callers check and say so ---- */
    /* Attention of Tn new queries of ONE sequence against its K/V cache. q (Tn rows of stride ld_q,
     * NH heads of HS first) holds positions start .. start+Tn-1 (RoPE applied); k_cache/v_cache
     * (>= start+Tn, NKV, HS) hold positions 0 .. start+Tn-1 (k with RoPE). out (Tn, NH, HS)
     * assigned: query i sees keys lo .. start+i, lo = max(0, start+i-window+1) (window 0: lo = 0;
     * a sliding window, model/config.h). The same math as attention_forward with seg_start lo,
     * without the lse; softcap likewise (0: none). */
    void (*attention_decode)(void *out, const void *q, const void *k_cache, const void *v_cache, int start, int Tn,
                             int window, int NH, int NKV, int HS, int ld_q, float softcap);

    /* ---- describing the device (bench) ----
     * describe fills *info (fl_device_info above); measure_peak != 0 also runs the backend's own
     * peak measurement when it has one (the CPU: a timed sgemm, about a second), else it is cheap.
     * read_counters fills *out; reset_peak != 0 then restarts the peak at the bytes held now.
     *     fl_device_info dev;
     *     be->describe(&dev, 0);   printf("device: %s\n", dev.name); */
    void (*describe)(fl_device_info *info, int measure_peak);
    void (*read_counters)(fl_device_counters *out, int reset_peak);
} fl_backend;

/* The CPU reference backend (OpenMP + BLAS, f32 everywhere). */
const fl_backend *fl_backend_cpu(void);
/* The fast CPU backend: bf16 frozen matrices, f32 activations and accumulation (AVX512-BF16). */
const fl_backend *fl_backend_cpu_bf16(void);
/* device "cpu", "cuda" or "auto"; dtype "bf16", "f32" (the CPU reference; CUDA is bf16 only) or
 * NULL: bf16 on CUDA, fl_cpu_default_dtype on the CPU. Errors say which flag would help.
 * (backend/select.c) */
int fl_backend_select_dtype(const char *device, const char *dtype, const fl_backend **out);
/* The CPU weight dtype when --dtype is not given: "bf16" where the bf16 GEMM is the faster one
 * (AMX tiles through oneDNN: Sapphire Rapids and later, in builds with oneDNN; AVX512_BF16 dot
 * products at twice the f32 FMA rate: AMD Zen 4/5), "f32" elsewhere (Intel's
 * AVX512_BF16 runs them at the FMA rate; AVX2 and AVX-512 without it widen bf16 to f32 first), for
 * the active CPU kernel level (cpu_isa.h) and vendor. *why gets one line saying so, with the
 * measurement it rests on (docs/BENCHMARKS.md). */
const char *fl_cpu_default_dtype(const char **why);
/* The same rule for a given kernel level (fl_cpu_isa), vendor (amd: 1 for AMD) and whether the
 * bf16 GEMMs run on AMX (amx_gemm) — tests. */
const char *fl_cpu_default_dtype_for(int isa, int amd, int amx_gemm, const char **why);
/* What runs a CPU backend's frozen-weight GEMMs, for run headers: "OpenBLAS sgemm" for the f32
 * reference, the bf16 GEMM's path for bf16 weights ("avx512bf16", "onednn avx512_core_amx", ...;
 * docs/CPU-GEMM.md). */
const char *fl_cpu_gemm_name(const fl_backend *be);
/* fl_backend_select_dtype(device, NULL, out) */
int fl_backend_select(const char *device, const fl_backend **out);

#endif
