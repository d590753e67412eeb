/* gguf_hparams.c — llama.cpp's side of a llama / smollm3 / granite / qwen2 / qwen3 / phi3 / gemma / gemma2 /
 * gemma3 / olmo2 model: metadata keys, tensor names, the q/k row permutation, the llama3 rope_freqs factors,
 * the per-tensor storage type and the configs llama.cpp's graphs cannot run, following
 * convert_hf_to_gguf.py (TextModel/LlamaModel/GraniteModel/Qwen2Model/Qwen3Model/Phi3MiniModel/GemmaModel/
 * Gemma2Model/Gemma3Model/Olmo2Model), gguf-py's constants and llama.cpp's hparams loaders. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/error.h"
#include "export/export_internal.h"

const char *fl_gguf_arch_name(const fl_model_config *cfg) {
    fl_arch arch = cfg->arch;
    if (arch == FL_ARCH_LLAMA && cfg->nope_every > 0) return "smollm3";   /* llama's layers, NoPE every 4th */
    if (arch == FL_ARCH_LLAMA && fl_config_granite(cfg)) return "granite"; /* llama's layers, four scalars */
    if (arch == FL_ARCH_OLMO2) return "olmo2";
    if (arch == FL_ARCH_GEMMA) return "gemma";
    return arch == FL_ARCH_GEMMA3 ? "gemma3" : arch == FL_ARCH_GEMMA2 ? "gemma2" : arch == FL_ARCH_PHI3 ? "phi3"
           : arch == FL_ARCH_QWEN3 ? "qwen3" : arch == FL_ARCH_QWEN2 ? "qwen2" : "llama";
}

/* The score scale llama.cpp's gemma2 / gemma3 graphs apply: 1/sqrt(head_dim), except for the 27B models
 * (told apart by their layer count: 46 for Gemma 2, 62 for Gemma 3), 1/sqrt(hidden / heads) — the
 * values of every released Gemma's query_pre_attn_scalar; llama.cpp does not read the key itself. */
static int llama_cpp_gemma_query_scalar(const fl_model_config *cfg) {
    int is_27b = cfg->n_layers == (cfg->arch == FL_ARCH_GEMMA2 ? 46 : 62);
    return is_27b ? cfg->hidden_size / cfg->n_heads : cfg->head_dim;
}

int fl_gguf_check_model_export(const fl_model_config *cfg, const char *path) {
    /* llama.cpp's gemma graph, like gemma2's, uses the embedding as the output head */
    if (cfg->arch == FL_ARCH_GEMMA && !cfg->tie_word_embeddings)
        return fl_input_error("%s: Gemma with tie_word_embeddings false has no llama.cpp counterpart (its gemma graph "
                              "uses the embedding as the output head)", path);
    if (cfg->arch != FL_ARCH_GEMMA2 && cfg->arch != FL_ARCH_GEMMA3) return 0;
    const char *a = fl_gguf_arch_name(cfg);
    int scalar = cfg->query_pre_attn_scalar ? cfg->query_pre_attn_scalar : cfg->head_dim;
    if (scalar != llama_cpp_gemma_query_scalar(cfg))
        return fl_input_error("%s: query_pre_attn_scalar %d has no llama.cpp counterpart: its %s graph scales scores by "
                              "1/sqrt(%d) (head_dim, or hidden_size / num_attention_heads for the 27B layer count)", path,
                              scalar, a, llama_cpp_gemma_query_scalar(cfg));
    if (cfg->window_first_layer > 0)
        return fl_input_error("%s: global layers before the sliding ones have no llama.cpp counterpart in %s", path, a);
    if (cfg->arch == FL_ARCH_GEMMA2) {
        /* llama.cpp's gemma2 graph always soft-caps both (defaults 50 and 30) and ties the head */
        if (cfg->attn_logit_softcapping <= 0 || cfg->final_logit_softcapping <= 0)
            return fl_input_error("%s: Gemma 2 without %s has no llama.cpp counterpart (its gemma2 graph always soft-caps)",
                                  path, cfg->attn_logit_softcapping <= 0 ? "attn_logit_softcapping" : "final_logit_softcapping");
        if (!cfg->tie_word_embeddings)
            return fl_input_error("%s: Gemma 2 with tie_word_embeddings false has no llama.cpp counterpart (its gemma2 graph "
                                  "uses the embedding as the output head)", path);
    } else {
        if (cfg->attn_logit_softcapping > 0)
            return fl_input_error("%s: attn_logit_softcapping on Gemma 3 has no llama.cpp counterpart", path);
        if (!cfg->qk_norm)
            return fl_input_error("%s: Gemma 3 without q/k norms has no llama.cpp counterpart", path);
    }
    return 0;
}

int fl_gguf_check_config(const fl_model_config *cfg, const char *path) {
    /* llama.cpp's smollm3 graph skips RoPE on every 4th layer, whatever the file says */
    if (cfg->nope_every > 0 && cfg->nope_every != 4)
        return fl_input_error("%s: a NoPE layer every %d layers has no llama.cpp counterpart (its smollm3 graph: every 4th)",
                              path, cfg->nope_every);
    /* only llama.cpp's phi3 graph has a rotary dimension of its own and longrope's factor tensors */
    if (cfg->arch != FL_ARCH_PHI3 && (fl_config_rotary_dim(cfg) != cfg->head_dim || cfg->rope_longrope))
        return fl_input_error("%s: %s on a %s model has no llama.cpp counterpart", path,
                              cfg->rope_longrope ? "rope_scaling longrope" : "partial_rotary_factor < 1",
                              fl_gguf_arch_name(cfg));
    /* llama.cpp's qwen2 graph builds q and o as (C, C): it has no separate head size */
    if (cfg->arch == FL_ARCH_QWEN2 && fl_config_q_dim(cfg) != cfg->hidden_size)
        return fl_input_error("%s: qwen2 with num_attention_heads x head_dim (%d) != hidden_size (%d) has no llama.cpp counterpart",
                              path, fl_config_q_dim(cfg), cfg->hidden_size);
    /* llama.cpp's olmo2 loader sizes the heads as embedding / heads (and q_norm as the embedding) */
    if (cfg->arch == FL_ARCH_OLMO2 && fl_config_q_dim(cfg) != cfg->hidden_size)
        return fl_input_error("%s: olmo2 with num_attention_heads x head_dim (%d) != hidden_size (%d) has no llama.cpp counterpart",
                              path, fl_config_q_dim(cfg), cfg->hidden_size);
    if (cfg->arch != FL_ARCH_LLAMA && cfg->rope_llama3)   /* qwen3's graph has its own head size (key_length) */
        return fl_input_error("%s: rope_scaling llama3 on a %s model has no llama.cpp counterpart", path,
                              fl_gguf_arch_name(cfg));
    /* Ministral 3's per-position q factor (llama_4_scaling_beta): fastlora writes no mistral3 graph's keys */
    if (cfg->rope_llama4_beta > 0)
        return fl_input_error("%s: rope_parameters.llama_4_scaling_beta (Ministral 3's attention scaling) is not "
                              "exported to GGUF (supported: the llama graph without it)", path);
    /* llama.cpp has no dynamic NTK: its default RoPE would agree only up to max_position_embeddings */
    if (cfg->rope_dynamic)
        return fl_input_error("%s: rope_type dynamic (NTK scaling) has no llama.cpp counterpart", path);
    /* llama.cpp's converter writes OLMo 3's full layers' base only */
    if (cfg->olmo3 && cfg->sliding_window > 0 && cfg->rope_local_theta != cfg->rope_theta)
        return fl_input_error("%s: OLMo 3 with a sliding layers' rope_theta (%g) other than the full layers' (%g) has no "
                              "llama.cpp counterpart", path, cfg->rope_local_theta, cfg->rope_theta);
    /* llama.cpp's YaRN (ggml_rope_yarn_corr_dims) always floors and ceils the correction dims and takes
     * its cos/sin factor as 0.1·ln(factor) + 1 (times rope.scaling.attn_factor, which is not written);
     * its loaders read yarn_beta_fast / yarn_beta_slow for grok and mistral3 only, none of the graphs
     * written here, which run with 32 and 1 whatever the file says (measured: tools/llama_cpp_check.py) */
    if (cfg->rope_yarn && (!cfg->rope_yarn_truncate || cfg->rope_factor < 1 ||
                           fl_config_rope_attention_factor(cfg) !=
                               (float)fl_config_yarn_default_attention(cfg->rope_factor)))
        return fl_input_error("%s: rope_scaling yarn with %s has no llama.cpp counterpart", path,
                              !cfg->rope_yarn_truncate ? "truncate false"
                              : cfg->rope_factor < 1   ? "factor < 1"
                                                       : "an attention factor other than 0.1 ln(factor) + 1");
    if (cfg->rope_yarn && (cfg->rope_yarn_beta_fast != 32 || cfg->rope_yarn_beta_slow != 1))
        return fl_input_error("%s: rope_scaling yarn with beta_fast %g and beta_slow %g has no llama.cpp counterpart "
                              "(its %s graph reads no betas: 32 and 1)", path, cfg->rope_yarn_beta_fast,
                              cfg->rope_yarn_beta_slow, fl_gguf_arch_name(cfg));
    return 0;
}

void fl_gguf_put_general(fl_gguf_writer *w, const fl_model_config *cfg, const char *type, const char *dir, uint32_t alignment) {
    fl_gguf_kv_str(w, "general.architecture", fl_gguf_arch_name(cfg));
    if (alignment && alignment != FL_GGUF_DEFAULT_ALIGNMENT) fl_gguf_kv_u32(w, "general.alignment", alignment);
    fl_gguf_kv_str(w, "general.type", type);
    /* general.name: the folder's last component, as the converter's fallback */
    size_t end = strlen(dir);
    while (end > 1 && dir[end - 1] == '/') end--;
    size_t start = end;
    while (start > 0 && dir[start - 1] != '/') start--;
    if (end > start) fl_gguf_kv_strn(w, "general.name", dir + start, end - start);
}

/* Gemma2Model / Gemma3Model's keys: soft-caps, the window, and what llama.cpp cannot infer — its
 * window layout rule (`sliding_window_pattern` n: layer l slides unless l % n == n - 1, n 0: every
 * layer; defaults gemma2 2, gemma3 6: written when the model's differs) and the sliding layers' RoPE
 * base (gemma3's default 10000; gemma2 uses rope.freq_base). */
static void put_gemma(fl_gguf_writer *w, const fl_model_config *cfg, const char *a) {
    char key[96];
#define KEY(suffix) (snprintf(key, sizeof key, "%s." suffix, a), key)
    const int gemma2 = cfg->arch == FL_ARCH_GEMMA2;
    if (gemma2) fl_gguf_kv_f32(w, KEY("attn_logit_softcapping"), cfg->attn_logit_softcapping);
    if (cfg->final_logit_softcapping > 0) fl_gguf_kv_f32(w, KEY("final_logit_softcapping"), cfg->final_logit_softcapping);
    /* gemma2 always slides: a model without a window gets one covering every position */
    if (cfg->sliding_window > 0 || gemma2)
        fl_gguf_kv_u32(w, KEY("attention.sliding_window"),
                       (uint32_t)(cfg->sliding_window > 0 ? cfg->sliding_window : cfg->max_position_embeddings));
    if (cfg->sliding_window > 0 && cfg->window_global_every != (gemma2 ? 2 : 6))
        fl_gguf_kv_u32(w, KEY("attention.sliding_window_pattern"), (uint32_t)cfg->window_global_every);
    if (!gemma2 && cfg->sliding_window > 0)
        fl_gguf_kv_f32(w, KEY("rope.freq_base_swa"), (float)(cfg->rope_local_theta > 0 ? cfg->rope_local_theta : cfg->rope_theta));
#undef KEY
}

void fl_gguf_put_hparams(fl_gguf_writer *w, const fl_model_config *cfg, fl_ggml_type ftype) {
    const char *a = fl_gguf_arch_name(cfg);
    char key[96];
#define KEY(suffix) (snprintf(key, sizeof key, "%s." suffix, a), key)
    fl_gguf_kv_u32(w, KEY("block_count"), (uint32_t)cfg->n_layers);
    fl_gguf_kv_u32(w, KEY("context_length"), (uint32_t)cfg->max_position_embeddings);
    fl_gguf_kv_u32(w, KEY("embedding_length"), (uint32_t)cfg->hidden_size);
    fl_gguf_kv_u32(w, KEY("feed_forward_length"), (uint32_t)cfg->intermediate_size);
    fl_gguf_kv_u32(w, KEY("attention.head_count"), (uint32_t)cfg->n_heads);
    fl_gguf_kv_u32(w, KEY("attention.head_count_kv"), (uint32_t)cfg->n_kv_heads);
    fl_gguf_kv_f32(w, KEY("rope.freq_base"), (float)cfg->rope_theta);
    fl_gguf_kv_f32(w, KEY("attention.layer_norm_rms_epsilon"), cfg->rms_norm_eps);
    /* llama.cpp assumes head size = embedding / heads unless told */
    if (cfg->head_dim * cfg->n_heads != cfg->hidden_size || cfg->arch == FL_ARCH_GEMMA || cfg->arch == FL_ARCH_GEMMA2 ||
        cfg->arch == FL_ARCH_GEMMA3) {   /* GemmaModel, Gemma2Model, Gemma3Model always write them */
        fl_gguf_kv_u32(w, KEY("attention.key_length"), (uint32_t)cfg->head_dim);
        fl_gguf_kv_u32(w, KEY("attention.value_length"), (uint32_t)cfg->head_dim);
    }
    fl_gguf_kv_u32(w, "general.file_type", (uint32_t)fl_gguf_file_type_of(ftype));
    if (cfg->arch == FL_ARCH_LLAMA) { /* LlamaModel (and SmolLM3Model, one) adds these two */
        fl_gguf_kv_u32(w, KEY("vocab_size"), (uint32_t)cfg->vocab_size);
        fl_gguf_kv_u32(w, KEY("rope.dimension_count"), (uint32_t)cfg->head_dim);
    }
    if (cfg->arch == FL_ARCH_PHI3) { /* Phi3MiniModel: the rotary dims, the pretraining length, the window */
        fl_gguf_kv_u32(w, KEY("rope.scaling.original_context_length"), (uint32_t)cfg->rope_original_max_position);
        fl_gguf_kv_u32(w, KEY("rope.dimension_count"), (uint32_t)fl_config_rotary_dim(cfg));
        fl_gguf_kv_u32(w, KEY("attention.sliding_window"), (uint32_t)cfg->sliding_window);
        /* longrope's cos/sin factor: the converter derives sqrt(1 + ln(max/original) / ln(original)); this
         * is the model's own (the same unless config.json gives attention_factor) */
        if (cfg->rope_longrope) fl_gguf_kv_f32(w, KEY("rope.scaling.attn_factor"), fl_config_rope_attention_factor(cfg));
    }
    /* YaRN: the converter's keys (Qwen2Model, LlamaModel); betas other than 32 and 1 are refused
     * (fl_gguf_check_config). No rope.scaling.attn_factor, not even for OLMo 3: llama.cpp multiplies
     * its own 0.1·ln(factor) + 1 by that key, so the model's factor written there (as Olmo2Model
     * writes OLMo 3's) is applied twice (factor 4: 1.1386² for 1.1386, the logits 4% RMS off; llama_cpp_check.py) */
    if (cfg->rope_yarn) {
        fl_gguf_kv_str(w, KEY("rope.scaling.type"), "yarn");
        fl_gguf_kv_f32(w, KEY("rope.scaling.factor"), (float)cfg->rope_factor);
        fl_gguf_kv_u32(w, KEY("rope.scaling.original_context_length"), (uint32_t)cfg->rope_original_max_position);
    }
    if (cfg->olmo3 && cfg->sliding_window > 0) { /* Olmo2Model: the window and one bool per layer, true where it slides */
        fl_gguf_kv_u32(w, KEY("attention.sliding_window"), (uint32_t)cfg->sliding_window);
        fl_gguf_kv_array(w, KEY("attention.sliding_window_pattern"), FL_GGUF_BOOL, (uint64_t)cfg->n_layers);
        for (int l = 0; l < cfg->n_layers; l++) fl_gguf_arr_bool(w, fl_config_layer_window(cfg, l) > 0);
    }
    if (cfg->rope_linear_factor > 0 && cfg->rope_linear_factor != 1) { /* linear (Gemma 3's global layers): llama.cpp divides by it */
        fl_gguf_kv_str(w, KEY("rope.scaling.type"), "linear");
        fl_gguf_kv_f32(w, KEY("rope.scaling.factor"), (float)cfg->rope_linear_factor);
    }
    if (cfg->arch == FL_ARCH_GEMMA2 || cfg->arch == FL_ARCH_GEMMA3) put_gemma(w, cfg, a);
    if (fl_config_granite(cfg)) { /* GraniteModel: the multipliers as llama.cpp's scales (its granite graph reads all four) */
        fl_gguf_kv_f32(w, KEY("embedding_scale"), (float)cfg->embedding_multiplier);
        fl_gguf_kv_f32(w, KEY("attention.scale"), (float)cfg->attention_multiplier);
        fl_gguf_kv_f32(w, KEY("residual_scale"), (float)cfg->residual_multiplier);
        fl_gguf_kv_f32(w, KEY("logit_scale"), (float)cfg->logits_scaling);
    }
#undef KEY
    fl_gguf_kv_u32(w, "general.quantization_version", FL_GGML_QUANT_VERSION);
}

static const char *const proj_gguf[FL_N_PROJ] = {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"};

void fl_gguf_proj_name(char *out, size_t cap, const fl_model_config *cfg, int layer, fl_proj p) {
    /* phi3: the fused modules keep their rows, as attn_qkv ((QD + 2·KVD), C) and ffn_up ((2·FF), C: gate
     * rows first, which llama.cpp's fused SwiGLU splits in that order) */
    const char *name = proj_gguf[p];
    if (fl_module_last(cfg, p) != p) name = p == FL_PROJ_Q ? "attn_qkv" : "ffn_up";
    snprintf(out, cap, "blk.%d.%s.weight", layer, name);
}

void fl_gguf_permute_rows(float *dst, const float *src, int n_head, int64_t rows, int64_t cols) {
    int64_t hd = rows / n_head, half = hd / 2;
    for (int h = 0; h < n_head; h++)
        for (int64_t j = 0; j < 2; j++)
            for (int64_t i = 0; i < half; i++)
                memcpy(dst + (h * hd + 2 * i + j) * cols, src + (h * hd + j * half + i) * cols, sizeof(float) * (size_t)cols);
}

int fl_gguf_permute_heads(const fl_model_config *cfg, fl_proj p) {
    if (cfg->arch != FL_ARCH_LLAMA) return 0; /* qwen2, qwen3, gemma*, olmo2 run NEOX-style RoPE on HF's layout */
    return p == FL_PROJ_Q ? cfg->n_heads : p == FL_PROJ_K ? cfg->n_kv_heads : 0;
}

void fl_gguf_rope_factors(const fl_model_config *cfg, float *out) {
    const int d = cfg->head_dim;
    const double low_wavelen = cfg->rope_original_max_position / cfg->rope_low_freq_factor;
    const double high_wavelen = cfg->rope_original_max_position / cfg->rope_high_freq_factor;
    for (int i = 0; i < d / 2; i++) {
        double freq = 1.0 / pow(cfg->rope_theta, (2.0 * i) / d);
        double wavelen = 2.0 * M_PI / freq;
        double f;
        if (wavelen < high_wavelen) f = 1.0;
        else if (wavelen > low_wavelen) f = cfg->rope_factor;
        else {
            double smooth = (cfg->rope_original_max_position / wavelen - cfg->rope_low_freq_factor) /
                            (cfg->rope_high_freq_factor - cfg->rope_low_freq_factor);
            f = 1.0 / ((1.0 - smooth) / cfg->rope_factor + smooth);
        }
        out[i] = (float)f;
    }
}

fl_ggml_type fl_gguf_pick_type(const char *name, int n_dims, int64_t ne0, fl_ggml_type want) {
    size_t n = strlen(name);
    if (n_dims <= 1 || (n >= 12 && !strcmp(name + n - 12, "_norm.weight"))) return FL_GGML_F32;
    if (want == FL_GGML_Q8_0 && ne0 % FL_Q8_0_BLOCK) return FL_GGML_F16;
    return want;
}

fl_ggml_type fl_gguf_type_of(fl_export_type t) {
    switch (t) {
    case FL_EXPORT_F16: return FL_GGML_F16;
    case FL_EXPORT_BF16: return FL_GGML_BF16;
    case FL_EXPORT_Q8_0: return FL_GGML_Q8_0;
    default: return FL_GGML_F32;
    }
}
