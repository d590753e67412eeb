/* safetensors.c — validated mmap reader and atomic writer (see safetensors.h). */
#include "io/safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"
#include "io/file_util.h"

#define MAX_HEADER_BYTES 100000000ull

void fl_safetensors_close(fl_safetensors *st) {
    if (st->map) munmap(st->map, st->file_size);
    for (int i = 0; i < st->n_tensors; i++) free(st->tensors[i].name);
    for (int i = 0; i < st->n_metadata; i++) { free(st->metadata_keys[i]); free(st->metadata_values[i]); }
    free(st->tensors);
    free(st->metadata_keys);
    free(st->metadata_values);
    free(st->path);
    memset(st, 0, sizeof *st);
}

static int by_begin(const void *a, const void *b) {
    const fl_st_tensor *x = a, *y = b;
    const uint8_t *px = x->data, *py = y->data;
    if (px != py) return px < py ? -1 : 1;
    return x->nbytes < y->nbytes ? -1 : x->nbytes > y->nbytes;
}

/* Parses one header entry into `t`; `buffer`/`buffer_size` is the byte buffer after the header. */
static int parse_entry(fl_st_tensor *t, const char *path, const char *name, json_t *entry,
                       const uint8_t *buffer, size_t buffer_size) {
    if (!json_is_object(entry)) return fl_input_error("%s: tensor '%s': header entry is not an object", path, name);
    json_t *dtype = json_object_get(entry, "dtype"), *shape = json_object_get(entry, "shape"),
           *offsets = json_object_get(entry, "data_offsets");
    if (!json_is_string(dtype)) return fl_input_error("%s: tensor '%s': field 'dtype' missing or not a string", path, name);
    t->dtype = fl_dtype_from_name(json_string_value(dtype));
    if (t->dtype == FL_DTYPE_UNKNOWN)
        return fl_input_error("%s: tensor '%s': dtype '%s' is not supported (expected F32, BF16, F16, I32, I64 or U8)",
                              path, name, json_string_value(dtype));
    if (!json_is_array(shape) || json_array_size(shape) > FL_ST_MAX_DIMS)
        return fl_input_error("%s: tensor '%s': field 'shape' must be an array of at most %d integers", path, name, FL_ST_MAX_DIMS);
    t->ndim = (int)json_array_size(shape);
    t->numel = 1;
    for (int d = 0; d < t->ndim; d++) {
        json_t *dim = json_array_get(shape, (size_t)d);
        if (!json_is_integer(dim) || json_integer_value(dim) < 0 || json_integer_value(dim) > (1ll << 40))
            return fl_input_error("%s: tensor '%s': shape[%d] is not a non-negative integer", path, name, d);
        t->shape[d] = json_integer_value(dim);
        if (t->shape[d] && t->numel > ((size_t)1 << 50) / (size_t)t->shape[d])
            return fl_input_error("%s: tensor '%s': shape is too large", path, name);
        t->numel *= (size_t)t->shape[d];
    }
    if (!json_is_array(offsets) || json_array_size(offsets) != 2 ||
        !json_is_integer(json_array_get(offsets, 0)) || !json_is_integer(json_array_get(offsets, 1)))
        return fl_input_error("%s: tensor '%s': field 'data_offsets' must be [begin, end]", path, name);
    json_int_t begin = json_integer_value(json_array_get(offsets, 0));
    json_int_t end = json_integer_value(json_array_get(offsets, 1));
    if (begin < 0 || end < begin || (uint64_t)end > buffer_size)
        return fl_input_error("%s: tensor '%s': data_offsets [%lld, %lld] out of range (data buffer is %zu bytes)",
                              path, name, (long long)begin, (long long)end, buffer_size);
    t->nbytes = (size_t)(end - begin);
    if (t->nbytes != t->numel * fl_dtype_size(t->dtype))
        return fl_input_error("%s: tensor '%s': data_offsets span %zu bytes but dtype %s x shape needs %zu",
                              path, name, t->nbytes, fl_dtype_name(t->dtype), t->numel * fl_dtype_size(t->dtype));
    t->data = buffer + begin;
    return 0;
}

static int parse_metadata(fl_safetensors *st, json_t *meta) {
    if (!json_is_object(meta)) return fl_input_error("%s: '__metadata__' is not an object", st->path);
    size_t n = json_object_size(meta);
    st->metadata_keys = fl_calloc(n, sizeof(char *));
    st->metadata_values = fl_calloc(n, sizeof(char *));
    const char *key;
    json_t *value;
    json_object_foreach(meta, key, value) {
        if (!json_is_string(value)) return fl_input_error("%s: __metadata__ '%s' is not a string", st->path, key);
        st->metadata_keys[st->n_metadata] = strdup(key);
        st->metadata_values[st->n_metadata] = strdup(json_string_value(value));
        st->n_metadata++;
    }
    return 0;
}

static int open_validated(fl_safetensors *st, const char *path) {
    st->path = strdup(path);
    int fd;
    uint64_t size;
    FL_TRY(fl_file_open_read(path, FL_FILE_WEIGHTS, &fd, &size));
    st->file_size = (size_t)size;
    if (st->file_size < 8) { close(fd); return fl_input_error("%s: file is %zu bytes, too short for a safetensors header", path, st->file_size); }
    st->map = mmap(NULL, st->file_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (st->map == MAP_FAILED) { st->map = NULL; return fl_input_error("%s: mmap failed: %s", path, strerror(errno)); }
    const uint8_t *bytes = st->map;
    uint64_t header_len = 0;
    for (int i = 0; i < 8; i++) header_len |= (uint64_t)bytes[i] << (8 * i);
    if (header_len > MAX_HEADER_BYTES || header_len > st->file_size - 8)
        return fl_input_error("%s: header length %llu runs past the end of the file (%zu bytes)", path,
                              (unsigned long long)header_len, st->file_size);
    if (header_len < 2 || bytes[8] != '{') return fl_input_error("%s: header does not start with '{'", path);
    json_error_t jerr;
    json_t *root = json_loadb((const char *)bytes + 8, (size_t)header_len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) return fl_input_error("%s: header JSON invalid at column %d: %s", path, jerr.column, jerr.text);
    if (!json_is_object(root)) { json_decref(root); return fl_input_error("%s: header is not a JSON object", path); }
    const uint8_t *buffer = bytes + 8 + header_len;
    size_t buffer_size = st->file_size - 8 - (size_t)header_len;
    st->tensors = fl_calloc(json_object_size(root), sizeof(fl_st_tensor));
    const char *name;
    json_t *entry;
    int status = 0;
    json_object_foreach(root, name, entry) {
        if (!strcmp(name, "__metadata__")) {
            if ((status = parse_metadata(st, entry))) break;
            continue;
        }
        fl_st_tensor *t = &st->tensors[st->n_tensors];
        if ((status = parse_entry(t, path, name, entry, buffer, buffer_size))) break;
        t->name = strdup(name);
        st->n_tensors++;
    }
    json_decref(root);
    if (status) return status;
    /* The buffer must be covered exactly: sorted by offset, each tensor starts where the last ended. */
    fl_st_tensor *sorted = fl_malloc(sizeof(fl_st_tensor) * (size_t)(st->n_tensors ? st->n_tensors : 1));
    memcpy(sorted, st->tensors, sizeof(fl_st_tensor) * (size_t)st->n_tensors);
    qsort(sorted, (size_t)st->n_tensors, sizeof *sorted, by_begin);
    const uint8_t *expect = buffer;
    for (int i = 0; i < st->n_tensors && !status; i++) {
        const uint8_t *begin = sorted[i].data;
        if (begin < expect)
            status = fl_input_error("%s: tensor '%s' overlaps the previous tensor in the data buffer", path, sorted[i].name);
        else if (begin > expect)
            status = fl_input_error("%s: hole of %td bytes in the data buffer before tensor '%s'", path, begin - expect, sorted[i].name);
        expect = begin + sorted[i].nbytes;
    }
    if (!status && expect != buffer + buffer_size)
        status = fl_input_error("%s: data buffer is %zu bytes but the tensors cover %td", path, buffer_size, expect - buffer);
    free(sorted);
    return status;
}

int fl_safetensors_open(fl_safetensors *st, const char *path) {
    memset(st, 0, sizeof *st);
    int status = open_validated(st, path);
    if (status) fl_safetensors_close(st);
    return status;
}

const fl_st_tensor *fl_safetensors_find(const fl_safetensors *st, const char *name) {
    for (int i = 0; i < st->n_tensors; i++)
        if (!strcmp(st->tensors[i].name, name)) return &st->tensors[i];
    return NULL;
}

const char *fl_safetensors_metadata(const fl_safetensors *st, const char *key) {
    for (int i = 0; i < st->n_metadata; i++)
        if (!strcmp(st->metadata_keys[i], key)) return st->metadata_values[i];
    return NULL;
}

/* The index of the first non-finite value (exponent bits all ones), or -1. */
static int64_t first_nonfinite(const fl_st_tensor *t) {
    if (t->dtype == FL_F32) {
        const uint32_t *u = t->data;
        for (size_t i = 0; i < t->numel; i++)
            if ((u[i] & 0x7f800000u) == 0x7f800000u) return (int64_t)i;
    } else if (t->dtype == FL_BF16 || t->dtype == FL_F16) {
        const uint16_t *u = t->data, mask = t->dtype == FL_BF16 ? 0x7f80 : 0x7c00;
        for (size_t i = 0; i < t->numel; i++)
            if ((u[i] & mask) == mask) return (int64_t)i;
    }
    return -1;
}

int fl_st_check_finite(const fl_st_tensor *t, const char *path) {
    int64_t i = first_nonfinite(t);
    if (i < 0) return 0;
    float v;
    fl_convert_to_f32(&v, (const char *)t->data + (size_t)i * fl_dtype_size(t->dtype), t->dtype, 1);
    return fl_input_error("%s: tensor '%s' holds a non-finite value (%s at index %lld of %zu): the file is damaged or "
                          "came from a run that diverged", path, t->name, isnan(v) ? "NaN" : v > 0 ? "+Inf" : "-Inf",
                          (long long)i, t->numel);
}

int fl_safetensors_write(const char *path, const fl_st_write_tensor *tensors, int n_tensors,
                         const char *const *metadata_kv, int n_metadata_pairs) {
    json_t *root = json_object();
    if (n_metadata_pairs > 0) {
        json_t *meta = json_object();
        for (int i = 0; i < n_metadata_pairs; i++)
            json_object_set_new(meta, metadata_kv[2 * i], json_string(metadata_kv[2 * i + 1]));
        json_object_set_new(root, "__metadata__", meta);
    }
    size_t offset = 0;
    for (int i = 0; i < n_tensors; i++) {
        const fl_st_write_tensor *t = &tensors[i];
        size_t numel = 1;
        json_t *shape = json_array();
        for (int d = 0; d < t->ndim; d++) {
            json_array_append_new(shape, json_integer(t->shape[d]));
            numel *= (size_t)t->shape[d];
        }
        size_t nbytes = numel * fl_dtype_size(t->dtype);
        json_t *entry = json_object();
        json_object_set_new(entry, "dtype", json_string(fl_dtype_name(t->dtype)));
        json_object_set_new(entry, "shape", shape);
        json_t *offsets = json_array();
        json_array_append_new(offsets, json_integer((json_int_t)offset));
        json_array_append_new(offsets, json_integer((json_int_t)(offset + nbytes)));
        json_object_set_new(entry, "data_offsets", offsets);
        json_object_set_new(root, t->name, entry);
        offset += nbytes;
    }
    char *header = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(root);
    size_t header_len = strlen(header), padded = (header_len + 7) / 8 * 8;
    fl_atomic_file out;
    int status = fl_atomic_file_open(&out, path);
    if (status) { free(header); return status; }
    uint8_t len_bytes[8];
    for (int i = 0; i < 8; i++) len_bytes[i] = (uint8_t)((uint64_t)padded >> (8 * i));
    fwrite(len_bytes, 1, 8, out.fp);
    fwrite(header, 1, header_len, out.fp);
    for (size_t i = header_len; i < padded; i++) fputc(' ', out.fp);
    free(header);
    for (int i = 0; i < n_tensors; i++) {
        size_t numel = 1;
        for (int d = 0; d < tensors[i].ndim; d++) numel *= (size_t)tensors[i].shape[d];
        fwrite(tensors[i].data, fl_dtype_size(tensors[i].dtype), numel, out.fp);
    }
    return fl_atomic_file_commit(&out);
}

fl_st_write_tensor fl_st_write_tensor_of(const fl_st_tensor *t) {
    fl_st_write_tensor o = {.name = t->name, .dtype = t->dtype, .ndim = t->ndim, .data = t->data};
    memcpy(o.shape, t->shape, sizeof o.shape);
    return o;
}
