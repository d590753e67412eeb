/* test_nf4_load.c — loading bitsandbytes 4-bit checkpoints and quantizing at load.
 *
 * Fixtures (tools/make_nf4_fixtures.py): tests/fixtures/nf4/tiny-bf16 (a tiny Llama in bf16) and
 * tiny-nf4 (the same model loaded by transformers with BitsAndBytesConfig(load_in_4bit=True,
 * bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True) on the CPU and saved). The stored NF4
 * layers must equal, bit for bit, what fastlora's quantize-at-load makes of the bf16 folder — one
 * check of both the reader and the quantizer against the real pipeline. Then every field of the
 * format is corrupted in turn: each must give one error line naming the tensor.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"
#include "io/file_util.h"
#include "io/safetensors.h"
#include "model/config.h"
#include "model/weights_nf4.h"
#include "model/nf4_dequantize.h"
#include "test.h"

#define NF4_DIR "tests/fixtures/nf4/"

static int same_weight(const fl_nf4_weight *a, const fl_nf4_weight *b) {
    if (a->rows != b->rows || a->cols != b->cols || a->dtype != b->dtype || a->double_quant != b->double_quant) return 0;
    if (memcmp(a->packed, b->packed, (size_t)(a->rows * a->cols + 1) / 2)) return 0;
    if (!a->double_quant) return !memcmp(a->absmax, b->absmax, (size_t)a->n_blocks * 4);
    return !memcmp(a->absmax_q, b->absmax_q, (size_t)a->n_blocks) &&
           !memcmp(a->nested_absmax, b->nested_absmax, (size_t)a->n_groups * 4) &&
           !memcmp(a->nested_map, b->nested_map, 256 * 4) && !memcmp(&a->offset, &b->offset, 4);
}

TEST(nf4_quant_config) {
    fl_quant_config qc;
    if (!fl_file_exists(NF4_DIR "tiny-nf4/config.json")) SKIP("no NF4 fixtures");
    CHECK_EQ_INT(fl_quant_config_load(&qc, NF4_DIR "tiny-nf4/config.json"), 0);
    CHECK(qc.nf4 == 1 && qc.double_quant == 1 && qc.compute_dtype == FL_BF16);
    CHECK_EQ_INT(fl_quant_config_load(&qc, NF4_DIR "tiny-bf16/config.json"), 0);
    CHECK_EQ_INT(qc.nf4, 0);
}

TEST(nf4_checkpoint_equals_quantize_at_load) {
    fl_model_config cfg;
    if (fl_config_load(&cfg, NF4_DIR "tiny-bf16/config.json")) SKIP("no NF4 fixtures");
    for (int l = 0; l < cfg.n_layers; l++) {
        fl_nf4_layer stored, ours;
        int s1 = fl_nf4_load_layer(&stored, NF4_DIR "tiny-nf4", &cfg, l, FL_NF4_STORED);
        CHECK_MSG(s1 == 0, "%s", fl_last_error());
        int s2 = fl_nf4_load_layer(&ours, NF4_DIR "tiny-bf16", &cfg, l, FL_NF4_QUANTIZE);
        CHECK_MSG(s2 == 0, "%s", fl_last_error());
        if (s1 || s2) return;
        for (int p = 0; p < FL_N_PROJ; p++) {
            CHECK_MSG(same_weight(&stored.proj[p], &ours.proj[p]), "layer %d %s differs", l, fl_proj_names[p]);
            CHECK(stored.proj[p].double_quant && stored.proj[p].dtype == FL_BF16);
        }
        fl_nf4_layer_free(&stored);
        fl_nf4_layer_free(&ours);
    }
    /* a float checkpoint is not NF4 unless quantizing at load was asked for */
    fl_nf4_layer l0;
    CHECK_EQ_INT(fl_nf4_load_layer(&l0, NF4_DIR "tiny-bf16", &cfg, 0, FL_NF4_STORED), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "'model.layers.0.self_attn.q_proj.weight' is stored as BF16, not NF4");
    fl_clear_error();
}

/* Quantize-at-load of tensors with fewer than 8 blocks (at most 448 values: a bias-sized projection):
 * torch's absmax.mean() sums a vector shorter than one 8-lane load with its scalar loop (4 accumulators,
 * the tail onto the first), not left to right, so the offset — and with it every 8-bit code — followed
 * another order for 5 to 7 blocks. short-means.safetensors (tools/make_nf4_fixtures.py --only means):
 * torch's means of 64 vectors of 1..16 values, and bitsandbytes' quantize_4bit of a (5, 64) f32 matrix;
 * all bit for bit. */
TEST(nf4_quantize_short_tensors_offset_matches_torch) {
    fl_safetensors f;
    if (fl_safetensors_open(&f, NF4_DIR "short-means.safetensors")) SKIP("no short-means fixture");
    const fl_st_tensor *values = fl_safetensors_find(&f, "values"), *lengths = fl_safetensors_find(&f, "lengths");
    const fl_st_tensor *means = fl_safetensors_find(&f, "means");
    CHECK(values && lengths && means && lengths->numel == means->numel);
    const float *v = values ? values->data : NULL;
    size_t at = 0, bad = 0;
    for (size_t i = 0; v && lengths && means && i < lengths->numel; i++) {
        int32_t n = ((const int32_t *)lengths->data)[i];
        float got = fl_nf4_absmax_mean(v + at, n), want = ((const float *)means->data)[i];
        if (memcmp(&got, &want, sizeof got)) {
            if (!bad++) fl_test_fail(__FILE__, __LINE__, "mean of %d values: %.9g, torch %.9g", n, got, want);
        }
        at += (size_t)n;
    }
    CHECK_EQ_INT(bad, 0);
    const fl_st_tensor *in = fl_safetensors_find(&f, "bnb5.input"), *packed = fl_safetensors_find(&f, "bnb5.packed");
    const fl_st_tensor *codes = fl_safetensors_find(&f, "bnb5.absmax"), *nested = fl_safetensors_find(&f, "bnb5.nested_absmax");
    const fl_st_tensor *offset = fl_safetensors_find(&f, "bnb5.offset");
    CHECK(in && packed && codes && nested && offset);
    fl_nf4_weight w;
    if (in && packed && codes && nested && offset &&
        !fl_nf4_quantize(&w, in->data, FL_F32, in->shape[0], in->shape[1], 1, "bnb5")) {
        CHECK_EQ_INT(w.n_blocks, 5);
        CHECK_MSG(!memcmp(&w.offset, offset->data, 4), "offset %.9g, bitsandbytes %.9g", w.offset,
                  ((const float *)offset->data)[0]);
        CHECK(!memcmp(w.absmax_q, codes->data, 5) && !memcmp(w.nested_absmax, nested->data, 4));
        CHECK(!memcmp(w.packed, packed->data, packed->nbytes));
        fl_nf4_free(&w);
    }
    fl_safetensors_close(&f);
}

/* ---- bad input: the tiny-nf4 checkpoint with one thing changed ---- */

typedef struct {
    const char *name;        /* tensor to change (NULL: none) */
    int drop;                /* remove it */
    const char *json;        /* new quant_state JSON */
    int64_t bytes;           /* > 0: truncate the tensor's data to this many bytes (U8) */
    int poison;              /* write NaN / change an entry of an F32 tensor */
} corruption;

static int write_corrupt(const char *dir, const corruption *c) {
    fl_safetensors st;
    FL_TRY(fl_safetensors_open(&st, NF4_DIR "tiny-nf4/model.safetensors"));
    fl_st_write_tensor *out = calloc((size_t)st.n_tensors, sizeof *out);
    void *owned = NULL;
    int n = 0;
    for (int i = 0; i < st.n_tensors; i++) {
        const fl_st_tensor *t = &st.tensors[i];
        fl_st_write_tensor *o = &out[n];
        *o = fl_st_write_tensor_of(t);
        if (c->name && !strcmp(t->name, c->name)) {
            if (c->drop) continue;
            if (c->json) {
                o->ndim = 1;
                o->shape[0] = (int64_t)strlen(c->json);
                o->data = c->json;
            } else if (c->bytes > 0) {
                o->ndim = 1;
                o->shape[0] = c->bytes;
            } else if (c->poison) {
                owned = malloc(t->nbytes);
                memcpy(owned, t->data, t->nbytes);
                ((float *)owned)[t->numel - 1] = c->poison == 1 ? NAN : 0.5f;
                o->data = owned;
            }
        }
        n++;
    }
    char *path = fl_path_join(dir, "model.safetensors");
    const char *meta[] = {"format", "pt"};
    int status = fl_safetensors_write(path, out, n, meta, 1);
    free(path);
    free(owned);
    free(out);
    fl_safetensors_close(&st);
    return status;
}

static void expect_error(const fl_model_config *cfg, const corruption *c, const char *needle) {
    char dir[] = "/tmp/fastlora-nf4bad-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    CHECK_EQ_INT(write_corrupt(dir, c), 0);
    fl_nf4_layer l;
    int status = fl_nf4_load_layer(&l, dir, cfg, 0, FL_NF4_QUANTIZE);
    CHECK_EQ_INT(status, FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), needle);
    CHECK(strchr(fl_last_error(), '\n') == NULL);
    if (!status) fl_nf4_layer_free(&l);
    fl_clear_error();
    char *path = fl_path_join(dir, "model.safetensors");
    unlink(path);
    free(path);
    rmdir(dir);
}

#define Q "model.layers.0.self_attn.q_proj.weight"
#define GOOD_HEAD "{\"quant_type\": \"nf4\", \"blocksize\": 64, \"dtype\": \"bfloat16\", "
#define GOOD_NEST ", \"nested_blocksize\": 256, \"nested_dtype\": \"float32\", \"nested_offset\": 0.05}"

TEST(nf4_bad_input_checkpoint_fields) {
    fl_model_config cfg;
    if (fl_config_load(&cfg, NF4_DIR "tiny-nf4/config.json")) SKIP("no NF4 fixtures");
    const struct { corruption c; const char *needle; } cases[] = {
        {{.name = Q ".absmax", .drop = 1}, "tensor '" Q ".absmax' is missing"},
        {{.name = Q ".quant_state.bitsandbytes__nf4", .drop = 1}, "tensor '" Q ".quant_state.bitsandbytes__nf4' is missing"},
        {{.name = Q ".nested_absmax", .drop = 1}, "'" Q ".nested_absmax' is missing"},
        {{.name = Q, .drop = 1}, "tensor '" Q "' is missing"},
        {{.name = Q, .bytes = 2047}, "tensor '" Q "' holds 2047 bytes (64 x 64 in 4 bits needs 2048)"},
        {{.name = Q ".absmax", .bytes = 63}, "'" Q ".absmax' has 63 elements (expected 64)"},
        {{.name = Q ".quant_map", .poison = 2}, "'" Q ".quant_map' is not the NF4 code table"},
        {{.name = Q ".nested_absmax", .poison = 1}, "'" Q ".nested_absmax' holds a non-finite value"},
        {{.name = Q ".nested_quant_map", .poison = 1}, "'" Q ".nested_quant_map' is not an ascending map"},
        {{.name = Q ".quant_state.bitsandbytes__nf4", .json = "{not json"}, "is not the JSON bitsandbytes writes"},
        {{.name = Q ".quant_state.bitsandbytes__nf4", .json = GOOD_HEAD "\"shape\": [64, 63]" GOOD_NEST},
         "shape is not [64, 64] as config.json implies"},
        {{.name = Q ".quant_state.bitsandbytes__nf4",
          .json = "{\"quant_type\": \"nf4\", \"blocksize\": 128, \"dtype\": \"bfloat16\", \"shape\": [64, 64]" GOOD_NEST},
         "blocksize is not 64"},
        {{.name = Q ".quant_state.bitsandbytes__nf4",
          .json = "{\"quant_type\": \"fp4\", \"blocksize\": 64, \"dtype\": \"bfloat16\", \"shape\": [64, 64]" GOOD_NEST},
         "quant_type is 'fp4'"},
        {{.name = Q ".quant_state.bitsandbytes__nf4",
          .json = "{\"quant_type\": \"nf4\", \"blocksize\": 64, \"dtype\": \"int8\", \"shape\": [64, 64]" GOOD_NEST},
         "dtype is not float32, bfloat16 or float16"},
        {{.name = Q ".quant_state.bitsandbytes__nf4",
          .json = GOOD_HEAD "\"shape\": [64, 64], \"nested_blocksize\": 256, \"nested_dtype\": \"float32\", \"nested_offset\": 1e300}"},
         "nested_offset is not a finite float32 number"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) expect_error(&cfg, &cases[i].c, cases[i].needle);
}

TEST(nf4_bad_input_quant_config) {
    char dir[] = "/tmp/fastlora-nf4cfg-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char *path = fl_path_join(dir, "config.json");
    const struct { const char *json, *needle; } cases[] = {
        {"{\"quantization_config\": {\"quant_method\": \"gptq\"}}", "quant_method is 'gptq'"},
        {"{\"quantization_config\": {\"quant_method\": \"bitsandbytes\", \"load_in_8bit\": true}}", "bitsandbytes 8-bit"},
        {"{\"quantization_config\": {\"quant_method\": \"bitsandbytes\", \"load_in_4bit\": true, "
         "\"bnb_4bit_quant_type\": \"fp4\"}}", "bnb_4bit_quant_type is 'fp4'"},
        {"{\"quantization_config\": {\"quant_method\": \"bitsandbytes\", \"load_in_4bit\": true, "
         "\"bnb_4bit_quant_type\": \"nf4\", \"bnb_4bit_quant_storage\": \"bfloat16\"}}", "quant_storage is 'bfloat16'"},
        {"{\"quantization_config\": [1]}", "quantization_config is not an object"},
    };
    fl_quant_config qc;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CHECK_EQ_INT(fl_write_file_atomic(path, cases[i].json, strlen(cases[i].json)), 0);
        CHECK_EQ_INT(fl_quant_config_load(&qc, path), FL_ERR_INPUT);
        CHECK_STR_CONTAINS(fl_last_error(), cases[i].needle);
        fl_clear_error();
    }
    unlink(path);
    free(path);
    rmdir(dir);
}

static void on_alarm_nf4(int sig) {
    (void)sig;
    static const char msg[] = "FAIL: an NF4 JSON read blocked on a FIFO (test_nf4_load.c)\n";
    if (write(1, msg, sizeof msg - 1) < 0) {}
    _exit(1);
}

/* The JSON files of an NF4 folder (config.json, model.safetensors.index.json) go through the one
 * input reader: a FIFO is refused at once with "cannot read PATH: a FIFO, not a regular file"
 * (json_load_file used to block on it, waiting for a writer). */
TEST(nf4_bad_input_json_files_are_fifos) {
    char dir[] = "/tmp/fastlora-nf4fifo-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char *config = fl_path_join(dir, "config.json"), *index = fl_path_join(dir, "model.safetensors.index.json");
    char *weights = fl_path_join(dir, "model.safetensors"), *out = fl_path_join(dir, "out");
    CHECK_EQ_INT(mkfifo(config, 0600), 0);
    CHECK_EQ_INT(mkfifo(index, 0600), 0);
    signal(SIGALRM, on_alarm_nf4);
    alarm(20);
    fl_quant_config qc;
    CHECK_EQ_INT(fl_quant_config_load(&qc, config), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "config.json: a FIFO, not a regular file");
    /* sharded (no model.safetensors): the index is read first */
    fl_model_config cfg;
    CHECK_EQ_INT(fl_config_load(&cfg, "tests/fixtures/hf/llama_gqa/model/config.json"), 0);
    fl_nf4_layer layer;
    CHECK_EQ_INT(fl_nf4_load_layer(&layer, dir, &cfg, 0, FL_NF4_STORED), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "model.safetensors.index.json: a FIFO, not a regular file");
    CHECK_EQ_INT(fl_nf4_dequantize_folder(dir, out), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "model.safetensors.index.json: a FIFO, not a regular file");
    /* one file: config.json is read when the dequantized folder's config is written */
    FILE *src = fopen("tests/fixtures/hf/llama_gqa/model/model.safetensors", "rb"), *dst = fopen(weights, "wb");
    CHECK(src && dst);
    char buf[65536];
    for (size_t n; src && dst && (n = fread(buf, 1, sizeof buf, src)) > 0;) fwrite(buf, 1, n, dst);
    if (src) fclose(src);
    if (dst) fclose(dst);
    CHECK_EQ_INT(fl_nf4_dequantize_folder(dir, out), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "config.json: a FIFO, not a regular file");
    alarm(0);
    signal(SIGALRM, SIG_DFL);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
    free(config);
    free(index);
    free(weights);
    free(out);
}
