/* weights.c — loading the frozen base from a Hugging Face folder, or seeded random weights.
 *
 * One table (layer_tensor_table) names every per-layer tensor, its shape and where it lands in
 * fl_layer_weights, so the loader, the random init and the size computation walk the same list.
 * The checks (check_count, check_slot; fl_weights_check_dir for merge) compare the HF tensors as
 * stored in the files — q, k, v, gate, up separate — with config.json; the fused in-memory layout
 * (layer_storage_table) only decides where each lands afterwards. An NF4 base (weights.h) keeps the
 * projection matrices out of that table's region and stores their NF4 form after the layers, each
 * checkpoint module at a fixed offset (storage_plan.nf4_off), so the whole base is still one
 * allocation. A fused module (Phi-3's qkv_proj, gate_up_proj) is ONE NF4 matrix, as bitsandbytes
 * quantizes each nn.Linear; its members' entries in fl_base_weights.nf4 are row views of it
 * (fl_nf4_rows_view), so the engine sees seven projections either way. */
#include "model/weights.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/rng.h"
#include "io/file_util.h"
#include "io/safetensors.h"
#include "model/projections.h"
#include "model/weights_nf4.h"

int fl_quant_parse(const char *s, fl_quant *out) {
    if (!s || !*s || !strcmp(s, "none")) *out = FL_QUANT_NONE;
    else if (!strcmp(s, "nf4")) *out = FL_QUANT_NF4;
    else return fl_input_error("--quant: '%s' (expected nf4 or none)", s);
    return 0;
}

/* DIM_QN, DIM_KN: the widths of q_norm and k_norm — HS (Qwen3, Gemma 3: per head), QD and KVD (OLMo 2: whole rows) */
typedef enum { DIM_ZERO, DIM_ONE, DIM_C, DIM_QD, DIM_KVD, DIM_FF, DIM_QD_KVD, DIM_HS, DIM_FF2, DIM_QN, DIM_KN } dim_kind;
/* Which configs hold a tensor: every one, those with q/k/v biases (Qwen2), those with q/k norms (Qwen3,
 * Gemma 3), those storing q/k/v and gate/up as separate tensors (all but Phi-3) or as fused ones (Phi-3),
 * those with two norms per layer (Llama's) or four (Gemma's sandwich, cfg->sandwich_norms), those with pre-norms
 * (all but OLMo 2, cfg->no_pre_norms) and Gemma's pre-MLP norm (a sandwich with pre-norms). */
typedef enum { FOR_ALL = 0, FOR_QKV_BIAS, FOR_QK_NORM, FOR_SPLIT, FOR_FUSED, FOR_TWO_NORMS, FOR_SANDWICH, FOR_PRE_NORMS,
               FOR_SANDWICH_PRE } present_kind;
typedef enum { INIT_LINEAR, INIT_NORM, INIT_BIAS } init_kind;

/* Where a layer's tensors are stored: one entry per field of fl_layer_weights, in storage order.
 * `fused` matrices have a row stride of C + the reserved columns (weights.h). */
typedef struct {
    size_t field;           /* offset of the pointer in fl_layer_weights */
    dim_kind rows, cols;
    present_kind present;
    int fused;              /* 0 no, 1 q/k/v, 2 gate/up */
} layer_storage;

#define LS(field, r, c, present, fused) {offsetof(fl_layer_weights, field), r, c, present, fused}
static const layer_storage layer_storage_table[] = {
    LS(attn_norm, DIM_C, DIM_ONE, FOR_PRE_NORMS, 0),
    LS(qkv, DIM_QD_KVD, DIM_C, 0, 1),
    LS(qkv_bias, DIM_QD_KVD, DIM_ONE, FOR_QKV_BIAS, 0),
    LS(q_norm, DIM_QN, DIM_ONE, FOR_QK_NORM, 0),
    LS(k_norm, DIM_KN, DIM_ONE, FOR_QK_NORM, 0),
    LS(o, DIM_C, DIM_QD, 0, 0),
    LS(post_attn_norm, DIM_C, DIM_ONE, FOR_SANDWICH, 0),
    LS(mlp_norm, DIM_C, DIM_ONE, FOR_PRE_NORMS, 0),
    LS(post_mlp_norm, DIM_C, DIM_ONE, FOR_SANDWICH, 0),
    LS(gate_up, DIM_FF, DIM_C, 0, 2), /* rows: 2·FF (doubled below) */
    LS(down, DIM_C, DIM_FF, 0, 0),
};
#define N_LAYER_STORAGE (sizeof layer_storage_table / sizeof layer_storage_table[0])

/* The HF tensors of a layer: name, shape, and where they land — a field of fl_layer_weights and a
 * first row there (q, k, v share `qkv`; gate and up share `gate_up`). */
typedef struct {
    const char *suffix;     /* after "model.layers.{i}." (fl_config_tensor_prefix + "layers.{i}.") */
    size_t field;
    dim_kind rows, cols;
    dim_kind row0, row0_plus;   /* first row: row0 + row0_plus */
    present_kind present;
    init_kind init;
} layer_tensor;

#define LT(name, field, r, c, r0, r0b, present, init) {name, offsetof(fl_layer_weights, field), r, c, r0, r0b, present, init}
static const layer_tensor layer_tensor_table[] = {
    LT("input_layernorm.weight", attn_norm, DIM_C, DIM_ONE, DIM_ZERO, DIM_ZERO, FOR_PRE_NORMS, INIT_NORM),
    LT("self_attn.q_proj.weight", qkv, DIM_QD, DIM_C, DIM_ZERO, DIM_ZERO, FOR_SPLIT, INIT_LINEAR),
    LT("self_attn.q_proj.bias", qkv_bias, DIM_QD, DIM_ONE, DIM_ZERO, DIM_ZERO, FOR_QKV_BIAS, INIT_BIAS),
    LT("self_attn.k_proj.weight", qkv, DIM_KVD, DIM_C, DIM_QD, DIM_ZERO, FOR_SPLIT, INIT_LINEAR),
    LT("self_attn.k_proj.bias", qkv_bias, DIM_KVD, DIM_ONE, DIM_QD, DIM_ZERO, FOR_QKV_BIAS, INIT_BIAS),
    LT("self_attn.v_proj.weight", qkv, DIM_KVD, DIM_C, DIM_QD, DIM_KVD, FOR_SPLIT, INIT_LINEAR),
    LT("self_attn.v_proj.bias", qkv_bias, DIM_KVD, DIM_ONE, DIM_QD, DIM_KVD, FOR_QKV_BIAS, INIT_BIAS),
    LT("self_attn.qkv_proj.weight", qkv, DIM_QD_KVD, DIM_C, DIM_ZERO, DIM_ZERO, FOR_FUSED, INIT_LINEAR),
    LT("self_attn.q_norm.weight", q_norm, DIM_QN, DIM_ONE, DIM_ZERO, DIM_ZERO, FOR_QK_NORM, INIT_NORM),
    LT("self_attn.k_norm.weight", k_norm, DIM_KN, DIM_ONE, DIM_ZERO, DIM_ZERO, FOR_QK_NORM, INIT_NORM),
    LT("self_attn.o_proj.weight", o, DIM_C, DIM_QD, DIM_ZERO, DIM_ZERO, 0, INIT_LINEAR),
    LT("post_attention_layernorm.weight", mlp_norm, DIM_C, DIM_ONE, DIM_ZERO, DIM_ZERO, FOR_TWO_NORMS, INIT_NORM),
    LT("post_attention_layernorm.weight", post_attn_norm, DIM_C, DIM_ONE, DIM_ZERO, DIM_ZERO, FOR_SANDWICH, INIT_NORM),
    LT("pre_feedforward_layernorm.weight", mlp_norm, DIM_C, DIM_ONE, DIM_ZERO, DIM_ZERO, FOR_SANDWICH_PRE, INIT_NORM),
    LT("post_feedforward_layernorm.weight", post_mlp_norm, DIM_C, DIM_ONE, DIM_ZERO, DIM_ZERO, FOR_SANDWICH, INIT_NORM),
    LT("mlp.gate_proj.weight", gate_up, DIM_FF, DIM_C, DIM_ZERO, DIM_ZERO, FOR_SPLIT, INIT_LINEAR),
    LT("mlp.up_proj.weight", gate_up, DIM_FF, DIM_C, DIM_FF, DIM_ZERO, FOR_SPLIT, INIT_LINEAR),
    LT("mlp.gate_up_proj.weight", gate_up, DIM_FF2, DIM_C, DIM_ZERO, DIM_ZERO, FOR_FUSED, INIT_LINEAR),
    LT("mlp.down_proj.weight", down, DIM_C, DIM_FF, DIM_ZERO, DIM_ZERO, 0, INIT_LINEAR),
};
#define N_LAYER_TENSORS (sizeof layer_tensor_table / sizeof layer_tensor_table[0])

static int64_t dim_value(const fl_model_config *c, dim_kind d) {
    switch (d) {
    case DIM_ZERO: return 0;
    case DIM_C: return c->hidden_size;
    case DIM_QD: return fl_config_q_dim(c);
    case DIM_KVD: return fl_config_kv_dim(c);
    case DIM_FF: return c->intermediate_size;
    case DIM_QD_KVD: return fl_config_q_dim(c) + 2 * (int64_t)fl_config_kv_dim(c);
    case DIM_HS: return c->head_dim;
    case DIM_FF2: return 2 * (int64_t)c->intermediate_size;
    case DIM_QN: return c->qk_norm_full ? fl_config_q_dim(c) : c->head_dim;
    case DIM_KN: return c->qk_norm_full ? fl_config_kv_dim(c) : c->head_dim;
    default: return 1;
    }
}

static int is_present(const fl_model_config *c, present_kind p) {
    return p == FOR_ALL || (p == FOR_QKV_BIAS && c->qkv_bias) || (p == FOR_QK_NORM && c->qk_norm) ||
           (p == FOR_SPLIT && !c->fused_modules) || (p == FOR_FUSED && c->fused_modules) ||
           (p == FOR_TWO_NORMS && !c->sandwich_norms) || (p == FOR_SANDWICH && c->sandwich_norms) ||
           (p == FOR_PRE_NORMS && !c->no_pre_norms) || (p == FOR_SANDWICH_PRE && c->sandwich_norms && !c->no_pre_norms);
}

/* One entry of the full tensor list: name, shape, destination. */
typedef struct {
    char name[128];
    int64_t rows, cols;   /* cols == 1 and is_vector for 1-D tensors */
    int64_t ld;           /* row stride at the destination (== cols unless fused) */
    int is_vector;
    void *dst;          /* backend memory */
    init_kind init;
    int nf4;            /* a module held in NF4: dst is its NF4 storage, nf4_index its (first) entry in w->nf4 */
    int nf4_index;      /* layer · FL_N_PROJ + the projection standing for the module */
} tensor_slot;

/* Byte layout of the one allocation: global tensors, then per layer the storage table, then (NF4)
 * per layer the seven NF4 projections. */
typedef struct {
    size_t embed, lm_head, final_norm, layer0, layer_bytes, total;
    size_t field_off[N_LAYER_STORAGE];   /* byte offset of each storage entry inside a layer; SIZE_MAX: absent */
    int64_t ld[3];                        /* row stride per `fused` kind (0: unused) */
    int nf4, double_quant;                /* NF4 projections (with double quantization) */
    size_t nf4_0, nf4_layer_bytes;        /* the NF4 region and its per-layer stride */
    size_t nf4_off[FL_N_PROJ];            /* byte offset of projection p inside a layer's NF4 stride */
} storage_plan;

#define ALIGN64(x) (((x) + 63) / 64 * 64)

static storage_plan plan_storage(const fl_model_config *cfg, size_t weight_size, size_t act_size,
                                 fl_weights_reserve reserve, int nf4, int double_quant) {
    storage_plan sp;
    memset(&sp, 0, sizeof sp);
    int64_t V = cfg->vocab_size, C = cfg->hidden_size;
    sp.ld[1] = C + reserve.qkv;
    sp.ld[2] = C + reserve.gate_up;
    sp.nf4 = nf4;
    sp.double_quant = double_quant;
    size_t at = 0;
    sp.embed = at;
    at += ALIGN64((size_t)(V * C) * weight_size);
    sp.lm_head = cfg->tie_word_embeddings ? sp.embed : at;
    if (!cfg->tie_word_embeddings) at += ALIGN64((size_t)(V * C) * weight_size);
    sp.final_norm = at;
    at += ALIGN64((size_t)C * act_size);
    sp.layer0 = at;
    size_t in_layer = 0;
    for (size_t i = 0; i < N_LAYER_STORAGE; i++) {
        const layer_storage *ls = &layer_storage_table[i];
        sp.field_off[i] = SIZE_MAX;
        if (!is_present(cfg, ls->present)) continue;
        if (nf4 && ls->cols != DIM_ONE) continue;   /* the projection matrices live in the NF4 region */
        sp.field_off[i] = in_layer;
        int64_t rows = dim_value(cfg, ls->rows) * (ls->fused == 2 ? 2 : 1);
        int64_t cols = ls->fused ? sp.ld[ls->fused] : dim_value(cfg, ls->cols);
        in_layer += ALIGN64((size_t)(rows * cols) * (ls->cols == DIM_ONE ? act_size : weight_size));
    }
    sp.layer_bytes = in_layer;
    at += (size_t)cfg->n_layers * in_layer;
    sp.nf4_0 = at;
    for (int p = 0; nf4 && p < FL_N_PROJ; p++) {   /* one NF4 matrix per checkpoint module */
        if (!fl_is_module(cfg, (fl_proj)p)) continue;
        int in, out, off;
        fl_module_dims(cfg, (fl_proj)p, &in, &out, &off);
        sp.nf4_off[p] = sp.nf4_layer_bytes;
        sp.nf4_layer_bytes += ALIGN64(fl_nf4_bytes(out, in, double_quant));
    }
    sp.total = at + (size_t)cfg->n_layers * sp.nf4_layer_bytes;
    return sp;
}

size_t fl_weights_bytes(const fl_model_config *cfg, size_t weight_size, size_t act_size, fl_weights_reserve reserve,
                        fl_quant quant) {
    return plan_storage(cfg, weight_size, act_size, reserve, quant == FL_QUANT_NF4, 1).total;
}

/* The module a per-layer tensor suffix names, as the projection that stands for it
 * ("self_attn.q_proj.weight" -> FL_PROJ_Q; Phi-3's "self_attn.qkv_proj.weight" -> FL_PROJ_Q), or -1. */
static int suffix_proj(const fl_model_config *cfg, const char *suffix) {
    for (int p = 0; p < FL_N_PROJ; p++) {
        if (!fl_is_module(cfg, (fl_proj)p)) continue;
        const char *path = fl_module_path(cfg, (fl_proj)p);
        size_t len = strlen(path);
        if (!strncmp(suffix, path, len) && !strcmp(suffix + len, ".weight")) return p;
    }
    return -1;
}

static size_t storage_index(size_t field) {
    for (size_t i = 0; i < N_LAYER_STORAGE; i++)
        if (layer_storage_table[i].field == field) return i;
    return 0;
}

/* Lists every tensor (names, shapes, destinations as byte offsets in the one allocation, stored
 * in dst) and returns the list (caller frees). Allocates nothing on the backend. */
static tensor_slot *plan_tensors(const fl_model_config *cfg, const fl_backend *be, const storage_plan *sp, int *n_out) {
    int L = cfg->n_layers;
    int max_slots = 3 + L * (int)N_LAYER_TENSORS;
    tensor_slot *slots = fl_calloc((size_t)max_slots, sizeof *slots);
    int n = 0;
    int64_t V = cfg->vocab_size, C = cfg->hidden_size;
    #define ADD(nm, r, c, ldv, vec, ini, off) do { snprintf(slots[n].name, sizeof slots[n].name, "%s", nm); \
        slots[n].rows = (r); slots[n].cols = (c); slots[n].ld = (ldv); slots[n].is_vector = (vec); \
        slots[n].init = (ini); slots[n].dst = (void *)(uintptr_t)(off); n++; } while (0)
    const char *prefix = fl_config_tensor_prefix(cfg);
    char name[128];
    snprintf(name, sizeof name, "%sembed_tokens.weight", prefix);
    ADD(name, V, C, C, 0, INIT_LINEAR, sp->embed);
    if (!cfg->tie_word_embeddings) ADD(fl_config_lm_head_name(cfg), V, C, C, 0, INIT_LINEAR, sp->lm_head);
    snprintf(name, sizeof name, "%snorm.weight", prefix);
    ADD(name, C, 1, 1, 1, INIT_NORM, sp->final_norm);
    for (int l = 0; l < L; l++)
        for (size_t t = 0; t < N_LAYER_TENSORS; t++) {
            const layer_tensor *lt = &layer_tensor_table[t];
            if (!is_present(cfg, lt->present)) continue;
            const layer_storage *ls = &layer_storage_table[storage_index(lt->field)];
            int vec = lt->cols == DIM_ONE, proj = suffix_proj(cfg, lt->suffix);
            int64_t ld = ls->fused ? sp->ld[ls->fused] : dim_value(cfg, lt->cols);
            int64_t row0 = dim_value(cfg, lt->row0) + dim_value(cfg, lt->row0_plus);
            size_t off;
            if (sp->nf4 && proj >= 0) {
                off = sp->nf4_0 + (size_t)l * sp->nf4_layer_bytes + sp->nf4_off[proj];
                ld = dim_value(cfg, lt->cols);
            } else {
                off = sp->layer0 + (size_t)l * sp->layer_bytes + sp->field_off[storage_index(lt->field)] +
                      (size_t)(row0 * ld) * (vec ? be->act_size : be->weight_size);
            }
            snprintf(name, sizeof name, "%slayers.%d.%s", prefix, l, lt->suffix);
            ADD(name, dim_value(cfg, lt->rows), dim_value(cfg, lt->cols), ld, vec, lt->init, off);
            if (sp->nf4 && proj >= 0) {
                slots[n - 1].nf4 = 1;
                slots[n - 1].nf4_index = l * FL_N_PROJ + proj;
            }
        }
    #undef ADD
    *n_out = n;
    return slots;
}

/* Allocates the one buffer of a plan and wires the named pointers of w to it. */
static void alloc_tensors(fl_base_weights *w, const fl_model_config *cfg, const fl_backend *be, const storage_plan *sp,
                          tensor_slot *slots, int n) {
    int L = cfg->n_layers;
    w->be = be;
    w->bytes = sp->total;
    w->storage = be->alloc(sp->total);
    w->ld_qkv = (int)sp->ld[1];
    w->ld_gate_up = (int)sp->ld[2];
    for (int i = 0; i < n; i++) slots[i].dst = (char *)w->storage + (size_t)(uintptr_t)slots[i].dst;
    w->embed = (char *)w->storage + sp->embed;
    w->lm_head = (char *)w->storage + sp->lm_head;
    w->final_norm = (char *)w->storage + sp->final_norm;
    w->layers = fl_calloc((size_t)L, sizeof(fl_layer_weights));
    w->quant = sp->nf4 ? FL_QUANT_NF4 : FL_QUANT_NONE;
    if (sp->nf4) w->nf4 = fl_calloc((size_t)L * FL_N_PROJ, sizeof(fl_nf4_weight));
    for (int l = 0; l < L; l++) {
        for (size_t i = 0; i < N_LAYER_STORAGE; i++)
            if (sp->field_off[i] != SIZE_MAX)
                *(void **)((char *)&w->layers[l] + layer_storage_table[i].field) =
                    (char *)w->storage + sp->layer0 + (size_t)l * sp->layer_bytes + sp->field_off[i];
        if (sp->nf4) w->layers[l].nf4 = &w->nf4[(size_t)l * FL_N_PROJ];
    }
}

/* Copies an NF4 weight made on the host into its slot (backend memory) and records the view. The
 * slot was sized by the plan's double_quant (config.json's bnb_4bit_use_double_quant for a 4-bit
 * checkpoint): a checkpoint without double quantization has f32 absmax and plans the larger size. */
static int upload_nf4(fl_base_weights *w, const fl_model_config *cfg, const tensor_slot *slot, const fl_nf4_weight *host,
                      int double_quant) {
    size_t planned = fl_nf4_bytes(slot->rows, slot->cols, double_quant);
    if (host->bytes > planned)   /* plain f32 absmax where the config promised double quantization */
        return fl_input_error("%s: NF4 without double quantization takes %zu bytes where %zu were planned "
                              "(bnb_4bit_use_double_quant in config.json disagrees with the tensors)",
                              slot->name, host->bytes, planned);
    w->be->upload(slot->dst, host->storage, host->bytes);
    fl_nf4_weight module;
    fl_nf4_view(&module, host, slot->dst);
    int layer = slot->nf4_index / FL_N_PROJ;
    fl_proj head = (fl_proj)(slot->nf4_index % FL_N_PROJ);
    /* each member of the module: its rows of the module's matrix (all of it for an unfused one) */
    int module_in, module_out, module_off;
    fl_module_dims(cfg, head, &module_in, &module_out, &module_off);
    for (fl_proj p = head; p <= fl_module_last(cfg, head); p++) {
        int in, oc, r0 = fl_proj_group_offset(cfg, p) - module_off;
        fl_proj_dims(cfg, p, &in, &oc);
        FL_TRY(fl_nf4_rows_view(&w->nf4[(size_t)layer * FL_N_PROJ + p], &module, r0, r0 + oc, slot->name));
    }
    return 0;
}

/* Uploads a slot's (rows, cols) host f32 values to its destination, rows of stride slot->ld: one
 * upload of the whole row block, the reserved columns of a fused matrix written as zeros. */
static void upload_slot(const fl_backend *be, const tensor_slot *slot, const float *host) {
    if (slot->is_vector) {
        be->upload_act(slot->dst, host, (size_t)slot->rows);
        return;
    }
    if (slot->ld == slot->cols) {
        be->upload_weight(slot->dst, host, (size_t)(slot->rows * slot->cols));
        return;
    }
    float *wide = fl_calloc((size_t)(slot->rows * slot->ld), sizeof(float));
    for (int64_t r = 0; r < slot->rows; r++) memcpy(wide + r * slot->ld, host + r * slot->cols, sizeof(float) * (size_t)slot->cols);
    be->upload_weight(slot->dst, wide, (size_t)(slot->rows * slot->ld));
    free(wide);
}

/* A fused module in NF4 is one matrix whose members are row views (fl_nf4_rows_view): exact only
 * when no 64-block crosses a row, i.e. hidden_size % 64 == 0 (the in-features of qkv_proj and
 * gate_up_proj). Otherwise one line naming config.json's field. */
static int nf4_fused_unsupported(const fl_model_config *cfg, const char *where) {
    if (!cfg->fused_modules || cfg->hidden_size % FL_NF4_BLOCK == 0) return 0;
    return fl_input_error("%s/config.json: hidden_size %d is not a multiple of %d: NF4 (--quant nf4 or a 4-bit "
                          "checkpoint) of the fused qkv_proj / gate_up_proj is supported when it is (every released "
                          "Phi-3 has 3072); load it unquantized", where, cfg->hidden_size, FL_NF4_BLOCK);
}

void fl_weights_free(fl_base_weights *w) {
    if (w->storage) w->be->free(w->storage);
    free(w->layers);
    free(w->nf4);
    memset(w, 0, sizeof *w);
}

void fl_weights_init_random(fl_base_weights *w, const fl_model_config *cfg, uint64_t seed, const fl_backend *be,
                            fl_weights_reserve reserve) {
    fl_weights_init_random_quant(w, cfg, seed, be, reserve, FL_QUANT_NONE);
}

void fl_weights_init_random_quant(fl_base_weights *w, const fl_model_config *cfg, uint64_t seed, const fl_backend *be,
                                  fl_weights_reserve reserve, fl_quant quant) {
    memset(w, 0, sizeof *w);
    if (quant == FL_QUANT_NF4 && nf4_fused_unsupported(cfg, cfg->name)) fl_die("%s", fl_last_error());
    int n;
    storage_plan sp = plan_storage(cfg, be->weight_size, be->act_size, reserve, quant == FL_QUANT_NF4, 1);
    tensor_slot *slots = plan_tensors(cfg, be, &sp, &n);
    alloc_tensors(w, cfg, be, &sp, slots, n);
    float bound = sqrtf(3.0f) * 0.02f; /* U(-a, a) with std 0.02, like HF's initializer_range */
    size_t chunk_cap = 0;
    float *host = NULL;
    for (int i = 0; i < n; i++) {
        size_t count = (size_t)(slots[i].rows * slots[i].cols);
        if (count > chunk_cap) { free(host); chunk_cap = count; host = fl_malloc(count * sizeof(float)); }
        uint64_t stream = fl_rng_stream(seed, (uint64_t)i, 1, 0);
        if (slots[i].init == INIT_NORM) /* an effective weight in [0.9, 1.1]: Gemma stores w - 1 */
            fl_rng_fill_uniform(host, count, stream, 0.9f - cfg->norm_weight_offset, 1.1f - cfg->norm_weight_offset);
        else if (slots[i].init == INIT_BIAS) fl_rng_fill_uniform(host, count, stream, -0.02f, 0.02f);
        else fl_rng_fill_uniform(host, count, stream, -bound, bound);
        if (slots[i].nf4) {   /* finite by construction: quantizing cannot fail */
            fl_nf4_weight q;
            if (fl_nf4_quantize(&q, host, FL_F32, slots[i].rows, slots[i].cols, 1, slots[i].name) ||
                upload_nf4(w, cfg, &slots[i], &q, sp.double_quant))
                fl_die("%s", fl_last_error());
            fl_nf4_free(&q);
        } else {
            upload_slot(be, &slots[i], host);
        }
    }
    free(host);
    free(slots);
}

/* ---- loading from a folder ----------------------------------------------------------------- */

typedef struct {
    int n_files;
    fl_safetensors files[64];
} shard_set;

static void shards_close(shard_set *s) {
    for (int i = 0; i < s->n_files; i++) fl_safetensors_close(&s->files[i]);
    s->n_files = 0;
}

static int open_shards(shard_set *s, const char *dir) {
    s->n_files = 0;
    char *single = fl_path_join(dir, "model.safetensors");
    char *index = fl_path_join(dir, "model.safetensors.index.json");
    int status = 0;
    if (fl_file_exists(single)) {
        status = fl_safetensors_open(&s->files[0], single);
        if (!status) s->n_files = 1;
    } else if (fl_file_exists(index)) {
        json_t *root;
        status = fl_file_load_json(index, FL_FILE_CONFIG, 0, &root);
        json_t *map = root ? json_object_get(root, "weight_map") : NULL;
        if (!status && !json_is_object(map)) status = fl_input_error("%s: field 'weight_map' missing or not an object", index);
        const char *name;
        json_t *file;
        if (!status) json_object_foreach(map, name, file) {
            if (!json_is_string(file)) { status = fl_input_error("%s: weight_map['%s'] is not a string", index, name); break; }
            const char *fname = json_string_value(file);
            if (strchr(fname, '/')) { status = fl_input_error("%s: weight_map['%s'] = '%s' is not a file name in the folder", index, name, fname); break; }
            int seen = 0;
            for (int i = 0; i < s->n_files && !seen; i++) {
                const char *base = strrchr(s->files[i].path, '/');
                seen = !strcmp(base ? base + 1 : s->files[i].path, fname);
            }
            if (seen) continue;
            if (s->n_files == 64) { status = fl_input_error("%s: more than 64 shard files", index); break; }
            char *path = fl_path_join(dir, fname);
            status = fl_safetensors_open(&s->files[s->n_files], path);
            free(path);
            if (status) break;
            s->n_files++;
        }
        json_decref(root);
    } else {
        status = fl_input_error("%s: no model.safetensors or model.safetensors.index.json in the folder", dir);
    }
    free(single);
    free(index);
    if (status) shards_close(s);
    return status;
}

static const fl_st_tensor *find_tensor(const shard_set *s, const char *name, const char **file) {
    for (int i = 0; i < s->n_files; i++) {
        const fl_st_tensor *t = fl_safetensors_find(&s->files[i], name);
        if (t) { *file = s->files[i].path; return t; }
    }
    return NULL;
}

/* The file tensor for `slot`, checked for presence, shape and dtype (before anything is allocated). */
static int check_slot(const shard_set *s, const tensor_slot *slot, const char *dir, const fl_st_tensor **out) {
    const char *file = NULL;
    const fl_st_tensor *t = find_tensor(s, slot->name, &file);
    *out = t;
    if (!t) return fl_input_error("%s: tensor '%s' is missing from the safetensors files", dir, slot->name);
    int shape_ok = slot->is_vector ? (t->ndim == 1 && t->shape[0] == slot->rows)
                                   : (t->ndim == 2 && t->shape[0] == slot->rows && t->shape[1] == slot->cols);
    if (!shape_ok) {
        char got[64] = "";
        for (int d = 0; d < t->ndim && d < 4; d++)
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", d ? ", " : "", (long long)t->shape[d]);
        if (slot->is_vector)
            return fl_input_error("%s: tensor '%s' has shape [%s] but config.json implies [%lld]", file, slot->name, got,
                                  (long long)slot->rows);
        return fl_input_error("%s: tensor '%s' has shape [%s] but config.json implies [%lld, %lld]", file, slot->name,
                              got, (long long)slot->rows, (long long)slot->cols);
    }
    if (t->dtype != FL_F32 && t->dtype != FL_BF16 && t->dtype != FL_F16)
        return fl_input_error("%s: tensor '%s' has dtype %s (expected BF16, F16 or F32)", file, slot->name,
                              fl_dtype_name(t->dtype));
    return 0;
}

static int n_tensors_in(const shard_set *s) {
    int n = 0;
    for (int i = 0; i < s->n_files; i++) n += s->files[i].n_tensors;
    return n;
}

/* A config whose head is tied only when the folder stores none (config.h, tie_if_head_missing)
 * becomes tied or untied here, from the files. */
static void resolve_head(const shard_set *s, fl_model_config *cfg) {
    const char *file;
    if (cfg->tie_if_head_missing && !cfg->tie_word_embeddings && !find_tensor(s, fl_config_lm_head_name(cfg), &file))
        cfg->tie_word_embeddings = 1;
}

/* As many tensors in the files as config.json implies (else the first missing one is named): checked
 * before anything is sized from the config. */
static int check_count(const shard_set *s, const fl_model_config *cfg, const char *dir) {
    int status = 0;
    int64_t per_layer = 0;
    for (size_t t = 0; t < N_LAYER_TENSORS; t++) per_layer += is_present(cfg, layer_tensor_table[t].present);
    int64_t needed = 2 + !cfg->tie_word_embeddings + (int64_t)cfg->n_layers * per_layer;
    if (needed > n_tensors_in(s)) {
        /* some tensor is missing: name the first one (found within n_tensors + 1 names) */
        const char *file;
        char name[128];
        for (int l = -1; l < cfg->n_layers && !status; l++)
            for (size_t t = 0; t < (l < 0 ? 3 : N_LAYER_TENSORS) && !status; t++) {
                if (l < 0) {
                    if (t == 1 && cfg->tie_word_embeddings) continue;
                    if (t == 1) snprintf(name, sizeof name, "%s", fl_config_lm_head_name(cfg));
                    else snprintf(name, sizeof name, "%s%s", fl_config_tensor_prefix(cfg), t == 0 ? "embed_tokens.weight" : "norm.weight");
                } else {
                    if (!is_present(cfg, layer_tensor_table[t].present)) continue;
                    snprintf(name, sizeof name, "%slayers.%d.%s", fl_config_tensor_prefix(cfg), l, layer_tensor_table[t].suffix);
                }
                if (!find_tensor(s, name, &file))
                    status = fl_input_error("%s: tensor '%s' is missing from the safetensors files (config.json implies "
                                            "%lld tensors, %d layers; the files hold %d)", dir, name, (long long)needed,
                                            cfg->n_layers, n_tensors_in(s));
            }
        if (!status) status = fl_input_error("%s: config.json implies %lld tensors (%d layers) but the safetensors files hold %d",
                                             dir, (long long)needed, cfg->n_layers, n_tensors_in(s));
    }
    return status;
}

int fl_weights_load(fl_base_weights *w, fl_model_config *cfg, const char *dir, const fl_backend *be,
                    fl_weights_reserve reserve) {
    return fl_weights_load_quant(w, cfg, dir, be, reserve, FL_QUANT_NONE);
}

int fl_weights_load_quant(fl_base_weights *w, fl_model_config *cfg, const char *dir, const fl_backend *be,
                          fl_weights_reserve reserve, fl_quant quant) {
    memset(w, 0, sizeof *w);
    char *config_path = fl_path_join(dir, "config.json");
    int status = fl_config_load(cfg, config_path);
    fl_quant_config qc = {0};
    if (!status) status = fl_quant_config_load(&qc, config_path);
    free(config_path);
    if (status) return status;
    /* a bitsandbytes 4-bit checkpoint is NF4 as stored; --quant nf4 also quantizes float projections */
    int nf4 = qc.nf4 || quant == FL_QUANT_NF4;
    fl_nf4_source source = quant == FL_QUANT_NF4 ? FL_NF4_QUANTIZE : FL_NF4_STORED;
    int double_quant = qc.nf4 ? qc.double_quant : 1;
    if (nf4) FL_TRY(nf4_fused_unsupported(cfg, dir));
    snprintf(cfg->name, sizeof cfg->name, "%s", dir);
    shard_set shards;
    FL_TRY(open_shards(&shards, dir));
    resolve_head(&shards, cfg);
    /* Everything config.json implies is checked against the files before any allocation, so a
     * config with absurd sizes is an input error, not an out-of-memory abort. */
    status = check_count(&shards, cfg, dir);
    if (status) { shards_close(&shards); return status; }
    int n;
    storage_plan sp = plan_storage(cfg, be->weight_size, be->act_size, reserve, nf4, double_quant);
    tensor_slot *slots = plan_tensors(cfg, be, &sp, &n);
    const fl_st_tensor **found = fl_calloc((size_t)n, sizeof *found);
    /* NF4 projections are checked by fl_nf4_load_weight (shape, companions) as they are loaded */
    for (int i = 0; i < n && !status; i++)
        if (!slots[i].nf4) status = check_slot(&shards, &slots[i], dir, &found[i]);
    if (!status) {
        alloc_tensors(w, cfg, be, &sp, slots, n);
        size_t max_count = 0;
        for (int i = 0; i < n; i++)
            if (found[i] && found[i]->numel > max_count) max_count = found[i]->numel;
        float *host = fl_malloc(max_count * sizeof(float));
        for (int i = 0; i < n && !status; i++) {
            if (slots[i].nf4) {
                fl_nf4_weight q;
                status = fl_nf4_load_weight(&q, shards.files, shards.n_files, slots[i].name, slots[i].rows,
                                            slots[i].cols, source);
                if (!status) status = upload_nf4(w, cfg, &slots[i], &q, sp.double_quant);
                if (q.storage) fl_nf4_free(&q);
                if (status && !strstr(fl_last_error(), dir)) {   /* name the folder when the message does not */
                    char why[512];
                    snprintf(why, sizeof why, "%s", fl_last_error());
                    status = fl_input_error("%s: %s", dir, why);
                }
                continue;
            }
            status = fl_st_check_finite(found[i], dir); /* once, where the weights enter: a NaN base runs silently */
            if (status) break;
            fl_convert_to_f32(host, found[i]->data, found[i]->dtype, found[i]->numel);
            upload_slot(be, &slots[i], host);
        }
        free(host);
    }
    free(found);
    free(slots);
    shards_close(&shards);
    if (status) fl_weights_free(w);
    return status;
}

/* ---- what a resume compares ------------------------------------------------------------------ */

static uint64_t mix(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull; /* FNV-1a */
    return h;
}

int fl_weights_digest(const char *dir, uint64_t *out) {
    shard_set *s = fl_calloc(1, sizeof *s);
    int status = open_shards(s, dir);
    uint64_t h = 1469598103934665603ull;
    for (int f = 0; f < s->n_files && !status; f++)
        for (int i = 0; i < s->files[f].n_tensors; i++) {
            const fl_st_tensor *t = &s->files[f].tensors[i];
            h = mix(h, t->name, strlen(t->name) + 1);
            h = mix(h, &t->dtype, sizeof t->dtype);
            h = mix(h, t->shape, sizeof t->shape[0] * (size_t)t->ndim);
            /* 256 chunks of 16 bytes spread over the data (all of a small tensor): a rescaled or
             * zeroed tensor changes them; one edited value may not (docs/TRAINING.md) */
            size_t chunks = t->nbytes / 16, take = chunks < 256 ? chunks : 256;
            for (size_t k = 0; k < take; k++) h = mix(h, (const char *)t->data + (k * chunks / take) * 16, 16);
            h = mix(h, (const char *)t->data + chunks * 16, t->nbytes % 16); /* the tail */
        }
    shards_close(s);
    free(s);
    *out = h;
    return status;
}

int fl_weights_resolve_head(fl_model_config *cfg, const char *dir) {
    if (!cfg->tie_if_head_missing || cfg->tie_word_embeddings) return 0;
    shard_set shards;
    FL_TRY(open_shards(&shards, dir));
    resolve_head(&shards, cfg);
    shards_close(&shards);
    return 0;
}

int fl_weights_check_dir(const fl_model_config *cfg_in, const char *dir) {
    shard_set shards;
    FL_TRY(open_shards(&shards, dir));
    fl_model_config resolved = *cfg_in, *cfg = &resolved;
    resolve_head(&shards, cfg);
    int status = check_count(&shards, cfg, dir);
    if (!status) { /* the slots carry the HF shapes as stored; where they would land does not matter here */
        int n;
        fl_weights_reserve none = {0, 0};
        storage_plan sp = plan_storage(cfg, sizeof(float), sizeof(float), none, 0, 1);
        tensor_slot *slots = plan_tensors(cfg, fl_backend_cpu(), &sp, &n);
        const fl_st_tensor *t;
        for (int i = 0; i < n && !status; i++) status = check_slot(&shards, &slots[i], dir, &t);
        free(slots);
    }
    shards_close(&shards);
    return status;
}
