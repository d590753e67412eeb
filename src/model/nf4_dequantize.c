/* nf4_dequantize.c — an NF4 (bitsandbytes 4-bit) folder written as a float folder (see
 * nf4_dequantize.h): config.json without quantization_config; every NF4 weight replaced by its
 * dequantization, the bitsandbytes companion tensors dropped, every other tensor copied byte for
 * byte. What `merge` of an NF4 base builds on (infer/merge_nf4.c); not the merge itself.
 */
#include "model/nf4_dequantize.h"

#include <dirent.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"
#include "io/file_util.h"
#include "io/path_guard.h"
#include "io/run_lock.h"
#include "io/safetensors.h"
#include "model/weights_nf4.h"

static const char *const companions[] = {".absmax", ".quant_map", ".nested_absmax", ".nested_quant_map",
                                         ".quant_state.bitsandbytes__nf4"};

/* 1 when `name` is `<w>.weight<companion>` of an NF4 weight present in the files. */
static int is_companion(const fl_safetensors *files, int n_files, const char *name) {
    for (size_t c = 0; c < sizeof companions / sizeof companions[0]; c++) {
        size_t len = strlen(name), cl = strlen(companions[c]);
        if (len <= cl || strcmp(name + len - cl, companions[c])) continue;
        char qs[512];
        snprintf(qs, sizeof qs, "%.*s.quant_state.bitsandbytes__nf4", (int)(len - cl), name);
        for (int i = 0; i < n_files; i++)
            if (fl_safetensors_find(&files[i], qs)) return 1;
    }
    return 0;
}

/* The (rows, cols) an NF4 weight's quant_state JSON declares; 0 when `name` is not NF4. */
static int nf4_shape(const fl_safetensors *files, int n_files, const char *name, int64_t *rows, int64_t *cols) {
    char qs[512];
    snprintf(qs, sizeof qs, "%s.quant_state.bitsandbytes__nf4", name);
    const fl_st_tensor *t = NULL;
    for (int i = 0; i < n_files && !t; i++) t = fl_safetensors_find(&files[i], qs);
    if (!t) return 0;
    json_t *j = json_loadb(t->data, t->nbytes, 0, NULL);
    json_t *shape = j ? json_object_get(j, "shape") : NULL;
    *rows = json_integer_value(json_array_get(shape, 0));
    *cols = json_integer_value(json_array_get(shape, 1));
    json_decref(j);
    return 1;   /* a bad shape is caught by fl_nf4_load_weight's checks */
}

/* Writes the float version of shard `file` (one of `files`) to out_path. */
static int dequantize_shard(const fl_safetensors *files, int n_files, const fl_safetensors *file, const char *out_path) {
    fl_st_write_tensor *out = fl_calloc((size_t)file->n_tensors + 1, sizeof *out);
    void **owned = fl_calloc((size_t)file->n_tensors + 1, sizeof *owned);
    int n = 0, status = 0;
    for (int i = 0; i < file->n_tensors && !status; i++) {
        const fl_st_tensor *t = &file->tensors[i];
        if (is_companion(files, n_files, t->name)) continue;
        fl_st_write_tensor *o = &out[n];
        *o = fl_st_write_tensor_of(t);
        int64_t rows, cols;
        if (nf4_shape(files, n_files, t->name, &rows, &cols)) {
            fl_nf4_weight w;
            status = fl_nf4_load_weight(&w, files, n_files, t->name, rows, cols, FL_NF4_STORED);
            if (status) break;
            owned[n] = fl_malloc((size_t)(rows * cols) * fl_dtype_size(w.dtype));
            fl_nf4_dequantize(&w, owned[n], w.dtype);
            o->dtype = w.dtype;
            o->ndim = 2;
            o->shape[0] = rows;
            o->shape[1] = cols;
            o->data = owned[n];
            fl_nf4_free(&w);
        }
        n++;
    }
    if (!status) {
        const char **meta = fl_calloc(2 * (size_t)file->n_metadata + 2, sizeof *meta);
        for (int i = 0; i < file->n_metadata; i++) {
            meta[2 * i] = file->metadata_keys[i];
            meta[2 * i + 1] = file->metadata_values[i];
        }
        if (!file->n_metadata) { meta[0] = "format"; meta[1] = "pt"; }
        status = fl_safetensors_write(out_path, out, n, meta, file->n_metadata ? file->n_metadata : 1);
        free(meta);
    }
    for (int i = 0; i <= file->n_tensors; i++) free(owned[i]);
    free(owned);
    free(out);
    return status;
}

/* config.json (without quantization_config) and, for a sharded model, the index without the
 * companion tensors. */
static int write_json_without(const char *in_path, const char *out_path, const char *drop_key,
                              const fl_safetensors *files, int n_files) {
    json_t *root;
    FL_TRY(fl_file_load_json(in_path, FL_FILE_CONFIG, 0, &root));
    if (drop_key) json_object_del(root, drop_key);
    json_t *map = json_object_get(root, "weight_map");
    if (json_is_object(map)) {
        const char *k;
        json_t *v;
        void *tmp;
        json_object_foreach_safe(map, tmp, k, v) if (is_companion(files, n_files, k)) json_object_del(map, k);
    }
    char *text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    int status = fl_write_file_atomic(out_path, text, strlen(text));
    free(text);
    json_decref(root);
    return status;
}

int fl_nf4_dequantize_folder(const char *model_dir, const char *out_dir) {
    char *single = fl_path_join(model_dir, "model.safetensors");
    char *index = fl_path_join(model_dir, "model.safetensors.index.json");
    int sharded = !fl_file_exists(single) && fl_file_exists(index);
    fl_safetensors files[64];
    char *names[64];
    int n_files = 0, status = 0;
    if (!sharded) {
        names[0] = strdup("model.safetensors");
        status = fl_safetensors_open(&files[0], single);
        n_files = !status;
        if (status) free(names[0]);
    } else {
        json_t *root = NULL;
        status = fl_file_load_json(index, FL_FILE_CONFIG, 0, &root);
        json_t *map = root ? json_object_get(root, "weight_map") : NULL;
        if (!status && !json_is_object(map)) status = fl_input_error("%s: missing or invalid weight_map", index);
        const char *k;
        json_t *v;
        if (!status) json_object_foreach(map, k, v) {
            const char *f = json_string_value(v);
            if (!f || strchr(f, '/')) { status = fl_input_error("%s: weight_map['%s'] is not a file name", index, k); break; }
            int seen = 0;
            for (int i = 0; i < n_files && !seen; i++) seen = !strcmp(names[i], f);
            if (seen) continue;
            if (n_files == 64) { status = fl_input_error("%s: more than 64 shard files", index); break; }
            char *p = fl_path_join(model_dir, f);
            status = fl_safetensors_open(&files[n_files], p);
            free(p);
            if (status) break;
            names[n_files++] = strdup(f);
        }
        json_decref(root);
    }
    if (!status) status = fl_mkdir_p(out_dir);
    for (int i = 0; i < n_files && !status; i++) {
        char *out = fl_path_join(out_dir, names[i]);
        status = dequantize_shard(files, n_files, &files[i], out);
        free(out);
    }
    char *cfg_in = fl_path_join(model_dir, "config.json"), *cfg_out = fl_path_join(out_dir, "config.json");
    if (!status) status = write_json_without(cfg_in, cfg_out, "quantization_config", files, n_files);
    if (!status && sharded) {
        char *idx_out = fl_path_join(out_dir, "model.safetensors.index.json");
        status = write_json_without(index, idx_out, NULL, files, n_files);
        free(idx_out);
    }
    free(cfg_in);
    free(cfg_out);
    for (int i = 0; i < n_files; i++) {
        fl_safetensors_close(&files[i]);
        free(names[i]);
    }
    free(single);
    free(index);
    return status;
}
