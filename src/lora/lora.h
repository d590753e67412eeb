/* lora.h — LoRA configuration and parameters, PEFT-compatible.
 *
 * For an adapted projection with frozen W (OC, IC): y = x·Wᵀ + s · (drop(x)·lora_aᵀ)·lora_bᵀ,
 * lora_a (R, IC), lora_b (OC, R), s = alpha/R (or alpha/√R with rsLoRA). PEFT's init: lora_a ~
 * kaiming_uniform(a=√5) = U(−1/√IC, 1/√IC), lora_b = 0. Every lora_a/lora_b of the model lives in
 * one flat f32 buffer in a fixed order — layer, then projection group (q/k/v, o, gate/up, down),
 * then the lora_a of each adapted member of the group, then their lora_b (a fused checkpoint module,
 * Phi-3's qkv_proj or gate_up_proj, is one member: model/projections.h) — so the gradients, both
 * AdamW moments and the optimizer's single launch share that layout, and the lora_a matrices of a
 * group are one stacked (members·R, IC) matrix (one GEMM for q, k and v, which share their input).
 * Not the projections themselves (model/projections.h: fl_proj, fl_group, their widths) and not the
 * adapter file format (lora/adapter_io.h).
 */
#ifndef FL_LORA_H
#define FL_LORA_H

#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "model/config.h"
#include "model/projections.h"

/* The flat parameter order, as stored in checkpoints' optimizer moments (train/checkpoint.c). */
#define FL_LORA_PARAM_ORDER "layer-group-a-then-b"

typedef struct {
    int rank;              /* R */
    float alpha;
    int use_rslora;
    float dropout;         /* p, applied to x before lora_a */
    unsigned target_mask;  /* bit p set: projection p is adapted (a fused module: all its members' bits) */
    uint64_t seed;
} fl_lora_config;

/* Defaults: r 16, alpha 32, no rsLoRA, dropout 0, all seven projections. */
fl_lora_config fl_lora_config_default(void);
float fl_lora_scale(const fl_lora_config *lc);
/* Parses "q,k,v,o,gate,up,down" (also the *_proj spellings, or "all"); Phi-3's module names
 * "qkv_proj" and "gate_up_proj" set their members' bits. */
int fl_lora_parse_targets(const char *list, unsigned *mask);
/* 0 unless a fused module of cfg (model/projections.h) has some members in mask and not others: its
 * members are one module, adapted whole or not at all (one line naming the module). */
int fl_lora_check_targets(const fl_model_config *cfg, unsigned mask);
/* The checkpoint modules `mask` adapts, comma-separated ("q_proj,v_proj"; Phi-3: "qkv_proj,o_proj"),
 * NUL-terminated in out (cut at cap). */
void fl_lora_targets_text(const fl_model_config *cfg, unsigned mask, char *out, size_t cap);
/* 1 when projection p carries a LoRA: in the mask and a module of cfg (a fused module's LoRA lives at
 * its first member, spans the group's rows: fl_module_dims). */
int fl_lora_adapts(const fl_model_config *cfg, const fl_lora_config *lc, fl_proj p);
/* Columns of the group's stacked x·lora_aᵀ: R times its adapted modules (0: none adapted). */
int fl_lora_group_rank(const fl_model_config *cfg, const fl_lora_config *lc, fl_group g);

typedef struct {
    float *a[FL_N_PROJ];  /* (R, IC) or NULL when not adapted (or not a module: fl_lora_adapts) */
    float *b[FL_N_PROJ];  /* (OC, R); a fused module's OC spans its group (fl_module_dims) */
} fl_lora_layer;

/* A flat buffer of all LoRA matrices in backend memory, with per-layer views. */
typedef struct {
    float *data;
    size_t n;              /* total floats */
    int n_layers;
    fl_lora_layer *layers; /* host array of views into data */
    const fl_backend *be;
} fl_lora_buffer;

size_t fl_lora_param_count(const fl_model_config *cfg, const fl_lora_config *lc);
/* Allocates a zeroed buffer with the layout above. */
void fl_lora_buffer_init(fl_lora_buffer *buf, const fl_model_config *cfg, const fl_lora_config *lc, const fl_backend *be);
void fl_lora_buffer_free(fl_lora_buffer *buf);
/* PEFT's default init: A ~ U(−1/√IC, 1/√IC) from the config's seed, B = 0. */
void fl_lora_init_peft(fl_lora_buffer *params, const fl_model_config *cfg, const fl_lora_config *lc);

#endif
