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

#endif
