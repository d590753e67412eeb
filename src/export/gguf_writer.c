/* gguf_writer.c — one-pass GGUF writer with streamed tensor data (see gguf_writer.h).
 *
 * Integers and floats are stored in host order; the build is little-endian only (checked below),
 * which is what GGUF files are by default. API misuse (an array filled with the wrong count or
 * type, data written past a tensor) is a bug in the caller and aborts; bad input (names, shapes,
 * I/O) returns an error. */
#include "export/gguf_writer.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the GGUF writer assumes a little-endian host"
#endif

static const char zeros[64];

void fl_gguf_writer_init(fl_gguf_writer *w) {
    memset(w, 0, sizeof *w);
    w->alignment = FL_GGUF_DEFAULT_ALIGNMENT;
}

void fl_gguf_writer_free(fl_gguf_writer *w) {
    if (w->open) fl_gguf_writer_abort(w);
    free(w->kv.p);
    free(w->tensors);
    memset(w, 0, sizeof *w);
}

/* ---- metadata ------------------------------------------------------------------------------ */

static void put(fl_gguf_writer *w, const void *p, size_t n) { fl_strbuf_append(&w->kv, p, n); }
static void put_u32(fl_gguf_writer *w, uint32_t v) { put(w, &v, 4); }
static void put_u64(fl_gguf_writer *w, uint64_t v) { put(w, &v, 8); }
static void put_string(fl_gguf_writer *w, const char *s, size_t len) {
    put_u64(w, len);
    put(w, s, len);
}

static void begin_kv(fl_gguf_writer *w, const char *key, uint32_t type) {
    if (w->arr_left) fl_die("GGUF writer: key '%s' added while an array still expects %llu elements", key,
                            (unsigned long long)w->arr_left);
    if (w->open) fl_die("GGUF writer: key '%s' added after the header was written", key);
    put_string(w, key, strlen(key));
    put_u32(w, type);
    w->n_kv++;
}

void fl_gguf_kv_u32(fl_gguf_writer *w, const char *key, uint32_t v) {
    if (!strcmp(key, "general.alignment")) { /* the key is the alignment: offsets follow it */
        if (v < 8 || v > 64 || (v & (v - 1))) fl_die("GGUF alignment %u: expected 8, 16, 32 or 64", v);
        if (w->n_tensors) fl_die("GGUF writer: general.alignment set after tensors were declared");
        w->alignment = v;
    }
    begin_kv(w, key, FL_GGUF_U32);
    put_u32(w, v);
}
void fl_gguf_kv_i32(fl_gguf_writer *w, const char *key, int32_t v) { begin_kv(w, key, FL_GGUF_I32); put(w, &v, 4); }
void fl_gguf_kv_u64(fl_gguf_writer *w, const char *key, uint64_t v) { begin_kv(w, key, FL_GGUF_U64); put_u64(w, v); }
void fl_gguf_kv_f32(fl_gguf_writer *w, const char *key, float v) { begin_kv(w, key, FL_GGUF_F32); put(w, &v, 4); }
void fl_gguf_kv_bool(fl_gguf_writer *w, const char *key, int v) {
    begin_kv(w, key, FL_GGUF_BOOL);
    uint8_t b = v ? 1 : 0;
    put(w, &b, 1);
}
void fl_gguf_kv_strn(fl_gguf_writer *w, const char *key, const char *s, size_t len) {
    begin_kv(w, key, FL_GGUF_STRING);
    put_string(w, s, len);
}
void fl_gguf_kv_str(fl_gguf_writer *w, const char *key, const char *s) { fl_gguf_kv_strn(w, key, s, strlen(s)); }

void fl_gguf_kv_array(fl_gguf_writer *w, const char *key, fl_gguf_value_type elem_type, uint64_t n) {
    if (n == 0) fl_die("GGUF writer: array '%s' is empty", key);
    if (elem_type == FL_GGUF_ARRAY || fl_gguf_value_size(elem_type) < 0) fl_die("GGUF writer: array '%s' of type %d", key, (int)elem_type);
    begin_kv(w, key, FL_GGUF_ARRAY);
    put_u32(w, elem_type);
    put_u64(w, n);
    w->arr_left = n;
    w->arr_type = elem_type;
}

static void arr_elem(fl_gguf_writer *w, uint32_t type) {
    if (!w->arr_left || w->arr_type != type) fl_die("GGUF writer: array element of type %u does not fit the open array", type);
    w->arr_left--;
}
void fl_gguf_arr_str(fl_gguf_writer *w, const char *s, size_t len) { arr_elem(w, FL_GGUF_STRING); put_string(w, s, len); }
void fl_gguf_arr_i32(fl_gguf_writer *w, int32_t v) { arr_elem(w, FL_GGUF_I32); put(w, &v, 4); }
void fl_gguf_arr_bool(fl_gguf_writer *w, int v) {
    arr_elem(w, FL_GGUF_BOOL);
    uint8_t b = v ? 1 : 0;
    put(w, &b, 1);
}
void fl_gguf_arr_u32(fl_gguf_writer *w, uint32_t v) { arr_elem(w, FL_GGUF_U32); put_u32(w, v); }
void fl_gguf_arr_f32(fl_gguf_writer *w, float v) { arr_elem(w, FL_GGUF_F32); put(w, &v, 4); }

/* ---- tensors ------------------------------------------------------------------------------- */

static uint64_t align_up(uint64_t x, uint32_t a) { return (x + a - 1) / a * a; }

int fl_gguf_add_tensor(fl_gguf_writer *w, const char *name, int n_dims, const int64_t *ne, fl_ggml_type type) {
    if (w->open) fl_die("GGUF writer: tensor '%s' declared after the header was written", name);
    size_t len = strlen(name);
    if (len == 0 || len > FL_GGUF_MAX_NAME) return fl_input_error("GGUF tensor '%s': name must be 1..%d bytes", name, FL_GGUF_MAX_NAME);
    if (n_dims < 1 || n_dims > FL_GGUF_MAX_DIMS) return fl_input_error("GGUF tensor '%s': %d dimensions (1..4)", name, n_dims);
    int block = fl_ggml_block_len(type);
    if (!block) return fl_input_error("GGUF tensor '%s': unsupported type %d", name, (int)type);
    int64_t n = 1;
    for (int d = 0; d < n_dims; d++) {
        if (ne[d] <= 0 || ne[d] > ((int64_t)1 << 40) / n) return fl_input_error("GGUF tensor '%s': bad dimension %lld", name, (long long)ne[d]);
        n *= ne[d];
    }
    if (ne[0] % block) return fl_input_error("GGUF tensor '%s': %s needs rows of a multiple of %d values, got %lld", name,
                                              fl_ggml_type_name(type), block, (long long)ne[0]);
    for (int i = 0; i < w->n_tensors; i++)
        if (!strcmp(w->tensors[i].name, name)) return fl_input_error("GGUF tensor '%s' is declared twice", name);
    if (w->n_tensors == w->cap_tensors) {
        w->cap_tensors = w->cap_tensors ? 2 * w->cap_tensors : 64;
        fl_gguf_tensor_info *t = fl_malloc(sizeof *t * (size_t)w->cap_tensors);
        if (w->n_tensors) memcpy(t, w->tensors, sizeof *t * (size_t)w->n_tensors);
        free(w->tensors);
        w->tensors = t;
    }
    fl_gguf_tensor_info *t = &w->tensors[w->n_tensors++];
    memset(t, 0, sizeof *t);
    memcpy(t->name, name, len + 1);
    t->n_dims = n_dims;
    for (int d = 0; d < n_dims; d++) t->ne[d] = ne[d];
    t->type = type;
    t->nbytes = fl_ggml_nbytes(type, n);
    t->offset = w->data_size;
    w->data_size = align_up(w->data_size + t->nbytes, w->alignment);
    return 0;
}

/* ---- streaming ----------------------------------------------------------------------------- */

static int out_write(fl_gguf_writer *w, const void *p, size_t n) {
    if (n && fwrite(p, 1, n, w->out.fp) != n) {
        w->failed = 1;
        return fl_input_error("%s: write failed: %s", w->out.final_path, strerror(errno));
    }
    return 0;
}

static int out_pad(fl_gguf_writer *w, uint64_t pos) {
    uint64_t pad = align_up(pos, w->alignment) - pos;
    return out_write(w, zeros, (size_t)pad);
}

int fl_gguf_writer_begin(fl_gguf_writer *w, const char *path) {
    if (w->arr_left) fl_die("GGUF writer: an array still expects %llu elements", (unsigned long long)w->arr_left);
    FL_TRY(fl_atomic_file_open(&w->out, path));
    w->open = 1;
    w->current = 0;
    w->current_written = 0;
    fl_strbuf head = {0};
    uint32_t u32[2] = {FL_GGUF_MAGIC, FL_GGUF_VERSION};
    uint64_t u64[2] = {(uint64_t)w->n_tensors, w->n_kv};
    fl_strbuf_append(&head, u32, 8);
    fl_strbuf_append(&head, u64, 16);
    if (w->kv.n) fl_strbuf_append(&head, w->kv.p, w->kv.n);
    for (int i = 0; i < w->n_tensors; i++) {
        const fl_gguf_tensor_info *t = &w->tensors[i];
        uint64_t len = strlen(t->name);
        uint32_t nd = (uint32_t)t->n_dims, type = (uint32_t)t->type;
        fl_strbuf_append(&head, &len, 8);
        fl_strbuf_append(&head, t->name, len);
        fl_strbuf_append(&head, &nd, 4);
        for (int d = 0; d < t->n_dims; d++) fl_strbuf_append(&head, &t->ne[d], 8);
        fl_strbuf_append(&head, &type, 4);
        fl_strbuf_append(&head, &t->offset, 8);
    }
    int status = out_write(w, head.p, head.n);
    if (!status) status = out_pad(w, head.n);
    free(head.p);
    if (status) fl_gguf_writer_abort(w);
    return status;
}

int fl_gguf_write_data(fl_gguf_writer *w, const void *data, size_t n) {
    if (!w->open) fl_die("GGUF writer: data written before fl_gguf_writer_begin");
    const char *p = data;
    while (n) {
        if (w->current >= w->n_tensors) fl_die("GGUF writer: more data than the declared tensors hold");
        const fl_gguf_tensor_info *t = &w->tensors[w->current];
        uint64_t room = t->nbytes - w->current_written;
        size_t take = n < room ? n : (size_t)room;
        FL_TRY(out_write(w, p, take));
        p += take;
        n -= take;
        w->current_written += take;
        if (w->current_written == t->nbytes) {
            FL_TRY(out_pad(w, t->offset + t->nbytes));
            w->current++;
            w->current_written = 0;
        }
    }
    return 0;
}

int fl_gguf_writer_finish(fl_gguf_writer *w) {
    if (!w->open) fl_die("GGUF writer: finish before begin");
    if (w->current != w->n_tensors || w->failed) {
        int missing = w->current < w->n_tensors;
        const char *name = missing ? w->tensors[w->current].name : "";
        char path[512];
        snprintf(path, sizeof path, "%s", w->out.final_path);
        fl_gguf_writer_abort(w);
        if (missing) fl_die("GGUF writer: %s: tensor '%s' was not written in full", path, name);
        return fl_input_error("%s: write failed", path);
    }
    w->open = 0;
    return fl_atomic_file_commit(&w->out);
}

void fl_gguf_writer_abort(fl_gguf_writer *w) {
    if (w->open) fl_atomic_file_abort(&w->out);
    w->open = 0;
}
