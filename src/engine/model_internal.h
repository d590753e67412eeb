/* model_internal.h — what the engine's files share and nothing outside engine/ may use: element
 * offsets into act and weight buffers, the projection groups' views and their forward/backward
 * (projection.c), the step runner's staged inputs (staging.c) and the layer walk (model.c).
 *
 *   model.c       the forward and backward walk through the layers
 *   projection.c  one projection group: base + LoRA, fused or per member; the LoRA compute copies
 *   staging.c     a step's inputs in host memory, their uploads, the scalars' read-back
 *   step.c        the optimizer step and whole steps (recorded and replayed)
 *   model_init.c  construction, adapter loading, freeing, the memory line
 * Not a public API: engine/model.h is. Glossary as in model/config.h, N = B*T.
 */
#ifndef FL_ENGINE_MODEL_INTERNAL_H
#define FL_ENGINE_MODEL_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "engine/model.h"

/* Element `index` of an act buffer. */
static inline void *act_at(const fl_model *m, const void *base, size_t index) {
    return (char *)base + index * m->be->act_size;
}
/* Element `index` of a weight buffer. */
static inline void *weight_at(const fl_model *m, const void *base, size_t index) {
    return (char *)base + index * m->be->weight_size;
}

/* ---- projection groups (projection.c) ---- */

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

group_view group_at(const fl_model *m, int l, fl_group g, int use_lora);
/* out (N, OC; ld_out) = beta·out + x·Wᵀ + bias + LoRA of every adapted member (projection.c has
 * the layouts of x and xa). */
void group_forward(fl_model *m, int l, const group_view *v, void *out, int ld_out, float beta, void *x, int ld_x,
                   void *xa, size_t N);
/* Backward of group_forward: LoRA gradients +=; when need_dx, dx (N, IC; ld_dx) = the input gradient. */
void group_backward(fl_model *m, int l, const group_view *v, void *dx, int ld_dx, int need_dx, const void *dout,
                    int ld_dout, const void *x, int ld_x, const void *xa, size_t N);
/* o, down: xa (N, R) = drop(x)·Aᵀ of the adapted member, without the projection itself. */
void group_lora_xa(fl_model *m, int l, const group_view *v, const void *x, int ld_x, void *xa, size_t N);
/* The pointers of the s·B compute copies in the fused weights (m->cast_blocks), built once. */
void build_cast_blocks(fl_model *m);
/* The LoRA compute copies: the flat weight-typed copy when `flat`, and s·B in the fused weights. */
void refresh_lora_copies(fl_model *m, int flat);

/* ---- a step's inputs, staged in host memory (staging.c) ---- */

#define MAX_RECORDINGS 8

/* What a recorded step depends on besides the staged inputs: equal keys replay the same ops. */
typedef struct {
    int B, T, n_micro, training, fused;
    uint64_t active;          /* bit i: micro-batch i has counted tokens and runs */
    uint64_t long_rope;       /* bit i: micro-batch i takes longrope's long table (a recording names it) */
    float beta1, beta2, eps, weight_decay, max_grad_norm;
} step_key;

struct fl_step_runner {
    char *host;               /* alloc_host: fl_step_scalars, then `slots` slots of slot_bytes */
    size_t slot_bytes, N;
    int slots;
    unsigned char *active;    /* (slots) 1: micro-batch i of the staged step runs here */
    int *seq;                 /* (slots) largest position + 1 of micro-batch i: its RoPE table (longrope) */
    const int32_t *pos;       /* host: the positions of the micro-batch uploaded last (upload_slot), for the
                                 q factors computed on the host (Ministral 3: fl_model_scale_q) */
    int pending;              /* uploads from the block may not have run yet: wait before writing it */
    step_key keys[MAX_RECORDINGS];
    void *recordings[MAX_RECORDINGS];
    int n_recordings, record_failed, replayed;
};

struct fl_step_runner *new_runner(void);
void free_runner(fl_model *m);
/* Frees every recorded step (they name buffers about to change). */
void drop_recordings(fl_model *m);
/* Activations for (B, T) with the model's recompute setting; new ones drop the recordings. */
void ensure_activations(fl_model *m, int B, int T);
fl_step_scalars *staged_scalars(fl_model *m);
/* Before the host writes the staged block: no upload from it is still queued. */
void stage_begin(fl_model *m);
/* Room for `slots` micro-batches of N tokens, ready to be written. */
void ensure_staging(fl_model *m, int slots, size_t N);
/* The batch into slot i, with the dropout streams of forward pass `micro_step`. */
void stage_batch(fl_model *m, int i, const fl_batch *batch, uint64_t micro_step);
/* Slot i into the activations' inputs and the dropout streams. */
void upload_slot(fl_model *m, int i);
/* The staged scalars' first `bytes` into m->sc. */
void upload_scalars(fl_model *m, size_t bytes);
/* The step's scalars to the host: waits for everything queued, the uploads too. */
void read_scalars(fl_model *m, fl_step_scalars *out);
fl_step_stats stats_of(const fl_step_scalars *sc);
/* One batch for the forward passes outside a step: slot 0, the loss sums zeroed, grad_scale set. */
void load_batch(fl_model *m, const fl_batch *batch, float grad_scale);
/* Tokens of b with a target (>= 0). */
size_t counted_tokens(const fl_batch *b);

/* ---- the layer walk (model.c) ---- */

/* The embedding, every layer and the final norm of the loaded batch; leaves act.x_final. */
void forward_layers(fl_model *m, int B, int T);

#endif
