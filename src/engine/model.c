/* model.c — the transformer's forward and backward, written once over the backend interface.
 *
 * Per layer (HF Llama/Qwen2/Qwen3/Gemma2/Gemma3; x = RMSNorm outputs, h = residual stream):
 *   x = rms(h);  q,k,v = lin(x);  [Qwen3, Gemma 3: q,k = rms_head(q), rms_head(k)];  rope(q,k);
 *   a = attn(q,k,v);  h' = h + o(a)                      [Gemma: h' = h + rms(o(a))]
 *   x' = rms(h'); h'' = h' + down(act(gate(x')) * up(x')) [Gemma: h'' = h' + rms(down(...))]
 * OLMo 2 is Gemma's post norms without the pre-norms (x = h, x' = h') and with q/k norms over whole rows.
 * act = silu (SwiGLU) or gelu_tanh (Gemma's GeGLU); every rms multiplies by (cfg.norm_weight_offset + w);
 * Gemma scales the embeddings by sqrt(C) and the attention scores by query_pre_attn_scalar^-0.5, and
 * Gemma 3's sliding layers take their own RoPE frequencies (fl_model_rope_freq). Granite multiplies
 * the embeddings by embedding_multiplier, scales scores by attention_multiplier, each residual branch
 * (o's, down's output) by residual_multiplier [h' = h + rm·o(a)], and divides the logits by
 * logits_scaling (the LM head's input divided instead: the head is linear).
 * and lin(x) = x·Wᵀ (+b) + s·(drop(x)·Aᵀ)·Bᵀ for adapted projections. The backward walks the same
 * steps in reverse; the base is frozen, so it computes input gradients and LoRA gradients only.
 * LoRA gradients accumulate; activation gradients are assigned, except the residual stream.
 *
 * This file is the walk through the layers and nothing else: a projection group's base + LoRA is
 * projection.c's, a step's staged inputs staging.c's, the optimizer and whole steps step.c's,
 * construction model_init.c's (the map: engine/model_internal.h). */
#include "engine/model.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>

#include "common/dtype.h"
#include "common/error.h"
#include "engine/model_internal.h"

/* ---- forward ------------------------------------------------------------------------------- */

/* Per-layer views of the saved activations (activations.h) and their row strides. */
typedef struct {
    void *h, *h_mid, *h_next;   /* (N, C) residual stream: layer input, after attention, layer output */
    void *x_attn, *x_mlp;       /* (N, ld_xa) / (N, ld_xm): norm outputs | x·Aᵀ */
    void *qkv, *att;            /* (N, QKV), (N, QD) */
    void *q_raw, *k_raw;        /* (N, QD), (N, KVD) Qwen3: q, k before their norms (NULL otherwise) */
    void *gate_up;              /* (N, 2FF) */
    void *xa_o, *xa_down;       /* (N, R) */
    float *rstd_attn, *rstd_mlp, *lse;
    float *rstd_qk;             /* (N·NH | N·NKV) Qwen3 */
    void *att_proj, *mlp_proj;  /* (N, C) Gemma: o's and down's outputs, before their norms (NULL otherwise) */
    float *rstd_post_attn, *rstd_post_mlp;   /* (N) Gemma */
} layer_acts;

static layer_acts layer_acts_at(const fl_model *m, int l) {
    const fl_model_config *c = &m->cfg;
    const fl_activations *a = &m->act;
    size_t N = (size_t)a->B * a->T, C = (size_t)c->hidden_size, R = (size_t)(m->lora_cfg.rank > 0 ? m->lora_cfg.rank : 1);
    size_t QD = (size_t)fl_config_q_dim(c), QKV = QD + 2 * (size_t)fl_config_kv_dim(c), FF = (size_t)c->intermediate_size;
    size_t k = a->recompute ? 0 : (size_t)l;   /* the layer's slot: with recompute every layer shares slot 0 */
    layer_acts v;
    v.h = act_at(m, a->residual, (size_t)l * N * C);
    v.h_next = act_at(m, a->residual, (size_t)(l + 1) * N * C);
    v.h_mid = act_at(m, a->residual_mid, k * N * C);
    v.x_attn = act_at(m, a->x_attn, k * N * (C + 3 * R));
    v.x_mlp = act_at(m, a->x_mlp, k * N * (C + 2 * R));
    v.qkv = act_at(m, a->qkv, k * N * QKV);
    v.att = act_at(m, a->att, k * N * QD);
    v.gate_up = act_at(m, a->gate_up, k * N * 2 * FF);
    v.xa_o = act_at(m, a->xa_o, k * N * R);
    v.xa_down = act_at(m, a->xa_down, k * N * R);
    v.rstd_attn = a->rstd_attn + k * N;
    v.rstd_mlp = a->rstd_mlp + k * N;
    v.lse = a->lse + k * N * (size_t)c->n_heads;
    v.q_raw = c->qk_norm ? act_at(m, a->q_raw, k * N * QD) : NULL;
    v.k_raw = c->qk_norm ? act_at(m, a->k_raw, k * N * (size_t)fl_config_kv_dim(c)) : NULL;
    v.rstd_qk = c->qk_norm ? a->rstd_qk + k * N * (size_t)(c->n_heads + c->n_kv_heads) : NULL;
    v.att_proj = c->sandwich_norms ? act_at(m, a->att_proj, k * N * C) : NULL;
    v.mlp_proj = c->sandwich_norms ? act_at(m, a->mlp_proj, k * N * C) : NULL;
    v.rstd_post_attn = c->sandwich_norms ? a->rstd_post_attn + k * N : NULL;
    v.rstd_post_mlp = c->sandwich_norms ? a->rstd_post_mlp + k * N : NULL;
    return v;
}

/* The first key each query of layer l sees (B, T): the document's start, or on a sliding-window
 * layer (model/config.h) win_start = max(seg_start, t - W + 1), staged with the batch. */
static const int32_t *layer_key_start(const fl_model *m, int l) {
    return fl_config_layer_window(&m->cfg, l) ? m->act.win_start : m->act.seg_start;
}

/* Row strides of x_attn and x_mlp (activations.h: room for 3R and 2R columns of x·Aᵀ). */
static int ld_x_attn(const fl_model *m) { return m->cfg.hidden_size + 3 * (m->lora_cfg.rank > 0 ? m->lora_cfg.rank : 1); }
static int ld_x_mlp(const fl_model *m) { return m->cfg.hidden_size + 2 * (m->lora_cfg.rank > 0 ? m->lora_cfg.rank : 1); }

/* ---- the family's pieces (model.h) ------------------------------------------------------------ */

void fl_model_embed(fl_model *m, void *out, const int32_t *ids, size_t N) {
    const fl_model_config *c = &m->cfg;
    m->be->embedding_forward(out, ids, m->base.embed, N, c->hidden_size);
    /* Granite: times embedding_multiplier in f32, rounded once to the act type (transformers:
     * inputs_embeds * config.embedding_multiplier, a Python float) */
    float em = (float)c->embedding_multiplier;
    if (em > 0 && em != 1.0f) m->be->scale_2d(out, em, N, c->hidden_size, c->hidden_size);
    if (!(c->embed_scale > 0)) return;
    /* transformers: embed_scale.to(weight.dtype) — the factor rounded to the weight type first */
    float scale = (float)c->embed_scale;
    if (m->be->weight_size == 2) scale = fl_bf16_to_f32(fl_f32_to_bf16(scale));
    m->be->scale_2d(out, scale, N, c->hidden_size, c->hidden_size);
}

void fl_model_residual_add(fl_model *m, void *h, void *branch, size_t N) {
    const fl_model_config *c = &m->cfg;
    if (fl_config_residual_scaled(c))
        m->be->scale_2d(branch, (float)c->residual_multiplier, N, c->hidden_size, c->hidden_size);
    m->be->add_inplace(h, branch, N, c->hidden_size, c->hidden_size);
}

/* Backward of the residual multiplier: d branch (N, C) = residual_multiplier · dh, into scratch. */
static const void *residual_branch_grad(fl_model *m, const void *dh, void *scratch, size_t N) {
    const fl_model_config *c = &m->cfg;
    if (!fl_config_residual_scaled(c)) return dh;
    m->be->copy(scratch, dh, N * (size_t)c->hidden_size * m->be->act_size);
    m->be->scale_2d(scratch, (float)c->residual_multiplier, N, c->hidden_size, c->hidden_size);
    return scratch;
}

/* 1 / logits_scaling (Granite), or 1. */
static float logits_factor(const fl_model_config *c) {
    return c->logits_scaling > 0 && (float)c->logits_scaling != 1.0f ? (float)(1.0 / c->logits_scaling) : 1.0f;
}

void fl_model_final_norm(fl_model *m, void *out, float *rstd, const void *inp, size_t N) {
    const fl_model_config *c = &m->cfg;
    fl_model_norm(m, out, rstd, inp, m->base.final_norm, N, c->hidden_size);
    float f = logits_factor(c);   /* logits / ls = (x / ls)·Wᵀ: exact when ls is a power of two (Granite 3.x) */
    if (f != 1.0f) m->be->scale_2d(out, f, N, c->hidden_size, c->hidden_size);
}

void fl_model_norm(fl_model *m, void *out, float *rstd, const void *inp, const void *weight, size_t N, int ld_out) {
    const fl_model_config *c = &m->cfg;
    m->be->rmsnorm_offset_forward(out, rstd, inp, weight, c->norm_weight_offset, c->rms_norm_eps, N, c->hidden_size,
                                  ld_out);
}

/* dinp (N, C) += the norm's input gradient from dout (N, C; ld_dout) */
static void norm_backward(fl_model *m, void *dinp, const void *dout, const void *inp, const void *weight,
                          const float *rstd, size_t N, int ld_dout) {
    const fl_model_config *c = &m->cfg;
    m->be->rmsnorm_offset_backward(dinp, dout, inp, weight, c->norm_weight_offset, rstd, N, c->hidden_size, ld_dout);
}

void fl_model_pre_norm(fl_model *m, void *out, float *rstd, const void *inp, const void *weight, size_t N, int ld_out) {
    const fl_backend *be = m->be;
    size_t row = (size_t)m->cfg.hidden_size * be->act_size;
    if (m->cfg.no_pre_norms) be->copy_2d(out, (size_t)ld_out * be->act_size, inp, row, row, N);   /* OLMo 2: x = h */
    else fl_model_norm(m, out, rstd, inp, weight, N, ld_out);
}

/* Backward of fl_model_pre_norm: dinp (N, C) += the input gradient from dout (N, C; ld_dout). Without
 * pre-norms that is dout itself, added through `scratch` (N, C), since add_inplace reads x contiguous. */
static void pre_norm_backward(fl_model *m, void *dinp, const void *dout, const void *inp, const void *weight,
                              const float *rstd, size_t N, int ld_dout, void *scratch) {
    const fl_backend *be = m->be;
    int C = m->cfg.hidden_size;
    if (!m->cfg.no_pre_norms) {
        norm_backward(m, dinp, dout, inp, weight, rstd, N, ld_dout);
        return;
    }
    be->copy_2d(scratch, (size_t)C * be->act_size, dout, (size_t)ld_dout * be->act_size, (size_t)C * be->act_size, N);
    be->add_inplace(dinp, scratch, N, C, C);
}

void fl_model_glu_forward(fl_model *m, void *out, const void *gate_up, size_t N) {
    if (m->cfg.act == FL_ACT_GELU_TANH) m->be->geglu_forward(out, gate_up, N, m->cfg.intermediate_size);
    else m->be->swiglu_forward(out, gate_up, N, m->cfg.intermediate_size);
}

static void glu_backward(fl_model *m, void *dgate_up, const void *dout, const void *gate_up, size_t N) {
    if (m->cfg.act == FL_ACT_GELU_TANH) m->be->geglu_backward(dgate_up, dout, gate_up, N, m->cfg.intermediate_size);
    else m->be->swiglu_backward(dgate_up, dout, gate_up, N, m->cfg.intermediate_size);
}

/* The attention op scales scores by HS^-0.5 (backend.h); Gemma's scale is query_pre_attn_scalar^-0.5, so
 * q is multiplied by HS^0.5 · qpas^-0.5 after RoPE (exact up to rounding; 1 for the real checkpoints,
 * whose query_pre_attn_scalar equals head_dim, and then no op runs). The backward scales dq alike. */
float fl_model_q_scale(const fl_model_config *c) {
    if (c->attention_multiplier > 0)   /* Granite: the score scale is attention_multiplier itself */
        return (float)(c->attention_multiplier * sqrt((double)c->head_dim));
    if (c->query_pre_attn_scalar <= 0 || c->query_pre_attn_scalar == c->head_dim) return 1.0f;
    return (float)(sqrt((double)c->head_dim) / sqrt((double)c->query_pre_attn_scalar));
}

/* Ministral 3's factor at position p, as transformers' get_llama_4_attn_scale computes it in f32:
 * 1 + beta·ln(1 + floor(p / n)); exactly 1 below n. */
static float llama4_factor(const fl_model_config *c, int32_t p) {
    float k = floorf((float)p / (float)c->rope_llama4_original);
    return k > 0.0f ? 1.0f + (float)c->rope_llama4_beta * logf(1.0f + k) : 1.0f;
}

void fl_model_scale_q(fl_model *m, void *qkv, const int32_t *pos, size_t N) {
    const fl_model_config *c = &m->cfg;
    float s = fl_model_q_scale(c);
    int QD = fl_config_q_dim(c), ld = QD + 2 * fl_config_kv_dim(c);
    if (!(c->rope_llama4_beta > 0) || !pos) {
        if (s != 1.0f) m->be->scale_2d(qkv, s, N, QD, ld);
        return;
    }
    for (size_t t0 = 0, t1; t0 < N; t0 = t1) { /* runs of rows with one factor (positions rise within a document) */
        float f = llama4_factor(c, pos[t0]);
        for (t1 = t0 + 1; t1 < N && llama4_factor(c, pos[t1]) == f; t1++) {}
        if (s * f != 1.0f) m->be->scale_2d(act_at(m, qkv, t0 * (size_t)ld), s * f, t1 - t0, QD, ld);
    }
}

void fl_model_lm_head_loss(fl_model *m, void *dinp, float *logits_out, float *token_loss, fl_step_scalars *sc,
                           const void *inp, const int32_t *targets, size_t N) {
    const fl_model_config *c = &m->cfg;
    if (c->final_logit_softcapping > 0)
        m->be->lm_head_loss_softcap(dinp, logits_out, token_loss, sc, inp, targets, m->base.lm_head,
                                    c->final_logit_softcapping, N, c->hidden_size, c->vocab_size);
    else
        m->be->lm_head_loss(dinp, logits_out, token_loss, sc, inp, targets, m->base.lm_head, N, c->hidden_size,
                            c->vocab_size);
    float f = logits_factor(c);   /* Granite: inp is the final norm's output / logits_scaling */
    if (dinp && f != 1.0f) m->be->scale_2d(dinp, f, N, c->hidden_size, c->hidden_size);
}

/* ---- Qwen3's q_norm and k_norm --------------------------------------------------------------
 * RMSNorm over each head (HS values) of q and of k — the rmsnorm op over N·NH and N·NKV rows of HS —
 * between the projection (LoRA included) and RoPE. The op reads and writes contiguous rows, and q
 * and k sit inside the q/k/v rows, so each is copied out (the copy is the norm's saved input), normed
 * into scratch and copied back in place; the backward likewise. */

/* The norms' rows for q (part 0) or k (part 1): N·NH (N·NKV) rows of HS per head, or (OLMo 2,
 * cfg->qk_norm_full) N rows of QD (KVD) — the same contiguous (N, QD) / (N, KVD) block either way. */
static void qk_norm_rows(const fl_model_config *c, int part, size_t N, size_t *rows, int *width) {
    int heads = part ? c->n_kv_heads : c->n_heads;
    *rows = c->qk_norm_full ? N : N * (size_t)heads;
    *width = c->qk_norm_full ? heads * c->head_dim : c->head_dim;
}

void fl_model_qk_norm_forward(fl_model *m, int l, void *qkv, void *q_raw, void *k_raw, float *rstd, void *scratch,
                              size_t N) {
    const fl_backend *be = m->be;
    const fl_model_config *c = &m->cfg;
    if (!c->qk_norm) return;
    const fl_layer_weights *w = &m->base.layers[l];
    size_t es = be->act_size, QD = (size_t)fl_config_q_dim(c), KVD = (size_t)fl_config_kv_dim(c);
    size_t ld = (QD + 2 * KVD) * es, rows;
    int width;
    be->copy_2d(q_raw, QD * es, qkv, ld, QD * es, N);
    qk_norm_rows(c, 0, N, &rows, &width);
    be->rmsnorm_offset_forward(scratch, rstd, q_raw, w->q_norm, c->norm_weight_offset, c->rms_norm_eps, rows, width,
                               width);
    be->copy_2d(qkv, ld, scratch, QD * es, QD * es, N);
    be->copy_2d(k_raw, KVD * es, act_at(m, qkv, QD), ld, KVD * es, N);
    qk_norm_rows(c, 1, N, &rows, &width);
    be->rmsnorm_offset_forward(scratch, rstd + N * (size_t)c->n_heads, k_raw, w->k_norm, c->norm_weight_offset,
                               c->rms_norm_eps, rows, width, width);
    be->copy_2d(act_at(m, qkv, QD), ld, scratch, KVD * es, KVD * es, N);
}

/* Backward of fl_model_qk_norm_forward, in place: the q and k columns of dqkv (N, QKV), gradients of
 * the normed q and k, become those of the projection's q and k. dout, dinp: (N, QD) scratch each. */
static void qk_norm_backward(fl_model *m, int l, void *dqkv, const layer_acts *v, void *dout, void *dinp, size_t N) {
    const fl_backend *be = m->be;
    const fl_model_config *c = &m->cfg;
    const fl_layer_weights *w = &m->base.layers[l];
    size_t es = be->act_size, QD = (size_t)fl_config_q_dim(c), KVD = (size_t)fl_config_kv_dim(c);
    size_t ld = (QD + 2 * KVD) * es, NH = (size_t)c->n_heads, rows;
    for (int part = 0; part < 2; part++) {   /* q, then k */
        size_t width = part ? KVD : QD, off = part ? QD : 0;
        int norm_width;
        qk_norm_rows(c, part, N, &rows, &norm_width);
        be->copy_2d(dout, width * es, act_at(m, dqkv, off), ld, width * es, N);
        be->zero(dinp, N * width * es);      /* rmsnorm_backward accumulates */
        be->rmsnorm_offset_backward(dinp, dout, part ? v->k_raw : v->q_raw, part ? w->k_norm : w->q_norm,
                                    c->norm_weight_offset, part ? v->rstd_qk + N * NH : v->rstd_qk, rows, norm_width,
                                    norm_width);
        be->copy_2d(act_at(m, dqkv, off), ld, dinp, width * es, width * es, N);
    }
}

/* Layer l's forward from its input h (residual row l) into its activation slot. `recompute`: the
 * backward's rerun (engine recompute) — the same ops on the same input, so every saved tensor comes
 * out bit for bit as in the forward; only the layer's output h_next, which the backward does not
 * read, is not formed again (the down projection's frozen GEMM is skipped; its x·Aᵀ is not — with
 * Gemma's sandwich norms down's output and the post-feedforward norm's rstd are saved, so both run). */
static void layer_forward(fl_model *m, int l, int B, int T, int recompute) {
    const fl_backend *be = m->be;
    const fl_model_config *c = &m->cfg;
    fl_activations *a = &m->act;
    size_t N = (size_t)B * T;
    int C = c->hidden_size, QD = fl_config_q_dim(c), KVD = fl_config_kv_dim(c), FF = c->intermediate_size;
    int NH = c->n_heads, NKV = c->n_kv_heads, HS = c->head_dim, QKV = QD + 2 * KVD;
    int ld_xa = ld_x_attn(m), ld_xm = ld_x_mlp(m);
    const fl_layer_weights *w = &m->base.layers[l];
    layer_acts v = layer_acts_at(m, l);
    group_view qkv = group_at(m, l, FL_GROUP_QKV, 1), o = group_at(m, l, FL_GROUP_O, 1);
    group_view gate_up = group_at(m, l, FL_GROUP_GATE_UP, 1), down = group_at(m, l, FL_GROUP_DOWN, 1);

    fl_model_pre_norm(m, v.x_attn, v.rstd_attn, v.h, w->attn_norm, N, ld_xa);   /* OLMo 2: a copy of h */
    group_forward(m, l, &qkv, v.qkv, QKV, 0.0f, v.x_attn, ld_xa, NULL, N);
    fl_model_qk_norm_forward(m, l, v.qkv, v.q_raw, v.k_raw, v.rstd_qk, a->wide, N);   /* Qwen3; wide: scratch */
    fl_model_rope_forward(m, l, v.qkv, a->pos, N, m->rope_seq);   /* q and k; layer l's table for the batch (staging.c) */
    fl_model_scale_q(m, v.qkv, m->runner ? m->runner->pos : NULL, N);   /* Gemma's query_pre_attn_scalar; Ministral 3 */
    be->attention_forward(v.att, v.lse, v.qkv, act_at(m, v.qkv, (size_t)QD), act_at(m, v.qkv, (size_t)(QD + KVD)),
                          layer_key_start(m, l), B, T, NH, NKV, HS, QKV, c->attn_logit_softcapping);
    be->copy(v.h_mid, v.h, N * C * be->act_size);
    if (c->sandwich_norms) {   /* h_mid = h + rms(o(att)); wide: scratch */
        group_forward(m, l, &o, v.att_proj, C, 0.0f, v.att, QD, v.xa_o, N);
        fl_model_norm(m, a->wide, v.rstd_post_attn, v.att_proj, w->post_attn_norm, N, C);
        be->add_inplace(v.h_mid, a->wide, N, C, C);
    } else if (fl_config_residual_scaled(c)) {   /* Granite: h_mid = h + rm·o(att) */
        group_forward(m, l, &o, a->branch, C, 0.0f, v.att, QD, v.xa_o, N);
        fl_model_residual_add(m, v.h_mid, a->branch, N);
    } else {
        group_forward(m, l, &o, v.h_mid, C, 1.0f, v.att, QD, v.xa_o, N);
    }

    fl_model_pre_norm(m, v.x_mlp, v.rstd_mlp, v.h_mid, w->mlp_norm, N, ld_xm);
    group_forward(m, l, &gate_up, v.gate_up, 2 * FF, 0.0f, v.x_mlp, ld_xm, NULL, N);
    fl_model_glu_forward(m, a->wide, v.gate_up, N);
    if (c->sandwich_norms) {   /* h_next = h_mid + rms(down(glu)) */
        group_forward(m, l, &down, v.mlp_proj, C, 0.0f, a->wide, FF, v.xa_down, N);
        fl_model_norm(m, a->wide, v.rstd_post_mlp, v.mlp_proj, w->post_mlp_norm, N, C);   /* its rstd is saved */
        if (recompute) return;
        be->copy(v.h_next, v.h_mid, N * C * be->act_size);
        be->add_inplace(v.h_next, a->wide, N, C, C);
        return;
    }
    if (recompute) {
        group_lora_xa(m, l, &down, a->wide, FF, v.xa_down, N);
        return;
    }
    be->copy(v.h_next, v.h_mid, N * C * be->act_size);
    if (fl_config_residual_scaled(c)) {   /* Granite: h_next = h_mid + rm·down(glu) */
        group_forward(m, l, &down, a->branch, C, 0.0f, a->wide, FF, v.xa_down, N);
        fl_model_residual_add(m, v.h_next, a->branch, N);
        return;
    }
    group_forward(m, l, &down, v.h_next, C, 1.0f, a->wide, FF, v.xa_down, N);
}

/* Runs the layers and the final norm; leaves the normalized output in act.x_final. */

void forward_layers(fl_model *m, int B, int T) {
    const fl_model_config *c = &m->cfg;
    fl_activations *a = &m->act;
    size_t N = (size_t)B * T;
    int C = c->hidden_size;
    fl_model_embed(m, a->residual, a->ids, N);
    for (int l = 0; l < c->n_layers; l++) layer_forward(m, l, B, T, 0);
    fl_model_final_norm(m, a->x_final, a->rstd_final, act_at(m, a->residual, (size_t)c->n_layers * N * C), N);
}

fl_step_stats fl_model_forward(fl_model *m, const fl_batch *batch, float grad_scale) {
    m->micro_step++;
    if (grad_scale <= 0.0f) {
        size_t counted = counted_tokens(batch);
        grad_scale = counted ? 1.0f / (float)counted : 0.0f;
    }
    load_batch(m, batch, grad_scale);
    forward_layers(m, batch->B, batch->T);
    size_t N = (size_t)batch->B * batch->T;
    fl_model_lm_head_loss(m, m->act.dx_final, NULL, NULL, m->sc, m->act.x_final, m->act.targets, N);
    m->have_forward = 1;
    return fl_model_step_stats(m);
}

fl_step_stats fl_model_eval_loss(fl_model *m, const fl_batch *batch) {
    int was_training = m->training;
    m->training = 0;
    load_batch(m, batch, 0.0f);
    forward_layers(m, batch->B, batch->T);
    size_t N = (size_t)batch->B * batch->T;
    fl_model_lm_head_loss(m, NULL, NULL, NULL, m->sc, m->act.x_final, m->act.targets, N);
    m->training = was_training;
    m->have_forward = 0;
    return fl_model_step_stats(m);
}

void fl_model_logits(fl_model *m, const int32_t *ids, int B, int T, float *logits_host) {
    size_t N = (size_t)B * T;
    int32_t *ignore = fl_malloc(sizeof(int32_t) * N);
    for (size_t i = 0; i < N; i++) ignore[i] = -100;
    fl_batch batch = {.B = B, .T = T, .ids = ids, .targets = ignore};
    int was_training = m->training;
    m->training = 0;
    load_batch(m, &batch, 0.0f);
    forward_layers(m, B, T);
    const fl_backend *be = m->be;
    size_t bytes = N * (size_t)m->cfg.vocab_size * sizeof(float);
    float *logits = be->alloc(bytes);
    fl_model_lm_head_loss(m, NULL, logits, NULL, NULL, m->act.x_final, m->act.targets, N);
    be->download(logits_host, logits, bytes);
    be->free(logits);
    free(ignore);
    m->training = was_training;
    m->have_forward = 0;
}

/* ---- backward ------------------------------------------------------------------------------ */

void fl_model_backward(fl_model *m) {
    if (!m->have_forward) fl_die("fl_model_backward called without a preceding fl_model_forward");
    const fl_backend *be = m->be;
    const fl_model_config *c = &m->cfg;
    fl_activations *a = &m->act;
    int B = a->B, T = a->T;
    size_t N = (size_t)B * T;
    int C = c->hidden_size, QD = fl_config_q_dim(c), KVD = fl_config_kv_dim(c), FF = c->intermediate_size;
    int NH = c->n_heads, NKV = c->n_kv_heads, HS = c->head_dim, QKV = QD + 2 * KVD;
    int ld_xa = ld_x_attn(m), ld_xm = ld_x_mlp(m);

    m->grad_norm_valid = 0;
    be->zero(a->dresidual, N * C * be->act_size);
    norm_backward(m, a->dresidual, a->dx_final, act_at(m, a->residual, (size_t)c->n_layers * N * C), m->base.final_norm,
                  a->rstd_final, N, C);
    for (int l = c->n_layers - 1; l >= 0; l--) {
        /* recompute: the slot still holds the last layer from the forward; rerun every other one */
        if (a->recompute && l < c->n_layers - 1) layer_forward(m, l, B, T, 1);
        const fl_layer_weights *w = &m->base.layers[l];
        layer_acts v = layer_acts_at(m, l);
        group_view qkv = group_at(m, l, FL_GROUP_QKV, 1), o = group_at(m, l, FL_GROUP_O, 1);
        group_view gate_up = group_at(m, l, FL_GROUP_GATE_UP, 1), down = group_at(m, l, FL_GROUP_DOWN, 1);

        /* MLP: h_next = h_mid + down(glu(gate_up(x_mlp)))   [Gemma: h_mid + rms(down(...)); Granite: + rm·down] */
        const void *d_down = residual_branch_grad(m, a->dresidual, a->branch, N);
        if (c->sandwich_norms) {
            be->zero(a->dsandwich, N * C * be->act_size);
            norm_backward(m, a->dsandwich, a->dresidual, v.mlp_proj, w->post_mlp_norm, v.rstd_post_mlp, N, C);
            d_down = a->dsandwich;
        }
        fl_model_glu_forward(m, a->wide, v.gate_up, N); /* recompute the down input */
        group_backward(m, l, &down, a->dwide, FF, 1, d_down, C, a->wide, FF, v.xa_down, N);
        glu_backward(m, a->dgate_up, a->dwide, v.gate_up, N);
        group_backward(m, l, &gate_up, a->dx, ld_xm, 1, a->dgate_up, 2 * FF, v.x_mlp, ld_xm, NULL, N);
        pre_norm_backward(m, a->dresidual, a->dx, v.h_mid, w->mlp_norm, v.rstd_mlp, N, ld_xm, a->dwide);

        /* attention: h_mid = h + o(attn(rope(q, k), v)), q/k/v = qkv(x_attn)   [Gemma: h + rms(o(...)); Granite: + rm·o] */
        const void *d_o = residual_branch_grad(m, a->dresidual, a->branch, N);
        if (c->sandwich_norms) {
            be->zero(a->dsandwich, N * C * be->act_size);
            norm_backward(m, a->dsandwich, a->dresidual, v.att_proj, w->post_attn_norm, v.rstd_post_attn, N, C);
            d_o = a->dsandwich;
        }
        group_backward(m, l, &o, a->dwide, QD, 1, d_o, C, v.att, QD, v.xa_o, N);
        be->attention_backward(a->dqkv, act_at(m, a->dqkv, (size_t)QD), act_at(m, a->dqkv, (size_t)(QD + KVD)), a->dwide,
                               v.att, v.lse, v.qkv, act_at(m, v.qkv, (size_t)QD), act_at(m, v.qkv, (size_t)(QD + KVD)),
                               layer_key_start(m, l), B, T, NH, NKV, HS, QKV, c->attn_logit_softcapping);
        fl_model_scale_q(m, a->dqkv, m->runner ? m->runner->pos : NULL, N);   /* Gemma, Ministral 3: d q before the scale */
        if (fl_config_layer_rope(c, l))   /* SmolLM3's NoPE layers pass q and k through */
            be->rope_backward(a->dqkv, a->pos, fl_model_rope_freq(m, l, m->rope_seq), fl_model_rope_factor(m, l),
                              N, NH + NKV, HS, fl_config_rotary_dim(c), QKV);
        if (c->qk_norm) qk_norm_backward(m, l, a->dqkv, &v, a->wide, a->dwide, N);   /* both free here: scratch */
        /* Layer 0's input gradient feeds only the frozen embedding: skip it. */
        group_backward(m, l, &qkv, a->dx, ld_xa, l > 0, a->dqkv, QKV, v.x_attn, ld_xa, NULL, N);
        if (l > 0) pre_norm_backward(m, a->dresidual, a->dx, v.h, w->attn_norm, v.rstd_attn, N, ld_xa, a->dwide);
    }
    m->have_forward = 0;
}

