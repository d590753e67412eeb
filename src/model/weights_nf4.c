/* weights_nf4.c — bitsandbytes 4-bit checkpoints and quantize-at-load (see weights_nf4.h). */
#include "model/weights_nf4.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "io/file_util.h"

/* ---------------------------------------------------------------- config.json */

static fl_dtype torch_dtype(const char *s) {
    if (!s) return FL_DTYPE_UNKNOWN;
    if (!strcmp(s, "float32")) return FL_F32;
    if (!strcmp(s, "bfloat16")) return FL_BF16;
    if (!strcmp(s, "float16")) return FL_F16;
    return FL_DTYPE_UNKNOWN;
}

int fl_quant_config_load(fl_quant_config *qc, const char *config_path) {
    memset(qc, 0, sizeof *qc);
    json_t *root;
    FL_TRY(fl_file_load_json(config_path, FL_FILE_CONFIG, 0, &root));
    int status = 0;
    json_t *q = json_object_get(root, "quantization_config");
    if (q && !json_is_null(q)) {
        const char *method = json_string_value(json_object_get(q, "quant_method"));
        const char *type = json_string_value(json_object_get(q, "bnb_4bit_quant_type"));
        const char *storage = json_string_value(json_object_get(q, "bnb_4bit_quant_storage"));
        if (!json_is_object(q))
            status = fl_input_error("%s: quantization_config is not an object", config_path);
        else if (!method || strcmp(method, "bitsandbytes"))
            status = fl_input_error("%s: quantization_config.quant_method is '%s' (fastlora reads bitsandbytes 4-bit NF4 "
                                    "checkpoints only)", config_path, method ? method : "(missing)");
        else if (json_is_true(json_object_get(q, "load_in_8bit")))
            status = fl_input_error("%s: quantization_config is bitsandbytes 8-bit (fastlora reads 4-bit NF4 only)", config_path);
        else if (!json_is_true(json_object_get(q, "load_in_4bit")))
            status = fl_input_error("%s: quantization_config.load_in_4bit is not true", config_path);
        else if (!type || strcmp(type, "nf4"))
            status = fl_input_error("%s: quantization_config.bnb_4bit_quant_type is '%s' (expected \"nf4\")", config_path,
                                    type ? type : "(missing)");
        else if (storage && strcmp(storage, "uint8"))
            status = fl_input_error("%s: quantization_config.bnb_4bit_quant_storage is '%s' (expected \"uint8\")",
                                    config_path, storage);
        else {
            qc->nf4 = 1;
            qc->double_quant = json_is_true(json_object_get(q, "bnb_4bit_use_double_quant"));
            qc->compute_dtype = torch_dtype(json_string_value(json_object_get(q, "bnb_4bit_compute_dtype")));
        }
    }
    json_decref(root);
    return status;
}

/* ---------------------------------------------------------------- one weight */

typedef struct {
    const fl_safetensors *files;
    int n_files;
} file_set;

static const fl_st_tensor *find(file_set fs, const char *name, const char **path) {
    for (int i = 0; i < fs.n_files; i++) {
        const fl_st_tensor *t = fl_safetensors_find(&fs.files[i], name);
        if (t) { *path = fs.files[i].path; return t; }
    }
    return NULL;
}

/* The companion tensor `<name>.<suffix>`, checked for dtype and element count (count < 0: any). */
static int companion(file_set fs, const char *name, const char *suffix, fl_dtype dtype, int64_t count,
                     const fl_st_tensor **out) {
    char full[256];
    snprintf(full, sizeof full, "%s.%s", name, suffix);
    const char *path = NULL;
    const fl_st_tensor *t = find(fs, full, &path);
    *out = t;
    if (!t) return fl_input_error("tensor '%s' is missing (the NF4 weight '%s' needs it)", full, name);
    if (t->dtype != dtype)
        return fl_input_error("%s: tensor '%s' has dtype %s (expected %s)", path, full, fl_dtype_name(t->dtype),
                              fl_dtype_name(dtype));
    if (count >= 0 && (int64_t)t->numel != count)
        return fl_input_error("%s: tensor '%s' has %zu elements (expected %lld)", path, full, t->numel, (long long)count);
    return 0;
}

/* Element i of an F32 tensor's data. The safetensors format does not promise 4-byte alignment (files
 * from Python's writer have it; others need not), so it is read through memcpy. */
static float f32_at(const void *data, size_t i) {
    float v;
    memcpy(&v, (const char *)data + i * sizeof v, sizeof v);
    return v;
}

static int all_finite(const void *x, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!isfinite(f32_at(x, i))) return 0;
    return 1;
}

/* The fields of the JSON in `<name>.quant_state.bitsandbytes__nf4`. */
typedef struct {
    fl_dtype dtype;
    int nested;
    float offset;
} quant_state;

static int parse_quant_state(const fl_st_tensor *t, const char *path, const char *tname, int64_t rows, int64_t cols,
                             quant_state *qs) {
    json_error_t jerr;
    json_t *j = json_loadb(t->data, t->nbytes, 0, &jerr);
    if (!j || !json_is_object(j)) {
        json_decref(j);
        return fl_input_error("%s: tensor '%s' is not the JSON bitsandbytes writes (%s)", path, tname,
                              j ? "not an object" : jerr.text);
    }
    int status = 0;
    const char *type = json_string_value(json_object_get(j, "quant_type"));
    json_t *bs = json_object_get(j, "blocksize"), *shape = json_object_get(j, "shape");
    json_t *off = json_object_get(j, "nested_offset");
    qs->dtype = torch_dtype(json_string_value(json_object_get(j, "dtype")));
    qs->nested = off != NULL;
    if (!type || strcmp(type, "nf4"))
        status = fl_input_error("%s: %s: quant_type is '%s' (expected \"nf4\")", path, tname, type ? type : "(missing)");
    else if (!json_is_integer(bs) || json_integer_value(bs) != FL_NF4_BLOCK)
        status = fl_input_error("%s: %s: blocksize is not %d (fastlora reads blocksize-64 NF4 only)", path, tname, FL_NF4_BLOCK);
    else if (qs->dtype == FL_DTYPE_UNKNOWN)
        status = fl_input_error("%s: %s: dtype is not float32, bfloat16 or float16", path, tname);
    else if (!json_is_array(shape) || json_array_size(shape) != 2 ||
             json_integer_value(json_array_get(shape, 0)) != rows || json_integer_value(json_array_get(shape, 1)) != cols)
        status = fl_input_error("%s: %s: shape is not [%lld, %lld] as config.json implies", path, tname, (long long)rows,
                                (long long)cols);
    else if (qs->nested) {
        json_t *nbs = json_object_get(j, "nested_blocksize");
        const char *ndt = json_string_value(json_object_get(j, "nested_dtype"));
        double o = json_number_value(off);
        if (!json_is_integer(nbs) || json_integer_value(nbs) != FL_NF4_GROUP)
            status = fl_input_error("%s: %s: nested_blocksize is not %d", path, tname, FL_NF4_GROUP);
        else if (!ndt || strcmp(ndt, "float32"))
            status = fl_input_error("%s: %s: nested_dtype is not \"float32\"", path, tname);
        else if (!json_is_number(off) || !isfinite(o) || (double)(float)o != o)
            status = fl_input_error("%s: %s: nested_offset is not a finite float32 number", path, tname);
        else
            qs->offset = (float)o;
    }
    json_decref(j);
    return status;
}

static int load_stored(fl_nf4_weight *w, file_set fs, const char *name, const char *path, const fl_st_tensor *t,
                       int64_t rows, int64_t cols) {
    int64_t n = rows * cols, nb = (n + FL_NF4_BLOCK - 1) / FL_NF4_BLOCK, ng = (nb + FL_NF4_GROUP - 1) / FL_NF4_GROUP;
    char qs_name[256];
    snprintf(qs_name, sizeof qs_name, "%s.quant_state.bitsandbytes__fp4", name);
    const char *qpath;
    if (find(fs, qs_name, &qpath))
        return fl_input_error("%s: '%s' is FP4-quantized (fastlora reads NF4 only)", qpath, name);
    if (t->nbytes != (size_t)(n + 1) / 2)
        return fl_input_error("%s: tensor '%s' holds %zu bytes (%lld x %lld in 4 bits needs %lld)", path, name, t->nbytes,
                              (long long)rows, (long long)cols, (long long)((n + 1) / 2));
    const fl_st_tensor *st_json, *code_map, *absmax, *nested = NULL, *nested_map = NULL;
    FL_TRY(companion(fs, name, "quant_state.bitsandbytes__nf4", FL_U8, -1, &st_json));
    quant_state qs = {0};
    snprintf(qs_name, sizeof qs_name, "%s.quant_state.bitsandbytes__nf4", name);
    FL_TRY(parse_quant_state(st_json, path, qs_name, rows, cols, &qs));
    FL_TRY(companion(fs, name, "quant_map", FL_F32, 16, &code_map));
    if (memcmp(code_map->data, fl_nf4_code(), 16 * sizeof(float)))
        return fl_input_error("%s: tensor '%s.quant_map' is not the NF4 code table", path, name);
    FL_TRY(companion(fs, name, "absmax", qs.nested ? FL_U8 : FL_F32, nb, &absmax));
    if (qs.nested) {
        FL_TRY(companion(fs, name, "nested_absmax", FL_F32, ng, &nested));
        FL_TRY(companion(fs, name, "nested_quant_map", FL_F32, 256, &nested_map));
        if (!all_finite(nested->data, (size_t)ng))
            return fl_input_error("%s: tensor '%s.nested_absmax' holds a non-finite value", path, name);
        for (int i = 0; i < 256; i++) {
            float m = f32_at(nested_map->data, (size_t)i);
            if (!isfinite(m) || fabsf(m) > 1.0f || (i && m < f32_at(nested_map->data, (size_t)i - 1)))
                return fl_input_error("%s: tensor '%s.nested_quant_map' is not an ascending map in [-1, 1]", path, name);
        }
    } else if (!all_finite(absmax->data, (size_t)nb)) {
        return fl_input_error("%s: tensor '%s.absmax' holds a non-finite value", path, name);
    }
    fl_nf4_alloc(w, rows, cols, qs.dtype, qs.nested);
    memcpy(w->packed, t->data, (size_t)(n + 1) / 2);
    if (qs.nested) {
        memcpy(w->absmax_q, absmax->data, (size_t)nb);
        memcpy(w->nested_absmax, nested->data, (size_t)ng * sizeof(float));
        memcpy(w->nested_map, nested_map->data, 256 * sizeof(float));
        w->offset = qs.offset;
    } else {
        memcpy(w->absmax, absmax->data, (size_t)nb * sizeof(float));
    }
    return 0;
}

int fl_nf4_load_weight(fl_nf4_weight *w, const fl_safetensors *files, int n_files, const char *name,
                       int64_t rows, int64_t cols, fl_nf4_source source) {
    memset(w, 0, sizeof *w);
    file_set fs = {files, n_files};
    const char *path = NULL;
    const fl_st_tensor *t = find(fs, name, &path);
    if (!t) return fl_input_error("tensor '%s' is missing from the safetensors files", name);
    int is_float = t->dtype == FL_F32 || t->dtype == FL_BF16 || t->dtype == FL_F16;
    if (!is_float) return load_stored(w, fs, name, path, t, rows, cols);
    if (t->ndim != 2 || t->shape[0] != rows || t->shape[1] != cols)
        return fl_input_error("%s: tensor '%s' does not have the shape [%lld, %lld] config.json implies", path, name,
                              (long long)rows, (long long)cols);
    if (source != FL_NF4_QUANTIZE)
        return fl_input_error("%s: tensor '%s' is stored as %s, not NF4 (a module bitsandbytes left unquantized?)", path,
                              name, fl_dtype_name(t->dtype));
    return fl_nf4_quantize(w, t->data, t->dtype, rows, cols, 1, name);
}

/* ---------------------------------------------------------------- one layer of a folder */

/* The distinct files holding `names` (model.safetensors, or the index's shards), opened. */
static int open_for(const char *dir, char names[][128], int n_names, fl_safetensors *files, int *n_files) {
    *n_files = 0;
    char *single = fl_path_join(dir, "model.safetensors");
    char *index = fl_path_join(dir, "model.safetensors.index.json");
    int status = 0;
    if (fl_file_exists(single)) {
        status = fl_safetensors_open(&files[0], single);
        *n_files = !status;
    } else if (fl_file_exists(index)) {
        json_t *root = NULL;
        status = fl_file_load_json(index, FL_FILE_CONFIG, 0, &root);
        json_t *map = root ? json_object_get(root, "weight_map") : NULL;
        if (!status && !json_is_object(map)) status = fl_input_error("%s: missing or invalid weight_map", index);
        for (int i = 0; i < n_names && !status; i++) {
            const char *f = json_string_value(json_object_get(map, names[i]));
            if (!f) { status = fl_input_error("%s: weight_map has no entry for '%s'", index, names[i]); break; }
            if (strchr(f, '/')) { status = fl_input_error("%s: weight_map['%s'] is not a file name", index, names[i]); break; }
            int seen = 0;
            for (int k = 0; k < *n_files && !seen; k++) {
                const char *base = strrchr(files[k].path, '/');
                seen = !strcmp(base ? base + 1 : files[k].path, f);
            }
            if (seen) continue;
            char *p = fl_path_join(dir, f);
            status = fl_safetensors_open(&files[*n_files], p);
            free(p);
            if (!status) (*n_files)++;
        }
        json_decref(root);
    } else {
        status = fl_input_error("%s: no model.safetensors or model.safetensors.index.json in the folder", dir);
    }
    free(single);
    free(index);
    return status;
}

int fl_nf4_load_layer(fl_nf4_layer *out, const char *dir, const fl_model_config *cfg, int layer, fl_nf4_source source) {
    memset(out, 0, sizeof *out);
    char names[FL_N_PROJ][128];
    for (int p = 0; p < FL_N_PROJ; p++)
        snprintf(names[p], sizeof names[p], "%slayers.%d.%s.weight", fl_config_tensor_prefix(cfg), layer, fl_proj_modules[p]);
    fl_safetensors files[FL_N_PROJ];
    int n_files = 0;
    int status = open_for(dir, names, FL_N_PROJ, files, &n_files);
    for (int p = 0; p < FL_N_PROJ && !status; p++) {
        int in, oc;
        fl_proj_dims(cfg, (fl_proj)p, &in, &oc);
        status = fl_nf4_load_weight(&out->proj[p], files, n_files, names[p], oc, in, source);
    }
    for (int i = 0; i < n_files; i++) fl_safetensors_close(&files[i]);
    if (status) fl_nf4_layer_free(out);
    return status;
}

void fl_nf4_layer_free(fl_nf4_layer *l) {
    for (int p = 0; p < FL_N_PROJ; p++) fl_nf4_free(&l->proj[p]);
}
