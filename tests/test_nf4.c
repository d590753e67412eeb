/* test_nf4.c — NF4 quantization and dequantization against the real bitsandbytes.
 *
 * Fixtures: tests/fixtures/nf4/cases.safetensors, made by tools/make_nf4_fixtures.py with
 * bitsandbytes 0.50.2 on the CPU (quantize_4bit(blocksize=64, quant_type="nf4",
 * compress_statistics=True) and dequantize_4bit). Every check here is EXACT (bit for bit): the
 * packed nibbles, the first-stage f32 absmax, the 8-bit absmax codes, the nested absmax, the
 * offset and the dequantized tensor in the input's dtype. The offset is torch's f32 mean, whose
 * summation order follows the CPU's vector width and thread count; ours reproduces its AVX2
 * one-thread order (the fixtures' machine), and stage 2 is also checked from bitsandbytes' own
 * offset so that the two checks stay independent.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "io/safetensors.h"
#include "quant/nf4.h"
#include "test.h"

#define NF4_FIXTURES "tests/fixtures/nf4/cases.safetensors"

static const fl_st_tensor *need(const fl_safetensors *st, const char *cas, const char *field) {
    char name[160];
    snprintf(name, sizeof name, "%s.%s", cas, field);
    const fl_st_tensor *t = fl_safetensors_find(st, name);
    CHECK_MSG(t != NULL, "fixture tensor %s missing", name);
    return t;
}

/* Index of the first differing byte, or -1. */
static long first_diff(const void *a, const void *b, size_t bytes) {
    const uint8_t *x = a, *y = b;
    for (size_t i = 0; i < bytes; i++)
        if (x[i] != y[i]) return (long)i;
    return -1;
}

TEST(nf4_tables_match_bitsandbytes) {
    fl_safetensors st;
    if (fl_safetensors_open(&st, NF4_FIXTURES)) SKIP("no NF4 fixtures");
    const fl_st_tensor *code = fl_safetensors_find(&st, "quant_map");
    const fl_st_tensor *map = fl_safetensors_find(&st, "nested_quant_map");
    CHECK(code && code->numel == 16 && map && map->numel == 256);
    if (code) CHECK_EQ_INT(first_diff(code->data, fl_nf4_code(), 16 * sizeof(float)), -1);
    if (map) {
        long d = first_diff(map->data, fl_nf4_dynamic_map(), 256 * sizeof(float));
        CHECK_MSG(d < 0, "dynamic map differs at entry %ld: %.9g vs %.9g", d / 4,
                  ((const float *)map->data)[d / 4], fl_nf4_dynamic_map()[d / 4]);
    }
    fl_safetensors_close(&st);
}

/* One case: stage by stage, then the whole quantization, then dequantization of bnb's data. */
static void check_case(const fl_safetensors *st, const char *cas) {
    const fl_st_tensor *in = need(st, cas, "input"), *packed = need(st, cas, "packed"),
                       *absq = need(st, cas, "absmax"), *nested = need(st, cas, "nested_absmax"),
                       *offset = need(st, cas, "offset"), *abs32 = need(st, cas, "absmax_f32"),
                       *deq = need(st, cas, "dequant");
    if (!in || !packed || !absq || !nested || !offset || !abs32 || !deq) return;
    int64_t rows = in->shape[0], cols = in->ndim > 1 ? in->shape[1] : 1, n = rows * cols;
    int64_t nb = (n + 63) / 64, ng = (nb + 255) / 256;
    CHECK_EQ_INT(packed->numel, (n + 1) / 2);
    CHECK_EQ_INT(absq->numel, nb);
    CHECK_EQ_INT(nested->numel, ng);
    float bnb_offset = ((const float *)offset->data)[0];

    /* stage 1: packed nibbles and f32 absmax */
    uint8_t *p = malloc((size_t)(n + 1) / 2);
    float *am = malloc((size_t)nb * sizeof(float));
    CHECK_EQ_INT(fl_nf4_quantize_blocks(in->data, in->dtype, n, p, am), -1);
    long d = first_diff(p, packed->data, (size_t)(n + 1) / 2);
    CHECK_MSG(d < 0, "%s: packed byte %ld: 0x%02x vs bitsandbytes 0x%02x", cas, d, d < 0 ? 0 : p[d],
              d < 0 ? 0 : ((const uint8_t *)packed->data)[d]);
    d = first_diff(am, abs32->data, (size_t)nb * sizeof(float));
    CHECK_MSG(d < 0, "%s: absmax %ld differs", cas, d / 4);

    /* the offset, and stage 2 from bitsandbytes' own offset */
    float mean = fl_nf4_absmax_mean(abs32->data, nb);
    CHECK_MSG(memcmp(&mean, &bnb_offset, 4) == 0, "%s: offset %.9g vs bitsandbytes %.9g", cas, mean, bnb_offset);
    uint8_t *codes = malloc((size_t)nb);
    float *nest = malloc((size_t)ng * sizeof(float));
    fl_nf4_double_quant(abs32->data, nb, bnb_offset, codes, nest);
    d = first_diff(codes, absq->data, (size_t)nb);
    CHECK_MSG(d < 0, "%s: absmax code %ld: %d vs bitsandbytes %d", cas, d, d < 0 ? 0 : codes[d],
              d < 0 ? 0 : ((const uint8_t *)absq->data)[d]);
    CHECK_MSG(first_diff(nest, nested->data, (size_t)ng * sizeof(float)) < 0, "%s: nested absmax differs", cas);

    /* the whole quantization */
    fl_nf4_weight w;
    int status = fl_nf4_quantize(&w, in->data, in->dtype, rows, cols, 1, cas);
    CHECK_MSG(status == 0, "%s: %s", cas, fl_last_error());
    if (status) { free(nest); free(codes); free(am); free(p); return; }
    CHECK(first_diff(w.packed, packed->data, (size_t)(n + 1) / 2) < 0);
    CHECK(first_diff(w.absmax_q, absq->data, (size_t)nb) < 0);
    CHECK(first_diff(w.nested_absmax, nested->data, (size_t)ng * sizeof(float)) < 0);
    CHECK(memcmp(&w.offset, &bnb_offset, 4) == 0);

    /* dequantization of bitsandbytes' stored data, in the input dtype */
    memcpy(w.packed, packed->data, (size_t)(n + 1) / 2);
    memcpy(w.absmax_q, absq->data, (size_t)nb);
    memcpy(w.nested_absmax, nested->data, (size_t)ng * sizeof(float));
    w.offset = bnb_offset;
    size_t esz = fl_dtype_size(in->dtype);
    void *out = malloc((size_t)n * esz);
    fl_nf4_dequantize(&w, out, in->dtype);
    d = first_diff(out, deq->data, (size_t)n * esz);
    CHECK_MSG(d < 0, "%s: dequantized element %ld differs", cas, d / (long)esz);
    /* a row range is the same as the matching slice of the whole */
    if (rows >= 3) {
        void *part = malloc((size_t)cols * 2 * esz);
        fl_nf4_dequantize_rows(&w, 1, 3, part, in->dtype);
        CHECK(memcmp(part, (const char *)deq->data + (size_t)cols * esz, (size_t)cols * 2 * esz) == 0);
        free(part);
    }
    free(out);
    fl_nf4_free(&w);
    free(nest);
    free(codes);
    free(am);
    free(p);
}

TEST(nf4_quantize_dequantize_match_bitsandbytes) {
    fl_safetensors st;
    if (fl_safetensors_open(&st, NF4_FIXTURES)) SKIP("no NF4 fixtures");
    const char *list = fl_safetensors_metadata(&st, "cases");
    CHECK(list != NULL);
    char *copy = strdup(list ? list : ""), *save = NULL;
    int n_cases = 0;
    for (char *c = strtok_r(copy, ",", &save); c; c = strtok_r(NULL, ",", &save), n_cases++) check_case(&st, c);
    CHECK_MSG(n_cases >= 16, "only %d cases", n_cases);
    free(copy);
    fl_safetensors_close(&st);
}

TEST(nf4_rejects_non_finite) {
    float x[130];
    for (int i = 0; i < 130; i++) x[i] = (float)i * 0.01f;
    x[77] = NAN;
    fl_nf4_weight w;
    CHECK_EQ_INT(fl_nf4_quantize(&w, x, FL_F32, 2, 65, 1, "layers.0.q_proj.weight"), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "layers.0.q_proj.weight: element [1, 12] is NaN");
    x[77] = 1.0f;
    x[129] = -INFINITY;
    CHECK_EQ_INT(fl_nf4_quantize(&w, x, FL_F32, 2, 65, 1, "w"), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "element [1, 64] is infinite");
    x[129] = 0.5f;
    CHECK_EQ_INT(fl_nf4_quantize(&w, x, FL_F32, 2, 65, 1, "w"), 0);
    fl_nf4_free(&w);
    fl_clear_error();
}

/* Round trip against a float64 reading of the format: every dequantized value is the NF4 code of
 * its element times the block's scale, and each value lies within half a code gap (times the
 * block's absmax, plus the 8-bit absmax error) of the input. Independent of the fixtures. */
TEST(nf4_round_trip_error_bound) {
    int64_t rows = 45, cols = 77, n = rows * cols;
    float *x = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * n);
    uint64_t s = 12345;
    for (int64_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = ((float)(s >> 40) / (float)(1 << 24) - 0.5f) * (float)(1 + i % 7);
    }
    fl_nf4_weight w;
    CHECK_EQ_INT(fl_nf4_quantize(&w, x, FL_F32, rows, cols, 1, "x"), 0);
    fl_nf4_dequantize(&w, y, FL_F32);
    const float *code = fl_nf4_code();
    double max_gap = 0;
    for (int i = 0; i < 15; i++) max_gap = fmax(max_gap, (double)code[i + 1] - code[i]);
    for (int64_t b = 0; b < w.n_blocks; b++) {
        double amax = 0;
        for (int64_t e = b * 64; e < n && e < (b + 1) * 64; e++) amax = fmax(amax, fabs(x[e]));
        double scale = fl_nf4_block_scale(&w, b);
        /* the 8-bit dynamic code of (absmax - offset) is within 1% of the group's absmax */
        CHECK_CLOSE(scale, amax, 0.01 * w.nested_absmax[b / 256] + 1e-6, 0);
        for (int64_t e = b * 64; e < n && e < (b + 1) * 64; e++) {
            int q = e & 1 ? w.packed[e / 2] & 15 : w.packed[e / 2] >> 4;
            CHECK(y[e] == (float)((double)code[q] * scale));
            CHECK(fabs(y[e] - x[e]) <= 0.5 * max_gap * scale + fabs(scale - amax) + 1e-6);
        }
    }
    fl_nf4_free(&w);
    free(x);
    free(y);
}
