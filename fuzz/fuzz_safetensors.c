/* fuzz_safetensors.c — fuzzes the safetensors reader (src/io/safetensors.c): the input is a whole
 * .safetensors file (u64 header length, JSON header, data buffer). fl_safetensors_open must either
 * reject it with an input error or return tensors that lie inside the map and cover the buffer
 * exactly; every tensor byte is then read (ASan sees any read past the map's bounds), and an
 * accepted file is written back with fl_safetensors_write and read again: same names, dtypes,
 * shapes, bytes and metadata. Not the model loader's shape checks (fuzz_adapter, fuzz_checkpoint).
 */
/* fuzz-dict: json safetensors */
#include "fuzz.h"

#include "io/safetensors.h"

static void check_same(const fl_safetensors *a, const fl_safetensors *b) {
    if (a->n_tensors != b->n_tensors || a->n_metadata != b->n_metadata) abort();
    for (int i = 0; i < a->n_tensors; i++) {
        const fl_st_tensor *x = &a->tensors[i], *y = fl_safetensors_find(b, x->name);
        if (!y || x->dtype != y->dtype || x->ndim != y->ndim || x->nbytes != y->nbytes) abort();
        if (memcmp(x->shape, y->shape, sizeof(int64_t) * (size_t)x->ndim)) abort();
        if (x->nbytes && memcmp(x->data, y->data, x->nbytes)) abort();
    }
    for (int i = 0; i < a->n_metadata; i++) {
        const char *v = fl_safetensors_metadata(b, a->metadata_keys[i]);
        if (!v || strcmp(v, a->metadata_values[i])) abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fz_write("model.safetensors", data, size);
    fl_safetensors st;
    fl_clear_error();
    int status = fl_safetensors_open(&st, path);
    fz_check(status, "fl_safetensors_open");
    if (status) return 0;
    /* every tensor lies inside the file; touch all of its bytes */
    const uint8_t *lo = st.map, *hi = lo + st.file_size;
    volatile unsigned sum = 0;
    for (int i = 0; i < st.n_tensors; i++) {
        const fl_st_tensor *t = &st.tensors[i];
        const uint8_t *p = t->data;
        if (p < lo || p > hi || t->nbytes > (size_t)(hi - p)) abort();
        if (t->nbytes != t->numel * fl_dtype_size(t->dtype)) abort();
        for (size_t k = 0; k < t->nbytes; k++) sum += p[k];
    }
    /* write it back and read it again */
    fl_st_write_tensor *w = calloc((size_t)st.n_tensors + 1, sizeof *w);
    const char **kv = calloc(2 * (size_t)st.n_metadata + 1, sizeof *kv);
    for (int i = 0; i < st.n_tensors; i++) {
        const fl_st_tensor *t = &st.tensors[i];
        w[i] = (fl_st_write_tensor){.name = t->name, .dtype = t->dtype, .ndim = t->ndim, .data = t->data};
        memcpy(w[i].shape, t->shape, sizeof t->shape);
    }
    for (int i = 0; i < st.n_metadata; i++) {
        kv[2 * i] = st.metadata_keys[i];
        kv[2 * i + 1] = st.metadata_values[i];
    }
    const char *copy = fz_path("copy.safetensors");
    status = fl_safetensors_write(copy, w, st.n_tensors, kv, st.n_metadata);
    if (status) { fprintf(stderr, "fuzz: writing back failed: %s\n", fl_last_error()); abort(); }
    fl_safetensors back;
    if (fl_safetensors_open(&back, copy)) { fprintf(stderr, "fuzz: reading back failed: %s\n", fl_last_error()); abort(); }
    check_same(&st, &back);
    fl_safetensors_close(&back);
    free(w);
    free(kv);
    fl_safetensors_close(&st);
    return 0;
}
