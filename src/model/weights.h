/* weights.h — the frozen base weights of a Llama/Qwen2/Qwen3 model: loaded from a Hugging Face folder
 * (model.safetensors or a sharded model.safetensors.index.json; BF16/F16/F32 tensors, checked
 * against config.json) or filled with seeded random values for the presets.
 *
 * All tensors live in one allocation of the backend's memory — the matrices in its weight type,
 * the norm weights and biases in its act type (backend.h) — in HF's layout: nn.Linear weights are
 * (out, in), row-major, y = x·Wᵀ. Projections that read the same input are stored fused, one
 * matrix per group (model/projections.h): q, k, v as the rows of one (QD + 2·KVD, C) matrix, gate and up as
 * one (2·FF, C); their rows may be wider than C (row stride ld_qkv / ld_gate_up) by columns that
 * the caller reserves — the engine keeps the LoRA B compute copy there, so that base and LoRA are
 * one K-concatenated GEMM (docs/ARCHITECTURE.md).
 * With NF4 (QLoRA, docs/QUANT.md) the seven projections are held in 4 bits instead — loaded from a
 * bitsandbytes 4-bit checkpoint, or quantized at load from a float one (`--quant nf4`) — in a second
 * region of the same allocation; the float matrices and their reserved columns are then absent.
 * Embeddings, norms, biases and the LM head stay in the backend's types.
 * Frozen means frozen: nothing here has a gradient. Not the LoRA parameters (lora/lora.h).
 */
#ifndef FL_WEIGHTS_H
#define FL_WEIGHTS_H

#include <stddef.h>

#include "backend/backend.h"
#include "model/config.h"
#include "quant/nf4.h"

/* How the frozen projections are held. */
typedef enum { FL_QUANT_NONE = 0, FL_QUANT_NF4 } fl_quant;
/* "none" or "nf4" (a NULL or empty string is "none"); anything else is an input error naming
 * --quant. */
int fl_quant_parse(const char *s, fl_quant *out);

typedef struct {
    void *attn_norm;   /* (C); NULL without pre-norms (OLMo 2, cfg.no_pre_norms) */
    void *qkv;         /* (QD + 2·KVD, ld_qkv): rows q | k | v, columns [0, C) */
    void *qkv_bias;    /* (QD + 2·KVD) — only when cfg.qkv_bias, else NULL */
    void *q_norm, *k_norm;  /* (HS) each — only when cfg.qk_norm (Qwen3), else NULL; (QD), (KVD) with
                               cfg.qk_norm_full (OLMo 2) */
    void *o;           /* (C, QD) */
    void *mlp_norm;    /* (C) the MLP's pre-norm: Llama's post_attention_layernorm, Gemma's pre_feedforward_layernorm;
                          NULL in OLMo 2 */
    void *post_attn_norm, *post_mlp_norm; /* (C) each — Gemma's post_attention_layernorm and
                                  post_feedforward_layernorm (cfg.sandwich_norms), else NULL */
    void *gate_up;     /* (2·FF, ld_gate_up): rows gate | up, columns [0, C) */
    void *down;        /* (C, FF) */
    const fl_nf4_weight *nf4;  /* NF4 base: q, k, v, o, gate, up, down (fl_proj order), their arrays in
                                  backend memory; qkv, o, gate_up and down are then NULL. NULL otherwise */
} fl_layer_weights;

/* Columns reserved after the C weight columns of each fused matrix (zero-filled; 0: none). */
typedef struct {
    int qkv, gate_up;
} fl_weights_reserve;

typedef struct {
    void *embed;       /* (V, C) */
    void *lm_head;     /* (V, C); == embed when tie_word_embeddings */
    void *final_norm;  /* (C) */
    fl_layer_weights *layers; /* (L) host array of pointers into storage */
    int ld_qkv, ld_gate_up;   /* row strides of the fused matrices: C + the reserved columns */
    fl_quant quant;     /* FL_QUANT_NF4: the projections are NF4 (layers[l].nf4) */
    fl_nf4_weight *nf4; /* (L, 7) host array of views into storage, or NULL */
    void *storage;      /* backend memory, one allocation */
    size_t bytes;
    const fl_backend *be;
} fl_base_weights;

/* Loads `dir`/config.json and the safetensors weights. Errors (missing files or tensors, shapes
 * that disagree with config.json, corrupt files) name the file and the tensor. */
int fl_weights_load(fl_base_weights *w, fl_model_config *cfg, const char *dir, const fl_backend *be,
                    fl_weights_reserve reserve);
/* fl_weights_load with the projections' form: FL_QUANT_NF4 quantizes float projections at load (as
 * bitsandbytes' load_in_4bit with double quantization). A folder whose config.json has a
 * bitsandbytes 4-bit NF4 quantization_config is loaded as NF4 whatever `quant` says (its
 * projections must then be stored in NF4, unless `quant` is FL_QUANT_NF4). */
int fl_weights_load_quant(fl_base_weights *w, fl_model_config *cfg, const char *dir, const fl_backend *be,
                          fl_weights_reserve reserve, fl_quant quant);
/* For a config whose head is tied only when the folder stores none (config.h, tie_if_head_missing):
 * ties it when the folder's safetensors files hold no LM head, as fl_weights_load does (for commands
 * that read the files themselves: export). 0, or the error of opening the files. */
int fl_weights_resolve_head(fl_model_config *cfg, const char *dir);
/* The checks of fl_weights_load without loading: every tensor config.json implies is in the folder's
 * safetensors files with its HF shape (as stored: q, k, v, gate and up separate) and dtype BF16, F16
 * or F32 (for commands that read the files themselves, e.g. merge). Errors are fl_weights_load's. */
int fl_weights_check_dir(const fl_model_config *cfg, const char *dir);
/* Seeded random weights for a preset config: linear weights ~ U(-a, a) with a = sqrt(3)·0.02,
 * norms = 1, biases small. */
void fl_weights_init_random(fl_base_weights *w, const fl_model_config *cfg, uint64_t seed, const fl_backend *be,
                            fl_weights_reserve reserve);
/* The same random weights with the projections quantized to NF4 when quant is FL_QUANT_NF4. */
void fl_weights_init_random_quant(fl_base_weights *w, const fl_model_config *cfg, uint64_t seed, const fl_backend *be,
                                  fl_weights_reserve reserve, fl_quant quant);
/* Bytes of the one allocation for `cfg` on a backend with these element sizes (NF4: with double
 * quantization, as quantize-at-load and the common checkpoints store it). The planner's figure. */
size_t fl_weights_bytes(const fl_model_config *cfg, size_t weight_size, size_t act_size, fl_weights_reserve reserve,
                        fl_quant quant);
void fl_weights_free(fl_base_weights *w);

/* A digest of the base weights in dir for --resume (train/run_inputs.h): every tensor's name,
 * dtype and shape and 256 chunks of 16 bytes spread over its data (all of a small tensor), read
 * from the mapped files in far less time than the load itself. A rescaled, replaced or zeroed
 * tensor changes it; a change of a few values may not. */
int fl_weights_digest(const char *dir, uint64_t *out);

#endif
