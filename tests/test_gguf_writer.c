/* test_gguf_writer.c — the GGUF writer, reader and encoders against gguf-py (the package
 * llama.cpp's converters write with): fixtures made by tools/make_gguf_fixtures.py are read back
 * value by value, fastlora's Q8_0/F16/BF16 of the same input must equal gguf-py's bytes, and the
 * same content written by fastlora's writer must equal gguf-py's file byte for byte. Plus layout
 * checks computed by hand, and malformed files (bad_input_*: run again under ASan). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"
#include "export/gguf_quant.h"
#include "export/gguf_reader.h"
#include "export/gguf_writer.h"
#include "test.h"

#define BASIC "tests/fixtures/gguf/gguf_py_basic.gguf"
#define ALIGN64 "tests/fixtures/gguf/gguf_py_align64.gguf"

static char *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    *len = fread(buf, 1, (size_t)n, f);
    fclose(f);
    return buf;
}

static const char *tmp_path(const char *name) {
    static char path[128];
    snprintf(path, sizeof path, "/tmp/fastlora-gguf-%d-%s", (int)getpid(), name);
    return path;
}

/* The metadata of tools/make_gguf_fixtures.py's add_metadata, in its order. */
static void put_fixture_metadata(fl_gguf_writer *w, uint32_t alignment) {
    fl_gguf_kv_str(w, "general.architecture", "llama"); /* gguf-py's GGUFWriter(path, arch) writes it first */
    if (alignment != 32) fl_gguf_kv_u32(w, "general.alignment", alignment); /* add_custom_alignment */
    fl_gguf_kv_u32(w, "test.u32", 123456789);
    fl_gguf_kv_i32(w, "test.i32", -42);
    fl_gguf_kv_u64(w, "test.u64", (1ull << 40) + 5);
    fl_gguf_kv_f32(w, "test.f32", 1.5f);
    fl_gguf_kv_bool(w, "test.bool", 1);
    fl_gguf_kv_str(w, "test.string", "h\xc3\xa9llo \xe2\x9c\x93");
    static const char *const strs[] = {"a", "\xc4\xa0the", "<|im_end|>", "x y"};
    fl_gguf_kv_array(w, "test.arr_str", FL_GGUF_STRING, 4);
    for (int i = 0; i < 4; i++) fl_gguf_arr_str(w, strs[i], strlen(strs[i]));
    fl_gguf_kv_array(w, "test.arr_i32", FL_GGUF_I32, 3);
    fl_gguf_arr_i32(w, 1);
    fl_gguf_arr_i32(w, -2);
    fl_gguf_arr_i32(w, 3);
    fl_gguf_kv_array(w, "test.arr_f32", FL_GGUF_F32, 2);
    fl_gguf_arr_f32(w, 0.5f);
    fl_gguf_arr_f32(w, -1.25f);
}

static void check_fixture_metadata(const fl_gguf_file *g) {
    uint32_t u32 = 0;
    float f = 0;
    int b = 0;
    const char *s;
    size_t len;
    CHECK(fl_gguf_get_str(g, "general.architecture", &s, &len) == 0 && len == 5 && !memcmp(s, "llama", 5));
    CHECK(fl_gguf_get_u32(g, "test.u32", &u32) == 0 && u32 == 123456789);
    const fl_gguf_kv *kv = fl_gguf_find_kv(g, "test.i32");
    CHECK(kv && kv->type == FL_GGUF_I32 && *(const int32_t *)kv->value == -42);
    kv = fl_gguf_find_kv(g, "test.u64");
    uint64_t u64 = 0;
    if (kv) memcpy(&u64, kv->value, 8);
    CHECK(kv && kv->type == FL_GGUF_U64 && u64 == (1ull << 40) + 5);
    CHECK(fl_gguf_get_f32(g, "test.f32", &f) == 0 && f == 1.5f);
    CHECK(fl_gguf_get_bool(g, "test.bool", &b) == 0 && b == 1);
    CHECK(fl_gguf_get_str(g, "test.string", &s, &len) == 0 && len == 10 && !memcmp(s, "h\xc3\xa9llo \xe2\x9c\x93", 10));
    uint32_t et;
    uint64_t n;
    CHECK(fl_gguf_get_arr(g, "test.arr_str", &et, &n) == 0 && et == FL_GGUF_STRING && n == 4);
    kv = fl_gguf_find_kv(g, "test.arr_str");
    if (kv && n == 4) {
        fl_gguf_arr_get_str(kv, 1, &s, &len);
        CHECK(len == 5 && !memcmp(s, "\xc4\xa0the", 5));
        fl_gguf_arr_get_str(kv, 3, &s, &len);
        CHECK(len == 3 && !memcmp(s, "x y", 3));
    }
    kv = fl_gguf_find_kv(g, "test.arr_i32");
    CHECK(kv && kv->elem_type == FL_GGUF_I32 && kv->n == 3 && fl_gguf_arr_get_i32(kv, 1) == -2);
    kv = fl_gguf_find_kv(g, "test.arr_f32");
    CHECK(kv && kv->elem_type == FL_GGUF_F32 && kv->n == 2 && fl_gguf_arr_get_f32(kv, 1) == -1.25f);
    CHECK(fl_gguf_find_kv(g, "test.missing") == NULL);
    CHECK_EQ_INT(fl_gguf_get_u32(g, "test.f32", &u32), 2); /* wrong type is an error, not a reinterpretation */
}

TEST(gguf_reader_reads_gguf_py_file) {
    fl_gguf_file g;
    CHECK(fl_gguf_open(&g, BASIC) == 0);
    CHECK_EQ_INT(g.version, 3);
    CHECK_EQ_INT(g.alignment, 32);
    CHECK_EQ_INT(g.n_tensors, 5);
    check_fixture_metadata(&g);
    const fl_gguf_tensor *x = fl_gguf_find_tensor(&g, "x"), *q = fl_gguf_find_tensor(&g, "x.q8_0");
    CHECK(x && x->type == FL_GGML_F32 && x->n_dims == 2 && x->ne[0] == 64 && x->ne[1] == 4);
    CHECK(q && q->type == FL_GGML_Q8_0 && q->nbytes == 8 * FL_Q8_0_BYTES);
    for (uint64_t i = 0; i < g.n_tensors; i++) CHECK(g.tensors[i].offset % 32 == 0);
    CHECK(g.data_offset % 32 == 0);
    fl_gguf_close(&g);
    CHECK(fl_gguf_open(&g, ALIGN64) == 0);
    CHECK_EQ_INT(g.alignment, 64);
    CHECK(g.data_offset % 64 == 0 && g.tensors[1].offset == 64);
    fl_gguf_close(&g);
}

/* Q8_0, F16, BF16 of the same f32 input: fastlora's bytes == gguf-py's bytes, including a zero
 * block, exact .5 ties, a subnormal f16 scale and an f16 scale that overflows. */
TEST(gguf_quantizers_match_gguf_py_bit_for_bit) {
    fl_gguf_file g;
    CHECK(fl_gguf_open(&g, BASIC) == 0);
    const fl_gguf_tensor *x = fl_gguf_find_tensor(&g, "x");
    if (!x) { fl_gguf_close(&g); return; }
    const size_t n = 256;
    static const char *const names[] = {"x.q8_0", "x.f16", "x.bf16"};
    static const fl_ggml_type types[] = {FL_GGML_Q8_0, FL_GGML_F16, FL_GGML_BF16};
    uint8_t out[512];
    for (int k = 0; k < 3; k++) {
        const fl_gguf_tensor *ref = fl_gguf_find_tensor(&g, names[k]);
        CHECK(ref && ref->nbytes == fl_ggml_nbytes(types[k], (int64_t)n));
        if (!ref) continue;
        fl_ggml_from_f32(types[k], x->data, out, n);
        int diff = -1;
        for (size_t i = 0; i < ref->nbytes && diff < 0; i++) diff = out[i] != ((const uint8_t *)ref->data)[i] ? (int)i : -1;
        CHECK_MSG(diff < 0, "%s: byte %d differs from gguf-py", names[k], diff);
    }
    /* dequantized Q8_0 is within half a step (d/2, d = amax/127) of the input, block by block */
    float y[256];
    const float *xf = x->data;
    fl_dequantize_q8_0(fl_gguf_find_tensor(&g, "x.q8_0")->data, y, n);
    for (size_t b = 0; b < n / 32; b++) {
        float amax = 0;
        for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(xf[b * 32 + j]));
        if (amax > 60000.0f * 127 || amax < 1e-4f) continue; /* the f16 scale overflows / underflows there */
        for (int j = 0; j < 32; j++) CHECK_CLOSE(y[b * 32 + j], xf[b * 32 + j], amax / 254.0 * 1.002, 0);
    }
    fl_gguf_close(&g);
}

/* The same metadata and tensors through fastlora's writer give gguf-py's file, byte for byte. */
static void write_like_fixture(const char *path, uint32_t alignment, int align64_layout, const fl_gguf_file *ref) {
    fl_gguf_writer w;
    fl_gguf_writer_init(&w);
    put_fixture_metadata(&w, alignment);
    static const char *const basic[] = {"x", "x.q8_0", "x.f16", "x.bf16", "odd"};
    static const char *const a64[] = {"odd", "x.q8_0"};
    const char *const *names = align64_layout ? a64 : basic;
    int nt = align64_layout ? 2 : 5;
    for (int i = 0; i < nt; i++) {
        const fl_gguf_tensor *t = fl_gguf_find_tensor(ref, names[i]);
        CHECK(fl_gguf_add_tensor(&w, names[i], t->n_dims, t->ne, (fl_ggml_type)t->type) == 0);
    }
    CHECK(fl_gguf_writer_begin(&w, path) == 0);
    for (int i = 0; i < nt; i++) {
        const fl_gguf_tensor *t = fl_gguf_find_tensor(ref, names[i]);
        CHECK(fl_gguf_write_data(&w, t->data, t->nbytes) == 0);
    }
    CHECK(fl_gguf_writer_finish(&w) == 0);
    fl_gguf_writer_free(&w);
}

TEST(gguf_writer_matches_gguf_py_byte_for_byte) {
    const char *paths[2] = {BASIC, ALIGN64};
    for (int k = 0; k < 2; k++) {
        fl_gguf_file ref;
        CHECK(fl_gguf_open(&ref, paths[k]) == 0);
        const char *out = tmp_path("same.gguf");
        write_like_fixture(out, k ? 64 : 32, k, &ref);
        size_t la = 0, lb = 0;
        char *a = read_all(paths[k], &la), *b = read_all(out, &lb);
        CHECK(a && b);
        CHECK_MSG(la == lb && a && b && !memcmp(a, b, la), "%s: fastlora's writer differs from gguf-py (%zu vs %zu bytes)", paths[k], lb, la);
        free(a);
        free(b);
        unlink(out);
        fl_gguf_close(&ref);
    }
}

/* The writer's own alignment option (general.alignment first, every offset aligned, data intact),
 * checked against offsets worked out by hand. */
TEST(gguf_writer_alignment_and_layout) {
    const uint32_t aligns[] = {8, 32, 64};
    for (int k = 0; k < 3; k++) {
        fl_gguf_writer w;
        fl_gguf_writer_init(&w);
        if (aligns[k] != 32) fl_gguf_kv_u32(&w, "general.alignment", aligns[k]);
        fl_gguf_kv_str(&w, "general.architecture", "llama");
        int64_t ne1[1] = {3}, ne2[2] = {32, 2};
        float a[3] = {1, 2, 3}, b[64];
        for (int i = 0; i < 64; i++) b[i] = (float)i * 0.25f - 3;
        CHECK(fl_gguf_add_tensor(&w, "a", 1, ne1, FL_GGML_F32) == 0);
        CHECK(fl_gguf_add_tensor(&w, "b", 2, ne2, FL_GGML_Q8_0) == 0);
        /* a: 12 bytes at 0; b: 2 blocks (68 bytes) at 12 rounded up to the alignment */
        CHECK_EQ_INT(w.tensors[1].offset, (12 + aligns[k] - 1) / aligns[k] * aligns[k]);
        const char *path = tmp_path("align.gguf");
        CHECK(fl_gguf_writer_begin(&w, path) == 0);
        uint8_t q[68];
        fl_quantize_q8_0(b, q, 64);
        CHECK(fl_gguf_write_data(&w, a, 8) == 0); /* in pieces */
        CHECK(fl_gguf_write_data(&w, a + 2, 4) == 0);
        CHECK(fl_gguf_write_data(&w, q, 68) == 0);
        CHECK(fl_gguf_writer_finish(&w) == 0);
        uint64_t data_size = w.data_size;
        fl_gguf_writer_free(&w);
        fl_gguf_file g;
        CHECK(fl_gguf_open(&g, path) == 0);
        CHECK_EQ_INT(g.alignment, aligns[k]);
        CHECK_EQ_INT(g.n_kv, aligns[k] == 32 ? 1 : 2); /* general.alignment only when not the default */
        if (aligns[k] != 32) CHECK(g.kv[0].key_len == 17 && !memcmp(g.kv[0].key, "general.alignment", 17));
        /* header 24 + alignment entry + architecture entry + 2 tensor infos, rounded up */
        size_t head = 24 + (aligns[k] != 32 ? 8 + 17 + 4 + 4 : 0) + (8 + 20 + 4 + 8 + 5) + (8 + 1 + 4 + 8 + 4 + 8) + (8 + 1 + 4 + 16 + 4 + 8);
        CHECK_EQ_INT(g.data_offset, (head + aligns[k] - 1) / aligns[k] * aligns[k]);
        const fl_gguf_tensor *ta = fl_gguf_find_tensor(&g, "a"), *tb = fl_gguf_find_tensor(&g, "b");
        CHECK(ta && !memcmp(ta->data, a, 12));
        CHECK(tb && !memcmp(tb->data, q, 68));
        CHECK_EQ_INT(g.size, g.data_offset + data_size);
        fl_gguf_close(&g);
        unlink(path);
    }
}

TEST(gguf_writer_rejects_bad_tensors) {
    fl_gguf_writer w;
    fl_gguf_writer_init(&w);
    int64_t ne[2] = {48, 2};
    CHECK_EQ_INT(fl_gguf_add_tensor(&w, "q", 2, ne, FL_GGML_Q8_0), 2); /* 48 is not a multiple of 32 */
    CHECK_STR_CONTAINS(fl_last_error(), "multiple of 32");
    char long_name[80];
    memset(long_name, 'a', 70);
    long_name[70] = 0;
    CHECK_EQ_INT(fl_gguf_add_tensor(&w, long_name, 2, ne, FL_GGML_F32), 2);
    CHECK(fl_gguf_add_tensor(&w, "t", 2, ne, FL_GGML_F32) == 0);
    CHECK_EQ_INT(fl_gguf_add_tensor(&w, "t", 2, ne, FL_GGML_F32), 2);
    CHECK_STR_CONTAINS(fl_last_error(), "twice");
    fl_gguf_writer_free(&w);
}

/* ---- malformed files: one clear line, never a crash ------------------------------------------ */

static void expect_bad(const char *what, const void *bytes, size_t len, const char *needle) {
    const char *path = tmp_path("bad.gguf");
    FILE *f = fopen(path, "wb");
    fwrite(bytes, 1, len, f);
    fclose(f);
    fl_gguf_file g;
    int rc = fl_gguf_open(&g, path);
    CHECK_MSG(rc == 2, "%s: expected an input error, got %d", what, rc);
    if (rc == 2) CHECK_STR_CONTAINS(fl_last_error(), needle ? needle : path);
    if (rc == 0) fl_gguf_close(&g);
    unlink(path);
}

TEST(bad_input_gguf_reader) {
    size_t len;
    char *good = read_all(BASIC, &len);
    CHECK(good != NULL);
    if (!good) return;
    expect_bad("empty", good, 0, "truncated");
    expect_bad("magic", "GGML\3\0\0\0", 8, "bad magic");
    for (size_t cut = 4; cut < 640; cut += 37) expect_bad("truncated header", good, cut, NULL); /* any one line naming the file */
    expect_bad("truncated data", good, len - 100, "past the end");
    char *bad = malloc(len);
    memcpy(bad, good, len);
    bad[4] = 9; /* version */
    expect_bad("version", bad, len, "version");
    memcpy(bad, good, len);
    memset(bad + 8, 0x7f, 8); /* tensor count */
    expect_bad("tensor count", bad, len, "counts");
    memcpy(bad, good, len);
    uint64_t huge = (uint64_t)1 << 62; /* the first key's length */
    memcpy(bad + 24, &huge, 8);
    expect_bad("string length", bad, len, "past the end");
    /* the type of the first metadata value (after the 20-byte key "general.architecture") */
    memcpy(bad, good, len);
    uint32_t type = 99;
    memcpy(bad + 24 + 8 + 20, &type, 4);
    expect_bad("value type", bad, len, "type");
    /* every header byte set to 0xFF in turn: an error or a valid file, never a crash (ASan run) */
    const char *path = tmp_path("flip.gguf");
    for (size_t pos = 0; pos < 640; pos++) {
        memcpy(bad, good, len);
        bad[pos] = (char)0xFF;
        FILE *f = fopen(path, "wb");
        fwrite(bad, 1, len, f);
        fclose(f);
        fl_gguf_file g;
        int rc = fl_gguf_open(&g, path);
        CHECK(rc == 0 || rc == 2);
        if (rc == 0) fl_gguf_close(&g);
    }
    unlink(path);
    free(bad);
    free(good);
}
