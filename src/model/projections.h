/* projections.h — the transformer's seven projections and the groups they run in: which ones
 * exist (fl_proj, in HF order), their names in the checkpoints, their input and output widths, and
 * which share an input (fl_group). Facts about the architecture, used by the weights loader, the
 * NF4 loader, the engine, the LoRA layout and the plans.
 *
 * Not LoRA (lora/lora.h: which projections are adapted, at what rank) and not the weights'
 * storage (model/weights.h). Glossary as in model/config.h.
 */
#ifndef FL_MODEL_PROJECTIONS_H
#define FL_MODEL_PROJECTIONS_H

#include "model/config.h"

typedef enum { FL_PROJ_Q = 0, FL_PROJ_K, FL_PROJ_V, FL_PROJ_O, FL_PROJ_GATE, FL_PROJ_UP, FL_PROJ_DOWN, FL_N_PROJ } fl_proj;

/* Projections that read the same input form a group, computed as one (fused) projection:
 * q,k,v (the attention norm's output), o, gate,up (the MLP norm's output), down. A group's members
 * are consecutive in fl_proj order. */
typedef enum { FL_GROUP_QKV = 0, FL_GROUP_O, FL_GROUP_GATE_UP, FL_GROUP_DOWN, FL_N_GROUPS } fl_group;
/* Members of group g: projections first .. end-1. */
void fl_group_members(fl_group g, fl_proj *first, fl_proj *end);

extern const char *const fl_proj_names[FL_N_PROJ];   /* "q_proj", ..., "down_proj" */
extern const char *const fl_proj_modules[FL_N_PROJ]; /* "self_attn.q_proj", ..., "mlp.down_proj" */

/* Input and output widths of projection p: q (C -> QD), k, v (C -> KVD), o (QD -> C),
 * gate, up (C -> FF), down (FF -> C). */
void fl_proj_dims(const fl_model_config *cfg, fl_proj p, int *in, int *out);

/* The first row of projection p in its group's stacked weight, which is also its first column in
 * the group's stacked output: k at QD and v at QD + KVD (of q | k | v), up at FF (of gate | up);
 * 0 for the first member of a group. */
int fl_proj_group_offset(const fl_model_config *cfg, fl_proj p);

/* ---- checkpoint modules: what a checkpoint stores and PEFT adapts --------------------------
 * Llama's modules are the seven projections. With cfg->fused_modules (Phi-3) q, k, v are one module
 * self_attn.qkv_proj ((QD + 2·KVD), C) and gate, up one mlp.gate_up_proj ((2·FF), C; gate rows first,
 * as Phi3MLP's chunk(2)): the group's first member stands for the module (its LoRA spans the group's
 * rows), the others belong to it and have no module of their own. */

/* The projection that stands for p's module: p, or the first member of its fused group. */
fl_proj fl_module_head(const fl_model_config *cfg, fl_proj p);
/* 1 when p stands for a module (p == fl_module_head(cfg, p)). */
static inline int fl_is_module(const fl_model_config *cfg, fl_proj p) { return fl_module_head(cfg, p) == p; }
/* A module's name ("q_proj", "qkv_proj", ...) and its path in the layer ("self_attn.qkv_proj", ...). */
const char *fl_module_name(const fl_model_config *cfg, fl_proj p);
const char *fl_module_path(const fl_model_config *cfg, fl_proj p);
/* The widths of module p (its LoRA's lora_a is (R, *in), lora_b (*out, R)) and its first column in
 * the group's stacked output (*off): fl_proj_dims and fl_proj_group_offset unless fused, else the
 * whole group from column 0. */
void fl_module_dims(const fl_model_config *cfg, fl_proj p, int *in, int *out, int *off);
/* The last member of module p's group span (the member after whose frozen product its LoRA runs). */
fl_proj fl_module_last(const fl_model_config *cfg, fl_proj p);

#endif
