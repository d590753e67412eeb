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
#include <stddef.h>
#include <stdio.h>
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

static void build_cast_blocks(fl_model *m);
static struct fl_step_runner *new_runner(void);
static void drop_recordings(fl_model *m);
static void free_runner(fl_model *m);

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
    int half = m->cfg.head_dim / 2;
    float *host = fl_malloc(sizeof(float) * (size_t)half);
    fl_rope_inv_freq(&m->cfg, host);
    m->inv_freq = be->alloc(sizeof(float) * (size_t)half);
    be->upload(m->inv_freq, host, sizeof(float) * (size_t)half);
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
    memset(m, 0, sizeof *m);
}

static void ensure_activations(fl_model *m, int B, int T) {
    if (m->act.storage && m->act.B == B && m->act.T == T && m->act.recompute == !!m->recompute) return;
    drop_recordings(m); /* they name the old buffers */
    fl_activations_free(&m->act);
    fl_activations_init(&m->act, &m->cfg, m->lora_cfg.rank, B, T, !!m->recompute, m->be);
}

/* ---- projection groups: base + LoRA ---------------------------------------------------------
 *
 * A group (lora/lora.h) is one stacked weight: q/k/v rows (QD | KVD | KVD), o, gate/up rows
 * (FF | FF), down. The members of the q/k/v and gate/up groups share their input x, so with LoRA
 * they run K-concatenated (docs/ARCHITECTURE.md):
 *   forward   xa = drop(x)·Aᵀ            one GEMM for all members, A = their lora_a stacked (R_g, C)
 *             out = [x | xa]·[W | s·B]ᵀ   one GEMM, K = C + R_g, the output written once
 *   backward  [dx | dxa] = dout·[W | s·B] one GEMM (dxa already carries s)
 *             dA += dxaᵀ·drop(x),  dB_p += s·dout_pᵀ·xa_p,  dx += dxa·A
 * B = the members' lora_b block-diagonally (member p's rows, its R columns), kept scaled by s in the
 * weight's reserved columns (weights.h) and refreshed after every optimizer step; xa lives in the
 * saved input's columns after C, dxa in the input gradient's. o and down read the attention and
 * SwiGLU outputs, which are contiguous: their LoRA is a second GEMM accumulating into the output
 * (beta = 1). With m->fused == 0 every projection runs alone, base then LoRA — the reference the
 * tests compare the fused path with. */

/* Element `index` of an act buffer. */
static inline void *act_at(const fl_model *m, const void *base, size_t index) {
    return (char *)base + index * m->be->act_size;
}
/* Element `index` of a weight buffer. */
static inline void *weight_at(const fl_model *m, const void *base, size_t index) {
    return (char *)base + index * m->be->weight_size;
}

/* The weight-typed compute copy of a LoRA matrix, from its f32 master view. */
static inline const void *lora_compute(const fl_model *m, const float *master) {
    return (const char *)m->lora_w + (size_t)(master - m->lora.data) * m->be->weight_size;
}

/* The mask stream of member p at layer l in forward pass `micro_step` (common/rng.h). */
static uint64_t dropout_stream_of(const fl_model *m, uint64_t micro_step, int l, int p) {
    return fl_rng_stream(m->lora_cfg.seed ^ 0xd50bull, micro_step, (uint64_t)l, (uint64_t)p);
}
/* The current micro-batch's stream of (l, p) in backend memory (uploaded with the batch). */
static const uint64_t *dropout_stream(const fl_model *m, int l, fl_proj p) {
    return m->dropout_streams + (size_t)l * FL_N_PROJ + p;
}

/* Everything a group's forward and backward need at layer l. */
typedef struct {
    fl_proj first, end;
    int IC, OC;            /* input width; output width of all members stacked */
    int concat;            /* q/k/v or gate/up: LoRA K-concatenated into the stacked weight */
    const void *w;         /* (OC, ld_w) frozen weight-typed; concat: s·B in columns [IC, IC + R_g) */
    int ld_w;
    const void *bias;      /* (OC) or NULL */
    const fl_nf4_weight *nf4;  /* the layer's NF4 projections (fl_proj order) when the base is NF4, else NULL:
                                  w is then NULL and each member's frozen product is an NF4 GEMM */
    int R_g;               /* x·Aᵀ columns: R per adapted member (0 when none or LoRA unused) */
    int dropout;           /* LoRA dropout active */
} group_view;

/* Output column of member p inside its group's stacked output. */
static int member_offset(const fl_model_config *c, fl_proj p) {
    switch (p) {
    case FL_PROJ_K: return fl_config_q_dim(c);
    case FL_PROJ_V: return fl_config_q_dim(c) + fl_config_kv_dim(c);
    case FL_PROJ_UP: return c->intermediate_size;
    default: return 0;
    }
}

static group_view group_at(const fl_model *m, int l, fl_group g, int use_lora) {
    const fl_model_config *c = &m->cfg;
    const fl_layer_weights *w = &m->base.layers[l];
    group_view v;
    memset(&v, 0, sizeof v);
    fl_group_members(g, &v.first, &v.end);
    int in, out;
    for (fl_proj p = v.first; p < v.end; p++) {
        fl_proj_dims(c, p, &in, &out);
        v.IC = in;
        v.OC += out;
    }
    switch (g) {
    case FL_GROUP_QKV: v.w = w->qkv; v.ld_w = m->base.ld_qkv; v.bias = w->qkv_bias; v.concat = 1; break;
    case FL_GROUP_O: v.w = w->o; v.ld_w = v.IC; break;
    case FL_GROUP_GATE_UP: v.w = w->gate_up; v.ld_w = m->base.ld_gate_up; v.concat = 1; break;
    default: v.w = w->down; v.ld_w = v.IC; break;
    }
    v.nf4 = w->nf4;
    v.R_g = use_lora ? fl_lora_group_rank(&m->lora_cfg, g) : 0;
    v.dropout = use_lora && m->training && m->lora_cfg.dropout > 0.0f;
    return v;
}

/* x (N, IC; ld_x) -> dst (N, IC) with member p's dropout mask, or x itself when dropout is off. */
static const void *dropped_input(fl_model *m, const group_view *v, int l, fl_proj p, const void *x, int ld_x,
                                 size_t N, int *ld_out) {
    *ld_out = ld_x;
    if (!v->dropout) return x;
    m->be->dropout(m->act.dropped, x, m->lora_cfg.dropout, dropout_stream(m, l, p), N, v->IC, ld_x);
    *ld_out = v->IC;
    return m->act.dropped;
}

/* xa_p (N, R; ld_xa) = drop_p(x)·A_pᵀ: member p's LoRA input product (the forward's and a
 * recompute's one call). */
static void member_xa(fl_model *m, const group_view *v, int l, fl_proj p, const void *x, int ld_x, void *xa_p, int ld_xa,
                      size_t N) {
    int ld_d;
    const void *xd = dropped_input(m, v, l, p, x, ld_x, N, &ld_d);
    m->be->matmul_forward(xa_p, xd, lora_compute(m, m->lora.layers[l].a[p]), NULL, 1.0f, 0.0f, N, v->IC,
                          m->lora_cfg.rank, ld_xa, ld_d, v->IC);
}

/* o, down: xa (N, R) = drop(x)·Aᵀ of the (one) adapted member, without the projection itself —
 * what the backward needs of the down projection when recomputing a layer. */
static void group_lora_xa(fl_model *m, int l, const group_view *v, const void *x, int ld_x, void *xa, size_t N) {
    for (fl_proj p = v->first; p < v->end; p++)
        if (v->R_g && m->lora.layers[l].a[p]) member_xa(m, v, l, p, x, ld_x, xa, m->lora_cfg.rank, N);
}

/* out_p (N, OC_p; ld_out) = beta·out_p + x·W_pᵀ + bias_p: member p's frozen product — its rows of
 * the stacked weight, or its NF4 weight. out_p is the member's first output column. */
static void member_base_forward(fl_model *m, const group_view *v, fl_proj p, void *out_p, int ld_out, float beta,
                                const void *x, int ld_x, size_t N) {
    int in, oc, off = member_offset(&m->cfg, p);
    fl_proj_dims(&m->cfg, p, &in, &oc);
    const void *bias = v->bias ? act_at(m, v->bias, (size_t)off) : NULL;
    if (v->nf4)
        m->be->matmul_nf4_forward(out_p, x, &v->nf4[p], bias, 1.0f, beta, N, ld_out, ld_x);
    else
        m->be->matmul_forward(out_p, x, weight_at(m, v->w, (size_t)off * v->ld_w), bias, 1.0f, beta, N, v->IC, oc,
                              ld_out, ld_x, v->ld_w);
}

/* dx (N, IC; ld_dx) = beta·dx + dout_p·W_p: member p's frozen input gradient (dout_p its output
 * columns). */
static void member_base_backward(fl_model *m, const group_view *v, fl_proj p, void *dx, int ld_dx, float beta,
                                 const void *dout_p, int ld_dout, size_t N) {
    int in, oc;
    fl_proj_dims(&m->cfg, p, &in, &oc);
    if (v->nf4)
        m->be->matmul_nf4_backward_input(dx, dout_p, &v->nf4[p], 1.0f, beta, N, ld_dx, ld_dout);
    else
        m->be->matmul_backward_input(dx, dout_p, weight_at(m, v->w, (size_t)member_offset(&m->cfg, p) * v->ld_w), 1.0f,
                                     beta, N, v->IC, oc, ld_dx, ld_dout, v->ld_w);
}

/* out (N, OC; ld_out) = beta·out + x·Wᵀ + bias + LoRA of every adapted member.
 * concat groups: x (N, ld_x) has the input in columns [0, IC) and receives xa = drop(x)·Aᵀ in the
 * columns after it (member j of the adapted ones at IC + j·R); o, down: xa (N, R) receives it.
 * An NF4 group cannot hold s·B in its 4-bit weight: its members' frozen products run alone and
 * each LoRA B product accumulates into its output (beta = 1), xa still one stacked GEMM. */
static void group_forward(fl_model *m, int l, const group_view *v, void *out, int ld_out, float beta, void *x, int ld_x,
                          void *xa, size_t N) {
    const fl_backend *be = m->be;
    const fl_lora_layer *lora = &m->lora.layers[l];
    int R = m->lora_cfg.rank;
    float s = fl_lora_scale(&m->lora_cfg);
    if (v->concat && m->fused) {
        if (v->R_g > 0) {
            const void *a_stack = NULL;   /* the first adapted member's lora_a: the group's A's follow it */
            for (fl_proj p = v->first; p < v->end && !a_stack; p++)
                if (lora->a[p]) a_stack = lora_compute(m, lora->a[p]);
            if (!v->dropout) {
                be->matmul_forward(act_at(m, x, (size_t)v->IC), x, a_stack, NULL, 1.0f, 0.0f, N, v->IC, v->R_g, ld_x,
                                   ld_x, v->IC);
            } else {
                int j = 0;
                for (fl_proj p = v->first; p < v->end; p++)
                    if (lora->a[p]) member_xa(m, v, l, p, x, ld_x, act_at(m, x, (size_t)v->IC + (size_t)j++ * R), ld_x, N);
            }
        }
        if (!v->nf4) {
            be->matmul_forward(out, x, v->w, v->bias, 1.0f, beta, N, v->IC + v->R_g, v->OC, ld_out, ld_x, v->ld_w);
            return;
        }
        int j = 0;
        for (fl_proj p = v->first; p < v->end; p++) {
            int in, oc;
            fl_proj_dims(&m->cfg, p, &in, &oc);
            void *out_p = act_at(m, out, (size_t)member_offset(&m->cfg, p));
            member_base_forward(m, v, p, out_p, ld_out, beta, x, ld_x, N);
            if (v->R_g && lora->a[p])
                be->matmul_forward(out_p, act_at(m, x, (size_t)v->IC + (size_t)j++ * R), lora_compute(m, lora->b[p]),
                                   NULL, s, 1.0f, N, R, oc, ld_out, ld_x, R);
        }
        return;
    }
    int j = 0;
    for (fl_proj p = v->first; p < v->end; p++) {
        int in, oc;
        fl_proj_dims(&m->cfg, p, &in, &oc);
        void *out_p = act_at(m, out, (size_t)member_offset(&m->cfg, p));
        member_base_forward(m, v, p, out_p, ld_out, beta, x, ld_x, N);
        if (!v->R_g || !lora->a[p]) continue;
        int ld_xa = v->concat ? ld_x : R;
        void *xa_p = v->concat ? act_at(m, x, (size_t)v->IC + (size_t)j++ * R) : xa;
        member_xa(m, v, l, p, x, ld_x, xa_p, ld_xa, N);
        be->matmul_forward(out_p, xa_p, lora_compute(m, lora->b[p]), NULL, s, 1.0f, N, R, oc, ld_out, ld_xa, R);
    }
}

/* dx += LoRA input gradient of member p (or of the whole stack: p == FL_N_PROJ): dxa (N, cols;
 * ld_dxa) · A (cols, IC), through p's dropout mask when dropout is on. */
static void lora_dx(fl_model *m, const group_view *v, int l, fl_proj p, void *dx, int ld_dx, const void *dxa,
                    int ld_dxa, const void *lora_a, int cols, float alpha, size_t N) {
    const fl_backend *be = m->be;
    if (!v->dropout) {
        be->matmul_backward_input(dx, dxa, lora_a, alpha, 1.0f, N, v->IC, cols, ld_dx, ld_dxa, v->IC);
        return;
    }
    be->matmul_backward_input(m->act.lora_tmp, dxa, lora_a, alpha, 0.0f, N, v->IC, cols, v->IC, ld_dxa, v->IC);
    be->dropout(m->act.lora_tmp, m->act.lora_tmp, m->lora_cfg.dropout, dropout_stream(m, l, p), N, v->IC, v->IC);
    be->add_inplace(dx, m->act.lora_tmp, N, v->IC, ld_dx);
}

/* A concat group's [dx | dxa] = dout·[W | s·B]: dx (N, IC; ld_dx) when need_dx, and with LoRA dxa
 * (N, R_g) in dx's columns after IC — one GEMM over the K-concatenated weight, or for NF4 each
 * member's frozen input gradient then its dxa_p = s·dout_p·B_p. */
static void concat_backward_input(fl_model *m, int l, const group_view *v, void *dx, int ld_dx, int need_dx,
                                  const void *dout, int ld_dout, size_t N) {
    const fl_backend *be = m->be;
    const fl_lora_layer *lora = &m->lora.layers[l];
    int R = m->lora_cfg.rank;
    if (!v->nf4) {
        if (need_dx)
            be->matmul_backward_input(dx, dout, v->w, 1.0f, 0.0f, N, v->IC + v->R_g, v->OC, ld_dx, ld_dout, v->ld_w);
        else if (v->R_g)
            be->matmul_backward_input(act_at(m, dx, (size_t)v->IC), dout, weight_at(m, v->w, (size_t)v->IC), 1.0f, 0.0f,
                                      N, v->R_g, v->OC, ld_dx, ld_dout, v->ld_w);
        return;
    }
    int j = 0, first = 1;
    for (fl_proj p = v->first; p < v->end; p++) {
        int in, oc;
        fl_proj_dims(&m->cfg, p, &in, &oc);
        const void *dout_p = act_at(m, dout, (size_t)member_offset(&m->cfg, p));
        if (need_dx) member_base_backward(m, v, p, dx, ld_dx, first ? 0.0f : 1.0f, dout_p, ld_dout, N);
        first = 0;
        if (v->R_g && lora->a[p])
            be->matmul_backward_input(act_at(m, dx, (size_t)v->IC + (size_t)j++ * R), dout_p, lora_compute(m, lora->b[p]),
                                      fl_lora_scale(&m->lora_cfg), 0.0f, N, R, oc, ld_dx, ld_dout, R);
    }
}

/* Backward of group_forward: LoRA gradients +=; when need_dx, dx (N, IC; ld_dx) = the input
 * gradient. concat groups: dx must have room for the R_g columns after IC (they receive dxa),
 * xa is in x's columns after IC; o, down: xa (N, R). */
static void group_backward(fl_model *m, int l, const group_view *v, void *dx, int ld_dx, int need_dx, const void *dout,
                           int ld_dout, const void *x, int ld_x, const void *xa, size_t N) {
    const fl_backend *be = m->be;
    const fl_lora_layer *lora = &m->lora.layers[l];
    const fl_lora_layer *grad = &m->grads.layers[l];
    int R = m->lora_cfg.rank;
    float s = fl_lora_scale(&m->lora_cfg);
    int ld_d;
    if (v->concat && m->fused) {
        /* [dx | dxa] = dout · [W | s·B]  (only dxa when dx is not needed) */
        concat_backward_input(m, l, v, dx, ld_dx, need_dx, dout, ld_dout, N);
        if (!v->R_g) return;
        void *dxa = act_at(m, dx, (size_t)v->IC);
        int j = 0;
        fl_proj first_adapted = FL_N_PROJ;
        for (fl_proj p = v->first; p < v->end; p++) {
            if (!lora->a[p]) continue;
            if (first_adapted == FL_N_PROJ) first_adapted = p;
            int in, oc;
            fl_proj_dims(&m->cfg, p, &in, &oc);
            /* dB_p (OC_p, R) += s · dout_pᵀ · xa_p */
            be->matmul_backward_weight(grad->b[p], act_at(m, dout, (size_t)member_offset(&m->cfg, p)),
                                       act_at(m, x, (size_t)v->IC + (size_t)j * R), s, N, R, oc, ld_dout, ld_x);
            if (v->dropout) { /* dA_p += dxa_pᵀ · drop_p(x) */
                const void *xd = dropped_input(m, v, l, p, x, ld_x, N, &ld_d);
                be->matmul_backward_weight(grad->a[p], act_at(m, dxa, (size_t)j * R), xd, 1.0f, N, v->IC, R, ld_dx, ld_d);
                if (need_dx)
                    lora_dx(m, v, l, p, dx, ld_dx, act_at(m, dxa, (size_t)j * R), ld_dx, lora_compute(m, lora->a[p]), R,
                            1.0f, N);
            }
            j++;
        }
        if (!v->dropout) { /* the stacked A: dA += dxaᵀ · x, dx += dxa · A */
            be->matmul_backward_weight(grad->a[first_adapted], dxa, x, 1.0f, N, v->IC, v->R_g, ld_dx, ld_x);
            if (need_dx)
                lora_dx(m, v, l, FL_N_PROJ, dx, ld_dx, dxa, ld_dx, lora_compute(m, lora->a[first_adapted]), v->R_g, 1.0f,
                        N);
        }
        return;
    }
    int j = 0, first = 1;
    for (fl_proj p = v->first; p < v->end; p++) {
        int in, oc;
        fl_proj_dims(&m->cfg, p, &in, &oc);
        const void *dout_p = act_at(m, dout, (size_t)member_offset(&m->cfg, p));
        if (need_dx) member_base_backward(m, v, p, dx, ld_dx, first ? 0.0f : 1.0f, dout_p, ld_dout, N);
        first = 0;
        if (!v->R_g || !lora->a[p]) continue;
        int ld_xa = v->concat ? ld_x : R;
        const void *xa_p = v->concat ? act_at(m, x, (size_t)v->IC + (size_t)j++ * R) : xa;
        /* dB_p += s · dout_pᵀ · xa_p;  dxa (N, R) = dout_p · B_p;  dA_p += s · dxaᵀ · drop(x);  dx += s · dxa · A_p */
        be->matmul_backward_weight(grad->b[p], dout_p, xa_p, s, N, R, oc, ld_dout, ld_xa);
        be->matmul_backward_input(m->act.dlora_xa, dout_p, lora_compute(m, lora->b[p]), 1.0f, 0.0f, N, R, oc, R, ld_dout,
                                  R);
        const void *xd = dropped_input(m, v, l, p, x, ld_x, N, &ld_d);
        be->matmul_backward_weight(grad->a[p], m->act.dlora_xa, xd, s, N, v->IC, R, R, ld_d);
        if (need_dx) lora_dx(m, v, l, p, dx, ld_dx, m->act.dlora_xa, R, lora_compute(m, lora->a[p]), R, s, N);
    }
}

/* The s·B compute copies of the fused groups' members, one block each: member p's lora_b (OC_p, R)
 * into rows [member_offset, +OC_p) of its group's weight, columns IC + j·R for the j-th adapted
 * member (block-diagonal). Only pointers: built once, refreshed by one cast_to_weight_2d call. */
static void build_cast_blocks(fl_model *m) {
    int n = 0, R = m->lora_cfg.rank;
    m->cast_blocks = fl_calloc((size_t)m->cfg.n_layers * FL_N_PROJ + 1, sizeof *m->cast_blocks);
    for (int l = 0; l < m->cfg.n_layers; l++)
        for (int g = 0; g < FL_N_GROUPS; g++) {
            group_view v = group_at(m, l, (fl_group)g, 1);
            if (!v.concat || v.nf4) continue;   /* an NF4 weight has no room for s·B: its B product runs alone */
            int j = 0;
            for (fl_proj p = v.first; p < v.end; p++) {
                if (!m->lora.layers[l].b[p]) continue;
                int in, oc;
                fl_proj_dims(&m->cfg, p, &in, &oc);
                m->cast_blocks[n++] = (fl_cast_block){
                    .dst = weight_at(m, v.w, (size_t)member_offset(&m->cfg, p) * v.ld_w + (size_t)v.IC + (size_t)j++ * R),
                    .src = m->lora.layers[l].b[p], .rows = (size_t)oc, .ld = v.ld_w};
            }
        }
    m->n_cast_blocks = n;
}

/* The LoRA compute copies: the flat weight-typed copy of every matrix (flat), and s·B of the fused
 * groups' members in their weights' reserved columns. */
static void refresh_lora_copies(fl_model *m, int flat) {
    const fl_backend *be = m->be;
    if (flat) be->cast_to_weight(m->lora_w, m->lora.data, m->lora.n);
    if (m->n_cast_blocks)
        be->cast_to_weight_2d(m->cast_blocks, m->n_cast_blocks, fl_lora_scale(&m->lora_cfg), m->lora_cfg.rank);
}

void fl_model_sync_lora(fl_model *m) { refresh_lora_copies(m, 1); }

void fl_model_project(fl_model *m, int l, fl_group g, void *out, int ld_out, float beta, void *x, int ld_x, void *xa,
                      size_t N, int use_lora) {
    int was_training = m->training;
    m->training = 0; /* decoding: no dropout */
    group_view v = group_at(m, l, g, use_lora);
    group_forward(m, l, &v, out, ld_out, beta, x, ld_x, xa, N);
    m->training = was_training;
}

/* ---- forward ------------------------------------------------------------------------------- */

/* ---- a step's inputs, staged in host memory the backend may record uploads from ----------------
 *
 * Everything a step reads from the host goes through one block of alloc_host memory (runner.host):
 * the scalars (fl_step_scalars: grad_scale, lr, AdamW's bias corrections; results zeroed), then one
 * slot per micro-batch: its ids, targets, positions and seg_start (4, N) and its dropout streams
 * (L, FL_N_PROJ). Uploads come from these fixed addresses, so a recorded step replays with whatever
 * the host staged for the new step. Uploads from pinned memory run when the stream reaches them, so
 * the host writes the block only when none is pending (stage_begin; normally the previous step's
 * read-back has waited already). */

#define STAGE_ALIGN(x) (((x) + 63) / 64 * 64)
#define MAX_RECORDINGS 8

typedef struct {
    int B, T, n_micro, training, fused;
    uint64_t active;          /* bit i: micro-batch i has counted tokens and runs */
    float beta1, beta2, eps, weight_decay, max_grad_norm;
} step_key;

struct fl_step_runner {
    char *host;               /* alloc_host: fl_step_scalars, then `slots` slots of slot_bytes */
    size_t slot_bytes, N;
    int slots;
    unsigned char *active;    /* (slots) 1: micro-batch i of the staged step runs here */
    int pending;              /* uploads from the block may not have run yet: wait before writing it */
    step_key keys[MAX_RECORDINGS];
    void *recordings[MAX_RECORDINGS];
    int n_recordings, record_failed, replayed;
};

static size_t stage_header_bytes(void) { return STAGE_ALIGN(sizeof(fl_step_scalars)); }
static fl_step_scalars *staged_scalars(fl_model *m) { return (fl_step_scalars *)m->runner->host; }
/* (4, N): ids, targets, pos, seg_start of slot i */
static int32_t *staged_batch(fl_model *m, int i) {
    return (int32_t *)(m->runner->host + stage_header_bytes() + (size_t)i * m->runner->slot_bytes);
}
/* (L, FL_N_PROJ) dropout streams of slot i */
static uint64_t *staged_streams(fl_model *m, int i) {
    return (uint64_t *)((char *)staged_batch(m, i) + STAGE_ALIGN(4 * m->runner->N * sizeof(int32_t)));
}

static struct fl_step_runner *new_runner(void) { return fl_calloc(1, sizeof(struct fl_step_runner)); }

static void drop_recordings(fl_model *m) {
    struct fl_step_runner *r = m->runner;
    if (!r) return;
    for (int i = 0; i < r->n_recordings; i++) m->be->capture_free(r->recordings[i]);
    r->n_recordings = 0;
}

static void free_runner(fl_model *m) {
    drop_recordings(m);
    if (m->runner->host) {
        if (m->be->free_host) m->be->free_host(m->runner->host);
        else free(m->runner->host);
    }
    free(m->runner->active);
    free(m->runner);
    m->runner = NULL;
}

/* Before the host writes the staged block: no upload from it is still queued. */
static void stage_begin(fl_model *m) {
    if (!m->runner->pending) return;
    m->be->synchronize();
    m->runner->pending = 0;
}

/* Room for `slots` micro-batches of N tokens (a new block drops the recordings that name the old),
 * ready to be written. */
static void ensure_staging(fl_model *m, int slots, size_t N) {
    struct fl_step_runner *r = m->runner;
    stage_begin(m);
    if (r->host && r->slots >= slots && r->N == N) return;
    drop_recordings(m);
    if (r->host) {
        if (m->be->free_host) m->be->free_host(r->host);
        else free(r->host);
    }
    r->slots = slots > r->slots ? slots : r->slots;
    r->N = N;
    free(r->active);
    r->active = fl_calloc((size_t)r->slots, 1);
    r->slot_bytes = STAGE_ALIGN(4 * N * sizeof(int32_t)) + STAGE_ALIGN(sizeof(uint64_t) * (size_t)m->cfg.n_layers * FL_N_PROJ);
    size_t bytes = stage_header_bytes() + (size_t)r->slots * r->slot_bytes;
    r->host = m->be->alloc_host ? m->be->alloc_host(bytes) : fl_calloc(1, bytes);
}

/* The batch into slot i, with the dropout streams of forward pass `micro_step`. */
static void stage_batch(fl_model *m, int i, const fl_batch *batch, uint64_t micro_step) {
    size_t N = (size_t)batch->B * batch->T;
    int32_t *ids = staged_batch(m, i), *targets = ids + N, *pos = ids + 2 * N, *seg = ids + 3 * N;
    memcpy(ids, batch->ids, sizeof(int32_t) * N);
    memcpy(targets, batch->targets, sizeof(int32_t) * N);
    for (size_t t = 0; t < N; t++) {
        pos[t] = batch->pos ? batch->pos[t] : (int32_t)(t % (size_t)batch->T);
        seg[t] = batch->seg_start ? batch->seg_start[t] : 0;
    }
    if (m->lora_cfg.dropout > 0.0f) {
        uint64_t *streams = staged_streams(m, i);
        for (int l = 0; l < m->cfg.n_layers; l++)
            for (int p = 0; p < FL_N_PROJ; p++) streams[(size_t)l * FL_N_PROJ + p] = dropout_stream_of(m, micro_step, l, p);
    }
}

/* Slot i into the activations' ids, targets, pos, seg_start (adjacent in the table: one copy when
 * nothing pads them) and the dropout streams. */
static void upload_slot(fl_model *m, int i) {
    const fl_backend *be = m->be;
    fl_activations *a = &m->act;
    size_t N = (size_t)a->B * a->T, bytes = sizeof(int32_t) * N;
    const int32_t *src = staged_batch(m, i);
    if (a->targets == a->ids + N && a->pos == a->ids + 2 * N && a->seg_start == a->ids + 3 * N) {
        be->upload(a->ids, src, 4 * bytes);
    } else {
        be->upload(a->ids, src, bytes);
        be->upload(a->targets, src + N, bytes);
        be->upload(a->pos, src + 2 * N, bytes);
        be->upload(a->seg_start, src + 3 * N, bytes);
    }
    if (m->lora_cfg.dropout > 0.0f)
        be->upload(m->dropout_streams, staged_streams(m, i), sizeof(uint64_t) * (size_t)m->cfg.n_layers * FL_N_PROJ);
    m->runner->pending = 1;
}

/* The staged scalars' first `bytes` into m->sc: offsetof(grad_sumsq) at a step's start (the inputs,
 * and zeros for the loss sums), offsetof(clip_scale) for the inputs alone. */
static void upload_scalars(fl_model *m, size_t bytes) {
    m->be->upload(m->sc, staged_scalars(m), bytes);
    m->runner->pending = 1;
}

/* The step's scalars to the host: waits for everything queued, the uploads too. */
static void read_scalars(fl_model *m, fl_step_scalars *out) {
    m->be->download(out, m->sc, sizeof *out);
    m->runner->pending = 0;
}

static fl_step_stats stats_of(const fl_step_scalars *sc) {
    fl_step_stats st = {.loss_sum = sc->loss_sum, .n_counted = (size_t)sc->n_counted};
    st.loss = st.n_counted ? st.loss_sum / (double)st.n_counted : 0.0;
    return st;
}

/* One batch for the forward passes outside a step (fl_model_forward, eval, logits): slot 0, the loss
 * sums zeroed, grad_scale set. */
static void load_batch(fl_model *m, const fl_batch *batch, float grad_scale) {
    ensure_activations(m, batch->B, batch->T);
    ensure_staging(m, 1, (size_t)batch->B * batch->T);
    staged_scalars(m)->grad_scale = grad_scale;
    stage_batch(m, 0, batch, m->micro_step);
    upload_scalars(m, offsetof(fl_step_scalars, grad_sumsq));
    upload_slot(m, 0);
}

static size_t counted_tokens(const fl_batch *b) {
    size_t N = (size_t)b->B * b->T, n = 0;
    for (size_t t = 0; t < N; t++) n += b->targets[t] >= 0;
    return n;
}

/* Per-layer views of the saved activations (activations.h) and their row strides. */
typedef struct {
    void *h, *h_mid, *h_next;   /* (N, C) residual stream: layer input, after attention, layer output */
    void *x_attn, *x_mlp;       /* (N, ld_xa) / (N, ld_xm): norm outputs | x·Aᵀ */
    void *qkv, *att;            /* (N, QKV), (N, QD) */
    void *gate_up;              /* (N, 2FF) */
    void *xa_o, *xa_down;       /* (N, R) */
    float *rstd_attn, *rstd_mlp, *lse;
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
    return v;
}

/* Row strides of x_attn and x_mlp (activations.h: room for 3R and 2R columns of x·Aᵀ). */
static int ld_x_attn(const fl_model *m) { return m->cfg.hidden_size + 3 * (m->lora_cfg.rank > 0 ? m->lora_cfg.rank : 1); }
static int ld_x_mlp(const fl_model *m) { return m->cfg.hidden_size + 2 * (m->lora_cfg.rank > 0 ? m->lora_cfg.rank : 1); }

/* Layer l's forward from its input h (residual row l) into its activation slot. `recompute`: the
 * backward's rerun (engine recompute) — the same ops on the same input, so every saved tensor comes
 * out bit for bit as in the forward; only the layer's output h_next, which the backward does not
 * read, is not formed again (the down projection's frozen GEMM is skipped; its x·Aᵀ is not). */
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

    be->rmsnorm_forward(v.x_attn, v.rstd_attn, v.h, w->attn_norm, c->rms_norm_eps, N, C, ld_xa);
    group_forward(m, l, &qkv, v.qkv, QKV, 0.0f, v.x_attn, ld_xa, NULL, N);
    be->rope_forward(v.qkv, a->pos, m->inv_freq, N, NH + NKV, HS, QKV);   /* q and k */
    be->attention_forward(v.att, v.lse, v.qkv, act_at(m, v.qkv, (size_t)QD), act_at(m, v.qkv, (size_t)(QD + KVD)),
                          a->seg_start, B, T, NH, NKV, HS, QKV);
    be->copy(v.h_mid, v.h, N * C * be->act_size);
    group_forward(m, l, &o, v.h_mid, C, 1.0f, v.att, QD, v.xa_o, N);

    be->rmsnorm_forward(v.x_mlp, v.rstd_mlp, v.h_mid, w->mlp_norm, c->rms_norm_eps, N, C, ld_xm);
    group_forward(m, l, &gate_up, v.gate_up, 2 * FF, 0.0f, v.x_mlp, ld_xm, NULL, N);
    be->swiglu_forward(a->wide, v.gate_up, N, FF);
    if (recompute) {
        group_lora_xa(m, l, &down, a->wide, FF, v.xa_down, N);
        return;
    }
    be->copy(v.h_next, v.h_mid, N * C * be->act_size);
    group_forward(m, l, &down, v.h_next, C, 1.0f, a->wide, FF, v.xa_down, N);
}

/* Runs the layers and the final norm; leaves the normalized output in act.x_final. */
static void forward_layers(fl_model *m, int B, int T) {
    const fl_model_config *c = &m->cfg;
    fl_activations *a = &m->act;
    size_t N = (size_t)B * T;
    int C = c->hidden_size;
    m->be->embedding_forward(a->residual, a->ids, m->base.embed, N, C);
    for (int l = 0; l < c->n_layers; l++) layer_forward(m, l, B, T, 0);
    m->be->rmsnorm_forward(a->x_final, a->rstd_final, act_at(m, a->residual, (size_t)c->n_layers * N * C),
                           m->base.final_norm, c->rms_norm_eps, N, C, C);
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
    m->be->lm_head_loss(m->act.dx_final, NULL, m->sc, m->act.x_final, m->act.targets, m->base.lm_head, N,
                        m->cfg.hidden_size, m->cfg.vocab_size);
    m->have_forward = 1;
    return fl_model_step_stats(m);
}

fl_step_stats fl_model_eval_loss(fl_model *m, const fl_batch *batch) {
    int was_training = m->training;
    m->training = 0;
    load_batch(m, batch, 0.0f);
    forward_layers(m, batch->B, batch->T);
    size_t N = (size_t)batch->B * batch->T;
    m->be->lm_head_loss(NULL, NULL, m->sc, m->act.x_final, m->act.targets, m->base.lm_head, N, m->cfg.hidden_size,
                        m->cfg.vocab_size);
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
    be->lm_head_loss(NULL, logits, NULL, m->act.x_final, m->act.targets, m->base.lm_head, N, m->cfg.hidden_size,
                     m->cfg.vocab_size);
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
    be->rmsnorm_backward(a->dresidual, a->dx_final, act_at(m, a->residual, (size_t)c->n_layers * N * C),
                         m->base.final_norm, a->rstd_final, N, C, C);
    for (int l = c->n_layers - 1; l >= 0; l--) {
        /* recompute: the slot still holds the last layer from the forward; rerun every other one */
        if (a->recompute && l < c->n_layers - 1) layer_forward(m, l, B, T, 1);
        const fl_layer_weights *w = &m->base.layers[l];
        layer_acts v = layer_acts_at(m, l);
        group_view qkv = group_at(m, l, FL_GROUP_QKV, 1), o = group_at(m, l, FL_GROUP_O, 1);
        group_view gate_up = group_at(m, l, FL_GROUP_GATE_UP, 1), down = group_at(m, l, FL_GROUP_DOWN, 1);

        /* MLP: h_next = h_mid + down(swiglu(gate_up(x_mlp))) */
        be->swiglu_forward(a->wide, v.gate_up, N, FF); /* recompute the down input */
        group_backward(m, l, &down, a->dwide, FF, 1, a->dresidual, C, a->wide, FF, v.xa_down, N);
        be->swiglu_backward(a->dgate_up, a->dwide, v.gate_up, N, FF);
        group_backward(m, l, &gate_up, a->dx, ld_xm, 1, a->dgate_up, 2 * FF, v.x_mlp, ld_xm, NULL, N);
        be->rmsnorm_backward(a->dresidual, a->dx, v.h_mid, w->mlp_norm, v.rstd_mlp, N, C, ld_xm);

        /* attention: h_mid = h + o(attn(rope(q, k), v)), q/k/v = qkv(x_attn) */
        group_backward(m, l, &o, a->dwide, QD, 1, a->dresidual, C, v.att, QD, v.xa_o, N);
        be->attention_backward(a->dqkv, act_at(m, a->dqkv, (size_t)QD), act_at(m, a->dqkv, (size_t)(QD + KVD)), a->dwide,
                               v.att, v.lse, v.qkv, act_at(m, v.qkv, (size_t)QD), act_at(m, v.qkv, (size_t)(QD + KVD)),
                               a->seg_start, B, T, NH, NKV, HS, QKV);
        be->rope_backward(a->dqkv, a->pos, m->inv_freq, N, NH + NKV, HS, QKV);
        /* Layer 0's input gradient feeds only the frozen embedding: skip it. */
        group_backward(m, l, &qkv, a->dx, ld_xa, l > 0, a->dqkv, QKV, v.x_attn, ld_xa, NULL, N);
        if (l > 0) be->rmsnorm_backward(a->dresidual, a->dx, v.h, w->attn_norm, v.rstd_attn, N, C, ld_xa);
    }
    m->have_forward = 0;
}

/* ---- optimizer ----------------------------------------------------------------------------- */

void fl_model_zero_grads(fl_model *m) {
    m->be->zero(m->grads.data, m->grads.n * sizeof(float));
    m->grad_norm_valid = 0;
}

double fl_model_grad_norm(fl_model *m) {
    if (!m->grad_norm_valid) {
        m->be->sum_squares(&m->sc->grad_sumsq, m->grads.data, m->grads.n);
        fl_step_scalars sc;
        read_scalars(m, &sc);
        m->grad_norm = sqrt(sc.grad_sumsq);
        m->grad_norm_valid = 1;
    }
    return m->grad_norm;
}

/* AdamW's factors of step t into the staged scalars (torch.optim.AdamW's bias corrections, in double
 * as torch computes them on the host, rounded to f32). */
static void stage_adamw(fl_model *m, const fl_adamw_config *opt, int t) {
    fl_step_scalars *h = staged_scalars(m);
    double bias1 = 1.0 - pow(opt->beta1, t), bias2 = 1.0 - pow(opt->beta2, t);
    h->lr = opt->lr;
    h->adam_step_size = (float)(opt->lr / bias1);
    h->adam_bias2_sqrt = (float)sqrt(bias2);
}

/* The update on the backend, from the staged inputs already uploaded: the clip factor from Σg²
 * (computed here unless `have_sumsq`), AdamW, the compute copies, zeroed gradients. */
static void update_ops(fl_model *m, const fl_adamw_config *opt, int have_sumsq) {
    const fl_backend *be = m->be;
    if (!have_sumsq) be->sum_squares(&m->sc->grad_sumsq, m->grads.data, m->grads.n);
    be->grad_clip_scale(m->sc, opt->max_grad_norm);
    void *lora_w = m->lora_w == (void *)m->lora.data ? NULL : m->lora_w;
    be->adamw_update(m->lora.data, lora_w, m->adam_m.data, m->adam_v.data, m->grads.data, m->sc, opt->beta1, opt->beta2,
                     opt->eps, opt->weight_decay, m->lora.n);
    refresh_lora_copies(m, 0); /* adamw_update wrote the flat copy */
    be->zero(m->grads.data, m->grads.n * sizeof(float));
}

double fl_model_optimizer_step(fl_model *m, const fl_adamw_config *opt) {
    if (!m->runner->host) ensure_staging(m, 1, 1);
    stage_begin(m);
    int had_norm = m->grad_norm_valid;
    stage_adamw(m, opt, m->adam_step + 1);
    upload_scalars(m, offsetof(fl_step_scalars, clip_scale));
    update_ops(m, opt, had_norm);
    m->adam_step++;
    double norm = m->grad_norm;
    if (!had_norm) {
        fl_step_scalars sc;
        read_scalars(m, &sc);
        norm = sqrt(sc.grad_sumsq);
    }
    m->grad_norm_valid = 0;
    return norm;
}

/* ---- whole steps ----------------------------------------------------------------------------- */

fl_step_stats fl_model_step_stats(fl_model *m) {
    fl_step_scalars sc;
    read_scalars(m, &sc);
    return stats_of(&sc);
}

/* Stages the micro-batches of this rank's share of a step (slot i = micro-batch i) and the LM head's
 * grad_scale; the key says which run. */
static step_key stage_step(fl_model *m, const fl_batch *micro, int n_micro, int rank, int ranks) {
    step_key key;
    memset(&key, 0, sizeof key); /* padding takes part in memcmp */
    key.B = micro[0].B;
    key.T = micro[0].T;
    key.n_micro = n_micro;
    key.training = m->training;
    key.fused = m->fused;
    ensure_activations(m, key.B, key.T);
    ensure_staging(m, n_micro, (size_t)key.B * key.T);
    struct fl_step_runner *r = m->runner;
    size_t total = 0;
    for (int i = 0; i < n_micro; i++) total += counted_tokens(&micro[i]);
    fl_step_scalars *h = staged_scalars(m);
    h->grad_scale = total ? 1.0f / (float)total : 0.0f;
    for (int i = 0; i < n_micro; i++) {
        if (micro[i].B != key.B || micro[i].T != key.T) fl_die("the micro-batches of one step differ in shape");
        /* a micro-batch with no counted token has nothing to contribute */
        r->active[i] = i % ranks == rank && counted_tokens(&micro[i]) > 0;
        if (!r->active[i]) continue;
        stage_batch(m, i, &micro[i], m->micro_step + (uint64_t)i + 1);
        if (i < 64) key.active |= 1ull << i;
        else key.n_micro = -1; /* too many to name: never recorded */
    }
    return key;
}

/* Forward, LM head and backward of staged micro-batch i (the loss accumulates in m->sc). */
static void micro_ops(fl_model *m, int i) {
    upload_slot(m, i);
    forward_layers(m, m->act.B, m->act.T);
    m->be->lm_head_loss(m->act.dx_final, NULL, m->sc, m->act.x_final, m->act.targets, m->base.lm_head,
                        (size_t)m->act.B * m->act.T, m->cfg.hidden_size, m->cfg.vocab_size);
    m->have_forward = 1;
    fl_model_backward(m);
}

/* The staged inputs up (the loss sums zeroed), then every staged micro-batch. */
static void accumulate_ops(fl_model *m, int n_micro) {
    upload_scalars(m, offsetof(fl_step_scalars, grad_sumsq));
    for (int i = 0; i < n_micro; i++)
        if (m->runner->active[i]) micro_ops(m, i);
}

void fl_model_accumulate(fl_model *m, const fl_batch *micro, int n_micro, int rank, int ranks) {
    if (n_micro < 1) return;
    stage_step(m, micro, n_micro, rank, ranks);
    accumulate_ops(m, n_micro);
    m->micro_step += (uint64_t)n_micro;
}

/* Every op of a staged step, in order: what a recording holds. */
static void step_ops(fl_model *m, int n_micro, const fl_adamw_config *opt) {
    accumulate_ops(m, n_micro);
    update_ops(m, opt, 0);
}

/* Records the step just run (same key, same staged addresses) for later steps to replay. */
static void record_step(fl_model *m, const step_key *key, int n_micro, const fl_adamw_config *opt) {
    struct fl_step_runner *r = m->runner;
    const fl_backend *be = m->be;
    if (!m->graphs || !be->capture_begin || r->record_failed || r->n_recordings == MAX_RECORDINGS || key->n_micro < 0)
        return;
    if (be->capture_begin() != 0) return;
    step_ops(m, n_micro, opt);
    void *rec = be->capture_end();
    if (!rec) {
        r->record_failed = 1;
        fprintf(stderr, "fastlora: recording a training step failed; every step runs op by op\n");
        return;
    }
    r->keys[r->n_recordings] = *key;
    r->recordings[r->n_recordings++] = rec;
}

fl_step_stats fl_model_train_step(fl_model *m, const fl_batch *micro, int n_micro, const fl_adamw_config *opt,
                                  double *grad_norm) {
    struct fl_step_runner *r = m->runner;
    if (n_micro < 1) fl_die("fl_model_train_step: a step needs at least one micro-batch");
    step_key key = stage_step(m, micro, n_micro, 0, 1);
    key.beta1 = opt->beta1;
    key.beta2 = opt->beta2;
    key.eps = opt->eps;
    key.weight_decay = opt->weight_decay;
    key.max_grad_norm = opt->max_grad_norm;
    stage_adamw(m, opt, m->adam_step + 1);
    void *rec = NULL;
    for (int i = 0; i < r->n_recordings && !rec; i++)
        if (!memcmp(&r->keys[i], &key, sizeof key)) rec = r->recordings[i];
    if (rec && m->be->capture_replay(rec) != 0) {
        /* stale: a backend buffer it points at was freed since it was recorded; every recording
         * made before is too. Drop them all; this step runs op by op and is recorded afresh */
        fprintf(stderr, "fastlora: a recorded step went stale (backend scratch memory grew); re-recording\n");
        drop_recordings(m);
        rec = NULL;
    } else if (rec) {
        r->pending = 1;
        r->replayed++;
    }
    if (!rec) {
        step_ops(m, n_micro, opt);
        record_step(m, &key, n_micro, opt);
    }
    m->micro_step += (uint64_t)n_micro;
    m->adam_step++;
    m->grad_norm_valid = 0;
    m->have_forward = 0;
    fl_step_scalars sc;
    read_scalars(m, &sc);
    if (grad_norm) *grad_norm = sqrt(sc.grad_sumsq);
    return stats_of(&sc);
}

int fl_model_replayed_steps(const fl_model *m) { return m->runner ? m->runner->replayed : 0; }

void fl_model_print_memory(const fl_model *m, int B, int T, FILE *out) {
    const double MiB = 1048576.0;
    size_t lora = m->lora.n * sizeof(float);
    size_t lora_w = m->lora_w == (void *)m->lora.data ? 0 : m->lora.n * m->be->weight_size;
    size_t act = fl_activations_bytes(&m->cfg, m->lora_cfg.rank, B, T, m->be->act_size, !!m->recompute);
    fprintf(out, "  memory plan: base weights %.1f MiB, LoRA %.1f MiB (+%.1f compute copy), grads %.1f MiB, "
                 "AdamW m+v %.1f MiB, activations %.1f MiB for %d x %d\n",
            m->base.bytes / MiB, lora / MiB, lora_w / MiB, lora / MiB, 2 * lora / MiB, act / MiB, B, T);
}
