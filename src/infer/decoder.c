/* decoder.c — KV-cached forward over the backend (see decoder.h). The layer sequence mirrors
 * forward_layers() in engine/model.c step for step, through the same projection groups
 * (fl_model_project); only the attention reads the cache. */
#include "infer/decoder.h"

#include <stdlib.h>
#include <string.h>

#include "common/error.h"

#define CHUNK 64

int fl_decoder_init(fl_decoder *d, fl_model *m, int capacity, int use_lora) {
    memset(d, 0, sizeof *d);
    const fl_backend *be = m->be;
    if (!be->attention_decode)
        return fl_input_error("the %s backend has no attention_decode op (KV-cache generation); use --device cpu", be->name);
    if (capacity < 1) return fl_input_error("generation capacity must be >= 1 (got %d)", capacity);
    FL_TRY(fl_model_check_length(m, capacity, "generate (the prompt and --max-tokens)"));
    const fl_model_config *c = &m->cfg;
    d->m = m;
    d->use_lora = use_lora;
    d->capacity = capacity;
    d->chunk = CHUNK;
    size_t a = be->act_size, L = (size_t)c->n_layers, Tc = (size_t)capacity, ch = CHUNK;
    size_t C = (size_t)c->hidden_size, QD = (size_t)fl_config_q_dim(c), KVD = (size_t)fl_config_kv_dim(c);
    size_t FF = (size_t)c->intermediate_size, R = (size_t)(m->lora_cfg.rank > 0 ? m->lora_cfg.rank : 1);
    d->k_cache = be->alloc(L * Tc * KVD * a);
    d->v_cache = be->alloc(L * Tc * KVD * a);
    d->h = be->alloc(ch * C * a);
    d->x = be->alloc(ch * (C + 3 * R) * a);
    d->qkv = be->alloc(ch * (QD + 2 * KVD) * a);
    d->att = be->alloc(ch * QD * a);
    d->gate_up = be->alloc(ch * 2 * FF * a);
    d->wide = be->alloc(ch * (FF > C ? FF : C) * a);   /* the GLU output; Gemma: a sandwich norm's output */
    if (c->sandwich_norms || fl_config_residual_scaled(c)) d->proj = be->alloc(ch * C * a);   /* o's, down's output */
    d->xa = be->alloc(ch * R * a);
    d->rstd = be->alloc(ch * sizeof(float));
    if (c->qk_norm) { /* Qwen3: q and k before their norms, the norms' rstd (engine/model.h) */
        d->qk_raw = be->alloc(ch * (QD + KVD) * a);
        d->qk_rstd = be->alloc(ch * (size_t)(c->n_heads + c->n_kv_heads) * sizeof(float));
    }
    d->ids = be->alloc(ch * sizeof(int32_t));
    d->pos = be->alloc(ch * sizeof(int32_t));
    d->ignore = be->alloc(ch * sizeof(int32_t));
    int32_t host[CHUNK];
    for (int i = 0; i < CHUNK; i++) host[i] = -100;
    be->upload(d->ignore, host, sizeof host);
    d->logits = be->alloc((size_t)CHUNK * (size_t)c->vocab_size * sizeof(float));
    return 0;
}

void fl_decoder_free(fl_decoder *d) {
    if (!d->m) return;
    const fl_backend *be = d->m->be;
    void *bufs[] = {d->k_cache, d->v_cache, d->h, d->x, d->qkv, d->att, d->gate_up, d->wide, d->proj, d->xa,
                    d->rstd, d->qk_raw, d->qk_rstd, d->ids, d->pos, d->ignore, d->logits};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        if (bufs[i]) be->free(bufs[i]);
    memset(d, 0, sizeof *d);
}

void fl_decoder_reset(fl_decoder *d) { d->n = 0; }

static inline void *at(const fl_decoder *d, void *base, size_t index) {
    return (char *)base + index * d->m->be->act_size;
}

static void feed_chunk(fl_decoder *d, const int32_t *ids, int Tn, float *logits_host, int all) {
    fl_model *m = d->m;
    const fl_backend *be = m->be;
    const fl_model_config *c = &m->cfg;
    int C = c->hidden_size, QD = fl_config_q_dim(c), KVD = fl_config_kv_dim(c), FF = c->intermediate_size;
    int NH = c->n_heads, NKV = c->n_kv_heads, HS = c->head_dim, V = c->vocab_size, QKV = QD + 2 * KVD;
    int ld_x = C + 3 * (m->lora_cfg.rank > 0 ? m->lora_cfg.rank : 1);
    size_t row = (size_t)KVD * be->act_size;
    int32_t pos[CHUNK];
    for (int i = 0; i < Tn; i++) pos[i] = d->n + i;
    be->upload(d->ids, ids, sizeof(int32_t) * (size_t)Tn);
    be->upload(d->pos, pos, sizeof(int32_t) * (size_t)Tn);
    fl_model_embed(m, d->h, d->ids, (size_t)Tn);
    for (int l = 0; l < c->n_layers; l++) {
        const fl_layer_weights *w = &m->base.layers[l];
        void *kc = at(d, d->k_cache, (size_t)l * d->capacity * KVD), *vc = at(d, d->v_cache, (size_t)l * d->capacity * KVD);
        fl_model_pre_norm(m, d->x, d->rstd, d->h, w->attn_norm, (size_t)Tn, ld_x);   /* OLMo 2: x = h */
        fl_model_project(m, l, FL_GROUP_QKV, d->qkv, QKV, 0.0f, d->x, ld_x, NULL, (size_t)Tn, d->use_lora);
        if (c->qk_norm) /* Qwen3: att (Tn, QD) is free until the attention: the norms' scratch */
            fl_model_qk_norm_forward(m, l, d->qkv, d->qk_raw, at(d, d->qk_raw, (size_t)Tn * QD), d->qk_rstd, d->att,
                                     (size_t)Tn);
        fl_model_rope_forward(m, l, d->qkv, d->pos, (size_t)Tn, d->n + Tn);   /* positions up to d->n + Tn - 1 */
        fl_model_scale_q(m, d->qkv, pos, (size_t)Tn);
        for (int i = 0; i < Tn; i++) { /* k and v rows into the cache */
            be->copy(at(d, kc, (size_t)(d->n + i) * KVD), at(d, d->qkv, (size_t)i * QKV + QD), row);
            be->copy(at(d, vc, (size_t)(d->n + i) * KVD), at(d, d->qkv, (size_t)i * QKV + QD + KVD), row);
        }
        be->attention_decode(d->att, d->qkv, kc, vc, d->n, Tn, fl_config_layer_window(c, l), NH, NKV, HS, QKV,
                             c->attn_logit_softcapping);
        if (c->sandwich_norms) { /* Gemma: h += rms(o(att)) */
            fl_model_project(m, l, FL_GROUP_O, d->proj, C, 0.0f, d->att, QD, d->xa, (size_t)Tn, d->use_lora);
            fl_model_norm(m, d->wide, d->rstd, d->proj, w->post_attn_norm, (size_t)Tn, C);
            be->add_inplace(d->h, d->wide, (size_t)Tn, C, C);
        } else if (fl_config_residual_scaled(c)) { /* Granite: h += rm·o(att) */
            fl_model_project(m, l, FL_GROUP_O, d->proj, C, 0.0f, d->att, QD, d->xa, (size_t)Tn, d->use_lora);
            fl_model_residual_add(m, d->h, d->proj, (size_t)Tn);
        } else {
            fl_model_project(m, l, FL_GROUP_O, d->h, C, 1.0f, d->att, QD, d->xa, (size_t)Tn, d->use_lora);
        }
        fl_model_pre_norm(m, d->x, d->rstd, d->h, w->mlp_norm, (size_t)Tn, ld_x);
        fl_model_project(m, l, FL_GROUP_GATE_UP, d->gate_up, 2 * FF, 0.0f, d->x, ld_x, NULL, (size_t)Tn, d->use_lora);
        fl_model_glu_forward(m, d->wide, d->gate_up, (size_t)Tn);
        if (c->sandwich_norms) { /* Gemma: h += rms(down(glu)) */
            fl_model_project(m, l, FL_GROUP_DOWN, d->proj, C, 0.0f, d->wide, FF, d->xa, (size_t)Tn, d->use_lora);
            fl_model_norm(m, d->wide, d->rstd, d->proj, w->post_mlp_norm, (size_t)Tn, C);
            be->add_inplace(d->h, d->wide, (size_t)Tn, C, C);
        } else if (fl_config_residual_scaled(c)) { /* Granite: h += rm·down(glu) */
            fl_model_project(m, l, FL_GROUP_DOWN, d->proj, C, 0.0f, d->wide, FF, d->xa, (size_t)Tn, d->use_lora);
            fl_model_residual_add(m, d->h, d->proj, (size_t)Tn);
        } else {
            fl_model_project(m, l, FL_GROUP_DOWN, d->h, C, 1.0f, d->wide, FF, d->xa, (size_t)Tn, d->use_lora);
        }
    }
    d->n += Tn;
    if (!logits_host) return;
    /* the LM head on the last row only (or on all rows for tests) */
    int first = all ? 0 : Tn - 1, rows = Tn - first;
    fl_model_final_norm(m, d->x, d->rstd, at(d, d->h, (size_t)first * C), (size_t)rows);
    fl_model_lm_head_loss(m, NULL, d->logits, NULL, NULL, d->x, d->ignore, (size_t)rows);
    be->download(logits_host, d->logits, (size_t)rows * V * sizeof(float));
}

int fl_decoder_feed(fl_decoder *d, const int32_t *ids, int Tn, float *logits_last, float *logits_all) {
    if (Tn < 1) return fl_input_error("nothing to feed (0 tokens)");
    if (d->n + Tn > d->capacity)
        return fl_input_error("sequence of %d tokens exceeds the KV cache (%d positions)", d->n + Tn, d->capacity);
    for (int i = 0; i < Tn; i++)
        if (ids[i] < 0 || ids[i] >= d->m->cfg.vocab_size)
            return fl_input_error("token id %d is outside the vocabulary (%d)", ids[i], d->m->cfg.vocab_size);
    size_t V = (size_t)d->m->cfg.vocab_size;
    for (int s = 0; s < Tn; s += d->chunk) {
        int n = Tn - s < d->chunk ? Tn - s : d->chunk;
        int last = s + n == Tn;
        if (logits_all) feed_chunk(d, ids + s, n, logits_all + (size_t)s * V, 1);
        else feed_chunk(d, ids + s, n, last ? logits_last : NULL, 0);
    }
    if (logits_all && logits_last) memcpy(logits_last, logits_all + (size_t)(Tn - 1) * V, V * sizeof(float));
    return 0;
}
