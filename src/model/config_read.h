/* config_read.h — the config.json field readers config.c parses with: each error names the file and
 * the field. Not a parser of its own (model/config.c); internal to model/. */
#ifndef FL_CONFIG_READ_H
#define FL_CONFIG_READ_H

#include <jansson.h>

#include "common/error.h"

static inline int get_int(const char *path, json_t *obj, const char *key, int required, int fallback, int *out) {
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v)) {
        if (required) return fl_input_error("%s: field '%s' is missing (expected an integer)", path, key);
        *out = fallback;
        return 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 100000000)
        return fl_input_error("%s: field '%s' must be a non-negative integer", path, key);
    *out = (int)json_integer_value(v);
    return 0;
}

static inline int get_number(const char *path, json_t *obj, const char *key, int required, double fallback, double *out) {
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v)) {
        if (required) return fl_input_error("%s: field '%s' is missing (expected a number)", path, key);
        *out = fallback;
        return 0;
    }
    if (!json_is_number(v)) return fl_input_error("%s: field '%s' must be a number", path, key);
    *out = json_number_value(v);
    return 0;
}

static inline int get_bool(const char *path, json_t *obj, const char *key, int fallback, int *out) {
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v)) { *out = fallback; return 0; }
    if (!json_is_boolean(v)) return fl_input_error("%s: field '%s' must be true or false", path, key);
    *out = json_is_true(v);
    return 0;
}

/* bos/eos: an integer, a list of integers (first wins), or absent/null (-1). */
static inline int get_token_id(const char *path, json_t *obj, const char *key, int *out) {
    json_t *v = json_object_get(obj, key);
    *out = -1;
    if (json_is_array(v) && json_array_size(v) > 0) v = json_array_get(v, 0);
    if (!v || json_is_null(v)) return 0;
    if (!json_is_integer(v)) return fl_input_error("%s: field '%s' must be an integer or a list of integers", path, key);
    *out = (int)json_integer_value(v);
    return 0;
}

#endif
