/* config.c — config.json parsing (both the pre-4.56 and the 5.x spellings) and the presets. */
#include "model/config.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/error.h"
#include "io/file_util.h"
#include "model/config_read.h"
#include "model/config_rope.h"
#include "model/config_vlm.h"

/* A validated layer_types list (some "sliding_attention") as config.h's rule, cfg->sliding_window set:
 * layers from first_sliding on slide, except every window_global_every-th; else one line. */
static int layer_types_rule(const char *path, json_t *types, int first_sliding, fl_model_config *cfg) {
    cfg->window_first_layer = first_sliding;
    for (int every = 0; every <= cfg->n_layers; every += every ? 1 : 2) {
        cfg->window_global_every = every;
        int same = 1;
        for (int l = 0; l < cfg->n_layers && same; l++)
            same = (fl_config_layer_window(cfg, l) > 0) ==
                   !strcmp(json_string_value(json_array_get(types, (size_t)l)), "sliding_attention");
        if (same) return 0;
    }
    return fl_input_error("%s: field 'layer_types': this pattern of sliding_attention layers is not supported (supported: "
                          "full_attention up to a layer, then sliding_attention, optionally every n-th layer full)", path);
}

/* Qwen3's sliding layers, as transformers 5.x Qwen3Config builds them: sliding_window is kept only when
 * use_sliding_window is true (absent: 4096, null: none); layer_types, when the file does not list it,
 * is "sliding_attention" for layers i >= max_window_layers (default 28) when a window is kept, else
 * "full_attention". A listed layer_types is taken as it is and must be a rule config.h expresses:
 * layers from window_first_layer on slide, except every window_global_every-th. */
static int parse_qwen3_window(const char *path, json_t *root, fl_model_config *cfg) {
    int use = 0, first = 28;
    FL_TRY(get_bool(path, root, "use_sliding_window", 0, &use));
    FL_TRY(get_int(path, root, "max_window_layers", 0, 28, &first));
    json_t *sw = json_object_get(root, "sliding_window");
    int window = 0;
    if (use) {
        if (!sw) window = 4096;
        else if (!json_is_null(sw) && (!json_is_integer(sw) || json_integer_value(sw) <= 0 || json_integer_value(sw) > INT32_MAX))
            return fl_input_error("%s: field 'sliding_window' must be null or a positive integer", path);
        else if (json_is_integer(sw)) window = (int)json_integer_value(sw);
    }
    json_t *types = json_object_get(root, "layer_types");
    if (!types || json_is_null(types)) {
        cfg->sliding_window = window && first < cfg->n_layers ? window : 0;
        cfg->window_first_layer = cfg->sliding_window ? first : 0;
        return 0;
    }
    if (!json_is_array(types) || json_array_size(types) != (size_t)cfg->n_layers)
        return fl_input_error("%s: field 'layer_types' must be a list of %d strings (num_hidden_layers)", path, cfg->n_layers);
    int n_sliding = 0, first_sliding = -1;
    for (size_t i = 0; i < json_array_size(types); i++) {
        json_t *t = json_array_get(types, i);
        const char *v = json_is_string(t) ? json_string_value(t) : "";
        int sliding = !strcmp(v, "sliding_attention");
        if (!sliding && strcmp(v, "full_attention") != 0)
            return fl_input_error("%s: field 'layer_types[%zu]' must be \"full_attention\" or \"sliding_attention\"", path, i);
        if (sliding && first_sliding < 0) first_sliding = (int)i;
        n_sliding += sliding;
    }
    if (!n_sliding) return 0;
    if (!window)  /* transformers: the sliding mask needs config.sliding_window, which is None here */
        return fl_input_error("%s: field 'layer_types' names sliding_attention layers but use_sliding_window is not true "
                              "or sliding_window is null", path);
    cfg->sliding_window = window;
    return layer_types_rule(path, types, first_sliding, cfg);
}

/* ---- Gemma 2 / Gemma 3 --------------------------------------------------------------------- */

/* Which layers slide, as transformers 5.x Gemma2Config / Gemma3TextConfig / Olmo3Config build
 * layer_types: the listed layer_types, else "sliding_attention" for layer i when (i + 1) % pattern != 0
 * (Gemma 3: the 4.x sliding_window_pattern, default 6; Gemma 2: 2, sliding first; OLMo 3: 4). Those layers see the last
 * sliding_window positions (default 4096; masking_utils.sliding_window_overlay: kv_idx > q_idx - W)
 * and, in Gemma 3, take the local RoPE: both through config.h's rule, refused when it cannot say it.
 * Sliding layers with a null window are refused (transformers cannot build their mask). */
static int parse_window_layers(const char *path, json_t *root, fl_model_config *cfg, int pattern_default,
                               const char *pattern_key) {
    json_t *sw = json_object_get(root, "sliding_window");
    int window = 4096;   /* Gemma2Config's, Gemma3TextConfig's and Olmo3Config's default */
    if (sw && json_is_null(sw)) window = 0;
    else if (sw && (!json_is_integer(sw) || json_integer_value(sw) <= 0 || json_integer_value(sw) > INT32_MAX))
        return fl_input_error("%s: field 'sliding_window' must be null or a positive integer", path);
    else if (sw) window = (int)json_integer_value(sw);
    cfg->sliding_window = cfg->window_first_layer = cfg->window_global_every = 0;
    json_t *types = json_object_get(root, "layer_types");
    if (types && !json_is_null(types)) {
        if (!json_is_array(types) || json_array_size(types) != (size_t)cfg->n_layers)
            return fl_input_error("%s: field 'layer_types' must be a list of num_hidden_layers (%d) strings", path,
                                  cfg->n_layers);
        int first_sliding = -1;
        for (int l = 0; l < cfg->n_layers; l++) {
            json_t *t = json_array_get(types, (size_t)l);
            const char *k = json_is_string(t) ? json_string_value(t) : "";
            if (strcmp(k, "sliding_attention") != 0 && strcmp(k, "full_attention") != 0)
                return fl_input_error("%s: field 'layer_types[%d]' must be \"sliding_attention\" or \"full_attention\"",
                                      path, l);
            if (first_sliding < 0 && !strcmp(k, "sliding_attention")) first_sliding = l;
        }
        if (first_sliding < 0) return 0;
        if (!window)
            return fl_input_error("%s: field 'layer_types' names sliding_attention layers but sliding_window is null", path);
        cfg->sliding_window = window;
        return layer_types_rule(path, types, first_sliding, cfg);
    }
    int pattern = pattern_default;
    if (pattern_key) FL_TRY(get_int(path, root, pattern_key, 0, pattern_default, &pattern));
    if (pattern < 1) return fl_input_error("%s: field 'sliding_window_pattern' must be positive", path);
    if (pattern == 1) return 0;   /* every layer global */
    if (!window)
        return fl_input_error("%s: field 'sliding_window' is null but %s layers slide (every %d-th is global)", path,
                              pattern_key ? "sliding_window_pattern says" : "the family's", pattern);
    cfg->sliding_window = window;
    cfg->window_global_every = pattern;
    return 0;
}

/* What Gemma 2 and Gemma 3 add to Llama's fields (config.h). Called after the shared dimensions. */
/* The layout every Gemma 2 / 3 has, whatever its config.json says: q/k norms (Gemma 3), norms
 * x·(1 + w), four norms per layer, GeGLU-tanh, embeddings scaled by √hidden. */
static void gemma_layout(fl_model_config *cfg) {
    cfg->qk_norm = cfg->arch == FL_ARCH_GEMMA3;
    cfg->norm_weight_offset = 1.0f;
    cfg->sandwich_norms = cfg->arch != FL_ARCH_GEMMA;   /* Gemma (1): Llama's two norms per layer */
    cfg->act = FL_ACT_GELU_TANH;
    cfg->embed_scale = sqrt((double)cfg->hidden_size);
}

/* OLMo 2's layout (config.h): q/k norms over the whole q and k rows, no pre-norms, post norms only. */
static void olmo2_layout(fl_model_config *cfg) {
    cfg->qk_norm = cfg->qk_norm_full = cfg->sandwich_norms = cfg->no_pre_norms = 1;
}

/* Gemma (1), GemmaForCausalLM: Gemma's norms, GeGLU and embedding scale on Llama's layer; GemmaConfig
 * reads hidden_act alone and takes its legacy "gelu" as the tanh GELU. The fields of the later Gemmas
 * it never had are refused rather than ignored. */
static int parse_gemma1(const char *path, json_t *root, fl_model_config *cfg) {
    gemma_layout(cfg);
    json_t *act = json_object_get(root, "hidden_act");
    if (act && !(json_is_string(act) && (!strcmp(json_string_value(act), "gelu") ||
                                         !strcmp(json_string_value(act), "gelu_pytorch_tanh"))))
        return fl_input_error("%s: field 'hidden_act' must be \"gelu\" or \"gelu_pytorch_tanh\" (Gemma's GeGLU, the tanh "
                              "GELU either way)", path);
    static const char *const later[] = {"query_pre_attn_scalar", "final_logit_softcapping", "attn_logit_softcapping",
                                        "sliding_window", "layer_types"};
    for (size_t i = 0; i < sizeof later / sizeof later[0]; i++)
        if (json_object_get(root, later[i]) && !json_is_null(json_object_get(root, later[i])))
            return fl_input_error("%s: field '%s' is not a GemmaForCausalLM field (Gemma 2 / 3 have it: use their "
                                  "architectures)", path, later[i]);
    int flag = 0;
    FL_TRY(get_bool(path, root, "use_bidirectional_attention", 0, &flag));
    if (flag)
        return fl_input_error("%s: field 'use_bidirectional_attention' is true; only causal attention is supported", path);
    return fl_config_parse_rope(path, root, cfg);
}

static int parse_gemma(const char *path, json_t *root, fl_model_config *cfg) {
    int gemma3 = cfg->arch == FL_ARCH_GEMMA3;
    if (cfg->arch == FL_ARCH_GEMMA) return parse_gemma1(path, root, cfg);
    gemma_layout(cfg);
    json_t *act = json_object_get(root, "hidden_activation");
    if (!act || json_is_null(act)) act = json_object_get(root, "hidden_act");
    if (act && !json_is_null(act) && !(json_is_string(act) && !strcmp(json_string_value(act), "gelu_pytorch_tanh")))
        return fl_input_error("%s: field 'hidden_activation' must be \"gelu_pytorch_tanh\" (Gemma's GeGLU)", path);
    FL_TRY(get_int(path, root, "query_pre_attn_scalar", 0, 256, &cfg->query_pre_attn_scalar));
    if (cfg->query_pre_attn_scalar <= 0)
        return fl_input_error("%s: field 'query_pre_attn_scalar' must be a positive integer", path);
    /* absent: Gemma2Config's 30.0 (Gemma3TextConfig's None); null: none, as the models test `is not None` */
    json_t *fcap = json_object_get(root, "final_logit_softcapping");
    double cap = gemma3 || (fcap && json_is_null(fcap)) ? 0.0 : 30.0;
    FL_TRY(get_number(path, root, "final_logit_softcapping", 0, cap, &cap));
    if (cap < 0) return fl_input_error("%s: field 'final_logit_softcapping' must be null or positive", path);
    cfg->final_logit_softcapping = (float)cap;
    /* absent: Gemma2Config's 50.0 (Gemma3TextConfig's None); null: none */
    json_t *acap = json_object_get(root, "attn_logit_softcapping");
    double attn_cap = gemma3 ? 0.0 : 50.0;
    if (acap && json_is_null(acap)) attn_cap = 0.0;
    else FL_TRY(get_number(path, root, "attn_logit_softcapping", 0, attn_cap, &attn_cap));
    if (acap && !json_is_null(acap) && !(attn_cap > 0))   /* 0 would divide by zero in HF too */
        return fl_input_error("%s: field 'attn_logit_softcapping' must be null or positive", path);
    cfg->attn_logit_softcapping = (float)attn_cap;
    int flag = 0;
    FL_TRY(get_bool(path, root, "use_bidirectional_attention", 0, &flag));
    if (flag)
        return fl_input_error("%s: field 'use_bidirectional_attention' is true; only causal attention is supported", path);
    static const char *const moe[] = {"num_experts", "num_local_experts", "num_experts_per_tok"};
    for (size_t i = 0; i < sizeof moe / sizeof moe[0]; i++)
        if (json_object_get(root, moe[i]) && !json_is_null(json_object_get(root, moe[i])))
            return fl_input_error("%s: field '%s': mixture-of-experts layers are not supported (dense Gemma only)", path,
                                  moe[i]);
    FL_TRY(parse_window_layers(path, root, cfg, gemma3 ? 6 : 2, gemma3 ? "sliding_window_pattern" : NULL));
    if (gemma3) return fl_config_parse_gemma3_rope(path, root, cfg);
    return fl_config_parse_rope(path, root, cfg);
}


/* SmolLM3's NoPE layers: no_rope_layers (1 rotates, 0 does not; at least one entry per layer) or,
 * absent, one every no_rope_layer_interval layers (default 4), counting from 1 — the rule config.h
 * keeps; a list of another shape is refused. Its sliding window (on the NoPE layers) and biases are
 * refused too. */
static int parse_nope_layers(const char *path, json_t *root, fl_model_config *cfg) {
    int every = 4;
    FL_TRY(get_int(path, root, "no_rope_layer_interval", 0, 4, &every));
    json_t *list = json_object_get(root, "no_rope_layers");
    if (list && !json_is_null(list)) {
        if (!json_is_array(list) || json_array_size(list) < (size_t)cfg->n_layers)
            return fl_input_error("%s: field 'no_rope_layers' must list 0 or 1 for each of the %d layers", path, cfg->n_layers);
        every = 0;   /* the first NoPE layer sets the period the rest must follow */
        for (int l = 0; l < cfg->n_layers && !every; l++)
            if (json_is_integer(json_array_get(list, (size_t)l)) && json_integer_value(json_array_get(list, (size_t)l)) == 0)
                every = l + 1;
        for (int l = 0; l < cfg->n_layers; l++) {
            json_t *e = json_array_get(list, (size_t)l);
            long long want = every > 0 && (l + 1) % every == 0 ? 0 : 1;
            if (!json_is_integer(e) || json_integer_value(e) != want)
                return fl_input_error("%s: field 'no_rope_layers': entry %d must be %lld (supported: a NoPE layer every n "
                                      "layers, counting from 1, as no_rope_layer_interval makes them)", path, l, want);
        }
    } else if (every <= 0) {
        return fl_input_error("%s: field 'no_rope_layer_interval' must be a positive integer", path);
    }
    cfg->nope_every = every;
    int flag = 0;
    FL_TRY(get_bool(path, root, "use_sliding_window", 0, &flag));
    if (flag) return fl_input_error("%s: field 'use_sliding_window' is true: SmolLM3's sliding NoPE layers are not supported", path);
    static const char *const biases[] = {"attention_bias", "mlp_bias"};
    for (int i = 0; i < 2; i++) {
        FL_TRY(get_bool(path, root, biases[i], 0, &flag));
        if (flag) return fl_input_error("%s: field '%s' is true; SmolLM3 without biases is supported", path, biases[i]);
    }
    return 0;
}

/* GraniteForCausalLM (IBM Granite 3.x dense): Llama's layers and four scalars, GraniteConfig's defaults
 * 1.0 when absent — embeddings times embedding_multiplier, attention scores times attention_multiplier
 * (instead of HS^-0.5), o's and down's outputs times residual_multiplier, logits divided by
 * logits_scaling. Each must be a positive finite number (in f32, as the engine applies them); the
 * biases are refused with every family's (attention_bias would bias o_proj too). */
static int parse_granite(const char *path, json_t *root, fl_model_config *cfg) {
    static const char *const keys[] = {"embedding_multiplier", "attention_multiplier", "residual_multiplier",
                                       "logits_scaling"};
    double *fields[] = {&cfg->embedding_multiplier, &cfg->attention_multiplier, &cfg->residual_multiplier,
                        &cfg->logits_scaling};
    for (int i = 0; i < 4; i++) {
        FL_TRY(get_number(path, root, keys[i], 0, 1.0, fields[i]));
        float f = (float)*fields[i];
        if (!(f > 0) || isinf(f))
            return fl_input_error("%s: field '%s' must be a positive number representable in f32 (GraniteConfig's "
                                  "default 1.0), got %g", path, keys[i], *fields[i]);
    }
    return 0;
}

int fl_config_parse_json(const char *path, json_t *root, fl_model_config *cfg) {
    if (!json_is_object(root)) return fl_input_error("%s: top level must be a JSON object", path);
    json_t *archs = json_object_get(root, "architectures");
    json_t *model_type = json_object_get(root, "model_type");
    const char *arch = NULL;
    if (json_is_array(archs) && json_array_size(archs) > 0 && json_is_string(json_array_get(archs, 0)))
        arch = json_string_value(json_array_get(archs, 0));
    else if (archs && !json_is_null(archs))
        return fl_input_error("%s: field 'architectures' must be a list of strings", path);
    const char *mt0 = json_is_string(model_type) ? json_string_value(model_type) : "";
    if ((arch && !strcmp(arch, "Gemma3ForConditionalGeneration")) || (!arch && !strcmp(mt0, "gemma3")))
        return fl_config_parse_vision_language(path, root, cfg, 0);
    if ((arch && !strcmp(arch, "Mistral3ForConditionalGeneration")) || (!arch && !strcmp(mt0, "mistral3")))
        return fl_config_parse_vision_language(path, root, cfg, 1);
    if (!arch && json_is_string(model_type)) {
        const char *mt = json_string_value(model_type);
        arch = !strcmp(mt, "llama")   ? "LlamaForCausalLM"
               : !strcmp(mt, "qwen2") ? "Qwen2ForCausalLM"
               : !strcmp(mt, "mistral") ? "MistralForCausalLM"
               : !strcmp(mt, "ministral3") ? "Ministral3ForCausalLM"
               : !strcmp(mt, "qwen3") ? "Qwen3ForCausalLM"
               : !strcmp(mt, "phi3") ? "Phi3ForCausalLM"
               : !strcmp(mt, "gemma3_text") ? "Gemma3ForCausalLM"
               : !strcmp(mt, "gemma2") ? "Gemma2ForCausalLM"
               : !strcmp(mt, "gemma") ? "GemmaForCausalLM"
               : !strcmp(mt, "smollm3") ? "SmolLM3ForCausalLM"
               : !strcmp(mt, "granite") ? "GraniteForCausalLM"
               : !strcmp(mt, "olmo2") ? "Olmo2ForCausalLM"
               : !strcmp(mt, "olmo3") ? "Olmo3ForCausalLM"
                                        : mt;
    }
    if (!arch) return fl_input_error("%s: field 'architectures' is missing (expected e.g. [\"LlamaForCausalLM\"])", path);
    int mistral = !strcmp(arch, "MistralForCausalLM"), smollm3 = !strcmp(arch, "SmolLM3ForCausalLM");
    int granite = !strcmp(arch, "GraniteForCausalLM"), ministral3 = !strcmp(arch, "Ministral3ForCausalLM");
    /* Mistral's, Ministral 3's, SmolLM3's, Granite's layers are Llama's */
    if (!strcmp(arch, "LlamaForCausalLM") || mistral || ministral3 || smollm3 || granite) cfg->arch = FL_ARCH_LLAMA;
    else if (!strcmp(arch, "Qwen2ForCausalLM")) cfg->arch = FL_ARCH_QWEN2;
    else if (!strcmp(arch, "Qwen3ForCausalLM")) cfg->arch = FL_ARCH_QWEN3;
    else if (!strcmp(arch, "Phi3ForCausalLM")) cfg->arch = FL_ARCH_PHI3;
    else if (!strcmp(arch, "Gemma3ForCausalLM")) cfg->arch = FL_ARCH_GEMMA3;
    else if (!strcmp(arch, "Gemma2ForCausalLM")) cfg->arch = FL_ARCH_GEMMA2;
    else if (!strcmp(arch, "GemmaForCausalLM")) cfg->arch = FL_ARCH_GEMMA;
    else if (!strcmp(arch, "Olmo2ForCausalLM")) cfg->arch = FL_ARCH_OLMO2;
    else if (!strcmp(arch, "Olmo3ForCausalLM")) cfg->arch = FL_ARCH_OLMO2, cfg->olmo3 = 1;   /* OLMo 2's layers */
    else return fl_input_error("%s: field 'architectures': '%s' is not supported (supported: LlamaForCausalLM, Qwen2ForCausalLM, MistralForCausalLM, Qwen3ForCausalLM, Phi3ForCausalLM, Gemma3ForCausalLM, Gemma3ForConditionalGeneration, Mistral3ForConditionalGeneration, Ministral3ForCausalLM, Gemma2ForCausalLM, GemmaForCausalLM, SmolLM3ForCausalLM, GraniteForCausalLM, Olmo2ForCausalLM, Olmo3ForCausalLM)", path, arch);
    int gemma = cfg->arch == FL_ARCH_GEMMA2 || cfg->arch == FL_ARCH_GEMMA3 || cfg->arch == FL_ARCH_GEMMA;
    cfg->qkv_bias = cfg->arch == FL_ARCH_QWEN2;
    cfg->qk_norm = cfg->arch == FL_ARCH_QWEN3;
    cfg->fused_modules = cfg->arch == FL_ARCH_PHI3;
    int olmo2 = cfg->arch == FL_ARCH_OLMO2;
    if (olmo2) olmo2_layout(cfg);
    /* Mistral: null (Mistral 7B v0.2+, Nemo, Small) or a window (v0.1: 4096). Phi-3: transformers' Phi3
     * masks every layer with config.sliding_window as it stands (2047 is a window of 2047; 3.5-mini:
     * 262144) */
    if (mistral || ministral3 || cfg->fused_modules) {
        json_t *sw = json_object_get(root, "sliding_window");
        if (sw && !json_is_null(sw) && (!json_is_integer(sw) || json_integer_value(sw) <= 0 || json_integer_value(sw) > INT32_MAX))
            return fl_input_error("%s: field 'sliding_window' must be null or a positive integer", path);
        cfg->sliding_window = json_is_integer(sw) ? (int)json_integer_value(sw) : 0;
    }

    FL_TRY(get_int(path, root, "vocab_size", 1, 0, &cfg->vocab_size));
    FL_TRY(get_int(path, root, "hidden_size", 1, 0, &cfg->hidden_size));
    FL_TRY(get_int(path, root, "intermediate_size", 1, 0, &cfg->intermediate_size));
    FL_TRY(get_int(path, root, "num_hidden_layers", 1, 0, &cfg->n_layers));
    FL_TRY(get_int(path, root, "num_attention_heads", 1, 0, &cfg->n_heads));
    FL_TRY(get_int(path, root, "num_key_value_heads", 0, cfg->n_heads, &cfg->n_kv_heads));
    if (cfg->n_heads <= 0 || cfg->hidden_size <= 0 || cfg->vocab_size <= 0 || cfg->n_layers <= 0 || cfg->intermediate_size <= 0)
        return fl_input_error("%s: vocab_size, hidden_size, intermediate_size, num_hidden_layers and num_attention_heads must be positive", path);
    if (cfg->n_kv_heads <= 0 || cfg->n_heads % cfg->n_kv_heads != 0)
        return fl_input_error("%s: field 'num_key_value_heads' (%d) must divide num_attention_heads (%d)", path, cfg->n_kv_heads, cfg->n_heads);
    if (smollm3) FL_TRY(parse_nope_layers(path, root, cfg));
    if (granite) FL_TRY(parse_granite(path, root, cfg));
    /* Qwen3Config's and Ministral3Config's head_dim defaults to 128, not hidden_size / num_attention_heads */
    /* Gemma2Config's and Gemma3TextConfig's: 256 */
    FL_TRY(get_int(path, root, "head_dim", 0,
                   gemma ? 256 : cfg->arch == FL_ARCH_QWEN3 || ministral3 ? 128 : cfg->hidden_size / cfg->n_heads,
                   &cfg->head_dim));
    if (cfg->head_dim <= 0 || cfg->head_dim % 2 || cfg->head_dim > FL_MAX_HEAD_DIM)
        return fl_input_error("%s: field 'head_dim' (%d) must be a positive even number <= %d", path, cfg->head_dim,
                              FL_MAX_HEAD_DIM);
    /* q_dim / kv_dim are int products used as GEMM dimensions: keep them far from overflow */
    if ((int64_t)cfg->n_heads * cfg->head_dim > FL_MAX_PROJ_DIM)
        return fl_input_error("%s: num_attention_heads x head_dim (%d x %d) is larger than %d", path, cfg->n_heads,
                              cfg->head_dim, FL_MAX_PROJ_DIM);
    /* the parameter counts (int64: fl_config_total_params, plan, bench) must stay far from overflow */
    double C = cfg->hidden_size, QD = fl_config_q_dim(cfg), KVD = fl_config_kv_dim(cfg);
    if (cfg->n_layers * (C * (2 * QD + 2 * KVD + 3.0 * cfg->intermediate_size + 2) + QD + 2 * KVD) + 2 * C * cfg->vocab_size > 1e15)
        return fl_input_error("%s: hidden_size %d, intermediate_size %d, num_hidden_layers %d and vocab_size %d make more "
                              "than 10^15 parameters", path, cfg->hidden_size, cfg->intermediate_size, cfg->n_layers,
                              cfg->vocab_size);
    if (cfg->arch == FL_ARCH_QWEN3) FL_TRY(parse_qwen3_window(path, root, cfg));
    /* the config classes' defaults: Ministral3Config's, Phi3Config's, Gemma3TextConfig's, GemmaConfig's and
     * Gemma2Config's; LlamaConfig's 2048 for the rest */
    FL_TRY(get_int(path, root, "max_position_embeddings", 0,
                   ministral3 ? 262144 : cfg->fused_modules ? 4096 : cfg->arch == FL_ARCH_GEMMA3 ? 131072 : gemma ? 8192 : 2048,
                   &cfg->max_position_embeddings));
    if (cfg->max_position_embeddings <= 0)
        return fl_input_error("%s: field 'max_position_embeddings' must be a positive integer, got %d", path,
                              cfg->max_position_embeddings);
    double eps = 0;
    FL_TRY(get_number(path, root, "rms_norm_eps", 0, cfg->fused_modules || olmo2 || ministral3 ? 1e-5 : 1e-6, &eps));
    cfg->rms_norm_eps = (float)eps;
    /* RMSNorm divides by sqrt(mean(x^2) + eps): eps <= 0 (or one that is 0 or Inf in f32) gives Inf/NaN */
    if (!(cfg->rms_norm_eps > 0) || isinf(cfg->rms_norm_eps))
        return fl_input_error("%s: field 'rms_norm_eps' must be a positive number representable in f32, got %g", path, eps);
    /* Phi3Config's, Olmo2Config's and Ministral3Config's tie_word_embeddings default to false */
    FL_TRY(get_bool(path, root, "tie_word_embeddings", !cfg->fused_modules && !olmo2 && !ministral3,
                    &cfg->tie_word_embeddings));
    if (cfg->fused_modules)   /* Phi3Config's pretraining length (4096 by default), longrope or not */
        FL_TRY(get_int(path, root, "original_max_position_embeddings", 0, 4096, &cfg->rope_original_max_position));
    if (gemma) FL_TRY(parse_gemma(path, root, cfg));
    else if (cfg->olmo3) {
        FL_TRY(parse_window_layers(path, root, cfg, 4, NULL));
        FL_TRY(fl_config_parse_olmo3_rope(path, root, cfg));
    } else {
        if (ministral3) FL_TRY(fl_config_ministral3_default_rope(path, root));
        FL_TRY(fl_config_parse_rope(path, root, cfg));
        if (ministral3) FL_TRY(fl_config_parse_llama4_scaling(path, root, cfg));
    }

    int flag;
    FL_TRY(get_bool(path, root, "attention_bias", 0, &flag));
    if (flag)   /* Qwen3's and OLMo 2's attention_bias also put a bias on o_proj, which no architecture here has */
        return fl_input_error("%s: field 'attention_bias' is true; only bias-free %s attention is supported", path,
                              cfg->arch == FL_ARCH_QWEN3 || olmo2 ? fl_arch_name(cfg->arch) : gemma ? "Gemma" : granite ? "Granite" : "Llama");
    FL_TRY(get_bool(path, root, "mlp_bias", 0, &flag));
    if (flag) return fl_input_error("%s: field 'mlp_bias' is true; only bias-free MLPs are supported", path);
    json_t *act = json_object_get(root, "hidden_act");
    if (!gemma && act && !(json_is_string(act) && !strcmp(json_string_value(act), "silu")))
        return fl_input_error("%s: field 'hidden_act' must be \"silu\"", path);

    json_t *dtype = json_object_get(root, "dtype");
    if (!dtype || json_is_null(dtype)) dtype = json_object_get(root, "torch_dtype");
    cfg->dtype = FL_BF16;
    if (json_is_string(dtype)) {
        const char *d = json_string_value(dtype);
        cfg->dtype = !strcmp(d, "float32") ? FL_F32 : !strcmp(d, "float16") ? FL_F16 : FL_BF16;
    }
    FL_TRY(get_token_id(path, root, "bos_token_id", &cfg->bos_token_id));
    FL_TRY(get_token_id(path, root, "eos_token_id", &cfg->eos_token_id));
    return 0;
}

int fl_config_load(fl_model_config *cfg, const char *path) {
    memset(cfg, 0, sizeof *cfg);
    json_t *root;
    FL_TRY(fl_file_load_json(path, FL_FILE_CONFIG, 0, &root));
    int status = fl_config_parse_json(path, root, cfg);
    json_decref(root);
    snprintf(cfg->name, sizeof cfg->name, "%s", path);
    return status;
}

/* ---- presets: the exact configs of the target models (../shared/docs/formats.md section 1) ---- */

typedef struct {
    const char *name;
    const char *hf_name;   /* the Hugging Face id of the weights this config describes */
    fl_arch arch;
    int V, C, FF, L, NH, NKV, HS, max_pos;
    double theta;
    float eps;
    int tied;
    double llama3;         /* llama3 RoPE scaling factor (low 1, high 4, original 8192); 0: none */
    int bos, eos;
    int rotary_dim, sliding_window, original_max;   /* Phi-3, OLMo 3: 0 elsewhere */
    const float *short_factor, *long_factor;         /* longrope (rotary_dim/2 each), or NULL */
    double linear_factor;  /* Gemma 3: linear RoPE scaling of the global layers; 0: none */
    int multimodal;        /* the language model of a vision-language checkpoint (config.h) */
    int nope_every;        /* SmolLM3: RoPE skipped on every n-th layer; 0: none */
    const double *granite; /* Granite: embedding, attention, residual multipliers, logits_scaling; or NULL */
    void (*finish)(fl_model_config *cfg); /* the fields beyond the table's (OLMo 3's windows and two RoPEs,
                                             Ministral 3's RoPE and attention scaling), or NULL */
} preset;

static void preset_olmo3(fl_model_config *cfg);
static void preset_ministral3(fl_model_config *cfg);

/* Granite 3.x's scalars (config.json: embedding_multiplier, attention_multiplier, residual_multiplier,
 * logits_scaling) */
static const double granite_2b[4] = {12.0, 0.015625, 0.22, 8.0};
static const double granite_8b[4] = {12.0, 0.0078125, 0.22, 16.0};

/* longrope's lists, as the checkpoints' config.json files give them (cited at the presets below) */
static const float phi35_short[48] = {
    1.0f, 1.0199999809265137f, 1.0299999713897705f, 1.0299999713897705f, 1.0499999523162842f, 1.0499999523162842f,
    1.0499999523162842f, 1.0499999523162842f, 1.0499999523162842f, 1.0699999332427979f, 1.0999999046325684f,
    1.1099998950958252f, 1.1599998474121094f, 1.1599998474121094f, 1.1699998378753662f, 1.2899998426437378f,
    1.339999794960022f, 1.679999828338623f, 1.7899998426437378f, 1.8199998140335083f, 1.8499997854232788f,
    1.8799997568130493f, 1.9099997282028198f, 1.9399996995925903f, 1.9899996519088745f, 2.0199997425079346f,
    2.0199997425079346f, 2.0199997425079346f, 2.0199997425079346f, 2.0199997425079346f, 2.0199997425079346f,
    2.0299997329711914f, 2.0299997329711914f, 2.0299997329711914f, 2.0299997329711914f, 2.0299997329711914f,
    2.0299997329711914f, 2.0299997329711914f, 2.0299997329711914f, 2.0299997329711914f, 2.0799996852874756f,
    2.0899996757507324f, 2.189999580383301f, 2.2199995517730713f, 2.5899994373321533f, 2.729999542236328f,
    2.749999523162842f, 2.8399994373321533f};
static const float phi35_long[48] = {
    1.0800000429153442f, 1.1100000143051147f, 1.1399999856948853f, 1.340000033378601f, 1.5899999141693115f,
    1.600000023841858f, 1.6200000047683716f, 2.620000123977661f, 3.2300000190734863f, 3.2300000190734863f,
    4.789999961853027f, 7.400000095367432f, 7.700000286102295f, 9.09000015258789f, 12.199999809265137f,
    17.670000076293945f, 24.46000099182129f, 28.57000160217285f, 30.420001983642578f, 30.840002059936523f,
    32.590003967285156f, 32.93000411987305f, 42.320003509521484f, 44.96000289916992f, 50.340003967285156f,
    50.45000457763672f, 57.55000305175781f, 57.93000411987305f, 58.21000289916992f, 60.1400032043457f,
    62.61000442504883f, 62.62000274658203f, 62.71000289916992f, 63.1400032043457f, 63.1400032043457f,
    63.77000427246094f, 63.93000411987305f, 63.96000289916992f, 63.970001220703125f, 64.02999877929688f,
    64.06999969482422f, 64.08000183105469f, 64.12000274658203f, 64.41000366210938f, 64.4800033569336f,
    64.51000213623047f, 64.52999877929688f, 64.83999633789062f};
static const float phi4_short[48] = {
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
static const float phi4_long[48] = {
    1.0f, 1.118320672f, 1.250641126f, 1.398617824f, 1.564103225f, 1.74916897f, 1.956131817f, 2.187582649f,
    2.446418898f, 2.735880826f, 3.059592084f, 3.421605075f, 3.826451687f, 4.279200023f, 4.785517845f, 5.351743533f,
    5.984965424f, 6.693110555f, 7.485043894f, 8.370679318f, 9.36110372f, 10.4687158f, 11.70738129f, 13.09260651f,
    14.64173252f, 16.37415215f, 18.31155283f, 20.47818807f, 22.90118105f, 25.61086418f, 28.64115884f, 32.03f,
    32.1f, 32.13f, 32.23f, 32.6f, 32.61f, 32.64f, 32.66f, 32.7f, 32.71f, 32.93f, 32.97f, 33.28f, 33.49f, 33.5f,
    44.16f, 47.77f};

static const preset presets[] = {
    {"qwen2.5-0.5b",   "Qwen/Qwen2.5-0.5B", FL_ARCH_QWEN2, 151936,  896,  4864, 24, 14,  2,  64, 32768,  1e6,    1e-6f, 1, 0, 151643, 151643, 0, 0, 0, NULL, NULL, 0, 0, 0, NULL, 0},
    {"qwen2.5-1.5b",   "Qwen/Qwen2.5-1.5B", FL_ARCH_QWEN2, 151936, 1536,  8960, 28, 12,  2, 128, 131072, 1e6,    1e-6f, 1, 0, 151643, 151643, 0, 0, 0, NULL, NULL, 0, 0, 0, NULL, 0},
    {"qwen2.5-7b",     "Qwen/Qwen2.5-7B", FL_ARCH_QWEN2, 152064, 3584, 18944, 28, 28,  4, 128, 131072, 1e6,    1e-6f, 0, 0, 151643, 151643, 0, 0, 0, NULL, NULL, 0, 0, 0, NULL, 0},
    {"smollm2-135m",   "HuggingFaceTB/SmolLM2-135M", FL_ARCH_LLAMA,  49152,  576,  1536, 30,  9,  3,  64, 8192,   1e5,    1e-5f, 1, 0, 0, 0, 0, 0, 0, NULL, NULL, 0, 0, 0, NULL, 0},
    {"smollm2-360m",   "HuggingFaceTB/SmolLM2-360M", FL_ARCH_LLAMA,  49152,  960,  2560, 32, 15,  5,  64, 8192,   1e5,    1e-5f, 1, 0, 0, 0, 0, 0, 0, NULL, NULL, 0, 0, 0, NULL, 0},
    {"smollm2-1.7b",   "HuggingFaceTB/SmolLM2-1.7B", FL_ARCH_LLAMA,  49152, 2048,  8192, 24, 32, 32,  64, 8192,   130000, 1e-5f, 1, 0, 0, 0, 0, 0, 0, NULL, NULL, 0, 0, 0, NULL, 0},
    {"tinyllama-1.1b", "TinyLlama/TinyLlama-1.1B-Chat-v1.0", FL_ARCH_LLAMA,  32000, 2048,  5632, 22, 32,  4,  64, 2048,   1e4,    1e-5f, 0, 0, 1, 2, 0, 0, 0, NULL, NULL, 0, 0, 0, NULL, 0},
    /* HuggingFaceTB/SmolLM3-3B's config.json (as quoted in public copies, e.g. test fixtures of SmolLM3
     * ports): SmolLM3ForCausalLM, head_dim 128, max_position_embeddings 65536, rope_theta 5e6, tied,
     * eos 128012, no_rope_layer_interval 4 (layers 3, 7, ..., 35 without RoPE): 3,075,098,624 parameters */
    {"smollm3-3b",     "HuggingFaceTB/SmolLM3-3B", FL_ARCH_LLAMA, 128256, 2048, 11008, 36, 16,  4, 128, 65536,  5e6,    1e-6f, 1, 0, 128000, 128012,
     0, 0, 0, NULL, NULL, 0, 0, 4, NULL, 0},
    {"llama-3.2-1b",   "meta-llama/Llama-3.2-1B", FL_ARCH_LLAMA, 128256, 2048,  8192, 16, 32,  8,  64, 131072, 5e5,    1e-5f, 1, 32, 128000, 128001, 0, 0, 0, NULL, NULL, 0, 0, 0, NULL, 0},
    /* https://huggingface.co/Qwen/Qwen3-0.6B/raw/main/config.json (as quoted in public copies): head_dim
     * 128 explicit (q dim 2048 != hidden 1024), q_norm/k_norm, attention_bias false, sliding_window null */
    {"qwen3-0.6b",     "Qwen/Qwen3-0.6B", FL_ARCH_QWEN3, 151936, 1024,  3072, 28, 16,  8, 128, 40960,  1e6,    1e-6f, 1, 0, 151643, 151645, 0, 0, 0, NULL, NULL, 0, 0, 0, NULL, 0},
    /* https://huggingface.co/{Qwen/Qwen3-1.7B,Qwen/Qwen3-4B,Qwen/Qwen3-8B}/raw/main/config.json (as quoted
     * in public copies): head_dim 128, max_window_layers = num_hidden_layers, use_sliding_window false,
     * sliding_window null, rope_scaling null; 1.7B and 4B tied, 8B untied */
    {"qwen3-1.7b",     "Qwen/Qwen3-1.7B", FL_ARCH_QWEN3, 151936, 2048,  6144, 28, 16,  8, 128, 40960,  1e6,    1e-6f, 1, 0, 151643, 151645, 0, 0, 0, NULL, NULL, 0, 0, 0, NULL, 0},
    {"qwen3-4b",       "Qwen/Qwen3-4B", FL_ARCH_QWEN3, 151936, 2560,  9728, 36, 32,  8, 128, 40960,  1e6,    1e-6f, 1, 0, 151643, 151645, 0, 0, 0, NULL, NULL, 0, 0, 0, NULL, 0},
    {"qwen3-8b",       "Qwen/Qwen3-8B", FL_ARCH_QWEN3, 151936, 4096, 12288, 36, 32,  8, 128, 40960,  1e6,    1e-6f, 0, 0, 151643, 151645, 0, 0, 0, NULL, NULL, 0, 0, 0, NULL, 0},
    /* https://huggingface.co/mistralai/Mistral-7B-v0.3/raw/main/config.json (as quoted in public copies):
     * MistralForCausalLM, vocab 32768, no head_dim (4096 / 32), sliding_window null, untied */
    {"mistral-7b-v0.3", "mistralai/Mistral-7B-v0.3", FL_ARCH_LLAMA, 32768, 4096, 14336, 32, 32,  8, 128, 32768,  1e6,    1e-5f, 0, 0, 1, 2, 0, 0, 0, NULL, NULL, 0, 0, 0, NULL, 0},
    /* https://huggingface.co/mistralai/Mistral-Nemo-Base-2407/raw/main/config.json (as quoted in public
     * copies): head_dim 128 explicit (q dim 4096 != hidden 5120), sliding_window null. The copies disagree
     * on max_position_embeddings: 1024000 (fine-tunes saved from the July 2024 files) and 128000
     * (github.com/kevinstephano/thunder_model_blocks hf_mistral/mistral_config.py; the card's 128k
     * context): 128000 taken */
    {"mistral-nemo-12b", "mistralai/Mistral-Nemo-Base-2407", FL_ARCH_LLAMA, 131072, 5120, 14336, 40, 32,  8, 128, 128000, 1e6,    1e-5f, 0, 0, 1, 2, 0, 0, 0, NULL, NULL, 0, 0, 0, NULL, 0},
    /* https://huggingface.co/mistralai/Mistral-Small-24B-Base-2501/raw/main/config.json (as quoted in
     * public copies): head_dim 128 explicit, rope_theta 1e8, sliding_window null */
    {"mistral-small-24b", "mistralai/Mistral-Small-24B-Base-2501", FL_ARCH_LLAMA, 131072, 5120, 32768, 40, 32,  8, 128, 32768,  1e8,    1e-5f, 0, 0, 1, 2, 0, 0, 0, NULL, NULL, 0, 0, 0, NULL, 0},
    /* mistralai/Mistral-Small-3.1-24B-Instruct-2503's language model (Mistral3ForConditionalGeneration):
     * transformers' Mistral3Config default text_config is that checkpoint's ("the mistral3.1
     * configuration", configuration_mistral3.py: head_dim 128, hidden 5120, FF 32768, 40 layers, 32 / 8
     * heads, max_position_embeddings 131072, rope_theta 1e9, rms_norm_eps 1e-5, sliding_window null,
     * vocab 131072); its checkpoint stores language_model.lm_head.weight (untied). Mistral Small 3.2
     * (2506) has the same language model. 23,572,403,200 parameters (the vision tower not counted) */
    /* mistralai/Ministral-3-8B-Base-2512's language model: transformers' Ministral3Config defaults, which its
     * docstring names that checkpoint's (configuration_ministral3.py: vocab 131072, hidden 4096, FF 14336,
     * 34 layers, 32 / 8 heads, head_dim 128, max_position_embeddings 262144, rms_norm_eps 1e-5, untied,
     * rope_parameters yarn theta 1e6 factor 16 over 16384, llama_4_scaling_beta 0.1: preset_ministral3) */
    {"ministral-3-8b", "mistralai/Ministral-3-8B-Base-2512", FL_ARCH_LLAMA, 131072, 4096, 14336, 34, 32,  8, 128, 262144, 1e6, 1e-5f, 0, 0, 1, 2, 0, 0, 16384, NULL, NULL,
     0, 0, 0, NULL, preset_ministral3},
    {"mistral-small-3.1-24b", "mistralai/Mistral-Small-3.1-24B-Instruct-2503", FL_ARCH_LLAMA, 131072, 5120, 32768, 40, 32,  8, 128, 131072, 1e9, 1e-5f, 0, 0, 1, 2, 0, 0, 0, NULL, NULL,
     0, 1, 0, NULL, 0},
    /* https://huggingface.co/meta-llama/{Llama-3.1-8B,Llama-3.2-3B}/raw/main/config.json (as quoted in
     * public copies): rope_scaling llama3 with factor 8 (3.1) / 32 (3.2), low_freq_factor 1,
     * high_freq_factor 4, original_max_position_embeddings 8192; 3.1-8B untied, 3.2-3B tied, head_dim 128 */
    {"llama-3.1-8b",   "meta-llama/Llama-3.1-8B", FL_ARCH_LLAMA, 128256, 4096, 14336, 32, 32,  8, 128, 131072, 5e5,    1e-5f, 0, 8, 128000, 128001, 0, 0, 0, NULL, NULL, 0, 0, 0, NULL, 0},
    {"llama-3.2-3b",   "meta-llama/Llama-3.2-3B", FL_ARCH_LLAMA, 128256, 3072,  8192, 28, 24,  8, 128, 131072, 5e5,    1e-5f, 1, 32, 128000, 128001, 0, 0, 0, NULL, NULL, 0, 0, 0, NULL, 0},
    /* https://huggingface.co/microsoft/Phi-3.5-mini-instruct/raw/main/config.json (as quoted in public
     * copies): fused qkv_proj / gate_up_proj, MHA 32 heads of 96, untied, sliding_window 262144,
     * original_max_position_embeddings 4096, rope_scaling longrope with the 48-entry short/long lists
     * above. https://huggingface.co/microsoft/Phi-4-mini-instruct/raw/main/config.json (as quoted in
     * public copies): GQA 24/8 of 128, vocab 200064, tied, partial_rotary_factor 0.75 (RD 96),
     * sliding_window 262144, longrope (short_factor all 1). Both: attention factor
     * sqrt(1 + ln 32 / ln 4096) from max_position_embeddings 131072 / 4096. */
    {"phi-3.5-mini",   "microsoft/Phi-3.5-mini-instruct", FL_ARCH_PHI3, 32064, 3072, 8192, 32, 32, 32,  96, 131072, 1e4,   1e-5f, 0, 0, 1, 32000,
     96, 262144, 4096, phi35_short, phi35_long, 0, 0, 0, NULL, 0},
    {"phi-4-mini",     "microsoft/Phi-4-mini-instruct", FL_ARCH_PHI3, 200064, 3072, 8192, 32, 24,  8, 128, 131072, 1e4,   1e-5f, 1, 0, 199999, 199999,
     96, 262144, 4096, phi4_short, phi4_long, 0, 0, 0, NULL, 0},
    /* google/gemma-3-1b-it's config.json (as quoted in public copies, e.g. github.com/Liwink/gemma-jax
     * models/README.md, transformers 4.52.4): gemma3_text, head_dim 256, query_pre_attn_scalar 256,
     * rope_theta 1e6, rope_local_base_freq 1e4, rope_scaling null, sliding_window 512 with
     * sliding_window_pattern 6, eos [1, 106]: 999,885,952 parameters (the card's 1B) */
    {"gemma-3-1b",     "google/gemma-3-1b-it", FL_ARCH_GEMMA3, 262144, 1152, 6912, 26, 4, 1, 256, 32768, 1e6, 1e-6f, 1, 0, 2, 1, 0, 0, 0, NULL, NULL, 0, 0, 0, NULL, 0},
    /* google/gemma-3-4b-it's language model (Gemma3ForConditionalGeneration; its config.json's
     * text_config gives hidden 2560, intermediate 10240, 34 layers, rope_scaling linear factor 8,
     * sliding_window 1024, the rest Gemma3TextConfig's defaults: test config_gemma3_vision_language_
     * text_config reads that file's spelling): 3,880,263,168 parameters (the card's 4B counts the
     * vision tower too) */
    {"gemma-3-4b",     "google/gemma-3-4b-it", FL_ARCH_GEMMA3, 262208, 2560, 10240, 34, 8, 4, 256, 131072, 1e6, 1e-6f, 1, 0, 2, 1, 0, 1024, 0, NULL, NULL,
     8.0, 1, 0, NULL, 0},
    /* google/gemma-2-2b: transformers' Gemma2Config defaults (those of the 2B: e.g.
     * github.com/AI-Hypercomputer/maxtext hf_model_configs.py gemma2_2b_config sets only L, heads, C,
     * FF): head_dim 256, query_pre_attn_scalar 256, sliding_window 4096 on every other layer,
     * final_logit_softcapping 30, attn_logit_softcapping 50, rope_theta 1e4: 2,614,341,888 parameters */
    {"gemma-2-2b",     "google/gemma-2-2b", FL_ARCH_GEMMA2, 256000, 2304, 9216, 26, 8, 4, 256, 8192, 1e4, 1e-6f, 1, 0, 2, 1, 0, 0, 0, NULL, NULL, 0, 0, 0, NULL, 0},
    /* google/gemma-2b and google/gemma-7b (GemmaForCausalLM; GemmaConfig's defaults are the 7B's; the 2B's
     * values as github.com/UbiquitousLearning/mllm src/models/gemma/README.md lists both): head_dim 256,
     * the 2B multi-query (1 kv head), max_position_embeddings 8192, rope_theta 1e4, tied, bos 2, eos 1:
     * 2,506,172,416 and 8,537,680,896 parameters */
    {"gemma-2b",       "google/gemma-2b", FL_ARCH_GEMMA, 256000, 2048, 16384, 18,  8,  1, 256, 8192, 1e4, 1e-6f, 1, 0, 2, 1, 0, 0, 0, NULL, NULL, 0, 0, 0, NULL, 0},
    {"gemma-7b",       "google/gemma-7b", FL_ARCH_GEMMA, 256000, 3072, 24576, 28, 16, 16, 256, 8192, 1e4, 1e-6f, 1, 0, 2, 1, 0, 0, 0, NULL, NULL, 0, 0, 0, NULL, 0},
    /* ibm-granite/granite-3.3-2b-base's and granite-3.3-8b-base's config.json (as recalled from the model
     * cards' files, not fetched here): GraniteForCausalLM, tied, rope_theta 1e7, max_position_embeddings
     * 131072, rms_norm_eps 1e-5, bos = eos = 0, no head_dim (C / NH = 64, 128); multipliers as
     * granite_2b / granite_8b above: 2,533,539,840 and 8,170,864,640 parameters (the cards' 2.53B, 8.17B) */
    {"granite-3.3-2b", "ibm-granite/granite-3.3-2b-base", FL_ARCH_LLAMA, 49159, 2048,  8192, 40, 32,  8,  64, 131072, 1e7, 1e-5f, 1, 0, 0, 0,
     0, 0, 0, NULL, NULL, 0, 0, 0, granite_2b, 0},
    {"granite-3.3-8b", "ibm-granite/granite-3.3-8b-base", FL_ARCH_LLAMA, 49159, 4096, 12800, 40, 32,  8, 128, 131072, 1e7, 1e-5f, 1, 0, 0, 0,
     0, 0, 0, NULL, NULL, 0, 0, 0, granite_8b, 0},
    /* allenai/OLMo-2-0425-1B and OLMo-2-1124-7B: dimensions, rope_theta 5e5, rms_norm_eps 1e-6, untied as their
     * model cards give them (totals 1.48B / 7.30B); head_dim = C / NH; max_position_embeddings 4096, bos null,
     * eos 100257 recalled, not checked against the config.json files */
    {"olmo-2-1b",      "allenai/OLMo-2-0425-1B", FL_ARCH_OLMO2, 100352, 2048,  8192, 16, 16, 16, 128, 4096, 5e5, 1e-6f, 0, 0, -1, 100257, 0, 0, 0, NULL, NULL, 0, 0, 0, NULL, 0},
    {"olmo-2-7b",      "allenai/OLMo-2-1124-7B", FL_ARCH_OLMO2, 100352, 4096, 11008, 32, 32, 32, 128, 4096, 5e5, 1e-6f, 0, 0, -1, 100257, 0, 0, 0, NULL, NULL, 0, 0, 0, NULL, 0},
    /* allenai/Olmo-3-1025-7B's config.json as public copies quote it (test_olmo3.c's olmo3_7b: MHA 32 heads,
     * FF 11008, max_position_embeddings 65536, rope_theta 5e5, sliding_window 4096 with Olmo3Config's every-4th
     * full layer, rope_scaling yarn factor 8 over 8192, beta 32 / 1, attention_factor 1.2079441541679836,
     * untied), vocab 100278: 7,298,011,136 parameters, as the fine-tunes of it declare. Olmo-3-1125-32B: C 5120,
     * FF 27648, 64 layers, 40 heads over 8 kv heads (github.com/marin-community/marin experiments/qwen3.py:
     * "same as olmo 32b"), the 7B's vocabulary, RoPE and windows: 32,233,522,176 parameters. eos 100257, bos null
     * as OLMo 2's (recalled, not checked against the files) */
    {"olmo-3-7b",      "allenai/Olmo-3-1025-7B", FL_ARCH_OLMO2, 100278, 4096, 11008, 32, 32, 32, 128, 65536, 5e5, 1e-6f, 0, 0, -1, 100257, 0, 4096, 8192, NULL, NULL, 0, 0, 0, NULL, preset_olmo3},
    {"olmo-3-32b",     "allenai/Olmo-3-1125-32B", FL_ARCH_OLMO2, 100278, 5120, 27648, 64, 40,  8, 128, 65536, 5e5, 1e-6f, 0, 0, -1, 100257, 0, 4096, 8192, NULL, NULL, 0, 0, 0, NULL, preset_olmo3},
};

/* The Gemma fields of a preset (config.h), as parse_gemma reads them from the models' config.json. */
static void preset_gemma(fl_model_config *cfg) {
    int gemma3 = cfg->arch == FL_ARCH_GEMMA3;
    gemma_layout(cfg);
    if (cfg->arch == FL_ARCH_GEMMA) return;   /* no soft-caps, windows or query_pre_attn_scalar */
    cfg->query_pre_attn_scalar = 256;
    cfg->final_logit_softcapping = gemma3 ? 0.0f : 30.0f;
    cfg->attn_logit_softcapping = gemma3 ? 0.0f : 50.0f;
    cfg->rope_local_theta = gemma3 ? 1e4 : 0.0;
    if (!cfg->sliding_window) cfg->sliding_window = gemma3 ? 512 : 4096;   /* the preset's own, else the 1B's / 2B's */
    cfg->window_global_every = gemma3 ? 6 : 2;   /* every 6th / every 2nd layer global, the others slide */
}

/* The OLMo 3 fields of a preset (config.h), as parse_window_layers and fl_config_parse_olmo3_rope read
 * them from the models' config.json: every 4th layer full, the sliding ones on the default RoPE of base
 * 5e5, the full ones on yarn (factor 8, beta 32 / 1; the config's attention_factor 1.2079441541679836 is
 * yarn's default for factor 8, 0.1 ln 8 + 1). */
static void preset_olmo3(fl_model_config *cfg) {
    cfg->olmo3 = 1;
    cfg->window_global_every = 4;
    cfg->rotary_dim = cfg->head_dim;
    cfg->rope_local_theta = 5e5;
    cfg->rope_yarn = cfg->rope_yarn_truncate = 1;
    cfg->rope_factor = 8.0;
    cfg->rope_yarn_beta_fast = 32.0;
    cfg->rope_yarn_beta_slow = 1.0;
    cfg->rope_attention_factor = fl_config_yarn_default_attention(cfg->rope_factor);
}

/* Ministral 3's RoPE (Ministral3Config's default rope_parameters, as fl_config_ministral3_default_rope
 * sets them): yarn factor 16 over 16384, beta 32 / 1, mscale = mscale_all_dim = 1 (cos/sin factor 1),
 * q times 1 + 0.1·ln(1 + floor(p / 16384)). */
static void preset_ministral3(fl_model_config *cfg) {
    cfg->rope_yarn = cfg->rope_yarn_truncate = 1;
    cfg->rope_factor = 16.0;
    cfg->rope_original_max_position = 16384;
    cfg->rope_yarn_beta_fast = 32.0;
    cfg->rope_yarn_beta_slow = 1.0;
    cfg->rope_attention_factor = 1.0;
    cfg->rope_llama4_beta = 0.1;
    cfg->rope_llama4_original = 16384;
}

const char *fl_config_preset_hf_name(const char *name) {
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        if (!strcasecmp(name, presets[i].name)) return presets[i].hf_name;
    return NULL;
}

const char *fl_config_preset_for_hf_name(const char *hf_name) {
    const char *slash = strrchr(hf_name, '/');
    const char *base = slash ? slash + 1 : hf_name;
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++) {
        const char *hf_base = strrchr(presets[i].hf_name, '/') + 1;
        if (!strcasecmp(hf_name, presets[i].hf_name) || !strcasecmp(base, hf_base)) return presets[i].name;
    }
    return NULL;
}

const char *fl_arch_name(fl_arch arch) {
    static const char *const names[] = {"Llama", "Qwen2", "Qwen3", "Phi3", "Gemma2", "Gemma3", "OLMo2", "Gemma"};
    return (unsigned)arch < sizeof names / sizeof names[0] ? names[arch] : "?";
}

const char *fl_config_preset_names(void) {
    return "qwen2.5-0.5b, qwen2.5-1.5b, qwen2.5-7b, smollm2-135m, smollm2-360m, smollm2-1.7b, smollm3-3b, tinyllama-1.1b, llama-3.2-1b, "
           "qwen3-0.6b, qwen3-1.7b, qwen3-4b, qwen3-8b, mistral-7b-v0.3, mistral-nemo-12b, mistral-small-24b, "
           "mistral-small-3.1-24b, ministral-3-8b, llama-3.1-8b, llama-3.2-3b, phi-3.5-mini, phi-4-mini, gemma-3-1b, gemma-3-4b, gemma-2-2b, gemma-2b, gemma-7b, "
           "granite-3.3-2b, granite-3.3-8b, olmo-2-1b, olmo-2-7b, olmo-3-7b, olmo-3-32b";
}

int fl_config_preset(fl_model_config *cfg, const char *name) {
    memset(cfg, 0, sizeof *cfg);
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++) {
        const preset *p = &presets[i];
        if (strcasecmp(name, p->name) != 0) continue;
        snprintf(cfg->name, sizeof cfg->name, "%s", p->name);
        cfg->arch = p->arch;
        cfg->vocab_size = p->V;
        cfg->hidden_size = p->C;
        cfg->intermediate_size = p->FF;
        cfg->n_layers = p->L;
        cfg->n_heads = p->NH;
        cfg->n_kv_heads = p->NKV;
        cfg->head_dim = p->HS;
        cfg->max_position_embeddings = p->max_pos;
        cfg->rope_theta = p->theta;
        cfg->rms_norm_eps = p->eps;
        cfg->tie_word_embeddings = p->tied;
        cfg->qkv_bias = p->arch == FL_ARCH_QWEN2;
        cfg->qk_norm = p->arch == FL_ARCH_QWEN3;
        cfg->fused_modules = p->arch == FL_ARCH_PHI3;
        cfg->rotary_dim = p->rotary_dim;
        cfg->sliding_window = p->sliding_window;
        cfg->rope_original_max_position = p->original_max;
        if (p->long_factor) {
            cfg->rope_longrope = 1;
            memcpy(cfg->rope_short_factor, p->short_factor, sizeof(float) * (size_t)(p->rotary_dim / 2));
            memcpy(cfg->rope_long_factor, p->long_factor, sizeof(float) * (size_t)(p->rotary_dim / 2));
            cfg->rope_factor = (double)p->max_pos / p->original_max;
            cfg->rope_attention_factor = sqrt(1.0 + log(cfg->rope_factor) / log((double)p->original_max));
        }
        cfg->dtype = FL_BF16;
        cfg->bos_token_id = p->bos;
        cfg->eos_token_id = p->eos;
        if (p->llama3 > 0) {
            cfg->rope_llama3 = 1;
            cfg->rope_factor = p->llama3;
            cfg->rope_low_freq_factor = 1.0;
            cfg->rope_high_freq_factor = 4.0;
            cfg->rope_original_max_position = 8192;
        }
        if (p->arch == FL_ARCH_GEMMA2 || p->arch == FL_ARCH_GEMMA3 || p->arch == FL_ARCH_GEMMA) preset_gemma(cfg);
        if (p->arch == FL_ARCH_OLMO2) olmo2_layout(cfg);
        if (p->finish) p->finish(cfg);
        cfg->rope_linear_factor = p->linear_factor;
        cfg->multimodal = p->multimodal;
        cfg->nope_every = p->nope_every;
        if (p->granite) {
            cfg->embedding_multiplier = p->granite[0];
            cfg->attention_multiplier = p->granite[1];
            cfg->residual_multiplier = p->granite[2];
            cfg->logits_scaling = p->granite[3];
        }
        return 0;
    }
    return fl_input_error("unknown preset '%s' (presets: %s)", name, fl_config_preset_names());
}

int64_t fl_config_matmul_params(const fl_model_config *c) {
    int64_t C = c->hidden_size, QD = fl_config_q_dim(c), KVD = fl_config_kv_dim(c), FF = c->intermediate_size;
    int64_t per_layer = C * QD + 2 * C * KVD + QD * C + 3 * C * FF;
    return c->n_layers * per_layer + (int64_t)c->vocab_size * C;
}

int64_t fl_config_total_params(const fl_model_config *c) {
    int64_t C = c->hidden_size, QD = fl_config_q_dim(c), KVD = fl_config_kv_dim(c);
    int64_t per_layer = C * QD + 2 * C * KVD + QD * C + 3 * C * (int64_t)c->intermediate_size + (c->no_pre_norms ? 0 : 2 * C);
    if (c->qkv_bias) per_layer += QD + 2 * KVD;
    if (c->qk_norm) per_layer += c->qk_norm_full ? QD + KVD : 2 * (int64_t)c->head_dim;   /* OLMo 2: whole rows */
    if (c->sandwich_norms) per_layer += 2 * C;   /* Gemma's post-attention and post-feedforward norms */
    int64_t embed = (int64_t)c->vocab_size * C * (c->tie_word_embeddings ? 1 : 2);
    return c->n_layers * per_layer + embed + C;
}
