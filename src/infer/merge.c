/* merge.c — LoRA merge into a full HF folder (see merge.h). */
#include "infer/merge.h"

#include <cblas.h>
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/dtype.h"
#include "common/error.h"
#include "io/file_util.h"
#include "io/safetensors.h"
#include "lora/adapter_io.h"
#include "io/output_dir.h"
#include "model/config.h"
#include "model/weights.h"

static int copy_file(const char *src, const char *dst) {
    FILE *in;
    FL_TRY(fl_file_fopen_read(src, FL_FILE_WEIGHTS, &in));
    fl_atomic_file out;
    int status = fl_atomic_file_open(&out, dst);
    if (status) { fclose(in); return status; }
    char buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0) fwrite(buf, 1, n, out.fp);
    int bad = ferror(in);
    fclose(in);
    if (bad) { fl_atomic_file_abort(&out); return fl_input_error("%s: read error", src); }
    return fl_atomic_file_commit(&out);
}

static int ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

/* Which (layer, projection) a base tensor name is, or -1. */
/* A merged tensor in its stored dtype (F32, or the BF16 / F16 codes) holds no Inf or NaN: finite
 * inputs can still overflow (a large s·B·A, or a sum past f16's 65504), and such a model would load
 * and generate nothing. */
static int merged_in_range(const void *data, size_t n, fl_dtype dtype, const char *tensor, const char *path) {
    if (dtype == FL_F32) return fl_merge_check_finite(data, n, tensor, path);
    const uint16_t *h = data, exp_mask = dtype == FL_BF16 ? 0x7f80 : 0x7c00;
    for (size_t k = 0; k < n; k++)
        if ((h[k] & exp_mask) == exp_mask)
            return fl_input_error("%s: '%s' plus the adapter's s·B·A overflows %s at element %zu: the adapter's values "
                                  "are too large for this model", path, tensor, fl_dtype_name(dtype), k);
    return 0;
}

/* Which (layer, module) a base tensor name is, or -1: a projection, or a fused module of cfg
 * (Phi-3's qkv_proj, gate_up_proj: its first member, model/projections.h). */
static int adapted_slot(const char *name, const fl_model_config *cfg, int *layer, fl_proj *proj) {
    int l, used = 0, n_layers = cfg->n_layers;
    const char *prefix = fl_config_tensor_prefix(cfg);
    size_t pn = strlen(prefix);
    if (strncmp(name, prefix, pn)) return -1;
    name += pn;
    if (sscanf(name, "layers.%d.%n", &l, &used) != 1 || used == 0 || l < 0 || l >= n_layers) return -1;
    for (int p = 0; p < FL_N_PROJ; p++) {
        char want[96];
        if (!fl_is_module(cfg, (fl_proj)p)) continue;
        snprintf(want, sizeof want, "%s.weight", fl_module_path(cfg, (fl_proj)p));
        if (!strcmp(name + used, want)) { *layer = l; *proj = (fl_proj)p; return 0; }
    }
    return -1;
}

/* The shard file names: ["model.safetensors"] or the distinct files of the index, in order. */
static int shard_names(const char *model_dir, char ***names, int *n, int *sharded) {
    *n = 0;
    *names = NULL;
    char *single = fl_path_join(model_dir, "model.safetensors");
    char *index = fl_path_join(model_dir, "model.safetensors.index.json");
    int status = 0;
    *sharded = 0;
    if (fl_file_exists(single)) {
        *names = fl_malloc(sizeof(char *));
        (*names)[(*n)++] = strdup("model.safetensors");
    } else if (fl_file_exists(index)) {
        *sharded = 1;
        json_t *root;
        status = fl_file_load_json(index, FL_FILE_CONFIG, 0, &root);
        json_t *map = root ? json_object_get(root, "weight_map") : NULL;
        if (!status && !json_is_object(map)) status = fl_input_error("%s: missing or invalid weight_map", index);
        if (!status) {
            *names = fl_malloc(sizeof(char *) * (json_object_size(map) + 1));
            const char *k;
            json_t *v;
            json_object_foreach(map, k, v) {
                const char *f = json_string_value(v);
                if (!f || strchr(f, '/')) { status = fl_input_error("%s: weight_map['%s'] is not a file name", index, k); break; }
                int seen = 0;
                for (int i = 0; i < *n && !seen; i++) seen = !strcmp((*names)[i], f);
                if (!seen) (*names)[(*n)++] = strdup(f);
            }
        }
        json_decref(root);
    } else {
        status = fl_input_error("%s: no model.safetensors or model.safetensors.index.json", model_dir);
    }
    free(single);
    free(index);
    return status;
}

static int merge_shard(const char *in_path, const char *out_path, const fl_model_config *cfg, const fl_lora_config *lc,
                       const fl_lora_buffer *lora, int *merged_count) {
    fl_safetensors st;
    FL_TRY(fl_safetensors_open(&st, in_path));
    fl_st_write_tensor *out = fl_calloc((size_t)st.n_tensors + 1, sizeof *out);
    void **owned = fl_calloc((size_t)st.n_tensors + 1, sizeof *owned);
    float s = fl_lora_scale(lc);
    int status = 0;
    for (int i = 0; i < st.n_tensors && !status; i++) {
        const fl_st_tensor *t = &st.tensors[i];
        out[i] = fl_st_write_tensor_of(t);
        if ((status = fl_st_check_finite(t, in_path))) break; /* copied or merged, a NaN would pass on */
        int l;
        fl_proj p;
        if (adapted_slot(t->name, cfg, &l, &p) || !lora->layers[l].a[p]) continue;
        int in, oc, off; /* shape and dtype were checked by fl_weights_check_dir */
        fl_module_dims(cfg, p, &in, &oc, &off);
        float *w = fl_malloc(t->numel * sizeof(float));
        fl_convert_to_f32(w, t->data, t->dtype, t->numel);
        /* W (OC, IC) += s · B (OC, R) · A (R, IC) */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, oc, in, lc->rank, s, lora->layers[l].b[p], lc->rank,
                    lora->layers[l].a[p], in, 1.0f, w, in);
        void *dst = w;
        if (t->dtype != FL_F32) {
            uint16_t *h = fl_malloc(t->numel * sizeof(uint16_t));
            for (size_t k = 0; k < t->numel; k++) h[k] = t->dtype == FL_BF16 ? fl_f32_to_bf16(w[k]) : fl_f32_to_f16(w[k]);
            free(w);
            dst = h;
        }
        owned[i] = dst;
        out[i].data = dst;
        if ((status = merged_in_range(dst, t->numel, t->dtype, t->name, in_path))) break;
        (*merged_count)++;
    }
    if (!status) {
        const char **meta = fl_calloc(2 * (size_t)st.n_metadata + 1, sizeof *meta);
        for (int i = 0; i < st.n_metadata; i++) { meta[2 * i] = st.metadata_keys[i]; meta[2 * i + 1] = st.metadata_values[i]; }
        if (!st.n_metadata) { meta[0] = "format"; meta[1] = "pt"; }
        status = fl_safetensors_write(out_path, out, st.n_tensors, meta, st.n_metadata ? st.n_metadata : 1);
        free(meta);
    }
    for (int i = 0; i < st.n_tensors; i++) free(owned[i]);
    free(owned);
    free(out);
    fl_safetensors_close(&st);
    return status;
}

/* --force into a folder that held another model: weight files this merge did not write would be
 * loaded with (or instead of) the merged ones. `keep`: the files it wrote. */
static void remove_stale_weights(const char *dir, char *const *keep, int n_keep, int keep_index) {
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        int index = !strcmp(e->d_name, "model.safetensors.index.json");
        int weights = index || (!strncmp(e->d_name, "model", 5) && ends_with(e->d_name, ".safetensors"));
        int kept = index && keep_index;
        for (int i = 0; i < n_keep && !kept; i++) kept = !strcmp(keep[i], e->d_name);
        if (weights && !kept) {
            char *p = fl_path_join(dir, e->d_name);
            unlink(p);
            free(p);
        }
    }
    if (d) closedir(d);
}

/* Writes the merged folder into `out` (a staging folder): the shards, then config, tokenizer and
 * other files as they are. */
static int write_merged(const char *model_dir, const char *out, const fl_model_config *cfg, const fl_lora_config *lc,
                        const fl_lora_buffer *lora, char *const *names, int n_names) {
    int status = 0, merged = 0;
    for (int i = 0; i < n_names && !status; i++) {
        char *in = fl_path_join(model_dir, names[i]), *dst = fl_path_join(out, names[i]);
        status = merge_shard(in, dst, cfg, lc, lora, &merged);
        free(in);
        free(dst);
    }
    int expected = 0;
    for (int l = 0; l < cfg->n_layers; l++)
        for (int p = 0; p < FL_N_PROJ; p++) expected += lora->layers[l].a[p] != NULL;
    if (!status && merged != expected)
        status = fl_input_error("%s: merged %d of the adapter's %d matrices (tensors missing from the model?)", model_dir,
                                merged, expected);
    /* config, generation config, tokenizer files, the shard index: copied as they are */
    DIR *d = status ? NULL : opendir(model_dir);
    struct dirent *e;
    while (d && !status && (e = readdir(d))) {
        if (e->d_name[0] == '.' || ends_with(e->d_name, ".safetensors") || ends_with(e->d_name, ".bin") ||
            ends_with(e->d_name, ".pth") || ends_with(e->d_name, ".pt"))
            continue;
        char *src = fl_path_join(model_dir, e->d_name), *dst = fl_path_join(out, e->d_name);
        struct stat sb;
        if (stat(src, &sb) == 0 && S_ISREG(sb.st_mode)) status = copy_file(src, dst);
        free(src);
        free(dst);
    }
    if (d) closedir(d);
    /* Llama-3's tiktoken tokenizer lives in original/ */
    char *orig = fl_path_join(model_dir, "original/tokenizer.model");
    if (!status && fl_file_exists(orig)) {
        char *odir = fl_path_join(out, "original"), *dst = fl_path_join(out, "original/tokenizer.model");
        status = fl_mkdir_p(odir);
        if (!status) status = copy_file(orig, dst);
        free(odir);
        free(dst);
    }
    free(orig);
    return status;
}

int fl_merge_adapter(const char *model_dir, const char *adapter_dir, const char *out_dir, int force) {
    fl_model_config cfg;
    char *config_path = fl_path_join(model_dir, "config.json");
    int status = fl_config_load(&cfg, config_path);
    free(config_path);
    if (status) return status;
    FL_TRY(fl_weights_check_dir(&cfg, model_dir)); /* the base checks of train, generate and bench */
    fl_lora_config lc;
    FL_TRY(fl_adapter_load_config(adapter_dir, &lc));
    FL_TRY(fl_adapter_check_weights(adapter_dir, &cfg, &lc)); /* before allocating from config sizes */
    char **names = NULL;
    int n_names = 0, sharded = 0;
    status = shard_names(model_dir, &names, &n_names, &sharded);
    fl_output_dir od = {0};
    const char *inputs[2] = {model_dir, adapter_dir};
    if (!status) status = fl_output_dir_begin(&od, out_dir, force, inputs, 2);
    int into_existing = od.into_existing;
    od.keep_lock = 1; /* held until the stale weights are gone too */
    fl_lora_buffer lora;
    fl_lora_buffer_init(&lora, &cfg, &lc, fl_backend_cpu());
    if (!status) status = fl_adapter_load_weights(adapter_dir, &lora, &cfg, &lc);
    if (!status) status = write_merged(model_dir, od.stage, &cfg, &lc, &lora, names, n_names);
    if (!status) status = fl_output_dir_commit(&od);
    else if (od.stage) fl_output_dir_abort(&od);
    if (!status && into_existing) remove_stale_weights(out_dir, names, n_names, sharded);
    fl_run_lock_release(&od.lock);
    for (int i = 0; i < n_names; i++) free(names[i]);
    free(names);
    fl_lora_buffer_free(&lora);
    return status;
}

int fl_merge_check_finite(const float *w, size_t n, const char *tensor, const char *from) {
    for (size_t k = 0; k < n; k++)
        if (!isfinite(w[k]))
            return fl_input_error("%s: '%s' plus the adapter's s·B·A is not finite (%g at element %zu): the adapter's "
                                  "values are too large for this model", from, tensor, (double)w[k], k);
    return 0;
}

void fl_merge_lora_f32(float *w, const float *lora_b, const float *lora_a, int oc, int ic, int rank, float scale) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, oc, ic, rank, scale, lora_b, rank, lora_a, ic, 1.0f, w, ic);
}
