/* weights.c — loading the frozen base from a Hugging Face folder, or seeded random weights.
 *
 * One table (layer_tensor_table) names every per-layer tensor, its shape and where it lands in
 * fl_layer_weights, so the loader, the random init and the size computation walk the same list. */
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

typedef enum { DIM_ONE, DIM_C, DIM_QD, DIM_KVD, DIM_FF } dim_kind;
typedef enum { INIT_LINEAR, INIT_NORM, INIT_BIAS } init_kind;

typedef struct {
    const char *suffix;     /* after "model.layers.{i}." */
    size_t offset;          /* of the pointer in fl_layer_weights */
    dim_kind rows, cols;
    int is_bias;            /* present only when cfg.qkv_bias */
    init_kind init;
} layer_tensor;

#define LT(name, field, r, c, bias, init) {name, offsetof(fl_layer_weights, field), r, c, bias, init}
static const layer_tensor layer_tensor_table[] = {
    LT("input_layernorm.weight", attn_norm, DIM_C, DIM_ONE, 0, INIT_NORM),
    LT("self_attn.q_proj.weight", q, DIM_QD, DIM_C, 0, INIT_LINEAR),
    LT("self_attn.q_proj.bias", q_bias, DIM_QD, DIM_ONE, 1, INIT_BIAS),
    LT("self_attn.k_proj.weight", k, DIM_KVD, DIM_C, 0, INIT_LINEAR),
    LT("self_attn.k_proj.bias", k_bias, DIM_KVD, DIM_ONE, 1, INIT_BIAS),
    LT("self_attn.v_proj.weight", v, DIM_KVD, DIM_C, 0, INIT_LINEAR),
    LT("self_attn.v_proj.bias", v_bias, DIM_KVD, DIM_ONE, 1, INIT_BIAS),
    LT("self_attn.o_proj.weight", o, DIM_C, DIM_QD, 0, INIT_LINEAR),
    LT("post_attention_layernorm.weight", mlp_norm, DIM_C, DIM_ONE, 0, INIT_NORM),
    LT("mlp.gate_proj.weight", gate, DIM_FF, DIM_C, 0, INIT_LINEAR),
    LT("mlp.up_proj.weight", up, DIM_FF, DIM_C, 0, INIT_LINEAR),
    LT("mlp.down_proj.weight", down, DIM_C, DIM_FF, 0, INIT_LINEAR),
};
#define N_LAYER_TENSORS (sizeof layer_tensor_table / sizeof layer_tensor_table[0])

static int64_t dim_value(const fl_model_config *c, dim_kind d) {
    switch (d) {
    case DIM_C: return c->hidden_size;
    case DIM_QD: return fl_config_q_dim(c);
    case DIM_KVD: return fl_config_kv_dim(c);
    case DIM_FF: return c->intermediate_size;
    default: return 1;
    }
}

/* One entry of the full tensor list: name, shape, destination. */
typedef struct {
    char name[128];
    int64_t rows, cols;   /* cols == 1 and is_vector for 1-D tensors */
    int is_vector;
    void *dst;          /* backend memory */
    init_kind init;
} tensor_slot;

/* Lays out every tensor (names, shapes, byte offsets in one allocation, stored in dst) and returns
 * the list (caller frees) and the total bytes. Allocates nothing on the backend. */
static tensor_slot *plan_tensors(const fl_model_config *cfg, const fl_backend *be, int *n_out, size_t *total_out) {
    int L = cfg->n_layers;
    int max_slots = 3 + L * (int)N_LAYER_TENSORS;
    tensor_slot *slots = fl_calloc((size_t)max_slots, sizeof *slots);
    int n = 0;
    size_t total = 0;
    int64_t V = cfg->vocab_size, C = cfg->hidden_size;
    /* first pass: names, shapes, byte offsets (stored in dst as an offset); matrices are
     * weight-typed, vectors act-typed, each start 64-byte aligned */
    #define ADD(nm, r, c, vec, ini) do { snprintf(slots[n].name, sizeof slots[n].name, "%s", nm); \
        slots[n].rows = (r); slots[n].cols = (c); slots[n].is_vector = (vec); slots[n].init = (ini); \
        slots[n].dst = (void *)(uintptr_t)total; \
        total += ((size_t)(r) * (size_t)(c) * ((vec) ? be->act_size : be->weight_size) + 63) / 64 * 64; n++; } while (0)
    ADD("model.embed_tokens.weight", V, C, 0, INIT_LINEAR);
    if (!cfg->tie_word_embeddings) ADD("lm_head.weight", V, C, 0, INIT_LINEAR);
    ADD("model.norm.weight", C, 1, 1, INIT_NORM);
    for (int l = 0; l < L; l++)
        for (size_t t = 0; t < N_LAYER_TENSORS; t++) {
            const layer_tensor *lt = &layer_tensor_table[t];
            if (lt->is_bias && !cfg->qkv_bias) continue;
            char name[128];
            snprintf(name, sizeof name, "model.layers.%d.%s", l, lt->suffix);
            ADD(name, dim_value(cfg, lt->rows), dim_value(cfg, lt->cols), lt->cols == DIM_ONE, lt->init);
        }
    #undef ADD
    *n_out = n;
    *total_out = total;
    return slots;
}

/* Allocates the one buffer of a plan and wires the named pointers of w to it. */
static void alloc_tensors(fl_base_weights *w, const fl_model_config *cfg, const fl_backend *be, tensor_slot *slots,
                          int n, size_t total) {
    int L = cfg->n_layers;
    w->be = be;
    w->bytes = total;
    w->storage = be->alloc(total);
    for (int i = 0; i < n; i++) slots[i].dst = (char *)w->storage + (size_t)(uintptr_t)slots[i].dst;
    int i = 0;
    w->embed = slots[i++].dst;
    w->lm_head = cfg->tie_word_embeddings ? w->embed : slots[i++].dst;
    w->final_norm = slots[i++].dst;
    w->layers = fl_calloc((size_t)L, sizeof(fl_layer_weights));
    for (int l = 0; l < L; l++)
        for (size_t t = 0; t < N_LAYER_TENSORS; t++) {
            const layer_tensor *lt = &layer_tensor_table[t];
            if (lt->is_bias && !cfg->qkv_bias) continue;
            *(void **)((char *)&w->layers[l] + lt->offset) = slots[i++].dst;
        }
}

void fl_weights_free(fl_base_weights *w) {
    if (w->storage) w->be->free(w->storage);
    free(w->layers);
    memset(w, 0, sizeof *w);
}

void fl_weights_init_random(fl_base_weights *w, const fl_model_config *cfg, uint64_t seed, const fl_backend *be) {
    memset(w, 0, sizeof *w);
    int n;
    size_t total;
    tensor_slot *slots = plan_tensors(cfg, be, &n, &total);
    alloc_tensors(w, cfg, be, slots, n, total);
    float bound = sqrtf(3.0f) * 0.02f; /* U(-a, a) with std 0.02, like HF's initializer_range */
    size_t chunk_cap = 0;
    float *host = NULL;
    for (int i = 0; i < n; i++) {
        size_t count = (size_t)(slots[i].rows * slots[i].cols);
        if (count > chunk_cap) { free(host); chunk_cap = count; host = fl_malloc(count * sizeof(float)); }
        uint64_t stream = fl_rng_stream(seed, (uint64_t)i, 1, 0);
        if (slots[i].init == INIT_NORM) fl_rng_fill_uniform(host, count, stream, 0.9f, 1.1f);
        else if (slots[i].init == INIT_BIAS) fl_rng_fill_uniform(host, count, stream, -0.02f, 0.02f);
        else fl_rng_fill_uniform(host, count, stream, -bound, bound);
        (slots[i].is_vector ? be->upload_act : be->upload_weight)(slots[i].dst, host, count);
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

/* As many tensors in the files as config.json implies (else the first missing one is named): checked
 * before anything is sized from the config. */
static int check_count(const shard_set *s, const fl_model_config *cfg, const char *dir) {
    int status = 0;
    int64_t per_layer = (int64_t)N_LAYER_TENSORS - (cfg->qkv_bias ? 0 : 3);
    int64_t needed = 2 + !cfg->tie_word_embeddings + (int64_t)cfg->n_layers * per_layer;
    if (needed > n_tensors_in(s)) {
        /* some tensor is missing: name the first one (found within n_tensors + 1 names) */
        const char *file;
        char name[128];
        for (int l = -1; l < cfg->n_layers && !status; l++)
            for (size_t t = 0; t < (l < 0 ? 3 : N_LAYER_TENSORS) && !status; t++) {
                if (l < 0) {
                    if (t == 1 && cfg->tie_word_embeddings) continue;
                    snprintf(name, sizeof name, "%s", t == 0 ? "model.embed_tokens.weight" : t == 1 ? "lm_head.weight" : "model.norm.weight");
                } else {
                    if (layer_tensor_table[t].is_bias && !cfg->qkv_bias) continue;
                    snprintf(name, sizeof name, "model.layers.%d.%s", l, layer_tensor_table[t].suffix);
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

int fl_weights_load(fl_base_weights *w, fl_model_config *cfg, const char *dir, const fl_backend *be) {
    memset(w, 0, sizeof *w);
    char *config_path = fl_path_join(dir, "config.json");
    int status = fl_config_load(cfg, config_path);
    free(config_path);
    if (status) return status;
    snprintf(cfg->name, sizeof cfg->name, "%s", dir);
    shard_set shards;
    FL_TRY(open_shards(&shards, dir));
    /* Everything config.json implies is checked against the files before any allocation, so a
     * config with absurd sizes is an input error, not an out-of-memory abort. */
    status = check_count(&shards, cfg, dir);
    if (status) { shards_close(&shards); return status; }
    int n;
    size_t total;
    tensor_slot *slots = plan_tensors(cfg, be, &n, &total);
    const fl_st_tensor **found = fl_calloc((size_t)n, sizeof *found);
    for (int i = 0; i < n && !status; i++) status = check_slot(&shards, &slots[i], dir, &found[i]);
    if (!status) {
        alloc_tensors(w, cfg, be, slots, n, total);
        size_t max_count = 0;
        for (int i = 0; i < n; i++)
            if (found[i]->numel > max_count) max_count = found[i]->numel;
        float *host = fl_malloc(max_count * sizeof(float));
        for (int i = 0; i < n; i++) {
            fl_convert_to_f32(host, found[i]->data, found[i]->dtype, found[i]->numel);
            (slots[i].is_vector ? be->upload_act : be->upload_weight)(slots[i].dst, host, found[i]->numel);
        }
        free(host);
    }
    free(found);
    free(slots);
    shards_close(&shards);
    if (status) fl_weights_free(w);
    return status;
}

int fl_weights_check_dir(const fl_model_config *cfg, const char *dir) {
    shard_set shards;
    FL_TRY(open_shards(&shards, dir));
    int status = check_count(&shards, cfg, dir);
    if (!status) {
        int n;
        size_t total;
        tensor_slot *slots = plan_tensors(cfg, fl_backend_cpu(), &n, &total);
        const fl_st_tensor *t;
        for (int i = 0; i < n && !status; i++) status = check_slot(&shards, &slots[i], dir, &t);
        free(slots);
    }
    shards_close(&shards);
    return status;
}
