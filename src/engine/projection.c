/* projection.c — one projection group of a layer, base + LoRA, forward and backward, over the
 * backend; the LoRA compute copies (the flat weight-typed copy, s·B in the fused weights) and
 * fl_model_project for the decoder. Not the layer walk (model.c): a group is told its input, output
 * and saved x·Aᵀ. LoRA gradients accumulate (+=); input gradients are assigned unless beta says. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/error.h"
#include "engine/model_internal.h"

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
 * tests compare the fused path with. A fused checkpoint module (Phi-3's qkv_proj, gate_up_proj:
 * model/projections.h) is one adapted member spanning the group's rows: its s·B is one dense block, and
 * in the per-member paths its B product runs after the group's last frozen product (lora_after). */


/* The weight-typed compute copy of a LoRA matrix, from its f32 master view. */
static inline const void *lora_compute(const fl_model *m, const float *master) {
    return (const char *)m->lora_w + (size_t)(master - m->lora.data) * m->be->weight_size;
}

/* The current micro-batch's stream of (l, p) in backend memory (uploaded with the batch). */
static const uint64_t *dropout_stream(const fl_model *m, int l, fl_proj p) {
    return m->dropout_streams + (size_t)l * FL_N_PROJ + p;
}

group_view group_at(const fl_model *m, int l, fl_group g, int use_lora) {
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
    v.R_g = use_lora ? fl_lora_group_rank(c, &m->lora_cfg, g) : 0;
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
void group_lora_xa(fl_model *m, int l, const group_view *v, const void *x, int ld_x, void *xa, size_t N) {
    for (fl_proj p = v->first; p < v->end; p++)
        if (v->R_g && m->lora.layers[l].a[p]) member_xa(m, v, l, p, x, ld_x, xa, m->lora_cfg.rank, N);
}

/* out_p (N, OC_p; ld_out) = beta·out_p + x·W_pᵀ + bias_p: member p's frozen product — its rows of
 * the stacked weight, or its NF4 weight. out_p is the member's first output column. */
static void member_base_forward(fl_model *m, const group_view *v, fl_proj p, void *out_p, int ld_out, float beta,
                                const void *x, int ld_x, size_t N) {
    int in, oc, off = fl_proj_group_offset(&m->cfg, p);
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
        m->be->matmul_backward_input(dx, dout_p, weight_at(m, v->w, (size_t)fl_proj_group_offset(&m->cfg, p) * v->ld_w),
                                     1.0f, beta, N, v->IC, oc, ld_dx, ld_dout, v->ld_w);
}

/* Member p's columns of out (N, OC; ld_out), and *oc its width, holding beta·out + its frozen
 * product x·W_pᵀ + bias_p. */
static void *member_out(fl_model *m, const group_view *v, fl_proj p, void *out, int ld_out, float beta, const void *x,
                        int ld_x, size_t N, int *oc) {
    int in;
    fl_proj_dims(&m->cfg, p, &in, oc);
    void *out_p = act_at(m, out, (size_t)fl_proj_group_offset(&m->cfg, p));
    member_base_forward(m, v, p, out_p, ld_out, beta, x, ld_x, N);
    return out_p;
}

/* Member p's columns of dout (N, OC; ld_dout), and *oc its width; when need_dx its frozen input
 * gradient is added to dx first — assigned by the first member (*first, then cleared). */
static const void *member_dout(fl_model *m, const group_view *v, fl_proj p, void *dx, int ld_dx, int need_dx, int *first,
                               const void *dout, int ld_dout, size_t N, int *oc) {
    int in;
    fl_proj_dims(&m->cfg, p, &in, oc);
    const void *dout_p = act_at(m, dout, (size_t)fl_proj_group_offset(&m->cfg, p));
    if (need_dx) member_base_backward(m, v, p, dx, ld_dx, *first ? 0.0f : 1.0f, dout_p, ld_dout, N);
    *first = 0;
    return dout_p;
}

/* The module whose LoRA runs once member p's frozen product is in place: p's module when p is its
 * last member and it is adapted, else FL_N_PROJ. *off, *oc: the module's output columns in the group. */
static fl_proj lora_after(const fl_model *m, const group_view *v, fl_proj p, int *off, int *oc) {
    fl_proj h = fl_module_head(&m->cfg, p);
    if (!v->R_g || fl_module_last(&m->cfg, h) != p || !fl_lora_adapts(&m->cfg, &m->lora_cfg, h)) return FL_N_PROJ;
    int in;
    fl_module_dims(&m->cfg, h, &in, oc, off);
    return h;
}

/* out (N, OC; ld_out) = beta·out + x·Wᵀ + bias + LoRA of every adapted member.
 * concat groups: x (N, ld_x) has the input in columns [0, IC) and receives xa = drop(x)·Aᵀ in the
 * columns after it (member j of the adapted ones at IC + j·R); o, down: xa (N, R) receives it.
 * An NF4 group cannot hold s·B in its 4-bit weight: its members' frozen products run alone and
 * each LoRA B product accumulates into its output (beta = 1), xa still one stacked GEMM. */
void group_forward(fl_model *m, int l, const group_view *v, void *out, int ld_out, float beta, void *x, int ld_x,
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
            int oc, off;
            member_out(m, v, p, out, ld_out, beta, x, ld_x, N, &oc);
            fl_proj h = lora_after(m, v, p, &off, &oc);
            if (h != FL_N_PROJ)
                be->matmul_forward(act_at(m, out, (size_t)off), act_at(m, x, (size_t)v->IC + (size_t)j++ * R),
                                   lora_compute(m, lora->b[h]), NULL, s, 1.0f, N, R, oc, ld_out, ld_x, R);
        }
        return;
    }
    int j = 0;
    for (fl_proj p = v->first; p < v->end; p++) {
        int oc, off;
        member_out(m, v, p, out, ld_out, beta, x, ld_x, N, &oc);
        fl_proj h = lora_after(m, v, p, &off, &oc);
        if (h == FL_N_PROJ) continue;
        int ld_xa = v->concat ? ld_x : R;
        void *xa_p = v->concat ? act_at(m, x, (size_t)v->IC + (size_t)j++ * R) : xa;
        member_xa(m, v, l, h, x, ld_x, xa_p, ld_xa, N);
        be->matmul_forward(act_at(m, out, (size_t)off), xa_p, lora_compute(m, lora->b[h]), NULL, s, 1.0f, N, R, oc,
                           ld_out, ld_xa, R);
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
        int oc, off;
        member_dout(m, v, p, dx, ld_dx, need_dx, &first, dout, ld_dout, N, &oc);
        fl_proj h = lora_after(m, v, p, &off, &oc);
        if (h != FL_N_PROJ)
            be->matmul_backward_input(act_at(m, dx, (size_t)v->IC + (size_t)j++ * R), act_at(m, dout, (size_t)off),
                                      lora_compute(m, lora->b[h]), fl_lora_scale(&m->lora_cfg), 0.0f, N, R, oc, ld_dx,
                                      ld_dout, R);
    }
}

/* Backward of group_forward: LoRA gradients +=; when need_dx, dx (N, IC; ld_dx) = the input
 * gradient. concat groups: dx must have room for the R_g columns after IC (they receive dxa),
 * xa is in x's columns after IC; o, down: xa (N, R). */
void group_backward(fl_model *m, int l, const group_view *v, void *dx, int ld_dx, int need_dx, const void *dout,
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
            int in, oc, off;
            fl_module_dims(&m->cfg, p, &in, &oc, &off);
            /* dB_p (OC_p, R) += s · dout_pᵀ · xa_p */
            be->matmul_backward_weight(grad->b[p], act_at(m, dout, (size_t)off),
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
    for (fl_proj q = v->first; q < v->end; q++) {
        int oc, off;
        member_dout(m, v, q, dx, ld_dx, need_dx, &first, dout, ld_dout, N, &oc);
        fl_proj p = lora_after(m, v, q, &off, &oc);
        if (p == FL_N_PROJ) continue;
        const void *dout_p = act_at(m, dout, (size_t)off);
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
 * into rows [fl_proj_group_offset, +OC_p) of its group's weight, columns IC + j·R for the j-th adapted
 * member (block-diagonal). Only pointers: built once, refreshed by one cast_to_weight_2d call. */
void build_cast_blocks(fl_model *m) {
    int n = 0, R = m->lora_cfg.rank;
    m->cast_blocks = fl_calloc((size_t)m->cfg.n_layers * FL_N_PROJ + 1, sizeof *m->cast_blocks);
    for (int l = 0; l < m->cfg.n_layers; l++)
        for (int g = 0; g < FL_N_GROUPS; g++) {
            group_view v = group_at(m, l, (fl_group)g, 1);
            if (!v.concat || v.nf4) continue;   /* an NF4 weight has no room for s·B: its B product runs alone */
            int j = 0;
            for (fl_proj p = v.first; p < v.end; p++) {
                if (!m->lora.layers[l].b[p]) continue;
                int in, oc, off;
                fl_module_dims(&m->cfg, p, &in, &oc, &off);
                size_t row = (size_t)off;
                m->cast_blocks[n++] = (fl_cast_block){
                    .dst = weight_at(m, v.w, row * v.ld_w + (size_t)v.IC + (size_t)j++ * R),
                    .src = m->lora.layers[l].b[p], .rows = (size_t)oc, .ld = v.ld_w};
            }
        }
    m->n_cast_blocks = n;
}

/* The LoRA compute copies: the flat weight-typed copy of every matrix (flat), and s·B of the fused
 * groups' members in their weights' reserved columns. */
void refresh_lora_copies(fl_model *m, int flat) {
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
