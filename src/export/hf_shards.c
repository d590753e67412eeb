/* hf_shards.c — the safetensors files of a Hugging Face model folder, opened (validated, mmapped)
 * together so a tensor is found by name whatever shard holds it. Not a weights loader: tensors
 * stay in the map, in their file dtype. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "export/export_internal.h"
#include "io/file_util.h"

static int open_one(fl_hf_shards *s, const char *dir, const char *file) {
    for (int i = 0; i < s->n; i++) {
        const char *base = strrchr(s->files[i].path, '/');
        if (!strcmp(base ? base + 1 : s->files[i].path, file)) return 0;
    }
    fl_safetensors *grown = fl_malloc(sizeof *grown * (size_t)(s->n + 1));
    if (s->n) memcpy(grown, s->files, sizeof *grown * (size_t)s->n);
    free(s->files);
    s->files = grown;
    char *path = fl_path_join(dir, file);
    int status = fl_safetensors_open(&s->files[s->n], path);
    free(path);
    if (!status) s->n++;
    return status;
}

int fl_hf_shards_open(fl_hf_shards *s, const char *dir) {
    memset(s, 0, sizeof *s);
    char *single = fl_path_join(dir, "model.safetensors");
    char *index = fl_path_join(dir, "model.safetensors.index.json");
    int status = 0;
    if (fl_file_exists(single)) {
        status = open_one(s, dir, "model.safetensors");
    } else if (fl_file_exists(index)) {
        json_error_t jerr;
        json_t *root = json_load_file(index, 0, &jerr);
        json_t *map = root ? json_object_get(root, "weight_map") : NULL;
        if (!root) status = fl_input_error("%s:%d:%d: invalid JSON: %s", index, jerr.line, jerr.column, jerr.text);
        else if (!json_is_object(map)) status = fl_input_error("%s: field 'weight_map' missing or not an object", index);
        const char *name;
        json_t *file;
        if (!status) json_object_foreach(map, name, file) {
            const char *f = json_string_value(file);
            if (!f || strchr(f, '/')) { status = fl_input_error("%s: weight_map['%s'] is not a file name in the folder", index, name); break; }
            if ((status = open_one(s, dir, f))) break;
        }
        json_decref(root);
    } else {
        status = fl_input_error("%s: no model.safetensors or model.safetensors.index.json in the folder", dir);
    }
    free(single);
    free(index);
    if (status) fl_hf_shards_close(s);
    return status;
}

void fl_hf_shards_close(fl_hf_shards *s) {
    for (int i = 0; i < s->n; i++) fl_safetensors_close(&s->files[i]);
    free(s->files);
    memset(s, 0, sizeof *s);
}

const fl_st_tensor *fl_hf_shards_find(const fl_hf_shards *s, const char *name, const char **file) {
    for (int i = 0; i < s->n; i++) {
        const fl_st_tensor *t = fl_safetensors_find(&s->files[i], name);
        if (t) {
            if (file) *file = s->files[i].path;
            return t;
        }
    }
    return NULL;
}
