/* projections.c — the projections' names, widths and groups (see projections.h). */
#include "model/projections.h"

const char *const fl_proj_names[FL_N_PROJ] = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
const char *const fl_proj_modules[FL_N_PROJ] = {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                                                "self_attn.o_proj", "mlp.gate_proj",    "mlp.up_proj",
                                                "mlp.down_proj"};

void fl_group_members(fl_group g, fl_proj *first, fl_proj *end) {
    static const fl_proj bounds[FL_N_GROUPS + 1] = {FL_PROJ_Q, FL_PROJ_O, FL_PROJ_GATE, FL_PROJ_DOWN, FL_N_PROJ};
    *first = bounds[g];
    *end = bounds[g + 1];
}

void fl_proj_dims(const fl_model_config *cfg, fl_proj p, int *in, int *out) {
    int C = cfg->hidden_size, QD = fl_config_q_dim(cfg), KVD = fl_config_kv_dim(cfg), FF = cfg->intermediate_size;
    switch (p) {
    case FL_PROJ_Q: *in = C; *out = QD; break;
    case FL_PROJ_K: case FL_PROJ_V: *in = C; *out = KVD; break;
    case FL_PROJ_O: *in = QD; *out = C; break;
    case FL_PROJ_GATE: case FL_PROJ_UP: *in = C; *out = FF; break;
    default: *in = FF; *out = C; break;
    }
}

int fl_proj_group_offset(const fl_model_config *cfg, fl_proj p) {
    switch (p) {
    case FL_PROJ_K: return fl_config_q_dim(cfg);
    case FL_PROJ_V: return fl_config_q_dim(cfg) + fl_config_kv_dim(cfg);
    case FL_PROJ_UP: return cfg->intermediate_size;
    default: return 0;
    }
}

static int fused_group(const fl_model_config *cfg, fl_proj p) {
    return cfg->fused_modules && p != FL_PROJ_O && p != FL_PROJ_DOWN;
}

fl_proj fl_module_head(const fl_model_config *cfg, fl_proj p) {
    if (!fused_group(cfg, p)) return p;
    return p <= FL_PROJ_V ? FL_PROJ_Q : FL_PROJ_GATE;
}

fl_proj fl_module_last(const fl_model_config *cfg, fl_proj p) {
    if (!fused_group(cfg, p)) return p;
    return p <= FL_PROJ_V ? FL_PROJ_V : FL_PROJ_UP;
}

const char *fl_module_name(const fl_model_config *cfg, fl_proj p) {
    if (!fused_group(cfg, p)) return fl_proj_names[p];
    return p <= FL_PROJ_V ? "qkv_proj" : "gate_up_proj";
}

const char *fl_module_path(const fl_model_config *cfg, fl_proj p) {
    if (!fused_group(cfg, p)) return fl_proj_modules[p];
    return p <= FL_PROJ_V ? "self_attn.qkv_proj" : "mlp.gate_up_proj";
}

void fl_module_dims(const fl_model_config *cfg, fl_proj p, int *in, int *out, int *off) {
    fl_proj_dims(cfg, p, in, out);
    *off = fl_proj_group_offset(cfg, p);
    if (!fused_group(cfg, p)) return;
    *off = 0;
    *out = p <= FL_PROJ_V ? fl_config_q_dim(cfg) + 2 * fl_config_kv_dim(cfg) : 2 * cfg->intermediate_size;
}
