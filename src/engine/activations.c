/* activations.c — one allocation for every saved activation and scratch buffer (see the table). */
#include "engine/activations.h"

#include <string.h>

#define ALIGN_UP(x) (((x) + 63) / 64 * 64)

#define DIMS                                                                                        \
    size_t L = (size_t)cfg->n_layers, LS = recompute ? 1 : L, N = (size_t)B * T, C = (size_t)cfg->hidden_size;             \
    size_t QD = (size_t)fl_config_q_dim(cfg), KVD = (size_t)fl_config_kv_dim(cfg);                 \
    size_t FF = (size_t)cfg->intermediate_size, R = (size_t)(rank > 0 ? rank : 1), NH = (size_t)cfg->n_heads; \
    size_t NKV = (size_t)cfg->n_kv_heads, QN = cfg->qk_norm ? 1 : 0, SN = cfg->sandwich_norms ? 1 : 0;  \
    size_t RM = fl_config_residual_scaled(cfg) ? 1 : 0;                                             \
    size_t W = C > QD ? C : QD;                                                                     \
    W = W > FF ? W : FF;                                                                            \
    (void)L; (void)LS; (void)N; (void)C; (void)QD; (void)KVD; (void)FF; (void)R; (void)NH; (void)NKV; (void)QN; (void)SN; (void)RM; (void)W;

#define ELEM_SIZE_ACT act_size
#define ELEM_SIZE_F32 sizeof(float)
#define ELEM_SIZE_I32 sizeof(int32_t)

size_t fl_activations_bytes(const fl_model_config *cfg, int rank, int B, int T, size_t act_size, int recompute) {
    DIMS
    size_t total = 0;
#define X(name, kind, count) total += ALIGN_UP((count) * ELEM_SIZE_##kind);
    ACTIVATION_TABLE(X)
#undef X
    return total;
}

void fl_activations_init(fl_activations *a, const fl_model_config *cfg, int rank, int B, int T, int recompute,
                         const fl_backend *be) {
    memset(a, 0, sizeof *a);
    size_t act_size = be->act_size;
    a->bytes = fl_activations_bytes(cfg, rank, B, T, act_size, recompute);
    a->recompute = recompute;
    a->storage = be->alloc(a->bytes);
    a->B = B;
    a->T = T;
    a->be = be;
    DIMS
    char *p = a->storage;
#define X(name, kind, count) a->name = (FL_ACT_FIELD_##kind *)p; p += ALIGN_UP((count) * ELEM_SIZE_##kind);
    ACTIVATION_TABLE(X)
#undef X
}

void fl_activations_free(fl_activations *a) {
    if (a->storage) a->be->free(a->storage);
    memset(a, 0, sizeof *a);
}

void fl_activations_print_sizes(const fl_activations *a, const fl_model_config *cfg, int rank, FILE *out) {
    int B = a->B, T = a->T, recompute = a->recompute;
    size_t act_size = a->be->act_size;
    DIMS
    fprintf(out, "activations for B=%d T=%d%s: %.1f MiB\n", B, T, recompute ? " (recompute)" : "", a->bytes / 1048576.0);
#define X(name, kind, count) if ((count) != 0) fprintf(out, "  %-13s %9.1f MiB\n", #name, (count) * ELEM_SIZE_##kind / 1048576.0);
    ACTIVATION_TABLE(X)
#undef X
}
