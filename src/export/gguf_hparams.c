/* gguf_hparams.c — llama.cpp's side of a llama / qwen2 / qwen3 / phi3 model: metadata keys, tensor
 * names, the q/k row permutation, the llama3 rope_freqs factors and the per-tensor storage type,
 * following convert_hf_to_gguf.py (TextModel/LlamaModel/Qwen2Model/Qwen3Model/Phi3MiniModel) and
 * gguf-py's constants. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/error.h"
#include "export/export_internal.h"

const char *fl_gguf_arch_name(fl_arch arch) {
    return arch == FL_ARCH_GEMMA3 ? "gemma3" : arch == FL_ARCH_GEMMA2 ? "gemma2" : arch == FL_ARCH_PHI3 ? "phi3"
           : arch == FL_ARCH_QWEN3 ? "qwen3" : arch == FL_ARCH_QWEN2 ? "qwen2" : "llama";
}

int fl_gguf_check_model_export(const fl_model_config *cfg, const char *path) {
    if (cfg->arch == FL_ARCH_GEMMA2 || cfg->arch == FL_ARCH_GEMMA3)
        return fl_input_error("%s: GGUF export of the whole %s model is not implemented yet (llama.cpp's %s keys, the +1 "
                              "convert_hf_to_gguf.py adds to every norm weight, the SentencePiece vocabulary); supported: "
                              "llama, qwen2, qwen3, phi3, and --lora-only for %s", path,
                              cfg->arch == FL_ARCH_GEMMA3 ? "Gemma 3" : "Gemma 2",
                              fl_gguf_arch_name(cfg->arch), fl_gguf_arch_name(cfg->arch));
    return 0;
}

int fl_gguf_check_config(const fl_model_config *cfg, const char *path) {
    /* only llama.cpp's phi3 graph has a rotary dimension of its own and longrope's factor tensors */
    if (cfg->arch != FL_ARCH_PHI3 && (fl_config_rotary_dim(cfg) != cfg->head_dim || cfg->rope_longrope))
        return fl_input_error("%s: %s on a %s model has no llama.cpp counterpart", path,
                              cfg->rope_longrope ? "rope_scaling longrope" : "partial_rotary_factor < 1",
                              fl_gguf_arch_name(cfg->arch));
    /* llama.cpp's qwen2 graph builds q and o as (C, C): it has no separate head size */
    if (cfg->arch == FL_ARCH_QWEN2 && fl_config_q_dim(cfg) != cfg->hidden_size)
        return fl_input_error("%s: qwen2 with num_attention_heads x head_dim (%d) != hidden_size (%d) has no llama.cpp counterpart",
                              path, fl_config_q_dim(cfg), cfg->hidden_size);
    if (cfg->arch != FL_ARCH_LLAMA && cfg->rope_llama3)   /* qwen3's graph has its own head size (key_length) */
        return fl_input_error("%s: rope_scaling llama3 on a %s model has no llama.cpp counterpart", path,
                              fl_gguf_arch_name(cfg->arch));
    return 0;
}

void fl_gguf_put_general(fl_gguf_writer *w, const fl_model_config *cfg, const char *type, const char *dir, uint32_t alignment) {
    fl_gguf_kv_str(w, "general.architecture", fl_gguf_arch_name(cfg->arch));
    if (alignment && alignment != FL_GGUF_DEFAULT_ALIGNMENT) fl_gguf_kv_u32(w, "general.alignment", alignment);
    fl_gguf_kv_str(w, "general.type", type);
    /* general.name: the folder's last component, as the converter's fallback */
    size_t end = strlen(dir);
    while (end > 1 && dir[end - 1] == '/') end--;
    size_t start = end;
    while (start > 0 && dir[start - 1] != '/') start--;
    if (end > start) fl_gguf_kv_strn(w, "general.name", dir + start, end - start);
}

void fl_gguf_put_hparams(fl_gguf_writer *w, const fl_model_config *cfg, fl_ggml_type ftype) {
    const char *a = fl_gguf_arch_name(cfg->arch);
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
    if (cfg->head_dim * cfg->n_heads != cfg->hidden_size) {
        fl_gguf_kv_u32(w, KEY("attention.key_length"), (uint32_t)cfg->head_dim);
        fl_gguf_kv_u32(w, KEY("attention.value_length"), (uint32_t)cfg->head_dim);
    }
    fl_gguf_kv_u32(w, "general.file_type", (uint32_t)fl_gguf_file_type_of(ftype));
    if (cfg->arch == FL_ARCH_LLAMA) { /* LlamaModel adds these two */
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
    if (cfg->arch != FL_ARCH_LLAMA) return 0; /* qwen2, qwen3, gemma2, gemma3 run NEOX-style RoPE on HF's layout */
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
