/* activations.h — what the forward pass saves for the backward, plus the backward's scratch, for
 * one (B, T). One allocation, described by one X-macro table (ACTIVATION_TABLE) so names, sizes and
 * pointers never drift apart; fl_activations_print_sizes() prints the MiB of each.
 * With activation recompute the per-layer tensors exist for ONE layer (LS = 1 instead of L): the
 * forward keeps only each layer's input (the residual stream, L + 1 rows) and the backward reruns a
 * layer's forward into that one slot before its backward (engine/model.c). Every entry is linear
 * in N = B·T: no buffer grows with T² (attention keeps its output and log-sum-exp, docs/PLAN.md).
 * Shapes use the glossary of model/config.h, N = B*T. */
#ifndef FL_ACTIVATIONS_H
#define FL_ACTIVATIONS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "backend/backend.h"
#include "lora/lora.h"
#include "model/config.h"

/* X(name, kind, element count) with L, LS, N, C, QD, KVD, FF, R, NH, NKV, W (= max(C, QD, FF)), QN
 * (1 with the q/k norms of Qwen3, Gemma 3 and OLMo 2, cfg->qk_norm, else 0: their entries are then empty;
 * OLMo 2's whole-row norms use 2N of rstd_qk's N·(NH + NKV)), SN (1 with the post norms of Gemma and
 * OLMo 2, cfg->sandwich_norms, else 0) and RM (1 with Granite's residual_multiplier,
 * fl_config_residual_scaled, else 0) in scope; without pre-norms (OLMo 2) x_attn and x_mlp hold copies
 * of the residual stream and rstd_attn, rstd_mlp go unused;
 * LS = layers whose tensors are kept (L, or 1 with recompute).
 * kind: ACT (the backend's act type, backend.h), F32 or I32. The inputs of the fused q/k/v and
 * gate/up projections are stored K-concatenated, [x | x·Aᵀ] (engine/projection.c): the norm's output in
 * the first C columns, then x·lora_aᵀ of each adapted member (room for all of them: 3R and 2R). */
#define ACTIVATION_TABLE(X)                                                                        \
    X(residual,     ACT,     (size_t)(L + 1) * N * C)   /* (L+1, N, C) input of each layer, last = final */ \
    X(x_attn,       ACT,     (size_t)LS * N * (C + 3 * R)) /* (LS, N, C + 3R) attention norm output | x·Aᵀ of q, k, v */ \
    X(rstd_attn,    F32,     (size_t)LS * N)             /* (LS, N) */                                      \
    X(qkv,          ACT,     (size_t)LS * N * (QD + 2 * KVD)) /* (LS, N, QD + 2KVD) q | k | v, q and k after RoPE */ \
    X(q_raw,        ACT,     (size_t)QN * LS * N * QD)  /* (LS, N, NH, HS) Qwen3: q before q_norm */         \
    X(k_raw,        ACT,     (size_t)QN * LS * N * KVD) /* (LS, N, NKV, HS) Qwen3: k before k_norm */        \
    X(rstd_qk,      F32,     (size_t)QN * LS * N * (NH + NKV)) /* (LS, N·NH | N·NKV) Qwen3: q_norm's, k_norm's */ \
    X(att,          ACT,     (size_t)LS * N * QD)        /* (LS, N, NH, HS) attention output */             \
    X(lse,          F32,     (size_t)LS * N * NH)        /* (LS, B, NH, T) softmax log-sum-exp */          \
    X(xa_o,         ACT,     (size_t)LS * N * R)         /* (LS, N, R) drop(att)·lora_aᵀ of o */            \
    X(att_proj,     ACT,     (size_t)SN * LS * N * C)    /* (LS, N, C) Gemma: o's output, post-attention norm's input */ \
    X(rstd_post_attn, F32,   (size_t)SN * LS * N)        /* (LS, N) Gemma: post_attention_layernorm's */    \
    X(residual_mid, ACT,     (size_t)LS * N * C)         /* (LS, N, C) after the attention residual add */  \
    X(x_mlp,        ACT,     (size_t)LS * N * (C + 2 * R)) /* (LS, N, C + 2R) MLP norm output | x·Aᵀ of gate, up */ \
    X(rstd_mlp,     F32,     (size_t)LS * N)             /* (LS, N) */                                      \
    X(gate_up,      ACT,     (size_t)LS * N * 2 * FF)    /* (LS, N, 2FF) gate | up */                       \
    X(xa_down,      ACT,     (size_t)LS * N * R)         /* (LS, N, R) drop(swiglu)·lora_aᵀ of down */      \
    X(mlp_proj,     ACT,     (size_t)SN * LS * N * C)    /* (LS, N, C) Gemma: down's output, post-feedforward norm's input */ \
    X(rstd_post_mlp, F32,    (size_t)SN * LS * N)        /* (LS, N) Gemma: post_feedforward_layernorm's */  \
    X(x_final,      ACT,     (size_t)N * C)             /* (N, C) final RMSNorm output */                \
    X(rstd_final,   F32,     (size_t)N)                 /* (N) */                                         \
    X(dx_final,     ACT,     (size_t)N * C)             /* (N, C) gradient from the LM head */           \
    X(dresidual,    ACT,     (size_t)N * C)             /* (N, C) backward: residual-stream gradient */  \
    X(dsandwich,    ACT,     (size_t)SN * N * C)        /* (N, C) backward, Gemma: d att_proj / d mlp_proj */ \
    X(branch,       ACT,     (size_t)RM * N * C)        /* (N, C) Granite: o's / down's output (forward), rm · dh (backward) */ \
    X(dx,           ACT,     (size_t)N * (C + 3 * R))   /* (N, C + 3R) backward: [d x | d(x·Aᵀ)] of a group */ \
    X(dwide,        ACT,     (size_t)N * W)             /* (N, W) backward: d att or d swiglu */         \
    X(dqkv,         ACT,     (size_t)N * (QD + 2 * KVD)) /* (N, QD + 2KVD) dq | dk | dv */                \
    X(dgate_up,     ACT,     (size_t)N * 2 * FF)        /* (N, 2FF) dgate | dup */                        \
    X(wide,         ACT,     (size_t)N * W)             /* (N, W) forward: SwiGLU output / backward recompute */ \
    X(dropped,      ACT,     (size_t)N * W)             /* (N, W) dropout(x) for LoRA (when p > 0) */     \
    X(lora_tmp,     ACT,     (size_t)N * W)             /* (N, W) LoRA input gradient under dropout */   \
    X(dlora_xa,     ACT,     (size_t)N * R)             /* (N, R) */                                      \
    X(ids,          I32,     (size_t)N)                 /* (B, T) token ids */                           \
    X(targets,      I32,     (size_t)N)                 /* (B, T) next-token labels, -100 = ignored */   \
    X(pos,          I32,     (size_t)N)                 /* (B, T) RoPE positions */                      \
    X(seg_start,    I32,     (size_t)N)                 /* (B, T) first visible key of each query */      \
    X(win_start,    I32,     (size_t)N)                 /* (B, T) the same on a sliding-window layer */

#define FL_ACT_FIELD_ACT void
#define FL_ACT_FIELD_F32 float
#define FL_ACT_FIELD_I32 int32_t

typedef struct {
#define X(name, kind, count) FL_ACT_FIELD_##kind *name;
    ACTIVATION_TABLE(X)
#undef X
    void *storage;
    size_t bytes;
    int B, T;
    int recompute;            /* 1: the per-layer tensors hold one layer (LS = 1) */
    const fl_backend *be;
} fl_activations;

void fl_activations_init(fl_activations *a, const fl_model_config *cfg, int rank, int B, int T, int recompute,
                         const fl_backend *be);
void fl_activations_free(fl_activations *a);
/* Bytes fl_activations_init would allocate for a backend whose act type has act_size bytes. */
size_t fl_activations_bytes(const fl_model_config *cfg, int rank, int B, int T, size_t act_size, int recompute);
void fl_activations_print_sizes(const fl_activations *a, const fl_model_config *cfg, int rank, FILE *out);

#endif
