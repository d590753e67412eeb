/* gguf_reader.h — a small validating GGUF reader: the file is memory-mapped read-only, and every
 * length, count, type and offset is checked against the file size before anything points into
 * it (a truncated or corrupt file is a one-line error naming the file and the entry, never a
 * crash). Used by the tests of the writer and by `fastlora export` to re-read what it wrote.
 *
 *     fl_gguf_file g;
 *     if (fl_gguf_open(&g, "model.gguf")) { puts(fl_last_error()); ... }
 *     const char *arch; size_t len;
 *     fl_gguf_get_str(&g, "general.architecture", &arch, &len);
 *     const fl_gguf_tensor *t = fl_gguf_find_tensor(&g, "token_embd.weight");   // t->data, t->ne
 *     fl_gguf_close(&g);
 * Not a model loader: no dequantization beyond what the tests need (gguf_quant.h).
 */
#ifndef FL_EXPORT_GGUF_READER_H
#define FL_EXPORT_GGUF_READER_H

#include <stddef.h>
#include <stdint.h>

#include "export/gguf.h"

typedef struct {
    const char *key;       /* not NUL-terminated: key_len bytes */
    size_t key_len;
    uint32_t type;         /* fl_gguf_value_type */
    const uint8_t *value;  /* scalar: its bytes; STRING: the u64 length then bytes; ARRAY: the first element */
    uint32_t elem_type;    /* ARRAY only */
    uint64_t n;            /* ARRAY only: element count */
    const uint8_t **elems; /* ARRAY of STRING only: (n,) pointer to each string's u64 length */
} fl_gguf_kv;

typedef struct {
    const char *name;      /* not NUL-terminated */
    size_t name_len;
    int n_dims;
    int64_t ne[FL_GGUF_MAX_DIMS];
    uint32_t type;
    uint64_t offset;       /* in the data section */
    size_t nbytes;
    const void *data;
} fl_gguf_tensor;

typedef struct {
    char *path;
    uint8_t *map;
    size_t size;
    uint32_t version, alignment;
    uint64_t n_kv, n_tensors;
    fl_gguf_kv *kv;          /* (n_kv,) */
    fl_gguf_tensor *tensors; /* (n_tensors,) */
    size_t data_offset;      /* start of the data section in the file */
} fl_gguf_file;

int fl_gguf_open(fl_gguf_file *g, const char *path);
void fl_gguf_close(fl_gguf_file *g);

const fl_gguf_kv *fl_gguf_find_kv(const fl_gguf_file *g, const char *key);
const fl_gguf_tensor *fl_gguf_find_tensor(const fl_gguf_file *g, const char *name);

/* Typed getters: 0 when the key exists with exactly that type, else an input error. */
int fl_gguf_get_u32(const fl_gguf_file *g, const char *key, uint32_t *out);
int fl_gguf_get_f32(const fl_gguf_file *g, const char *key, float *out);
int fl_gguf_get_bool(const fl_gguf_file *g, const char *key, int *out);
int fl_gguf_get_str(const fl_gguf_file *g, const char *key, const char **s, size_t *len);
/* An array: its element type and count; elements through the fl_gguf_arr_get_* helpers. */
int fl_gguf_get_arr(const fl_gguf_file *g, const char *key, uint32_t *elem_type, uint64_t *n);
void fl_gguf_arr_get_str(const fl_gguf_kv *kv, uint64_t i, const char **s, size_t *len);
int32_t fl_gguf_arr_get_i32(const fl_gguf_kv *kv, uint64_t i);
float fl_gguf_arr_get_f32(const fl_gguf_kv *kv, uint64_t i);

#endif
