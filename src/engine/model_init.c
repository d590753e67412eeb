/* model_init.c — building an fl_model (from a HF folder, a preset or a config with random weights),
 * loading a PEFT adapter's weights into it, freeing it, and the defaults and tables construction
 * needs: AdamW's defaults, the RoPE frequencies, the columns reserved for LoRA in the fused weights,
 * the memory line. Not the forward or backward (model.c) and not the adapter file format
 * (lora/adapter_io.h). */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "engine/model_internal.h"
#include "lora/adapter_io.h"

fl_adamw_config fl_adamw_config_default(void) {
    fl_adamw_config c = {.lr = 2e-4f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f, .weight_decay = 0.0f,
                         .max_grad_norm = 1.0f};
    return c;
}

/* YaRN's extrapolation share of pair j (transformers' 1 - linear_ramp_factor over find_correction_range):
 * 1 for the fast-turning pairs below the beta_fast dim, 0 past the beta_slow dim, linear between. The
 * range in f64 as Python computes it, the ramp in f32 as torch does. */
static float yarn_extrapolation(const fl_model_config *cfg, int RD, int j) {
    double base = cfg->rope_theta, orig = cfg->rope_original_max_position;
    double low = RD * log(orig / (cfg->rope_yarn_beta_fast * 2 * M_PI)) / (2 * log(base));
    double high = RD * log(orig / (cfg->rope_yarn_beta_slow * 2 * M_PI)) / (2 * log(base));
    if (cfg->rope_yarn_truncate) {
        low = floor(low);
        high = ceil(high);
    }
    if (low < 0) low = 0;
    if (high > RD - 1) high = RD - 1;
    if (low == high) high += 0.001;   /* transformers: "prevent singularity" */
    float ramp = ((float)j - (float)low) / (float)(high - low);
    ramp = ramp < 0.0f ? 0.0f : ramp > 1.0f ? 1.0f : ramp;
    return 1.0f - ramp;
}

void fl_rope_inv_freq_set(const fl_model_config *cfg, int long_factors, float *inv_freq) {
    int RD = fl_config_rotary_dim(cfg);
    const float theta = (float)fl_config_rope_base(cfg);
    for (int j = 0; j < RD / 2; j++) {
        /* transformers: 1 / theta ** (arange(0, RD, 2).float() / RD), in f32 (RD = HS unless partial) */
        float exponent = (float)(2 * j) / (float)RD;
        float f = 1.0f / powf(theta, exponent);
        if (cfg->rope_longrope) {   /* 1 / (ext_factors * base ** shape), in f32 */
            float ext = long_factors ? cfg->rope_long_factor[j] : cfg->rope_short_factor[j];
            f = 1.0f / (ext * powf(theta, exponent));
        }
        if (cfg->rope_llama3) {
            double factor = cfg->rope_factor, lo = cfg->rope_low_freq_factor, hi = cfg->rope_high_freq_factor;
            double orig = cfg->rope_original_max_position;
            double low_wavelen = orig / lo, high_wavelen = orig / hi;
            double wavelen = 2.0 * M_PI / f;
            if (wavelen > low_wavelen) {
                f = (float)(f / factor);
            } else if (wavelen >= high_wavelen) {
                double smooth = (orig / wavelen - lo) / (hi - lo);
                f = (float)((1.0 - smooth) * f / factor + smooth * f);
            }
        }
        if (cfg->rope_yarn) {   /* interpolation * (1 - e) + extrapolation * e, in f32 */
            float pos = powf(theta, exponent);
            float e = yarn_extrapolation(cfg, RD, j);
            f = 1.0f / ((float)cfg->rope_factor * pos) * (1.0f - e) + 1.0f / pos * e;
        }
        /* transformers' linear type: inv_freq / factor, in f32 */
        if (cfg->rope_linear_factor > 0 && cfg->rope_linear_factor != 1.0) f = f / (float)cfg->rope_linear_factor;
        inv_freq[j] = f;
    }
}

void fl_rope_inv_freq(const fl_model_config *cfg, float *inv_freq) { fl_rope_inv_freq_set(cfg, 0, inv_freq); }

void fl_rope_inv_freq_local(const fl_model_config *cfg, float *inv_freq) {
    if (!(cfg->rope_local_theta > 0)) {
        fl_rope_inv_freq(cfg, inv_freq);
        return;
    }
    int RD = fl_config_rotary_dim(cfg);
    for (int j = 0; j < RD / 2; j++)
        inv_freq[j] = 1.0f / powf((float)cfg->rope_local_theta, (float)(2 * j) / (float)RD);
}

int fl_model_check_length(const fl_model *m, int64_t n, const char *what) {
    if (m->cfg.rope_dynamic && n > m->cfg.max_position_embeddings)
        return fl_input_error("%s: %lld positions pass the model's max_position_embeddings (%d) with rope_type "
                              "dynamic: transformers' frequencies there depend on the longest sequence its module "
                              "has seen; use at most %d", what, (long long)n, m->cfg.max_position_embeddings,
                              m->cfg.max_position_embeddings);
    return 0;
}

int fl_model_rope_long(const fl_model *m, int seq) {
    return m->cfg.rope_longrope && seq > m->cfg.rope_original_max_position;
}

/* A sliding layer with a RoPE of its own (Gemma 3, OLMo 3: rope_local_theta, default type). */
static int layer_rope_local(const fl_model_config *c, int l) {
    return c->rope_local_theta > 0 && fl_config_layer_window(c, l) > 0;
}

const float *fl_model_rope_freq(const fl_model *m, int l, int seq) {
    int row1 = fl_model_rope_long(m, seq) || layer_rope_local(&m->cfg, l);
    return m->inv_freq + (row1 ? (size_t)(fl_config_rotary_dim(&m->cfg) / 2) : 0);
}

float fl_model_rope_factor(const fl_model *m, int l) {
    return layer_rope_local(&m->cfg, l) ? 1.0f : fl_config_rope_attention_factor(&m->cfg);
}

void fl_model_rope_forward(const fl_model *m, int l, void *qkv, const int32_t *pos, size_t N, int seq) {
    const fl_model_config *c = &m->cfg;
    if (!fl_config_layer_rope(c, l)) return;   /* SmolLM3's NoPE layers */
    m->be->rope_forward(qkv, pos, fl_model_rope_freq(m, l, seq), fl_model_rope_factor(m, l), N,
                        c->n_heads + c->n_kv_heads, c->head_dim, fl_config_rotary_dim(c),
                        fl_config_q_dim(c) + 2 * fl_config_kv_dim(c));
}

/* ---- construction --------------------------------------------------------------------------- */

/* Columns reserved after C in the fused q/k/v and gate/up weights: the LoRA B compute copy of
 * every member (weights.h), so the size does not depend on which members are adapted. */
fl_weights_reserve fl_model_weights_reserve(const fl_lora_config *lc) {
    fl_weights_reserve r = {0, 0};
    if (lc->rank > 0) {
        r.qkv = 3 * lc->rank;
        r.gate_up = 2 * lc->rank;
    }
    return r;
}

static void model_finish_init(fl_model *m, const fl_lora_config *lc) {
    const fl_backend *be = m->be;
    m->lora_cfg = *lc;
    m->sc = be->alloc(sizeof *m->sc);
    m->dropout_streams = be->alloc(sizeof(uint64_t) * (size_t)m->cfg.n_layers * FL_N_PROJ);
    m->runner = new_runner();
    m->graphs = 1;
    fl_lora_buffer_init(&m->lora, &m->cfg, lc, be);
    fl_lora_buffer_init(&m->grads, &m->cfg, lc, be);
    fl_lora_buffer_init(&m->adam_m, &m->cfg, lc, be);
    fl_lora_buffer_init(&m->adam_v, &m->cfg, lc, be);
    fl_lora_init_peft(&m->lora, &m->cfg, lc);
    m->lora_w = be->weight_size == sizeof(float) ? (void *)m->lora.data : be->alloc(m->lora.n * be->weight_size);
    build_cast_blocks(m);
    fl_model_sync_lora(m);
    /* (2, RD/2), one row per RoPE table (model.h): the default, then longrope's long or Gemma's local one */
    int half = fl_config_rotary_dim(&m->cfg) / 2;
    float *host = fl_malloc(sizeof(float) * 2 * (size_t)half);
    fl_rope_inv_freq_set(&m->cfg, 0, host);
    if (m->cfg.rope_longrope) fl_rope_inv_freq_set(&m->cfg, 1, host + half);
    else fl_rope_inv_freq_local(&m->cfg, host + half);
    m->inv_freq = be->alloc(sizeof(float) * 2 * (size_t)half);
    be->upload(m->inv_freq, host, sizeof(float) * 2 * (size_t)half);
    free(host);
    m->training = 1;
    m->fused = 1;
}

int fl_model_init_dir(fl_model *m, const char *dir, const fl_backend *be, const fl_lora_config *lc) {
    return fl_model_init_dir_quant(m, dir, be, lc, FL_QUANT_NONE);
}

int fl_model_init_dir_quant(fl_model *m, const char *dir, const fl_backend *be, const fl_lora_config *lc, fl_quant quant) {
    memset(m, 0, sizeof *m);
    m->be = be;
    FL_TRY(fl_weights_load_quant(&m->base, &m->cfg, dir, be, fl_model_weights_reserve(lc), quant));
    int status = fl_lora_check_targets(&m->cfg, lc->target_mask);   /* Phi-3: qkv_proj whole or not at all */
    if (status) { fl_weights_free(&m->base); return status; }
    model_finish_init(m, lc);
    return 0;
}

void fl_model_init_random(fl_model *m, const fl_model_config *cfg, uint64_t seed, const fl_backend *be,
                          const fl_lora_config *lc) {
    fl_model_init_random_quant(m, cfg, seed, be, lc, FL_QUANT_NONE);
}

void fl_model_init_random_quant(fl_model *m, const fl_model_config *cfg, uint64_t seed, const fl_backend *be,
                                const fl_lora_config *lc, fl_quant quant) {
    memset(m, 0, sizeof *m);
    m->be = be;
    m->cfg = *cfg;
    fl_weights_init_random_quant(&m->base, &m->cfg, seed, be, fl_model_weights_reserve(lc), quant);
    model_finish_init(m, lc);
}

int fl_model_init_preset(fl_model *m, const char *preset, uint64_t seed, const fl_backend *be, const fl_lora_config *lc) {
    return fl_model_init_preset_quant(m, preset, seed, be, lc, FL_QUANT_NONE);
}

int fl_model_init_preset_quant(fl_model *m, const char *preset, uint64_t seed, const fl_backend *be,
                               const fl_lora_config *lc, fl_quant quant) {
    fl_model_config cfg;
    FL_TRY(fl_config_preset(&cfg, preset));
    fl_model_init_random_quant(m, &cfg, seed, be, lc, quant);
    return 0;
}

int fl_model_load_adapter(fl_model *m, const char *adapter_dir) {
    FL_TRY(fl_adapter_load_weights(adapter_dir, &m->lora, &m->cfg, &m->lora_cfg));
    fl_model_sync_lora(m);
    return 0;
}

void fl_model_free(fl_model *m) {
    if (m->runner) free_runner(m);
    if (m->sc) m->be->free(m->sc);
    if (m->dropout_streams) m->be->free(m->dropout_streams);
    free(m->cast_blocks);
    if (m->lora_w && m->lora_w != (void *)m->lora.data) m->be->free(m->lora_w);
    fl_weights_free(&m->base);
    fl_lora_buffer_free(&m->lora);
    fl_lora_buffer_free(&m->grads);
    fl_lora_buffer_free(&m->adam_m);
    fl_lora_buffer_free(&m->adam_v);
    fl_activations_free(&m->act);
    if (m->inv_freq) m->be->free(m->inv_freq);
    if (m->token_f32) m->be->free(m->token_f32);
    memset(m, 0, sizeof *m);
}

void fl_model_print_memory(const fl_model *m, int B, int T, FILE *out) {
    const double MiB = 1048576.0;
    size_t lora = m->lora.n * sizeof(float);
    size_t lora_w = m->lora_w == (void *)m->lora.data ? 0 : m->lora.n * m->be->weight_size;
    size_t act = fl_activations_bytes(&m->cfg, m->lora_cfg.rank, B, T, m->be->act_size, !!m->recompute);
    fprintf(out, "  memory plan: base weights %.1f MiB, LoRA %.1f MiB (+%.1f compute copy), grads %.1f MiB, "
                 "AdamW m+v %.1f MiB, activations %.1f MiB for %d x %d\n",
            m->base.bytes / MiB, lora / MiB, lora_w / MiB, lora / MiB, 2 * lora / MiB, act / MiB, B, T);
}
