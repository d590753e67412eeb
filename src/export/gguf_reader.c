/* gguf_reader.c — validating, memory-mapped GGUF reader (see gguf_reader.h). Every read goes
 * through a cursor that refuses to pass the end of the map. */
#include "export/gguf_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"

typedef struct {
    const fl_gguf_file *g;
    size_t pos;
} cursor;

static int need(cursor *c, size_t n, const char *what) {
    if (n > c->g->size - c->pos) return fl_input_error("%s: truncated at byte %zu (reading %s)", c->g->path, c->pos, what);
    return 0;
}

static int read_u32(cursor *c, uint32_t *v, const char *what) {
    FL_TRY(need(c, 4, what));
    memcpy(v, c->g->map + c->pos, 4);
    c->pos += 4;
    return 0;
}

static int read_u64(cursor *c, uint64_t *v, const char *what) {
    FL_TRY(need(c, 8, what));
    memcpy(v, c->g->map + c->pos, 8);
    c->pos += 8;
    return 0;
}

static int read_string(cursor *c, const char **s, size_t *len, const char *what) {
    uint64_t n;
    FL_TRY(read_u64(c, &n, what));
    if (n > c->g->size - c->pos) return fl_input_error("%s: %s: string of %llu bytes runs past the end", c->g->path, what, (unsigned long long)n);
    *s = (const char *)c->g->map + c->pos;
    *len = (size_t)n;
    c->pos += (size_t)n;
    return 0;
}

/* Reads the value of one metadata entry (already past key and type). */
static int read_value(cursor *c, fl_gguf_kv *kv, char *where) {
    const fl_gguf_file *g = c->g;
    kv->value = g->map + c->pos;
    if (kv->type == FL_GGUF_STRING) {
        const char *s;
        size_t len;
        return read_string(c, &s, &len, where);
    }
    if (kv->type != FL_GGUF_ARRAY) {
        int sz = fl_gguf_value_size(kv->type);
        if (sz <= 0) return fl_input_error("%s: %s: unknown value type %u", g->path, where, kv->type);
        FL_TRY(need(c, (size_t)sz, where));
        if (kv->type == FL_GGUF_BOOL && g->map[c->pos] > 1) return fl_input_error("%s: %s: bool value %u", g->path, where, g->map[c->pos]);
        c->pos += (size_t)sz;
        return 0;
    }
    FL_TRY(read_u32(c, &kv->elem_type, where));
    FL_TRY(read_u64(c, &kv->n, where));
    kv->value = g->map + c->pos;
    if (kv->elem_type == FL_GGUF_ARRAY) return fl_input_error("%s: %s: nested arrays are not supported", g->path, where);
    if (kv->elem_type == FL_GGUF_STRING) {
        if (kv->n > (g->size - c->pos) / 8) return fl_input_error("%s: %s: %llu strings cannot fit in the file", g->path, where, (unsigned long long)kv->n);
        kv->elems = fl_malloc(sizeof *kv->elems * (size_t)(kv->n + 1));
        for (uint64_t i = 0; i < kv->n; i++) {
            kv->elems[i] = g->map + c->pos;
            const char *s;
            size_t len;
            FL_TRY(read_string(c, &s, &len, where));
        }
        return 0;
    }
    int sz = fl_gguf_value_size(kv->elem_type);
    if (sz <= 0) return fl_input_error("%s: %s: unknown array element type %u", g->path, where, kv->elem_type);
    if (kv->n > (g->size - c->pos) / (size_t)sz) return fl_input_error("%s: %s: array of %llu runs past the end", g->path, where, (unsigned long long)kv->n);
    c->pos += (size_t)kv->n * (size_t)sz;
    return 0;
}

/* Both fl_gguf_kv and fl_gguf_tensor start with (const char *, size_t): the name. */
typedef struct {
    const char *s;
    size_t len;
} name_ref;

static int cmp_name(const void *a, const void *b) {
    const name_ref *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->s, y->s, n);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

_Static_assert(offsetof(fl_gguf_kv, key_len) == offsetof(name_ref, len) &&
                   offsetof(fl_gguf_tensor, name_len) == offsetof(name_ref, len), "name_ref mirrors the name fields");

/* Sorts the names and rejects a repeated one (O(n log n): a crafted file cannot make this slow). */
static int check_unique(const fl_gguf_file *g, const void *items, size_t stride, size_t n, const char *what) {
    name_ref *refs = fl_malloc(sizeof *refs * (n + 1));
    for (size_t i = 0; i < n; i++) memcpy(&refs[i], (const char *)items + i * stride, sizeof *refs);
    qsort(refs, n, sizeof *refs, cmp_name);
    int status = 0;
    for (size_t i = 1; i < n && !status; i++)
        if (!cmp_name(&refs[i - 1], &refs[i]))
            status = fl_input_error("%s: %s '%.*s' appears twice", g->path, what, (int)(refs[i].len < 100 ? refs[i].len : 100), refs[i].s);
    free(refs);
    return status;
}

static int parse(fl_gguf_file *g) {
    cursor c = {g, 0};
    uint32_t magic;
    FL_TRY(read_u32(&c, &magic, "magic"));
    if (magic != FL_GGUF_MAGIC) return fl_input_error("%s: not a GGUF file (bad magic)", g->path);
    FL_TRY(read_u32(&c, &g->version, "version"));
    if (g->version != 2 && g->version != 3) return fl_input_error("%s: GGUF version %u (expected 2 or 3)", g->path, g->version);
    FL_TRY(read_u64(&c, &g->n_tensors, "tensor count"));
    FL_TRY(read_u64(&c, &g->n_kv, "metadata count"));
    /* each metadata entry takes >= 12 bytes, each tensor info >= 24: bound the counts by the size */
    if (g->n_kv > g->size / 12 || g->n_tensors > g->size / 24) return fl_input_error("%s: entry counts exceed the file size", g->path);
    g->kv = fl_calloc((size_t)g->n_kv + 1, sizeof *g->kv);
    g->tensors = fl_calloc((size_t)g->n_tensors + 1, sizeof *g->tensors);
    g->alignment = FL_GGUF_DEFAULT_ALIGNMENT;
    char where[160];
    for (uint64_t i = 0; i < g->n_kv; i++) {
        fl_gguf_kv *kv = &g->kv[i];
        snprintf(where, sizeof where, "metadata entry %llu", (unsigned long long)i);
        FL_TRY(read_string(&c, &kv->key, &kv->key_len, where));
        snprintf(where, sizeof where, "metadata '%.*s'", (int)(kv->key_len < 100 ? kv->key_len : 100), kv->key);
        FL_TRY(read_u32(&c, &kv->type, where));
        FL_TRY(read_value(&c, kv, where));
        if (kv->key_len == 17 && !memcmp(kv->key, "general.alignment", 17)) {
            if (kv->type != FL_GGUF_U32) return fl_input_error("%s: general.alignment is not a u32", g->path);
            memcpy(&g->alignment, kv->value, 4);
            if (g->alignment == 0 || (g->alignment & (g->alignment - 1)))
                return fl_input_error("%s: general.alignment %u is not a power of two", g->path, g->alignment);
        }
    }
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        fl_gguf_tensor *t = &g->tensors[i];
        snprintf(where, sizeof where, "tensor info %llu", (unsigned long long)i);
        FL_TRY(read_string(&c, &t->name, &t->name_len, where));
        snprintf(where, sizeof where, "tensor '%.*s'", (int)(t->name_len < 100 ? t->name_len : 100), t->name);
        if (t->name_len == 0 || t->name_len > FL_GGUF_MAX_NAME) return fl_input_error("%s: %s: name length %zu (1..63)", g->path, where, t->name_len);
        uint32_t nd;
        FL_TRY(read_u32(&c, &nd, where));
        if (nd < 1 || nd > FL_GGUF_MAX_DIMS) return fl_input_error("%s: %s: %u dimensions (1..4)", g->path, where, nd);
        t->n_dims = (int)nd;
        int64_t n = 1;
        for (int d = 0; d < t->n_dims; d++) {
            uint64_t ne;
            FL_TRY(read_u64(&c, &ne, where));
            if (ne == 0 || ne > ((uint64_t)1 << 40) / (uint64_t)n) return fl_input_error("%s: %s: bad dimension %llu", g->path, where, (unsigned long long)ne);
            t->ne[d] = (int64_t)ne;
            n *= (int64_t)ne;
        }
        FL_TRY(read_u32(&c, &t->type, where));
        int block = fl_ggml_block_len(t->type);
        if (!block) return fl_input_error("%s: %s: tensor type %u is not supported by this reader", g->path, where, t->type);
        if (t->ne[0] % block) return fl_input_error("%s: %s: %lld values per row is not a multiple of the %s block", g->path, where,
                                                     (long long)t->ne[0], fl_ggml_type_name(t->type));
        FL_TRY(read_u64(&c, &t->offset, where));
        if (t->offset % g->alignment) return fl_input_error("%s: %s: offset %llu is not aligned to %u", g->path, where,
                                                            (unsigned long long)t->offset, g->alignment);
        t->nbytes = fl_ggml_nbytes(t->type, n);
    }
    FL_TRY(check_unique(g, g->kv, sizeof *g->kv, (size_t)g->n_kv, "metadata key"));
    FL_TRY(check_unique(g, g->tensors, sizeof *g->tensors, (size_t)g->n_tensors, "tensor"));
    g->data_offset = (c.pos + g->alignment - 1) / g->alignment * g->alignment;
    if (g->data_offset > g->size) return fl_input_error("%s: no data section", g->path);
    size_t data_size = g->size - g->data_offset;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        fl_gguf_tensor *t = &g->tensors[i];
        if (t->offset > data_size || t->nbytes > data_size - t->offset)
            return fl_input_error("%s: tensor '%.*s': data [%llu, +%zu) runs past the end of the file", g->path, (int)t->name_len,
                                  t->name, (unsigned long long)t->offset, t->nbytes);
        t->data = g->map + g->data_offset + t->offset;
    }
    return 0;
}

int fl_gguf_open(fl_gguf_file *g, const char *path) {
    memset(g, 0, sizeof *g);
    int fd = open(path, O_RDONLY);
    if (fd < 0) return fl_input_error("%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return fl_input_error("%s: not a regular file", path);
    }
    g->path = strdup(path);
    g->size = (size_t)st.st_size;
    if (g->size) {
        void *m = mmap(NULL, g->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            close(fd);
            int status = fl_input_error("%s: mmap failed: %s", path, strerror(errno));
            fl_gguf_close(g);
            return status;
        }
        g->map = m;
    }
    close(fd);
    int status = parse(g);
    if (status) fl_gguf_close(g);
    return status;
}

void fl_gguf_close(fl_gguf_file *g) {
    for (uint64_t i = 0; g->kv && i < g->n_kv; i++) free(g->kv[i].elems);
    free(g->kv);
    free(g->tensors);
    if (g->map) munmap(g->map, g->size);
    free(g->path);
    memset(g, 0, sizeof *g);
}

const fl_gguf_kv *fl_gguf_find_kv(const fl_gguf_file *g, const char *key) {
    size_t len = strlen(key);
    for (uint64_t i = 0; i < g->n_kv; i++)
        if (g->kv[i].key_len == len && !memcmp(g->kv[i].key, key, len)) return &g->kv[i];
    return NULL;
}

const fl_gguf_tensor *fl_gguf_find_tensor(const fl_gguf_file *g, const char *name) {
    size_t len = strlen(name);
    for (uint64_t i = 0; i < g->n_tensors; i++)
        if (g->tensors[i].name_len == len && !memcmp(g->tensors[i].name, name, len)) return &g->tensors[i];
    return NULL;
}

static int typed(const fl_gguf_file *g, const char *key, uint32_t type, const fl_gguf_kv **out) {
    *out = fl_gguf_find_kv(g, key);
    if (!*out) return fl_input_error("%s: no metadata key '%s'", g->path, key);
    if ((*out)->type != type) return fl_input_error("%s: '%s' has type %u, expected %u", g->path, key, (*out)->type, type);
    return 0;
}

int fl_gguf_get_u32(const fl_gguf_file *g, const char *key, uint32_t *out) {
    const fl_gguf_kv *kv;
    FL_TRY(typed(g, key, FL_GGUF_U32, &kv));
    memcpy(out, kv->value, 4);
    return 0;
}

int fl_gguf_get_f32(const fl_gguf_file *g, const char *key, float *out) {
    const fl_gguf_kv *kv;
    FL_TRY(typed(g, key, FL_GGUF_F32, &kv));
    memcpy(out, kv->value, 4);
    return 0;
}

int fl_gguf_get_bool(const fl_gguf_file *g, const char *key, int *out) {
    const fl_gguf_kv *kv;
    FL_TRY(typed(g, key, FL_GGUF_BOOL, &kv));
    *out = kv->value[0];
    return 0;
}

int fl_gguf_get_str(const fl_gguf_file *g, const char *key, const char **s, size_t *len) {
    const fl_gguf_kv *kv;
    FL_TRY(typed(g, key, FL_GGUF_STRING, &kv));
    uint64_t n;
    memcpy(&n, kv->value, 8);
    *s = (const char *)kv->value + 8;
    *len = (size_t)n;
    return 0;
}

int fl_gguf_get_arr(const fl_gguf_file *g, const char *key, uint32_t *elem_type, uint64_t *n) {
    const fl_gguf_kv *kv;
    FL_TRY(typed(g, key, FL_GGUF_ARRAY, &kv));
    *elem_type = kv->elem_type;
    *n = kv->n;
    return 0;
}

void fl_gguf_arr_get_str(const fl_gguf_kv *kv, uint64_t i, const char **s, size_t *len) {
    if (kv->elem_type != FL_GGUF_STRING || i >= kv->n) fl_die("GGUF array: string %llu of a %llu-element array of type %u",
                                                                 (unsigned long long)i, (unsigned long long)kv->n, kv->elem_type);
    uint64_t n;
    memcpy(&n, kv->elems[i], 8);
    *s = (const char *)kv->elems[i] + 8;
    *len = (size_t)n;
}

int32_t fl_gguf_arr_get_i32(const fl_gguf_kv *kv, uint64_t i) {
    if (kv->elem_type != FL_GGUF_I32 || i >= kv->n) fl_die("GGUF array: i32 %llu out of range or wrong type", (unsigned long long)i);
    int32_t v;
    memcpy(&v, kv->value + 4 * i, 4);
    return v;
}

float fl_gguf_arr_get_f32(const fl_gguf_kv *kv, uint64_t i) {
    if (kv->elem_type != FL_GGUF_F32 || i >= kv->n) fl_die("GGUF array: f32 %llu out of range or wrong type", (unsigned long long)i);
    float v;
    memcpy(&v, kv->value + 4 * i, 4);
    return v;
}
