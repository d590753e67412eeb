/* model.c — the transformer's forward and backward, written once over the backend interface.
 *
 * Per layer (HF Llama/Qwen2; x = RMSNorm outputs, h = residual stream):
 *   x = rms(h);  q,k,v = lin(x);  rope(q,k);  a = attn(q,k,v);  h' = h + o(a)
 *   x' = rms(h'); h'' = h' + down(silu(gate(x')) * up(x'))
 * and lin(x) = x·Wᵀ (+b) + s·(drop(x)·Aᵀ)·Bᵀ for adapted projections. The backward walks the same
 * steps in reverse; the base is frozen, so it computes input gradients and LoRA gradients only.
 * LoRA gradients accumulate; activation gradients are assigned, except the residual stream. */
#include "engine/model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/rng.h"
#include "lora/adapter_io.h"

fl_adamw_config fl_adamw_config_default(void) {
    fl_adamw_config c = {.lr = 2e-4f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f, .weight_decay = 0.0f,
                         .max_grad_norm = 1.0f};
    return c;
}

void fl_rope_inv_freq(const fl_model_config *cfg, float *inv_freq) {
    int HS = cfg->head_dim;
    for (int j = 0; j < HS / 2; j++) {
        /* transformers: 1 / theta ** (arange(0, HS, 2).float() / HS), in f32 */
        float exponent = (float)(2 * j) / (float)HS;
        float f = 1.0f / powf((float)cfg->rope_theta, exponent);
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
        inv_freq[j] = f;
    }
}

/* ---- construction --------------------------------------------------------------------------- */

static void model_finish_init(fl_model *m, const fl_lora_config *lc) {
    const fl_backend *be = m->be;
    m->lora_cfg = *lc;
    fl_lora_buffer_init(&m->lora, &m->cfg, lc, be);
    fl_lora_buffer_init(&m->grads, &m->cfg, lc, be);
    fl_lora_buffer_init(&m->adam_m, &m->cfg, lc, be);
    fl_lora_buffer_init(&m->adam_v, &m->cfg, lc, be);
    fl_lora_init_peft(&m->lora, &m->cfg, lc);
    m->lora_w = be->weight_size == sizeof(float) ? (void *)m->lora.data : be->alloc(m->lora.n * be->weight_size);
    fl_model_sync_lora(m);
    int half = m->cfg.head_dim / 2;
    float *host = fl_malloc(sizeof(float) * (size_t)half);
    fl_rope_inv_freq(&m->cfg, host);
    m->inv_freq = be->alloc(sizeof(float) * (size_t)half);
    be->upload(m->inv_freq, host, sizeof(float) * (size_t)half);
    free(host);
    m->training = 1;
}

int fl_model_init_dir(fl_model *m, const char *dir, const fl_backend *be, const fl_lora_config *lc) {
    memset(m, 0, sizeof *m);
    m->be = be;
    FL_TRY(fl_weights_load(&m->base, &m->cfg, dir, be));
    model_finish_init(m, lc);
    return 0;
}

void fl_model_init_random(fl_model *m, const fl_model_config *cfg, uint64_t seed, const fl_backend *be,
                          const fl_lora_config *lc) {
    memset(m, 0, sizeof *m);
    m->be = be;
    m->cfg = *cfg;
    fl_weights_init_random(&m->base, &m->cfg, seed, be);
    model_finish_init(m, lc);
}

int fl_model_init_preset(fl_model *m, const char *preset, uint64_t seed, const fl_backend *be, const fl_lora_config *lc) {
    fl_model_config cfg;
    FL_TRY(fl_config_preset(&cfg, preset));
    fl_model_init_random(m, &cfg, seed, be, lc);
    return 0;
}

void fl_model_sync_lora(fl_model *m) { m->be->cast_to_weight(m->lora_w, m->lora.data, m->lora.n); }

int fl_model_load_adapter(fl_model *m, const char *adapter_dir) {
    FL_TRY(fl_adapter_load_weights(adapter_dir, &m->lora, &m->cfg, &m->lora_cfg));
    fl_model_sync_lora(m);
    return 0;
}

void fl_model_free(fl_model *m) {
    if (m->lora_w && m->lora_w != (void *)m->lora.data) m->be->free(m->lora_w);
    fl_weights_free(&m->base);
    fl_lora_buffer_free(&m->lora);
    fl_lora_buffer_free(&m->grads);
    fl_lora_buffer_free(&m->adam_m);
    fl_lora_buffer_free(&m->adam_v);
    fl_activations_free(&m->act);
    if (m->inv_freq) m->be->free(m->inv_freq);
    memset(m, 0, sizeof *m);
}

static void ensure_activations(fl_model *m, int B, int T) {
    if (m->act.storage && m->act.B == B && m->act.T == T) return;
    fl_activations_free(&m->act);
    fl_activations_init(&m->act, &m->cfg, m->lora_cfg.rank, B, T, m->be);
}

/* ---- one projection: base + LoRA ------------------------------------------------------------- */

/* Element `index` of an act buffer. */
static inline void *act_at(const fl_model *m, void *base, size_t index) {
    return (char *)base + index * m->be->act_size;
}

/* The weight-typed compute copy of a LoRA matrix, from its f32 master view. */
static inline const void *lora_compute(const fl_model *m, const float *master) {
    return (const char *)m->lora_w + (size_t)(master - m->lora.data) * m->be->weight_size;
}

static void *lora_xa_of(fl_model *m, int l, fl_proj p) {
    size_t N = (size_t)m->act.B * m->act.T;
    return act_at(m, m->act.lora_xa, ((size_t)l * FL_N_PROJ + p) * N * (size_t)m->lora_cfg.rank);
}

static uint64_t dropout_stream(const fl_model *m, int l, fl_proj p) {
    return fl_rng_stream(m->lora_cfg.seed ^ 0xd50bull, m->micro_step, (uint64_t)l, (uint64_t)p);
}

static int dropout_active(const fl_model *m) { return m->training && m->lora_cfg.dropout > 0.0f; }

/* out (N, OC) = beta·out + inp·Wᵀ + bias + s·(drop(inp)·Aᵀ)·Bᵀ */
static void linear_forward(fl_model *m, void *out, const void *inp, const void *weight, const void *bias, float beta,
                           int l, fl_proj p, size_t N, int IC, int OC) {
    const fl_backend *be = m->be;
    be->matmul_forward(out, inp, weight, bias, 1.0f, beta, N, IC, OC);
    if (!m->lora.layers[l].a[p]) return;
    const void *lora_a = lora_compute(m, m->lora.layers[l].a[p]), *lora_b = lora_compute(m, m->lora.layers[l].b[p]);
    int R = m->lora_cfg.rank;
    const void *x = inp;
    if (dropout_active(m)) {
        be->dropout(m->act.dropped, inp, m->lora_cfg.dropout, dropout_stream(m, l, p), N * (size_t)IC);
        x = m->act.dropped;
    }
    void *xa = lora_xa_of(m, l, p);
    be->matmul_forward(xa, x, lora_a, NULL, 1.0f, 0.0f, N, IC, R);
    be->matmul_forward(out, xa, lora_b, NULL, fl_lora_scale(&m->lora_cfg), 1.0f, N, R, OC);
}

/* dinp (N, IC) = beta·dinp + dout·W + s·(dout·B)·A (masked by dropout); LoRA grads +=.
 * dinp may be NULL when the input gradient is not needed (layer 0's q/k/v). */
static void linear_backward(fl_model *m, void *dinp, float beta, const void *dout, const void *inp,
                            const void *weight, int l, fl_proj p, size_t N, int IC, int OC) {
    const fl_backend *be = m->be;
    if (dinp) be->matmul_backward_input(dinp, dout, weight, 1.0f, beta, N, IC, OC);
    if (!m->lora.layers[l].a[p]) return;
    const void *lora_a = lora_compute(m, m->lora.layers[l].a[p]), *lora_b = lora_compute(m, m->lora.layers[l].b[p]);
    int R = m->lora_cfg.rank;
    float s = fl_lora_scale(&m->lora_cfg);
    float *dlora_a = m->grads.layers[l].a[p], *dlora_b = m->grads.layers[l].b[p];
    /* dlora_b (OC, R) += s · doutᵀ · xa */
    be->matmul_backward_weight(dlora_b, dout, lora_xa_of(m, l, p), s, N, R, OC);
    /* dxa (N, R) = dout · lora_b */
    be->matmul_backward_input(m->act.dlora_xa, dout, lora_b, 1.0f, 0.0f, N, R, OC);
    const void *x = inp;
    if (dropout_active(m)) {
        be->dropout(m->act.dropped, inp, m->lora_cfg.dropout, dropout_stream(m, l, p), N * (size_t)IC);
        x = m->act.dropped;
    }
    /* dlora_a (R, IC) += s · dxaᵀ · drop(x) */
    be->matmul_backward_weight(dlora_a, m->act.dlora_xa, x, s, N, IC, R);
    if (!dinp) return;
    if (!dropout_active(m)) {
        be->matmul_backward_input(dinp, m->act.dlora_xa, lora_a, s, 1.0f, N, IC, R);
    } else {
        be->matmul_backward_input(m->act.lora_tmp, m->act.dlora_xa, lora_a, s, 0.0f, N, IC, R);
        be->dropout(m->act.lora_tmp, m->act.lora_tmp, m->lora_cfg.dropout, dropout_stream(m, l, p), N * (size_t)IC);
        be->add_inplace(dinp, m->act.lora_tmp, N * (size_t)IC);
    }
}

/* ---- forward ------------------------------------------------------------------------------- */

static void upload_batch(fl_model *m, const fl_batch *batch) {
    const fl_backend *be = m->be;
    size_t N = (size_t)batch->B * batch->T;
    int32_t *host = fl_malloc(sizeof(int32_t) * N);
    be->upload(m->act.ids, batch->ids, sizeof(int32_t) * N);
    be->upload(m->act.targets, batch->targets, sizeof(int32_t) * N);
    if (batch->pos) {
        be->upload(m->act.pos, batch->pos, sizeof(int32_t) * N);
    } else {
        for (size_t i = 0; i < N; i++) host[i] = (int32_t)(i % (size_t)batch->T);
        be->upload(m->act.pos, host, sizeof(int32_t) * N);
    }
    if (batch->seg_start) {
        be->upload(m->act.seg_start, batch->seg_start, sizeof(int32_t) * N);
    } else {
        memset(host, 0, sizeof(int32_t) * N);
        be->upload(m->act.seg_start, host, sizeof(int32_t) * N);
    }
    free(host);
}

/* Runs the layers and the final norm; leaves the normalized output in act.x_final. */
static void forward_layers(fl_model *m, int B, int T) {
    const fl_backend *be = m->be;
    const fl_model_config *c = &m->cfg;
    fl_activations *a = &m->act;
    size_t N = (size_t)B * T;
    int C = c->hidden_size, QD = fl_config_q_dim(c), KVD = fl_config_kv_dim(c), FF = c->intermediate_size;
    int NH = c->n_heads, NKV = c->n_kv_heads, HS = c->head_dim;
    be->embedding_forward(a->residual, a->ids, m->base.embed, N, C);
    for (int l = 0; l < c->n_layers; l++) {
        const fl_layer_weights *w = &m->base.layers[l];
        void *h = act_at(m, a->residual, (size_t)l * N * C), *h_next = act_at(m, a->residual, (size_t)(l + 1) * N * C);
        void *x_attn = act_at(m, a->x_attn, (size_t)l * N * C), *x_mlp = act_at(m, a->x_mlp, (size_t)l * N * C);
        void *q = act_at(m, a->q, (size_t)l * N * QD), *k = act_at(m, a->k, (size_t)l * N * KVD);
        void *v = act_at(m, a->v, (size_t)l * N * KVD), *att = act_at(m, a->att, (size_t)l * N * QD);
        void *h_mid = act_at(m, a->residual_mid, (size_t)l * N * C);
        void *gate = act_at(m, a->gate, (size_t)l * N * FF), *up = act_at(m, a->up, (size_t)l * N * FF);

        be->rmsnorm_forward(x_attn, a->rstd_attn + (size_t)l * N, h, w->attn_norm, c->rms_norm_eps, N, C);
        linear_forward(m, q, x_attn, w->q, w->q_bias, 0.0f, l, FL_PROJ_Q, N, C, QD);
        linear_forward(m, k, x_attn, w->k, w->k_bias, 0.0f, l, FL_PROJ_K, N, C, KVD);
        linear_forward(m, v, x_attn, w->v, w->v_bias, 0.0f, l, FL_PROJ_V, N, C, KVD);
        be->rope_forward(q, a->pos, m->inv_freq, N, NH, HS);
        be->rope_forward(k, a->pos, m->inv_freq, N, NKV, HS);
        be->attention_forward(att, a->lse + (size_t)l * N * NH, q, k, v, a->seg_start, B, T, NH, NKV, HS);
        be->copy(h_mid, h, N * C * m->be->act_size);
        linear_forward(m, h_mid, att, w->o, NULL, 1.0f, l, FL_PROJ_O, N, QD, C);

        be->rmsnorm_forward(x_mlp, a->rstd_mlp + (size_t)l * N, h_mid, w->mlp_norm, c->rms_norm_eps, N, C);
        linear_forward(m, gate, x_mlp, w->gate, NULL, 0.0f, l, FL_PROJ_GATE, N, C, FF);
        linear_forward(m, up, x_mlp, w->up, NULL, 0.0f, l, FL_PROJ_UP, N, C, FF);
        be->swiglu_forward(a->wide, gate, up, N * FF);
        be->copy(h_next, h_mid, N * C * m->be->act_size);
        linear_forward(m, h_next, a->wide, w->down, NULL, 1.0f, l, FL_PROJ_DOWN, N, FF, C);
    }
    be->rmsnorm_forward(a->x_final, a->rstd_final, act_at(m, a->residual, (size_t)c->n_layers * N * C), m->base.final_norm,
                        c->rms_norm_eps, N, C);
}

fl_step_stats fl_model_forward(fl_model *m, const fl_batch *batch, float grad_scale) {
    ensure_activations(m, batch->B, batch->T);
    m->micro_step++;
    upload_batch(m, batch);
    forward_layers(m, batch->B, batch->T);
    size_t N = (size_t)batch->B * batch->T, counted = 0;
    if (grad_scale <= 0.0f) {
        for (size_t i = 0; i < N; i++) counted += batch->targets[i] >= 0;
        grad_scale = counted ? 1.0f / (float)counted : 0.0f;
    }
    fl_step_stats st;
    st.loss_sum = m->be->lm_head_loss(m->act.dx_final, NULL, m->act.x_final, m->act.targets, m->base.lm_head,
                                      grad_scale, N, m->cfg.hidden_size, m->cfg.vocab_size, &st.n_counted);
    st.loss = st.n_counted ? st.loss_sum / (double)st.n_counted : 0.0;
    m->have_forward = 1;
    return st;
}

fl_step_stats fl_model_eval_loss(fl_model *m, const fl_batch *batch) {
    int was_training = m->training;
    m->training = 0;
    ensure_activations(m, batch->B, batch->T);
    upload_batch(m, batch);
    forward_layers(m, batch->B, batch->T);
    size_t N = (size_t)batch->B * batch->T;
    fl_step_stats st;
    st.loss_sum = m->be->lm_head_loss(NULL, NULL, m->act.x_final, m->act.targets, m->base.lm_head, 0.0f, N,
                                      m->cfg.hidden_size, m->cfg.vocab_size, &st.n_counted);
    st.loss = st.n_counted ? st.loss_sum / (double)st.n_counted : 0.0;
    m->training = was_training;
    m->have_forward = 0;
    return st;
}

void fl_model_logits(fl_model *m, const int32_t *ids, int B, int T, float *logits_host) {
    size_t N = (size_t)B * T;
    int32_t *ignore = fl_malloc(sizeof(int32_t) * N);
    for (size_t i = 0; i < N; i++) ignore[i] = -100;
    fl_batch batch = {.B = B, .T = T, .ids = ids, .targets = ignore};
    int was_training = m->training;
    m->training = 0;
    ensure_activations(m, B, T);
    upload_batch(m, &batch);
    forward_layers(m, B, T);
    const fl_backend *be = m->be;
    size_t bytes = N * (size_t)m->cfg.vocab_size * sizeof(float);
    float *logits = be->alloc(bytes);
    size_t counted;
    be->lm_head_loss(NULL, logits, m->act.x_final, m->act.targets, m->base.lm_head, 0.0f, N, m->cfg.hidden_size,
                     m->cfg.vocab_size, &counted);
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
    int NH = c->n_heads, NKV = c->n_kv_heads, HS = c->head_dim;

    be->zero(a->dresidual, N * C * be->act_size);
    be->rmsnorm_backward(a->dresidual, a->dx_final, act_at(m, a->residual, (size_t)c->n_layers * N * C), m->base.final_norm,
                         a->rstd_final, N, C);
    for (int l = c->n_layers - 1; l >= 0; l--) {
        const fl_layer_weights *w = &m->base.layers[l];
        void *h = act_at(m, a->residual, (size_t)l * N * C);
        void *x_attn = act_at(m, a->x_attn, (size_t)l * N * C), *x_mlp = act_at(m, a->x_mlp, (size_t)l * N * C);
        void *q = act_at(m, a->q, (size_t)l * N * QD), *k = act_at(m, a->k, (size_t)l * N * KVD);
        void *v = act_at(m, a->v, (size_t)l * N * KVD), *att = act_at(m, a->att, (size_t)l * N * QD);
        void *h_mid = act_at(m, a->residual_mid, (size_t)l * N * C);
        void *gate = act_at(m, a->gate, (size_t)l * N * FF), *up = act_at(m, a->up, (size_t)l * N * FF);

        /* MLP: h_next = h_mid + down(swiglu(gate(x_mlp), up(x_mlp))) */
        be->swiglu_forward(a->wide, gate, up, N * FF); /* recompute the down input */
        linear_backward(m, a->dwide, 0.0f, a->dresidual, a->wide, w->down, l, FL_PROJ_DOWN, N, FF, C);
        be->swiglu_backward(a->dgate, a->dup, a->dwide, gate, up, N * FF);
        linear_backward(m, a->dx, 0.0f, a->dgate, x_mlp, w->gate, l, FL_PROJ_GATE, N, C, FF);
        linear_backward(m, a->dx, 1.0f, a->dup, x_mlp, w->up, l, FL_PROJ_UP, N, C, FF);
        be->rmsnorm_backward(a->dresidual, a->dx, h_mid, w->mlp_norm, a->rstd_mlp + (size_t)l * N, N, C);

        /* attention: h_mid = h + o(attn(rope(q(x)), rope(k(x)), v(x))) */
        linear_backward(m, a->dwide, 0.0f, a->dresidual, att, w->o, l, FL_PROJ_O, N, QD, C);
        be->attention_backward(a->dq, a->dk, a->dv, a->dwide, att, a->lse + (size_t)l * N * NH, q, k, v, a->seg_start,
                               B, T, NH, NKV, HS);
        be->rope_backward(a->dq, a->pos, m->inv_freq, N, NH, HS);
        be->rope_backward(a->dk, a->pos, m->inv_freq, N, NKV, HS);
        /* Layer 0's input gradient feeds only the frozen embedding: skip it. */
        void *dx = l > 0 ? a->dx : NULL;
        linear_backward(m, dx, 0.0f, a->dq, x_attn, w->q, l, FL_PROJ_Q, N, C, QD);
        linear_backward(m, dx, 1.0f, a->dk, x_attn, w->k, l, FL_PROJ_K, N, C, KVD);
        linear_backward(m, dx, 1.0f, a->dv, x_attn, w->v, l, FL_PROJ_V, N, C, KVD);
        if (l > 0) be->rmsnorm_backward(a->dresidual, a->dx, h, w->attn_norm, a->rstd_attn + (size_t)l * N, N, C);
    }
    m->have_forward = 0;
}

/* ---- optimizer ----------------------------------------------------------------------------- */

void fl_model_zero_grads(fl_model *m) { m->be->zero(m->grads.data, m->grads.n * sizeof(float)); }

double fl_model_optimizer_step(fl_model *m, const fl_adamw_config *opt) {
    const fl_backend *be = m->be;
    double norm = sqrt(be->sum_squares(m->grads.data, m->grads.n));
    /* torch.nn.utils.clip_grad_norm_: coef = max_norm / (norm + 1e-6), clamped to 1 */
    float grad_scale = 1.0f;
    if (opt->max_grad_norm > 0.0f) {
        double coef = opt->max_grad_norm / (norm + 1e-6);
        grad_scale = coef < 1.0 ? (float)coef : 1.0f;
    }
    m->adam_step++;
    void *lora_w = m->lora_w == (void *)m->lora.data ? NULL : m->lora_w;
    be->adamw_update(m->lora.data, lora_w, m->adam_m.data, m->adam_v.data, m->grads.data, opt->lr, opt->beta1, opt->beta2,
                     opt->eps, opt->weight_decay, grad_scale, m->adam_step, m->lora.n);
    fl_model_zero_grads(m);
    return norm;
}

void fl_model_print_memory(const fl_model *m, int B, int T, FILE *out) {
    const double MiB = 1048576.0;
    size_t lora = m->lora.n * sizeof(float);
    size_t lora_w = m->lora_w == (void *)m->lora.data ? 0 : m->lora.n * m->be->weight_size;
    size_t act = fl_activations_bytes(&m->cfg, m->lora_cfg.rank, B, T, m->be->act_size);
    fprintf(out, "  memory plan: base weights %.1f MiB, LoRA %.1f MiB (+%.1f compute copy), grads %.1f MiB, "
                 "AdamW m+v %.1f MiB, activations %.1f MiB for %d x %d\n",
            m->base.bytes / MiB, lora / MiB, lora_w / MiB, lora / MiB, 2 * lora / MiB, act / MiB, B, T);
}

/* ---- FLOPs --------------------------------------------------------------------------------- */

double fl_model_flops_per_step(const fl_model_config *cfg, const fl_lora_config *lc, int B, int T) {
    double tokens = (double)B * T;
    /* frozen matmuls: forward 2N + input gradient 2N per token (no weight gradients) */
    double dense = 4.0 * (double)fl_config_matmul_params(cfg) * tokens;
    /* causal attention: QKᵀ and PV forward (2 matmuls x 2 FLOPs x T/2 average keys) and 2x that
     * backward: 6·T·NH·HS per token per layer (the brief's formula, causal halving included) */
    double attention = 6.0 * T * (double)cfg->n_heads * cfg->head_dim * cfg->n_layers * tokens;
    /* LoRA: per adapted projection, forward x·Aᵀ and xa·Bᵀ (2R(IC+OC)), backward the input
     * gradient through both and both weight gradients (4R(IC+OC)): 6R(IC+OC) per token */
    double lora = 0.0;
    for (int p = 0; p < FL_N_PROJ; p++) {
        if (!(lc->target_mask & (1u << p))) continue;
        int in, out;
        fl_proj_dims(cfg, (fl_proj)p, &in, &out);
        lora += 6.0 * lc->rank * (double)(in + out);
    }
    lora *= (double)cfg->n_layers * tokens;
    return dense + attention + lora;
}
