/* config.h — the model configuration: what a Hugging Face config.json says, normalized, and the
 * built-in presets with the exact configs of the target models.
 *
 * Dimension glossary used across fastlora: B batch, T sequence, C hidden, NH query heads, NKV
 * key/value heads, HS head size, FF MLP width, V vocab, R LoRA rank, L layers. QD = NH*HS,
 * KVD = NKV*HS. Not a weights loader (model/weights.h) and not the LoRA config (lora/lora.h).
 */
#ifndef FL_CONFIG_H
#define FL_CONFIG_H

#include <stdint.h>

#include "common/dtype.h"

typedef enum { FL_ARCH_LLAMA = 0, FL_ARCH_QWEN2, FL_ARCH_QWEN3, FL_ARCH_PHI3, FL_ARCH_GEMMA2, FL_ARCH_GEMMA3,
               FL_ARCH_OLMO2, FL_ARCH_GEMMA } fl_arch;
/* The MLP's gate activation: SwiGLU silu(gate)·up, or GeGLU gelu_tanh(gate)·up (Gemma's gelu_pytorch_tanh). */
typedef enum { FL_ACT_SILU = 0, FL_ACT_GELU_TANH } fl_act;

/* Limits fl_config_load enforces: the CPU RoPE keeps HS/2 angles on the stack, and NH*HS (an int,
 * passed to the GEMMs) must stay far from overflow. */
#define FL_MAX_HEAD_DIM 1024
#define FL_MAX_PROJ_DIM (1 << 20)

typedef struct {
    char name[96];          /* preset name, or the folder path */
    fl_arch arch;
    int vocab_size;         /* V */
    int hidden_size;        /* C */
    int intermediate_size;  /* FF */
    int n_layers;           /* L */
    int n_heads;            /* NH */
    int n_kv_heads;         /* NKV */
    int head_dim;           /* HS */
    int max_position_embeddings;
    double rope_theta;
    int rope_llama3;                 /* llama3 frequency scaling (Llama-3.x) */
    double rope_factor, rope_low_freq_factor, rope_high_freq_factor;
    int rope_original_max_position;
    int rope_longrope;               /* longrope (Phi-3.5, Phi-4-mini): inv_freq[j] divided by short_factor[j],
                                        or long_factor[j] when a sequence passes rope_original_max_position */
    float rope_short_factor[FL_MAX_HEAD_DIM / 2], rope_long_factor[FL_MAX_HEAD_DIM / 2];   /* (rotary_dim/2) */
    int rope_yarn;                   /* YaRN (Qwen2.5 / Qwen3 long context, OLMo 3): inv_freq blends f / rope_factor
                                        and f over a linear ramp between the correction dims of beta_fast and
                                        beta_slow (turns in rope_original_max_position), fl_rope_inv_freq_set */
    double rope_yarn_beta_fast, rope_yarn_beta_slow;
    int rope_yarn_truncate;          /* the correction dims floored / ceiled to whole dims (transformers' default) */
    double rope_attention_factor;    /* cos and sin scaled by it (longrope, yarn); 0 reads as 1 */
    int rope_dynamic;                /* dynamic NTK (rope_factor): transformers' frequencies at init, theta ×
                                        (factor·M/M − (factor − 1))^(RD/(RD − 2)) with M = max_position_embeddings,
                                        which it keeps while no forward passes M (fl_config_rope_base); a sequence past
                                        M is refused (fl_model_check_length): its frequencies then depend on the
                                        longest sequence transformers' module has seen */
    double rope_llama4_beta;         /* Ministral 3: q at position p times 1 + beta·ln(1 + floor(p / n)) after RoPE,
                                        n = rope_llama4_original (transformers' get_llama_4_attn_scale); 0: none */
    int rope_llama4_original;
    int rotary_dim;                  /* the first dims of each head RoPE rotates: int(HS·partial_rotary_factor)
                                        (Phi-4-mini: 96 of 128), the rest pass through; 0 reads as HS */
    float rms_norm_eps;
    int tie_word_embeddings;
    int qkv_bias;            /* Qwen2: q/k/v projections carry a bias */
    int qk_norm;             /* Qwen3: RMSNorm over each head (HS) of q and of k (weights q_norm, k_norm;
                                eps rms_norm_eps) between the projection and RoPE */
    int qk_norm_full;        /* OLMo 2: q_norm and k_norm each over the whole projection row (QD and KVD values,
                                weights of QD and KVD), one norm per token, not per head */
    int olmo3;               /* Olmo3ForCausalLM: OLMo 2's layers with sliding layers (layer_types, else all but
                                every 4th) on rope_local_theta's default RoPE and the full layers on
                                rope_theta with the scaling (yarn on the released ones); GGUF keys only */
    int no_pre_norms;        /* OLMo 2: no input_layernorm and no pre-MLP norm — attention and MLP read the
                                residual stream itself; only the sandwich's post norms (sandwich_norms) remain */
    int fused_modules;       /* Phi-3: q/k/v are one checkpoint module (self_attn.qkv_proj), gate/up one
                                (mlp.gate_up_proj), and a LoRA adapts each as one (model/projections.h) */
    fl_dtype dtype;          /* declared dtype (informational; tensors carry their own) */
    int bos_token_id, eos_token_id;  /* -1 when absent */
    /* Sliding-window attention: on a layer with the window, query t sees only the last sliding_window
     * positions of its document, itself included (fl_config_layer_window). Which layers have it is a
     * rule rather than a per-layer table, so the struct stays small and the layer count unbounded:
     * layers from window_first_layer on, except every window_global_every-th (counting from 1). */
    int sliding_window;      /* W; 0: every layer global (Llama, Qwen2, Mistral v0.2+) */
    int window_first_layer;  /* layers before it are global (Qwen3's max_window_layers); Mistral, Phi-3: 0 */
    int window_global_every; /* every n-th layer is global (Gemma 2: 2, Gemma 3: 6); 0: none (Mistral, Phi-3) */
    /* ---- Gemma, Gemma 2, Gemma 3 (all zero for the other families: the Llama walk) ---- */
    fl_act act;              /* the MLP's gate activation */
    float norm_weight_offset; /* every RMSNorm (layers, q/k, final) multiplies by (offset + w): 1 for Gemma,
                                whose norm weights are stored as offsets from 1; 0 otherwise */
    int sandwich_norms;      /* Gemma: post_attention_layernorm after attention and post_feedforward_layernorm
                                after the MLP, both before the residual add; the MLP's pre-norm is then
                                pre_feedforward_layernorm (weights.h: post_attn_norm, post_mlp_norm) */
    double embed_scale;      /* embeddings times sqrt(hidden_size), the factor rounded to the weight type
                                first (Gemma*ScaledWordEmbedding); 0: none. The tied LM head is unscaled */
    int query_pre_attn_scalar; /* attention scores scaled by query_pre_attn_scalar^-0.5 instead of HS^-0.5;
                                0: HS */
    float final_logit_softcapping; /* logits z -> cap·tanh(z/cap) before the loss; 0: none */
    float attn_logit_softcapping;  /* Gemma 2: each scaled attention score s -> cap·tanh(s/cap) before the
                                      mask and softmax (backend.h attention_forward's softcap); 0: none */
    double rope_local_theta; /* Gemma 3: RoPE base of the sliding layers (those with a window,
                                fl_config_layer_window; rope_local_base_freq / the sliding_attention
                                rope_parameters), default RoPE; 0: every layer uses rope_theta */
    double rope_linear_factor; /* linear RoPE scaling of the global layers (inv_freq / factor); 0 or 1: none */
    int nope_every;          /* SmolLM3: every n-th layer (counting from 1) runs without RoPE (no_rope_layers,
                                no_rope_layer_interval: 4); 0: every layer rotates */
    /* ---- Granite (GraniteForCausalLM; all 0 for the other families: none) ---- */
    double embedding_multiplier; /* embeddings times it, the factor in f32 (not rounded to the weight type
                                    first, unlike embed_scale); the tied LM head reads the unscaled table */
    double attention_multiplier; /* the attention score scale itself, replacing HS^-0.5 (> 0: Granite) */
    double residual_multiplier;  /* o's and down's outputs times it before each residual add */
    double logits_scaling;       /* logits divided by it */
    /* ---- a language model inside a vision-language checkpoint (Gemma3ForConditionalGeneration,
     *      Mistral3ForConditionalGeneration) ---- */
    int multimodal;          /* 1: the config is its text_config; the folder's vision tower and projector
                                tensors are kept (merge) and never run — text-only training is exact */
    int tie_if_head_missing; /* 1: untied as read, but tied when the folder holds no LM head tensor
                                (Mistral3: transformers 5 ties on its top-level tie_word_embeddings, true by
                                default, unless the checkpoint stores a head; resolved by fl_weights_load) */
} fl_model_config;

/* Whether layer l rotates q and k (all but SmolLM3's NoPE layers). */
static inline int fl_config_layer_rope(const fl_model_config *c, int l) {
    return c->nope_every <= 0 || (l + 1) % c->nope_every != 0;
}

/* Granite's four scalars are set (GraniteForCausalLM: config.c refuses any that is not positive). */
static inline int fl_config_granite(const fl_model_config *c) { return c->attention_multiplier > 0; }
/* Whether o's and down's outputs are scaled before their residual adds (Granite, residual_multiplier != 1). */
static inline int fl_config_residual_scaled(const fl_model_config *c) {
    return c->residual_multiplier > 0 && (float)c->residual_multiplier != 1.0f;
}

/* The checkpoint's names of the language model's tensors: "model." + "layers.3.mlp.up_proj.weight",
 * "embed_tokens.weight", "norm.weight" — "language_model.model." in a Gemma3ForConditionalGeneration or
 * Mistral3ForConditionalGeneration folder (as the published checkpoints and transformers' save_pretrained
 * write it) — and of the LM head. */
static inline const char *fl_config_tensor_prefix(const fl_model_config *c) {
    return c->multimodal ? "language_model.model." : "model.";
}
static inline const char *fl_config_lm_head_name(const fl_model_config *c) {
    return c->multimodal ? "language_model.lm_head.weight" : "lm_head.weight";
}
/* PEFT's module path of the same (what adapter tensor names and target_modules say): "model." +
 * "layers.3.mlp.up_proj"; "model.language_model." in the vision-language model (transformers 5's
 * module tree). */
static inline const char *fl_config_module_prefix(const fl_model_config *c) {
    return c->multimodal ? "model.language_model." : "model.";
}

/* The window of layer l: cfg->sliding_window when the layer has one, else 0 (full causal). Query t
 * of a document sees keys j with t - W < j <= t (transformers' sliding_window_overlay). */
static inline int fl_config_layer_window(const fl_model_config *c, int l) {
    if (c->sliding_window <= 0 || l < c->window_first_layer) return 0;
    if (c->window_global_every > 0 && (l + 1) % c->window_global_every == 0) return 0;
    return c->sliding_window;
}

/* Parses `path` (a config.json). Errors name the file and the field. Architectures:
 * LlamaForCausalLM, Qwen2ForCausalLM, MistralForCausalLM (Llama's layers; its sliding_window on every
 * layer), Qwen3ForCausalLM (Llama's layers with q_norm/k_norm: cfg->qk_norm; head_dim
 * defaults to 128 as in Qwen3Config; with use_sliding_window true, layers from max_window_layers on
 * slide, or those layer_types names when it lists them and the rule above expresses the list;
 * attention_bias true is refused), Phi3ForCausalLM (Llama's layers from fused checkpoint modules:
 * cfg->fused_modules; partial rotary and longrope; its sliding_window on every layer, as Mistral's),
 * GraniteForCausalLM (granite: Llama's layers with the four Granite scalars above, GraniteConfig's
 * defaults 1.0; biases refused), GemmaForCausalLM (gemma: Llama's layer with Gemma's norms, GeGLU and
 * embedding scale; no sliding layers, soft-caps or query_pre_attn_scalar), Gemma3ForCausalLM (model_type
 * gemma3_text) and Gemma2ForCausalLM (gemma2): the Gemma fields above,
 * their sliding layers (layer_types, else Gemma 3's sliding_window_pattern, default 6, and Gemma 2's
 * alternation, sliding first) through the same rule; attn_logit_softcapping absent is Gemma 2's 50.0
 * (Gemma 3's none), null is none. Olmo2ForCausalLM (olmo2): Llama's projections with q_norm/k_norm over
 * the whole q and k rows (qk_norm_full) and only post norms (sandwich_norms, no_pre_norms), untied and
 * rms_norm_eps 1e-5 by default as in Olmo2Config. Olmo3ForCausalLM (olmo3): OLMo 2's layers, the
 * sliding layers of layer_types (else all but every 4th; window default 4096) with a RoPE of their own
 * (rope_local_theta, default type), the full layers' rope_theta and scaling (config_rope.c). Longrope
 * (Phi-3's rope_scaling) and a local RoPE base (Gemma 3, OLMo 3) never meet: only Phi-3 reads longrope's
 * two tables into the same rows. */
int fl_config_load(fl_model_config *cfg, const char *path);

/* Looks up a built-in preset by name (case-insensitive); returns FL_ERR_INPUT listing the names
 * when unknown. */
int fl_config_preset(fl_model_config *cfg, const char *name);
/* A comma-separated list of preset names (static storage). */
const char *fl_config_preset_names(void);
/* The family's name as bench and messages print it ("Llama", "Qwen2", "Qwen3", "Phi3", "Gemma2",
 * "Gemma3", "OLMo2"; Mistral runs as Llama with its window). */
const char *fl_arch_name(fl_arch arch);
/* The Hugging Face id of a preset's weights ("smollm2-135m" -> "HuggingFaceTB/SmolLM2-135M"), or NULL. */
const char *fl_config_preset_hf_name(const char *name);
/* The preset whose weights are `hf_name` (a full id, or its last path component), or NULL. */
const char *fl_config_preset_for_hf_name(const char *hf_name);

/* Derived sizes. */
static inline int fl_config_q_dim(const fl_model_config *c) { return c->n_heads * c->head_dim; }
static inline int fl_config_kv_dim(const fl_model_config *c) { return c->n_kv_heads * c->head_dim; }
/* RoPE's rotated dims per head (RD, even, <= HS) and its cos/sin factor. */
static inline int fl_config_rotary_dim(const fl_model_config *c) { return c->rotary_dim ? c->rotary_dim : c->head_dim; }
static inline float fl_config_rope_attention_factor(const fl_model_config *c) {
    return c->rope_attention_factor > 0 ? (float)c->rope_attention_factor : 1.0f;
}
/* The base the global layers' frequencies are built from: rope_theta, or dynamic NTK's at init. */
double fl_config_rope_base(const fl_model_config *c);
/* YaRN's cos/sin factor when the config gives none: 0.1·ln(factor) + 1 (1 for factor <= 1). */
double fl_config_yarn_default_attention(double factor);
/* Parameter counts: every weight a token passes through (embedding excluded, LM head included)
 * and the total stored (embedding + untied head + layers + norms). */
int64_t fl_config_matmul_params(const fl_model_config *c);
int64_t fl_config_total_params(const fl_model_config *c);

#endif
