/* model.h — the LoRA-trained transformer: frozen base + LoRA parameters + gradients + AdamW state
 * + activations, and its forward, backward and optimizer step, written once over fl_backend.
 *
 * Usage:
 *   fl_model m;  fl_model_init_preset(&m, "smollm2-135m", 1, fl_backend_cpu(), &lora_cfg);
 *   fl_step_stats s = fl_model_forward(&m, &batch, 0.0f);   // loss, counted tokens
 *   fl_model_backward(&m);                                   // LoRA grads +=
 *   fl_model_optimizer_step(&m, &adamw);                     // clip, AdamW, zero grads
 *   fl_model_train_step(&m, micro, n, &adamw, &norm);        // all of it, no host wait inside
 * Not a trainer (data, schedules and checkpoints belong to train/); not a tokenizer.
 */
#ifndef FL_MODEL_H
#define FL_MODEL_H

#include <stdint.h>
#include <stdio.h>

#include "backend/backend.h"
#include "engine/activations.h"
#include "lora/lora.h"
#include "model/config.h"
#include "model/weights.h"

typedef struct {
    float lr, beta1, beta2, eps, weight_decay;
    float max_grad_norm;  /* <= 0: no clipping */
} fl_adamw_config;

fl_adamw_config fl_adamw_config_default(void); /* lr 2e-4, betas (0.9, 0.999), eps 1e-8, wd 0, clip 1.0 */

/* A batch on the host. targets are the next-token labels (already shifted; -100 ignored).
 * pos and seg_start may be NULL: positions 0..T-1 and plain causal attention per row. */
typedef struct {
    int B, T;
    const int32_t *ids;        /* (B, T) */
    const int32_t *targets;    /* (B, T) */
    const int32_t *pos;        /* (B, T) or NULL */
    const int32_t *seg_start;  /* (B, T) or NULL: first key position (within the row) query t may see */
} fl_batch;

/* win (B, T) = the first key each query sees under a sliding window of W positions (0: none):
 *   win[b*T+t] = max(seg[b*T+t], t - W + 1)
 * transformers' sliding_window_overlay (masking_utils.py, 5.x: kv_idx > q_idx - sliding_window, on top
 * of the causal kv_idx <= q_idx) keeps the last W positions, the query's own included. seg holds
 * row-local document starts and t - seg is the position within the document, so a packed document
 * sees exactly the keys it would see alone. The attention ops take win as their seg_start. */
void fl_window_key_start(int32_t *win, const int32_t *seg, size_t B, int T, int W);

typedef struct {
    double loss_sum;       /* Σ per-token cross-entropy over counted tokens */
    size_t n_counted;      /* tokens with target != -100 */
    double loss;           /* loss_sum / n_counted (0 when none) */
} fl_step_stats;

struct fl_step_runner;

typedef struct {
    fl_model_config cfg;
    fl_lora_config lora_cfg;
    const fl_backend *be;
    fl_base_weights base;
    fl_lora_buffer lora, grads, adam_m, adam_v;   /* f32: master weights, gradients, AdamW moments */
    void *lora_w;             /* weight-typed compute copy of lora.data (== lora.data when weights are f32) */
    float *inv_freq;          /* (2, RD/2) backend memory, RoPE frequencies (llama3- or linear-scaled when
                                 configured), one row per RoPE table: row 0 the default one (the global
                                 layers'; longrope: short_factor), row 1 the alternative — longrope's
                                 long_factor table, or Gemma 3's sliding layers' (rope_local_theta), a
                                 copy of row 0 otherwise. A config never has both (config.h:
                                 longrope is Phi-3's, the local base Gemma 3's) — fl_model_rope_freq */
    fl_activations act;
    int training;             /* dropout active */
    int fused;                /* 1 (default): q/k/v and gate/up as one GEMM each, LoRA K-concatenated
                                 (projection.c); 0: every projection alone — the reference for the tests */
    int recompute;            /* 1: activation recompute — the forward keeps each layer's input only and
                                 the backward reruns the layer's forward (same ops: same gradients, bit
                                 for bit); activations then hold one layer (activations.h). Set before
                                 a forward; 0 (default) keeps every layer's activations */
    double grad_norm;         /* fl_model_grad_norm's result, valid until the gradients change */
    int grad_norm_valid;
    int adam_step;            /* AdamW steps taken */
    uint64_t micro_step;      /* forward passes taken (dropout stream) */
    int have_forward;         /* a forward with saved activations precedes backward */
    int rope_seq;             /* the staged batch's largest position + 1: the RoPE table its forward and
                                 backward take (fl_model_rope_freq) */
    int graphs;               /* 1 (default): fl_model_train_step records a step once and replays it where
                                 the backend can (CUDA graphs); 0: every step op by op */
    fl_step_scalars *sc;      /* (1) backend memory: the step's scalars (backend.h) */
    uint64_t *dropout_streams;   /* (L, FL_N_PROJ) backend memory: this micro-batch's dropout streams */
    fl_cast_block *cast_blocks;  /* host: the s·B compute copies in the fused weights (refresh_lora_copies) */
    int n_cast_blocks;
    struct fl_step_runner *runner;   /* host: staged step inputs and recorded steps (staging.c, step.c) */
    float *token_f32;         /* (2, B·T) backend memory, made on first use: token losses | token weights
                                 (token_weights.c) */
    size_t token_f32_n;       /* B·T it holds */
} fl_model;

/* Build a model from a HF folder, or from a preset with seeded random base weights. LoRA params
 * get PEFT's init (B = 0). A bitsandbytes 4-bit (NF4) folder loads as NF4. */
int fl_model_init_dir(fl_model *m, const char *dir, const fl_backend *be, const fl_lora_config *lc);
int fl_model_init_preset(fl_model *m, const char *preset, uint64_t seed, const fl_backend *be, const fl_lora_config *lc);
/* Seeded random base weights for any config (tests, planning). */
void fl_model_init_random(fl_model *m, const fl_model_config *cfg, uint64_t seed, const fl_backend *be,
                          const fl_lora_config *lc);
/* The same with the frozen projections' form (model/weights.h): FL_QUANT_NF4 quantizes them to NF4
 * (QLoRA; embeddings, norms and the LM head stay in the backend's types). */
int fl_model_init_dir_quant(fl_model *m, const char *dir, const fl_backend *be, const fl_lora_config *lc, fl_quant quant);
int fl_model_init_preset_quant(fl_model *m, const char *preset, uint64_t seed, const fl_backend *be,
                               const fl_lora_config *lc, fl_quant quant);
void fl_model_init_random_quant(fl_model *m, const fl_model_config *cfg, uint64_t seed, const fl_backend *be,
                                const fl_lora_config *lc, fl_quant quant);
void fl_model_free(fl_model *m);
/* Loads a PEFT adapter's weights into the LoRA parameters (its config must match m->lora_cfg). */
int fl_model_load_adapter(fl_model *m, const char *adapter_dir);
/* After writing m->lora.data directly: refresh the weight-typed compute copy. */
void fl_model_sync_lora(fl_model *m);

/* Forward over a batch, saving activations. grad_scale: the factor on d(loss_sum)/d(logits) seen by
 * the backward — pass 1/(counted tokens of the whole accumulated batch); 0 means 1/n_counted of
 * this batch (a plain mean). */
fl_step_stats fl_model_forward(fl_model *m, const fl_batch *batch, float grad_scale);
/* Forward for evaluation: the loss only — no LM-head gradient, no dropout, nothing saved for a
 * backward. */
fl_step_stats fl_model_eval_loss(fl_model *m, const fl_batch *batch);
/* Backward of the last forward: LoRA gradients accumulate (+=) into m->grads. */
void fl_model_backward(fl_model *m);

/* Sequence-level objectives (preference tuning: token_weights.c). A forward whose LM-head gradient
 * has every counted token at weight 1 (grad_scale 1, dropout as in training), each token's loss
 * (cross-entropy, minus its log-probability; 0 where the target is -100) copied to token_loss
 * (host, B·T). The caller turns sequence log-probabilities into a loss, then gives each token the
 * derivative of that loss in the token's loss (fl_model_weight_tokens, host (B·T), the same
 * layout); fl_model_backward then accumulates Σ_t w[t]·∇loss_t. The eval variant saves nothing and
 * leaves dropout off (reference log-probabilities, evaluation). */
fl_step_stats fl_model_forward_token_losses(fl_model *m, const fl_batch *batch, float *token_loss);
fl_step_stats fl_model_eval_token_losses(fl_model *m, const fl_batch *batch, float *token_loss);
void fl_model_weight_tokens(fl_model *m, const float *w);
/* The global L2 norm of the LoRA gradients, computed once per set of gradients (the trainer logs
 * it, the optimizer step clips with it: one Σx² per step). */
double fl_model_grad_norm(fl_model *m);
/* Global-norm clipping then AdamW over all LoRA params, then zero the gradients. Returns the
 * pre-clip gradient norm. The clip factor is computed on the backend (grad_clip_scale): a non-finite
 * norm or loss leaves the parameters unchanged. */
double fl_model_optimizer_step(fl_model *m, const fl_adamw_config *opt);

/* ---- whole steps with nothing read back inside them (docs/CUDA.md, "Synchronization and graphs") ----
 * Micro-batch i of a step draws dropout stream micro_step + i + 1; one with no counted token is
 * skipped; every one is scaled by 1 / (counted tokens of all n_micro). */

/* Forward + backward of micro-batches rank, rank + ranks, ... of `micro` (this rank's share of a step
 * of n_micro): LoRA gradients +=; the loss sum and the counted tokens accumulate on the backend
 * (fl_model_step_stats reads them). Advances micro_step by n_micro. */
void fl_model_accumulate(fl_model *m, const fl_batch *micro, int n_micro, int rank, int ranks);
/* The loss sum and counted tokens accumulated since the step began (one read from the backend). */
fl_step_stats fl_model_step_stats(fl_model *m);
/* A whole optimizer step: fl_model_accumulate over all n_micro, then fl_model_optimizer_step with
 * opt (its lr this step's), reading back once at the end: the step's loss and, in *grad_norm, the
 * pre-clip gradient norm. Where the backend records (CUDA graphs, m->graphs), the first step of a
 * shape runs op by op and is recorded, and later steps of that shape replay the recording with the
 * new inputs (batches, lr, step) — the same results bit for bit. */
fl_step_stats fl_model_train_step(fl_model *m, const fl_batch *micro, int n_micro, const fl_adamw_config *opt,
                                  double *grad_norm);
/* Steps replayed from a recording so far (0 on a backend that does not record). */
int fl_model_replayed_steps(const fl_model *m);
void fl_model_zero_grads(fl_model *m);
/* One projection group of layer l (model/projections.h), forward only and without dropout, for decoding:
 * out (N, OC; ld_out) = beta·out + x·Wᵀ + bias (+ LoRA when use_lora). q/k/v and gate/up: x (N,
 * ld_x) holds the norm output in its first C columns and, with LoRA, receives x·lora_aᵀ after them
 * (ld_x >= C + the group's LoRA columns); o and down: x (N, IC; ld_x), xa (N, R) scratch. */
void fl_model_project(fl_model *m, int l, fl_group g, void *out, int ld_out, float beta, void *x, int ld_x, void *xa,
                      size_t N, int use_lora);
/* Qwen3's q_norm and k_norm of layer l, forward only (the decoder's; the training forward runs the
 * same): qkv (N, QD + 2·KVD) in place — each head of its q and k columns RMS-normed (rows of HS), or
 * with cfg.qk_norm_full (OLMo 2) each token's whole q and whole k row (rows of QD and KVD);
 * q_raw (N, QD) and k_raw (N, KVD) receive the unnormed q and k, rstd (N·NH + N·NKV) f32 the norms'
 * rstd (OLMo 2: q's N at 0, k's N at N·NH), scratch (N, QD) is overwritten. Does nothing when !m->cfg.qk_norm. */
void fl_model_qk_norm_forward(fl_model *m, int l, void *qkv, void *q_raw, void *k_raw, float *rstd, void *scratch,
                              size_t N);
/* The family's pieces around the layer walk, shared by the training forward and the decoder
 * (engine/model.c; each is the plain Llama op when the config does not ask for more):
 *   fl_model_rope_freq       layer l's RoPE frequencies (RD/2), in backend memory (declared below)
 *   fl_model_embed           out (N, C) = table[ids] · embed scale (Gemma: sqrt(C) rounded to the weight type)
 *   fl_model_norm            out (N, C; ld_out) = RMSNorm(inp (N, C)) with cfg.norm_weight_offset
 *   fl_model_pre_norm        a layer's pre-norm (attention's or the MLP's) into out (N, C; ld_out): fl_model_norm,
 *                            or without pre-norms (OLMo 2, cfg.no_pre_norms) inp itself copied (rstd untouched)
 *   fl_model_glu_forward     out (N, FF) = act(gate) · up of gate_up (N, 2FF), act = cfg.act
 *   fl_model_scale_q         the q columns of qkv (N, QD + 2·KVD) times HS^0.5 · query_pre_attn_scalar^-0.5,
 *                            so the attention op's HS^-0.5 makes the score scale query_pre_attn_scalar^-0.5
 *                            (Granite: times HS^0.5 · attention_multiplier); row t also times Ministral 3's
 *                            1 + beta·ln(1 + floor(pos[t] / n)), pos the rows' positions on the host (NULL: none)
 *   fl_model_residual_add    h (N, C) += branch (N, C), the branch first times residual_multiplier (Granite;
 *                            branch is overwritten)
 *   fl_model_final_norm      out (N, C) = the final RMSNorm of inp (N, C), divided by logits_scaling (Granite:
 *                            the LM head is linear, so its logits come out divided; fl_model_lm_head_loss
 *                            divides its input gradient alike) */
/* The backend's lm_head_loss on the model's LM head (inp (N, C), targets (N)), soft-capped with
 * cfg.final_logit_softcapping when set (Gemma 2): every loss, logit and gradient path goes through it. */
void fl_model_lm_head_loss(fl_model *m, void *dinp, float *logits_out, float *token_loss, fl_step_scalars *sc,
                           const void *inp, const int32_t *targets, size_t N);
void fl_model_embed(fl_model *m, void *out, const int32_t *ids, size_t N);
void fl_model_norm(fl_model *m, void *out, float *rstd, const void *inp, const void *weight, size_t N, int ld_out);
void fl_model_pre_norm(fl_model *m, void *out, float *rstd, const void *inp, const void *weight, size_t N, int ld_out);
void fl_model_glu_forward(fl_model *m, void *out, const void *gate_up, size_t N);
void fl_model_scale_q(fl_model *m, void *qkv, const int32_t *pos, size_t N);
void fl_model_residual_add(fl_model *m, void *h, void *branch, size_t N);
void fl_model_final_norm(fl_model *m, void *out, float *rstd, const void *inp, size_t N);
/* The factor fl_model_scale_q applies (1 when query_pre_attn_scalar is unset or equals HS; Granite:
 * attention_multiplier · HS^0.5). */
float fl_model_q_scale(const fl_model_config *cfg);
/* Logits (B, T, V) on the host for ids (forward only, no dropout). */
void fl_model_logits(fl_model *m, const int32_t *ids, int B, int T, float *logits_host);

/* The columns the engine reserves in the fused float weights for LoRA (model/weights.h): what
 * fl_weights_bytes needs to size the base as the engine allocates it. */
fl_weights_reserve fl_model_weights_reserve(const fl_lora_config *lc);

/* Prints the MiB of each memory category (base weights, LoRA params + compute copy, grads, AdamW
 * moments, and the activations a (B, T) step allocates) on one line. */
void fl_model_print_memory(const fl_model *m, int B, int T, FILE *out);

/* RoPE inverse frequencies as transformers computes them (f32) over the rotary dims RD
 * (fl_config_rotary_dim), llama3 or linear scaling applied; longrope divides by its short_factor (or
 * with long_factors its long_factor). fl_rope_inv_freq: the default (short) table. */
void fl_rope_inv_freq_set(const fl_model_config *cfg, int long_factors, float *inv_freq /* (RD/2) */);
void fl_rope_inv_freq(const fl_model_config *cfg, float *inv_freq /* (RD/2) */);
/* Gemma 3's sliding layers' frequencies: base rope_local_theta, no scaling (fl_rope_inv_freq's when the
 * config has no local theta). */
void fl_rope_inv_freq_local(const fl_model_config *cfg, float *inv_freq /* (RD/2) */);
/* Whether a forward over positions 0 .. seq-1 takes longrope's long factors: seq passes
 * original_max_position_embeddings, as transformers 5.x decides per forward
 * (torch.max(position_ids) + 1 > original_max_position_embeddings). */
int fl_model_rope_long(const fl_model *m, int seq);
/* 0, or one line naming `what` when a forward over positions 0 .. n-1 is outside what fastlora
 * computes as transformers does: dynamic NTK past max_position_embeddings (its frequencies there
 * depend on the longest sequence transformers' module has seen). */
int fl_model_check_length(const fl_model *m, int64_t n, const char *what);
/* Layer l's table (backend memory, RD/2) for a forward over positions 0 .. seq-1: row 1 of m->inv_freq
 * for longrope's long factors (fl_model_rope_long) or a Gemma 3 / OLMo 3 sliding layer, row 0 otherwise. */
const float *fl_model_rope_freq(const fl_model *m, int l, int seq);
/* Layer l's factor on cos and sin: the config's (longrope, yarn), 1 on a sliding layer with a RoPE of its
 * own (OLMo 3's sliding layers take the default type while its full layers take yarn's factor). */
float fl_model_rope_factor(const fl_model *m, int l);
/* RoPE in place on the q and k heads of qkv (N rows of (QD + 2·KVD)) at positions pos (N, backend
 * memory), layer l's table for `seq` (fl_model_rope_freq), its factor on cos/sin (fl_model_rope_factor). */
void fl_model_rope_forward(const fl_model *m, int l, void *qkv, const int32_t *pos, size_t N, int seq);

#endif
