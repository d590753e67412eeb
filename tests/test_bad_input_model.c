/* test_bad_input_model.c — malformed model folders and safetensors files: each must give exit code
 * 2 and one line naming the file and the field or tensor — never a crash (these tests also run
 * under AddressSanitizer + UBSan via `make asan-test`, which is why their names say bad_input).
 *
 * Each case starts from a copy of a valid fixture model (tests/fixtures/hf/llama_gqa/model) in a
 * temporary folder and breaks one thing, then runs the real `fastlora bench --model DIR`. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"
#include "io/safetensors.h"
#include "backend/backend.h"
#include "model/config.h"
#include "train/data.h"
#include "model/weights.h"
#include "test.h"

#define GOOD_MODEL "tests/fixtures/hf/llama_gqa/model"

static char *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    *len = 0;
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    *len = fread(buf, 1, (size_t)n, f);
    buf[*len] = 0;
    fclose(f);
    return buf;
}

static void write_all(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    fwrite(data, 1, len, f);
    fclose(f);
}

/* A fresh copy of the model folder `src` in a temp folder; returns the folder path (static buffer). */
static const char *fresh_dir_of(const char *src_dir) {
    static char dir[64];
    snprintf(dir, sizeof dir, "/tmp/fastlora-bad-XXXXXX");
    if (!mkdtemp(dir)) return NULL;
    const char *files[] = {"config.json", "model.safetensors"};
    for (int i = 0; i < 2; i++) {
        char src[256], dst[256];
        size_t len;
        snprintf(src, sizeof src, "%s/%s", src_dir, files[i]);
        snprintf(dst, sizeof dst, "%s/%s", dir, files[i]);
        char *data = read_all(src, &len);
        write_all(dst, data, len);
        free(data);
    }
    return dir;
}

/* A fresh copy of the good model. */
static const char *fresh_model_dir(void) { return fresh_dir_of(GOOD_MODEL); }

static void remove_dir(const char *dir) {
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

/* Runs `fastlora bench --model DIR ...`; returns the exit code and the stderr text. */
static int run_bench(const char *dir, char *err, size_t cap) {
    const char *bin = getenv("FASTLORA_BIN") ? getenv("FASTLORA_BIN") : "build/fastlora";
    char cmd[512], err_path[128];
    snprintf(err_path, sizeof err_path, "%s.stderr", dir);
    snprintf(cmd, sizeof cmd, "%s bench --model '%s' --steps 1 --warmup 0 --batch 1 --seq 4 --device cpu >/dev/null 2>'%s'",
             bin, dir, err_path);
    int rc = system(cmd);
    size_t len = 0;
    char *text = read_all(err_path, &len);
    snprintf(err, cap, "%s", text ? text : "");
    free(text);
    unlink(err_path);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
}

/* Asserts exit 2 and one line containing every needle. */
static void expect_clean_error(const char *dir, const char *needle1, const char *needle2) {
    char err[4096];
    int rc = run_bench(dir, err, sizeof err);
    CHECK_EQ_INT(rc, 2);
    CHECK_STR_CONTAINS(err, needle1);
    if (needle2) CHECK_STR_CONTAINS(err, needle2);
    char *newline = strchr(err, '\n');
    CHECK_MSG(newline && newline[1] == 0, "expected exactly one line on stderr, got: %s", err);
}

static void rewrite_config(const char *dir, const char *from, const char *to) {
    char path[256];
    size_t len;
    snprintf(path, sizeof path, "%s/config.json", dir);
    char *text = read_all(path, &len);
    char *at = strstr(text, from);
    CHECK_MSG(at != NULL, "config.json has no '%s'", from);
    if (!at) { free(text); return; }
    size_t out_cap = len + strlen(to) + 1;
    char *out = malloc(out_cap);
    snprintf(out, out_cap, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    write_all(path, out, strlen(out));
    free(out);
    free(text);
}

/* Writes DIR/model.safetensors as a raw header + `data_len` zero bytes. */
static void write_raw_safetensors(const char *dir, const char *header, uint64_t declared_len, size_t data_len) {
    char path[256];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    size_t hlen = strlen(header);
    size_t total = 8 + hlen + data_len;
    uint8_t *buf = calloc(1, total);
    for (int i = 0; i < 8; i++) buf[i] = (uint8_t)(declared_len >> (8 * i));
    memcpy(buf + 8, header, hlen);
    write_all(path, buf, total);
    free(buf);
}

TEST(bad_input_model_good_fixture_runs) {
    const char *dir = fresh_model_dir();
    char err[4096];
    CHECK_EQ_INT(run_bench(dir, err, sizeof err), 0);
    remove_dir(dir);
}

TEST(bad_input_safetensors_header_past_end) {
    const char *dir = fresh_model_dir();
    char path[256];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    size_t len;
    uint8_t *data = (uint8_t *)read_all(path, &len);
    uint64_t huge = (uint64_t)len + 1000;
    for (int i = 0; i < 8; i++) data[i] = (uint8_t)(huge >> (8 * i));
    write_all(path, data, len);
    free(data);
    expect_clean_error(dir, "model.safetensors", "header length");
    remove_dir(dir);
}

TEST(bad_input_safetensors_truncated) {
    const char *dir = fresh_model_dir();
    char path[256];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    CHECK(truncate(path, 5000) == 0);
    expect_clean_error(dir, "model.safetensors", "out of range");
    CHECK(truncate(path, 3) == 0);
    expect_clean_error(dir, "model.safetensors", "too short");
    remove_dir(dir);
}

TEST(bad_input_safetensors_offsets_overlap_and_hole) {
    const char *dir = fresh_model_dir();
    write_raw_safetensors(dir,
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
        "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 0, 12);
    /* declared length patched below */
    char path[256];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    size_t len;
    uint8_t *data = (uint8_t *)read_all(path, &len);
    uint64_t hlen = len - 8 - 12;
    for (int i = 0; i < 8; i++) data[i] = (uint8_t)(hlen >> (8 * i));
    write_all(path, data, len);
    free(data);
    expect_clean_error(dir, "model.safetensors", "overlaps");

    const char *hole = "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                       "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[12,20]}}";
    write_raw_safetensors(dir, hole, strlen(hole), 20);
    expect_clean_error(dir, "model.safetensors", "hole");
    remove_dir(dir);
}

TEST(bad_input_safetensors_bad_header_fields) {
    const char *dir = fresh_model_dir();
    const char *cases[][2] = {
        {"[1,2,3]", "does not start with '{'"},
        {"{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]", "header JSON invalid"},
        {"{\"a\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[0,8]}}", "dtype 'F64'"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", "needs 12"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", "shape[0]"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8]}}", "data_offsets"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
         "header JSON invalid"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_raw_safetensors(dir, cases[i][0], strlen(cases[i][0]), 8);
        expect_clean_error(dir, "model.safetensors", cases[i][1]);
    }
    remove_dir(dir);
}

TEST(bad_input_safetensors_missing_tensor_and_wrong_shape) {
    const char *dir = fresh_model_dir();
    /* drop one tensor by rewriting the file without it */
    fl_safetensors st;
    char path[256];
    snprintf(path, sizeof path, GOOD_MODEL "/model.safetensors");
    CHECK(fl_safetensors_open(&st, path) == 0);
    fl_st_write_tensor *keep = calloc((size_t)st.n_tensors, sizeof *keep);
    int n = 0;
    for (int i = 0; i < st.n_tensors; i++) {
        if (!strcmp(st.tensors[i].name, "model.layers.1.mlp.up_proj.weight")) continue;
        keep[n].name = st.tensors[i].name;
        keep[n].dtype = st.tensors[i].dtype;
        keep[n].ndim = st.tensors[i].ndim;
        memcpy(keep[n].shape, st.tensors[i].shape, sizeof keep[n].shape);
        keep[n].data = st.tensors[i].data;
        n++;
    }
    char out[256];
    snprintf(out, sizeof out, "%s/model.safetensors", dir);
    CHECK(fl_safetensors_write(out, keep, n, NULL, 0) == 0);
    expect_clean_error(dir, "model.layers.1.mlp.up_proj.weight", "missing");
    free(keep);
    fl_safetensors_close(&st);

    /* config.json that disagrees with the tensors */
    remove_dir(dir);
    dir = fresh_model_dir();
    rewrite_config(dir, "\"intermediate_size\": 112", "\"intermediate_size\": 100");
    expect_clean_error(dir, "model.safetensors", "config.json implies");
    remove_dir(dir);
}

TEST(bad_input_config_json) {
    const char *cases[][3] = {
        {"\"architectures\": [", "\"architectures\": [\"FalconForCausalLM\", ", "FalconForCausalLM"},
        {"\"hidden_size\": 64", "\"hidden_size\": \"64\"", "hidden_size"},
        {"\"num_attention_heads\": 4", "\"num_attention_heads\": 3", "num_key_value_heads"},
        {",\n  \"vocab_size\": 200", "", "vocab_size"},
        {"{", "{{", "invalid JSON"},
        {"\"rope_type\": \"default\"", "\"rope_type\": \"proportional\", \"factor\": 4", "rope_parameters.rope_type' is 'proportional'"},
        {"\"rope_type\": \"default\"", "\"rope_type\": \"llama3\", \"factor\": 4", "low_freq_factor' is missing"},
        {"\"tie_word_embeddings\": false", "\"tie_word_embeddings\": \"no\"", "tie_word_embeddings"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *dir = fresh_model_dir();
        rewrite_config(dir, cases[i][0], cases[i][1]);
        expect_clean_error(dir, "config.json", cases[i][2]);
        remove_dir(dir);
    }
    const char *dir = fresh_model_dir();
    char path[256];
    snprintf(path, sizeof path, "%s/config.json", dir);
    unlink(path);
    expect_clean_error(dir, "config.json", "cannot");
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    remove_dir(dir);
}

TEST(bad_input_unsupported_architecture_lists_supported) {
    fl_model_config cfg;
    const char *dir = fresh_model_dir();
    rewrite_config(dir, "\"LlamaForCausalLM\"", "\"GPT2LMHeadModel\"");
    char path[256];
    snprintf(path, sizeof path, "%s/config.json", dir);
    CHECK_EQ_INT(fl_config_load(&cfg, path), 2);
    CHECK_STR_CONTAINS(fl_last_error(), "GPT2LMHeadModel");
    CHECK_STR_CONTAINS(fl_last_error(), "LlamaForCausalLM, Qwen2ForCausalLM");
    remove_dir(dir);
}

TEST(bad_input_model_folder_without_weights) {
    const char *dir = fresh_model_dir();
    char path[256];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    unlink(path);
    expect_clean_error(dir, "no model.safetensors", NULL);
    /* a sharded index pointing at a shard that is not there */
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    const char *index = "{\"metadata\": {\"total_size\": 1}, \"weight_map\": {\"model.norm.weight\": \"model-00001-of-00002.safetensors\"}}";
    write_all(path, index, strlen(index));
    expect_clean_error(dir, "cannot read", "model-00001-of-00002.safetensors: No such file or directory");
    remove_dir(dir);
}

/* config.json sizes that the files cannot back: checked against the safetensors files before
 * anything is allocated (100M layers used to abort in calloc; a 1e8 hidden size allocated the
 * whole embedding before the shape check). In process, so a regression crashes the runner. */
TEST(bad_input_config_sizes_checked_before_allocation) {
    const char *cases[][3] = {
        {"\"num_hidden_layers\": 2", "\"num_hidden_layers\": 100000000", "100000000 layers"},
        {"\"hidden_size\": 64", "\"hidden_size\": 100000000", "config.json implies"},
        {"\"vocab_size\": 200", "\"vocab_size\": 100000000", "config.json implies"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *dir = fresh_model_dir();
        rewrite_config(dir, cases[i][0], cases[i][1]);
        fl_model_config cfg;
        fl_base_weights w;
        CHECK_EQ_INT(fl_weights_load(&w, &cfg, dir, fl_backend_cpu(), (fl_weights_reserve){0, 0}), 2);
        CHECK_STR_CONTAINS(fl_last_error(), cases[i][2]);
        CHECK(w.storage == NULL);
        remove_dir(dir);
    }
}

/* head_dim beyond what the CPU RoPE supports (its angle table is on the stack: a 2048 head_dim
 * smashed it) and NH*HS products near int overflow are rejected by the config reader. */
TEST(bad_input_config_head_dim_limits) {
    const char *cases[][3] = {
        {"\"head_dim\": 16", "\"head_dim\": 2048", "head_dim"},
        {"\"head_dim\": 16", "\"head_dim\": 1000000", "head_dim"},
        /* 4194304 x 1024 = 2^32: the int product used to wrap to 0 */
        {"\"num_attention_heads\": 4", "\"num_attention_heads\": 4194304", "num_attention_heads x head_dim"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *dir = fresh_model_dir();
        rewrite_config(dir, cases[i][0], cases[i][1]);
        if (i == 2) rewrite_config(dir, "\"head_dim\": 16", "\"head_dim\": 1024");
        expect_clean_error(dir, "config.json", cases[i][2]);
        remove_dir(dir);
    }
}

/* max_position_embeddings <= 0 and rms_norm_eps <= 0 (or 0/Inf once in f32, the type RMSNorm uses)
 * used to load; the first breaks RoPE tables and the second divides by zero in RMSNorm. */
TEST(bad_input_config_positions_and_eps) {
    const char *cases[][3] = {
        {"\"max_position_embeddings\": 128", "\"max_position_embeddings\": 0", "'max_position_embeddings' must be a positive"},
        {"\"max_position_embeddings\": 128", "\"max_position_embeddings\": -5", "'max_position_embeddings'"},
        {"\"rms_norm_eps\": 1e-05", "\"rms_norm_eps\": 0", "'rms_norm_eps' must be a positive"},
        {"\"rms_norm_eps\": 1e-05", "\"rms_norm_eps\": -1e-6", "'rms_norm_eps' must be a positive"},
        {"\"rms_norm_eps\": 1e-05", "\"rms_norm_eps\": 1e-60", "'rms_norm_eps' must be a positive"},
        {"\"rms_norm_eps\": 1e-05", "\"rms_norm_eps\": 1e300", "'rms_norm_eps' must be a positive"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *dir = fresh_model_dir();
        rewrite_config(dir, cases[i][0], cases[i][1]);
        expect_clean_error(dir, "config.json", cases[i][2]);
        remove_dir(dir);
    }
}

/* MistralForCausalLM runs as Llama with its sliding_window on every layer. A sequence longer than
 * the window runs (sliding-window attention: tests/test_cpu_attention.c, test_hf_fixtures.c
 * mistral_swa) in bench, generate and train, which used to refuse it; a window that is not a
 * positive integer is one line naming the field. */
TEST(bad_input_mistral_sliding_window) {
    const char *m = "tests/fixtures/hf/mistral_window/model";
    fl_model_config cfg;
    CHECK_EQ_INT(fl_config_load(&cfg, "tests/fixtures/hf/mistral_window/model/config.json"), 0);
    CHECK(cfg.arch == FL_ARCH_LLAMA && cfg.sliding_window == 32);
    for (int l = 0; l < cfg.n_layers; l++) CHECK_EQ_INT(fl_config_layer_window(&cfg, l), 32);
    if (!fl_test_bin()) SKIP("FASTLORA_BIN not set");
    char out[8192];
    int rc = fl_test_run_cli(out, sizeof out, "bench --model %s --seq 64 --batch 1 --steps 1 --device cpu", m);
    CHECK_MSG(rc == 0, "bench --seq 64: %s", out);
    rc = fl_test_run_cli(out, sizeof out, "generate --model %s --prompt-ids 1,2,3 --max-tokens 40 --device cpu", m);
    CHECK_MSG(rc == 0, "generate past the window: %s", out);
    char dir[] = "/tmp/fastlora-window-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char data[300], run[300];
    snprintf(data, sizeof data, "%s/d.tokens", dir);
    snprintf(run, sizeof run, "%s/run", dir);
    fl_dataset ds = {0};
    int32_t ids[40];
    for (int i = 0; i < 40; i++) ids[i] = 3 + i;
    fl_dataset_add(&ds, ids, NULL, 40);
    CHECK_EQ_INT(fl_tokens_file_write(data, &ds), 0);
    fl_dataset_free(&ds);
    rc = fl_test_run_cli(out, sizeof out, "train --model %s --data %s --out %s --seq 64 --max-steps 1 --device cpu", m, data, run);
    CHECK_MSG(rc == 0, "train --seq 64: %s", out);
    /* a bad window */
    const char *bad = fresh_model_dir();
    rewrite_config(bad, "\"LlamaForCausalLM\"", "\"MistralForCausalLM\"], \"sliding_window\": -3, \"x\": [0");
    char path[256];
    snprintf(path, sizeof path, "%s/config.json", bad);
    CHECK_EQ_INT(fl_config_load(&cfg, path), 2);
    CHECK_STR_CONTAINS(fl_last_error(), "field 'sliding_window' must be null or a positive integer");
    remove_dir(bad);
    remove_dir(dir);
}

/* Gemma 3: its sliding layers' window no longer bounds the sequence (the window slides): train runs
 * a step at --seq 32, twice the fixture's window; a missing post_feedforward_layernorm weight is
 * named. */
TEST(bad_input_gemma3_sliding_window_and_norm_weights) {
    const char *m = "tests/fixtures/hf/gemma3_sandwich/model";
    if (!fl_test_bin()) SKIP("FASTLORA_BIN not set");
    char out[8192];
    char dir[] = "/tmp/fastlora-gwindow-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char data[300], run[300];
    snprintf(data, sizeof data, "%s/d.tokens", dir);
    snprintf(run, sizeof run, "%s/run", dir);
    fl_dataset ds = {0};
    int32_t ids[40];
    for (int i = 0; i < 40; i++) ids[i] = 3 + i;
    fl_dataset_add(&ds, ids, NULL, 40);
    CHECK_EQ_INT(fl_tokens_file_write(data, &ds), 0);
    fl_dataset_free(&ds);
    int rc = fl_test_run_cli(out, sizeof out, "train --model %s --data %s --out %s --seq 32 --max-steps 1 --device cpu", m,
                             data, run);
    CHECK_MSG(rc == 0, "train --seq 32: %s", out);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
    /* the weights without one post_feedforward_layernorm */
    const char *wdir = fresh_dir_of(m);
    fl_safetensors st2;
    CHECK(fl_safetensors_open(&st2, "tests/fixtures/hf/gemma3_sandwich/model/model.safetensors") == 0);
    fl_st_write_tensor *keep = calloc((size_t)st2.n_tensors, sizeof *keep);
    int n = 0;
    for (int i = 0; i < st2.n_tensors; i++)
        if (strcmp(st2.tensors[i].name, "model.layers.1.post_feedforward_layernorm.weight") != 0)
            keep[n++] = fl_st_write_tensor_of(&st2.tensors[i]);
    char path[300];
    snprintf(path, sizeof path, "%s/model.safetensors", wdir);
    CHECK(fl_safetensors_write(path, keep, n, NULL, 0) == 0);
    expect_clean_error(wdir, "model.layers.1.post_feedforward_layernorm.weight", "missing");
    free(keep);
    fl_safetensors_close(&st2);
    remove_dir(wdir);
}

/* Qwen3ForCausalLM: q_norm/k_norm (cfg->qk_norm), head_dim 128 when absent (Qwen3Config's default);
 * a sliding layer in layer_types without use_sliding_window (transformers has no window for it then)
 * and attention_bias true (which biases o_proj too) are refused in one line naming the field; a
 * missing k_norm weight is named. */
TEST(bad_input_qwen3_config_and_norm_weights) {
    const char *q3 = "tests/fixtures/hf/qwen3_qk_norm/model";
    fl_model_config cfg;
    CHECK_EQ_INT(fl_config_load(&cfg, "tests/fixtures/hf/qwen3_qk_norm/model/config.json"), 0);
    CHECK(cfg.arch == FL_ARCH_QWEN3 && cfg.qk_norm && !cfg.qkv_bias && cfg.head_dim == 12 && !cfg.sliding_window);
    const char *cases[][3] = {
        {"\"full_attention\"", "\"sliding_attention\"", "field 'layer_types' names sliding_attention layers"},
        {"\"full_attention\"", "\"chunked_attention\"", "field 'layer_types[0]' must be \"full_attention\" or"},
        {"\"full_attention\",", "", "field 'layer_types' must be a list of 2 strings"},
        {"\"attention_bias\": false", "\"attention_bias\": true", "field 'attention_bias' is true"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *dir = fresh_dir_of(q3);
        rewrite_config(dir, cases[i][0], cases[i][1]);
        expect_clean_error(dir, "config.json", cases[i][2]);
        remove_dir(dir);
    }
    const char *dir = fresh_dir_of(q3);
    rewrite_config(dir, "\"head_dim\": 12,", "");
    char path[256];
    snprintf(path, sizeof path, "%s/config.json", dir);
    CHECK_EQ_INT(fl_config_load(&cfg, path), 0);
    CHECK_EQ_INT(cfg.head_dim, 128);
    remove_dir(dir);
    /* the weights without one k_norm */
    dir = fresh_dir_of(q3);
    fl_safetensors st;
    CHECK(fl_safetensors_open(&st, "tests/fixtures/hf/qwen3_qk_norm/model/model.safetensors") == 0);
    fl_st_write_tensor *keep = calloc((size_t)st.n_tensors, sizeof *keep);
    int n = 0;
    for (int i = 0; i < st.n_tensors; i++)
        if (strcmp(st.tensors[i].name, "model.layers.1.self_attn.k_norm.weight") != 0) keep[n++] = fl_st_write_tensor_of(&st.tensors[i]);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    CHECK(fl_safetensors_write(path, keep, n, NULL, 0) == 0);
    expect_clean_error(dir, "model.layers.1.self_attn.k_norm.weight", "missing");
    free(keep);
    fl_safetensors_close(&st);
    remove_dir(dir);
}

/* Qwen3's sliding layers (transformers 5.x Qwen3Config): with use_sliding_window true, layers
 * i >= max_window_layers slide (layer_types, when listed, says the same and wins); without it, or with
 * sliding_window null, none does; sliding_window absent is 4096. A listed pattern the config fields
 * cannot express is one line. */
static void load_window(const char *dir, fl_model_config *cfg) {
    char path[256];
    snprintf(path, sizeof path, "%s/config.json", dir);
    CHECK_MSG(fl_config_load(cfg, path) == 0, "%s", fl_last_error());
}

TEST(bad_input_qwen3_config_sliding_layers) {
    const char *q3 = "tests/fixtures/hf/qwen3_swa/model";
    fl_model_config cfg;
    load_window(q3, &cfg);
    CHECK(cfg.sliding_window == 4 && cfg.window_first_layer == 1 && cfg.window_global_every == 0);
    CHECK(fl_config_layer_window(&cfg, 0) == 0 && fl_config_layer_window(&cfg, 1) == 4 && fl_config_layer_window(&cfg, 2) == 4);
    const char *list = "\"full_attention\",\n    \"sliding_attention\",\n    \"sliding_attention\"";
    struct { const char *from, *to; int window, first, every; } ok[] = {
        {"\"layer_types\"", "\"unused\"", 4, 1, 0},                     /* no layer_types: max_window_layers */
        {"\"max_window_layers\": 1", "\"max_window_layers\": 0", 4, 1, 0},  /* a listed layer_types wins */
        {list, "\"sliding_attention\", \"full_attention\", \"sliding_attention\"", 4, 0, 2},
        {list, "\"full_attention\", \"full_attention\", \"full_attention\"", 0, 0, 0},
        {"\"sliding_window\": 4,", "", 4096, 1, 0},                              /* Qwen3Config's default */
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        const char *dir = fresh_dir_of(q3);
        rewrite_config(dir, ok[i].from, ok[i].to);
        load_window(dir, &cfg);
        CHECK_MSG(cfg.sliding_window == ok[i].window && (!cfg.sliding_window || (cfg.window_first_layer == ok[i].first &&
                  cfg.window_global_every == ok[i].every)), "case %zu: window %d first %d every %d", i,
                  cfg.sliding_window, cfg.window_first_layer, cfg.window_global_every);
        remove_dir(dir);
    }
    /* no layer_types: max_window_layers 3 (= layers) or a null window leaves every layer full */
    const char *dir = fresh_dir_of(q3);
    rewrite_config(dir, "\"layer_types\"", "\"unused\"");
    rewrite_config(dir, "\"max_window_layers\": 1", "\"max_window_layers\": 3");
    load_window(dir, &cfg);
    CHECK_EQ_INT(cfg.sliding_window, 0);
    rewrite_config(dir, "\"max_window_layers\": 3", "\"max_window_layers\": 0");
    rewrite_config(dir, "\"sliding_window\": 4", "\"sliding_window\": null");
    load_window(dir, &cfg);
    CHECK_EQ_INT(cfg.sliding_window, 0);
    remove_dir(dir);
    const char *bad[][3] = {
        {list, "\"sliding_attention\", \"full_attention\", \"full_attention\"", "this pattern of sliding_attention layers"},
        {"\"use_sliding_window\": true", "\"use_sliding_window\": false", "but use_sliding_window is not true"},
        {"\"sliding_window\": 4", "\"sliding_window\": 0", "field 'sliding_window' must be null or a positive integer"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        dir = fresh_dir_of(q3);
        rewrite_config(dir, bad[i][0], bad[i][1]);
        expect_clean_error(dir, "config.json", bad[i][2]);
        remove_dir(dir);
    }
}
