/* export_test_util.h — what the GGUF export tests share (test_export.c, test_export_gemma.c): a temp
 * folder, an export call, GGUF tensors as f32 against the HF tensors they came from (llama's q/k row
 * permutation, a merged LoRA), metadata getters. Static inline: each test file uses part of it. */
#ifndef FL_TESTS_EXPORT_TEST_UTIL_H
#define FL_TESTS_EXPORT_TEST_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dtype.h"
#include "common/error.h"
#include "export/export.h"
#include "export/gguf_quant.h"
#include "export/gguf_reader.h"
#include "io/safetensors.h"
#include "test.h"

#define FIX "tests/fixtures/hf/"

static inline char *temp_dir(void) {
    static char dir[64];
    snprintf(dir, sizeof dir, "/tmp/fastlora-export-XXXXXX");
    return mkdtemp(dir);
}

static inline void rm_rf(const char *dir) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", dir);
}

static inline int export_to(const char *out, const char *model, const char *adapter, fl_export_type type, int lora_only, int no_tok) {
    fl_export_options o = {.out_path = out, .model_dir = model, .adapter_dir = adapter, .type = type, .lora_only = lora_only,
                           .no_tokenizer = no_tok, .force = 1};
    int n = 0;
    int rc = fl_export_gguf(&o, &n);
    if (rc) printf("    export: %s\n", fl_last_error());
    return rc;
}

/* A GGUF tensor as f32 (F32, F16, BF16 or Q8_0), malloc'd. */
static inline float *tensor_f32(const fl_gguf_tensor *t) {
    size_t n = 1;
    for (int d = 0; d < t->n_dims; d++) n *= (size_t)t->ne[d];
    float *y = malloc(sizeof(float) * n);
    const uint16_t *h = t->data;
    if (t->type == FL_GGML_F32) memcpy(y, t->data, sizeof(float) * n);
    else if (t->type == FL_GGML_F16) for (size_t i = 0; i < n; i++) y[i] = fl_f16_to_f32(h[i]);
    else if (t->type == FL_GGML_BF16) for (size_t i = 0; i < n; i++) y[i] = fl_bf16_to_f32(h[i]);
    else fl_dequantize_q8_0(t->data, y, n);
    return y;
}

/* HF row of GGUF row r for llama q/k (convert_hf_to_gguf.py: reshape(heads, 2, hd/2, ...).swapaxes(1, 2)):
 * GGUF row h·hd + 2i + j holds HF row h·hd + j·hd/2 + i. */
static inline int64_t hf_row(int64_t r, int heads, int64_t rows) {
    int64_t hd = rows / heads, h = r / hd, k = r % hd;
    return h * hd + (k % 2) * (hd / 2) + k / 2;
}

/* Compares GGUF tensor `name` with HF tensor `hf` (+ scale·B·A when b != NULL), rows permuted over
 * `heads` (0: none); tolerance rel on the dtype's rounding. */
static inline void check_tensor(const fl_gguf_file *g, const fl_safetensors *st, const char *name, const char *hf, int heads,
                         const float *b, const float *a, int rank, double scale, double tol) {
    const fl_gguf_tensor *t = fl_gguf_find_tensor(g, name);
    const fl_st_tensor *s = fl_safetensors_find(st, hf);
    CHECK_MSG(t && s, "%s / %s missing", name, hf);
    if (!t || !s) return;
    int64_t rows = s->shape[0], cols = s->ndim == 2 ? s->shape[1] : 1;
    CHECK(t->ne[0] == (s->ndim == 2 ? cols : rows) && (s->ndim == 1 || t->ne[1] == rows));
    float *got = tensor_f32(t), *src = malloc(sizeof(float) * (size_t)(rows * cols));
    fl_convert_to_f32(src, s->data, s->dtype, (size_t)(rows * cols));
    double worst = 0;
    for (int64_t r = 0; r < rows; r++) {
        int64_t hr = heads ? hf_row(r, heads, rows) : r;
        for (int64_t c = 0; c < cols; c++) {
            double want = src[hr * cols + c];
            if (b) for (int k = 0; k < rank; k++) want += scale * (double)b[hr * rank + k] * a[(size_t)k * (size_t)cols + (size_t)c];
            double err = fabs(got[r * cols + c] - want) / (fabs(want) + 1e-3);
            worst = err > worst ? err : worst;
        }
    }
    CHECK_MSG(worst <= tol, "%s: relative error %.3g > %.3g", name, worst, tol);
    free(got);
    free(src);
}

static inline uint32_t get_u32(const fl_gguf_file *g, const char *key) {
    uint32_t v = 0xFFFFFFFF;
    if (fl_gguf_get_u32(g, key, &v)) printf("    %s\n", fl_last_error());
    return v;
}

static inline void check_str_kv(const fl_gguf_file *g, const char *key, const char *want) {
    const char *s;
    size_t len;
    CHECK_MSG(fl_gguf_get_str(g, key, &s, &len) == 0 && len == strlen(want) && !memcmp(s, want, len), "%s: expected '%s'", key, want);
}

#endif
