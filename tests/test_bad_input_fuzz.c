/* test_bad_input_fuzz.c — regression tests for what the libFuzzer harnesses (fuzz/) found: each
 * test replays the (minimized) input of one finding through the same library call and checks the
 * behaviour the fix gives. `make asan-test` runs them under ASan + UBSan, where the original bug
 * shows; the crashing inputs themselves are seeds in fuzz/seeds/. Files are written under /tmp. */
#include "test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"
#include "model/config.h"
#include "plan/gpu_catalog.h"
#include "plan/plan.h"
#include "tokenizer/tokenizer.h"
#include "io/file_util.h"
#include "train/llama2c.h"
#include "train/metrics.h"
#include "train/options.h"

/* A fresh folder /tmp/fl_fuzz_XXXXXX with files {name, bytes, length, ...}; path in dir. */
typedef struct {
    const char *name;
    const char *bytes;
    size_t len; /* 0: strlen(bytes) */
} test_file;

static int make_dir(char dir[64], const test_file *files, int n) {
    strcpy(dir, "/tmp/fl_fuzz_XXXXXX");
    if (!mkdtemp(dir)) return -1;
    for (int i = 0; i < n; i++) {
        char path[256];
        snprintf(path, sizeof path, "%s/%s", dir, files[i].name);
        FILE *f = fopen(path, "wb");
        if (!f) return -1;
        fwrite(files[i].bytes, 1, files[i].len ? files[i].len : strlen(files[i].bytes), f);
        fclose(f);
    }
    return 0;
}

static void remove_dir(const char *dir, const test_file *files, int n) {
    char path[256];
    for (int i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i].name);
        unlink(path);
    }
    rmdir(dir);
}

/* A byte-level tokenizer.json (GPT-2 byte-to-unicode map): the vocabulary holds every byte, or
 * only the printable ones (33..126, 161..255 but 173: no control bytes, no space), then "ab" from
 * the one merge "a b"; with an NFC normalizer when asked. Returns the id of "ab". */
static int32_t byte_level_tokenizer(char *json, size_t cap, int all_bytes, int nfc) {
    size_t n = (size_t)snprintf(json, cap, "{\"normalizer\": %s, \"pre_tokenizer\": {\"type\": \"ByteLevel\", "
                                           "\"add_prefix_space\": false, \"use_regex\": true}, \"decoder\": {\"type\": "
                                           "\"ByteLevel\"}, \"model\": {\"type\": \"BPE\", \"vocab\": {",
                                nfc ? "{\"type\": \"NFC\"}" : "null");
    int32_t id = 0;
    unsigned extra = 0;
    for (int b = 0; b < 256; b++) {
        int printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
        unsigned cp = printable ? (unsigned)b : 256 + extra++;
        if (!printable && !all_bytes) continue;
        if (cp == '"' || cp == '\\') n += (size_t)snprintf(json + n, cap - n, "\"\\%c\": %d, ", (char)cp, id++);
        else if (cp < 128) n += (size_t)snprintf(json + n, cap - n, "\"%c\": %d, ", (char)cp, id++);
        else n += (size_t)snprintf(json + n, cap - n, "\"%c%c\": %d, ", 0xC0 | (cp >> 6), 0x80 | (cp & 0x3F), id++);
    }
    snprintf(json + n, cap - n, "\"ab\": %d}, \"merges\": [\"a b\"]}}", id);
    return id;
}

static fl_tokenizer *load_json_tokenizer(const char *json) {
    test_file files[] = {{"tokenizer.json", json, 0}};
    char dir[64];
    if (make_dir(dir, files, 1)) return NULL;
    fl_tokenizer *tok = NULL;
    CHECK_EQ_INT(fl_tokenizer_load(&tok, dir), 0);
    remove_dir(dir, files, 1);
    return tok;
}

/* A byte-level word none of whose bytes is in the vocabulary encodes to no ids (Hugging Face drops
 * them too, e.g. SmolLM2 on 0x16 0x16); the BPE word cache used to store that empty result from a
 * NULL id list (UBSan: offset on a null pointer, memcpy from NULL). */
TEST(bad_input_fuzz_word_with_no_tokens) {
    static char json[8192];
    int32_t ab = byte_level_tokenizer(json, sizeof json, 0, 0);
    fl_tokenizer *tok = load_json_tokenizer(json);
    if (!tok) return;
    for (int offsets = 0; offsets < 2; offsets++)
        for (int pass = 0; pass < 2; pass++) { /* the second pass reads the word cache */
            fl_token_ids ids = {0};
            ids.want_offsets = offsets;
            CHECK_EQ_INT(fl_tokenizer_encode(tok, "\x16\x16", 2, 0, &ids), 0);
            CHECK_EQ_INT(ids.n, 0);
            CHECK_EQ_INT(fl_tokenizer_encode(tok, "ab\x16\x16 ab", 8, 0, &ids), 0);
            CHECK_EQ_INT(ids.n, 2);
            if (ids.n == 2) CHECK(ids.ids[0] == ab && ids.ids[1] == ab);
            fl_token_ids_free(&ids);
        }
    fl_tokenizer_free(tok);
}

static void put_i32(FILE *f, int32_t v) { fwrite(&v, 4, 1, f); }

/* Writes a zero-weight llama2.c checkpoint (dim 8, hidden 16, 1 layer, 2 heads, 1 kv head, tied,
 * seq 4) with vocab n_pieces into DIR/model.bin, and the tokenizer .bin of PIECES (scores -i) into
 * DIR/tok.bin; converts them into DIR/out and returns the converter's status. */
static int convert_llama2c_pieces(const char *dir, const char *const *pieces, int n_pieces) {
    char ckpt[128], tokbin[128], out[128];
    snprintf(ckpt, sizeof ckpt, "%s/model.bin", dir);
    snprintf(tokbin, sizeof tokbin, "%s/tok.bin", dir);
    snprintf(out, sizeof out, "%s/out", dir);
    FILE *f = fopen(ckpt, "wb");
    const int32_t hdr[7] = {8, 16, 1, 2, 1, n_pieces, 4};
    for (int i = 0; i < 7; i++) put_i32(f, hdr[i]);
    size_t n_floats = (size_t)n_pieces * 8 + 8 + 64 + 2 * 4 * 8 + 64 + 8 + 3 * 16 * 8 + 8 + 4 * 2 * 2;
    for (size_t i = 0; i < n_floats; i++) { float z = 0; fwrite(&z, 4, 1, f); }
    fclose(f);
    f = fopen(tokbin, "wb");
    put_i32(f, 16);
    for (int i = 0; i < n_pieces; i++) {
        float score = (float)-i;
        fwrite(&score, 4, 1, f);
        put_i32(f, (int32_t)strlen(pieces[i]));
        fputs(pieces[i], f);
    }
    fclose(f);
    return fl_llama2c_convert(ckpt, tokbin, out, 0);
}

static void remove_llama2c_pieces(const char *dir) {
    const char *names[] = {"out/model.safetensors", "out/config.json", "out/generation_config.json",
                           "out/tokenizer.json", "out/tokenizer_config.json", "out", "model.bin", "tok.bin"};
    for (int i = 0; i < 8; i++) {
        char p[192];
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        if (remove(p)) CHECK_STR_CONTAINS(names[i], "out/"); /* only the folder's files may be absent */
    }
    rmdir(dir);
}

/* A llama2.c tokenizer .bin without the 256 <0xNN> byte tokens used to convert into a tokenizer.json
 * with byte_fallback on, which then failed to load ("token <0x00> is missing"): the converter wrote
 * a folder it could not read. Byte fallback is now on only when all 256 byte tokens are there. */
TEST(bad_input_fuzz_llama2c_tokenizer_without_byte_tokens) {
    char dir[64], out[128];
    CHECK(make_dir(dir, NULL, 0) == 0);
    snprintf(out, sizeof out, "%s/out", dir);
    const char *pieces[8] = {"<unk>", "\n<s>\n", "\n</s>\n", " ", "a", "b", "ab", " ab"};
    CHECK_EQ_INT(convert_llama2c_pieces(dir, pieces, 8), 0);
    fl_tokenizer *tok = NULL;
    CHECK_EQ_INT(fl_tokenizer_load(&tok, out), 0);
    if (tok) {
        fl_token_ids ids = {0};
        CHECK_EQ_INT(fl_tokenizer_encode(tok, "ab ab", 5, 0, &ids), 0);
        CHECK_EQ_INT(ids.n, 2); /* "▁ab" "▁ab" */
        if (ids.n == 2) CHECK(ids.ids[0] == 7 && ids.ids[1] == 7);
        fl_token_ids_free(&ids);
        fl_tokenizer_free(tok);
    }
    remove_llama2c_pieces(dir);
}

/* 256 byte pieces of which one is spelled "<0xc1>" (lower case): the converter read them with
 * sscanf("%2X"), counted all 256 bytes and turned byte fallback on, and the folder it wrote failed
 * to load ("byte_fallback is set but token <0xC1> is missing"; a fuzzer finding). Only "<0xNN>"
 * with upper-case hex digits is a byte token now, as in HF tokenizers; here <0xC1> is missing, so
 * byte fallback stays off and "<0xc1>" is an ordinary piece. */
TEST(bad_input_fuzz_llama2c_lowercase_byte_piece) {
    char dir[64], out[128];
    CHECK(make_dir(dir, NULL, 0) == 0);
    snprintf(out, sizeof out, "%s/out", dir);
    static char names[256][8];
    const char *pieces[259] = {"<unk>", "\n<s>\n", "\n</s>\n"};
    for (int b = 0; b < 256; b++) {
        snprintf(names[b], sizeof names[b], b == 0xC1 ? "<0x%02x>" : "<0x%02X>", b);
        pieces[3 + b] = names[b];
    }
    CHECK_EQ_INT(convert_llama2c_pieces(dir, pieces, 259), 0);
    fl_tokenizer *tok = NULL;
    CHECK_EQ_INT(fl_tokenizer_load(&tok, out), 0);
    if (tok) {
        fl_token_ids ids = {0};
        CHECK_EQ_INT(fl_tokenizer_encode(tok, "\xC3\xA9", 2, 0, &ids), 0); /* no byte fallback: <unk> */
        CHECK(ids.n >= 1 && ids.ids[ids.n - 1] == 0);
        fl_token_ids_free(&ids);
        fl_tokenizer_free(tok);
    }
    remove_llama2c_pieces(dir);
}

/* A catalog whose second row is incomplete: the load fails naming that row, and the first row,
 * already appended, used to stay allocated in a catalog the caller is told is not loaded (a leak
 * under `gpus --catalog`). Now a failed load leaves the catalog empty. */
TEST(bad_input_fuzz_catalog_bad_second_row) {
    test_file files[] = {{"gpus.csv", "name,vram_gb,mem_bw_gbs,bf16_dense_tflops\nCard A,24,900,100\ncard b,48,900100,\n", 0}};
    char dir[64], path[128];
    CHECK(make_dir(dir, files, 1) == 0);
    snprintf(path, sizeof path, "%s/gpus.csv", dir);
    fl_gpu_catalog c;
    CHECK_EQ_INT(fl_gpu_catalog_load(&c, path), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "gpus.csv:3: bf16_dense_tflops");
    CHECK(c.gpus == NULL);
    CHECK_EQ_INT(c.n, 0);
    remove_dir(dir, files, 1);
}

/* NFC reorders combining marks (q U+0307 U+0323 -> q U+0323 U+0307): the offsets used to move with
 * the marks, so a token could start after it ended ([3, 1) here) and the completion mask of a
 * prompt/completion row read them wrongly. Offsets now keep their positions, as Hugging Face's
 * alignments do (its offsets for Qwen2.5 on this text: characters 0, 1, 1, 2, 2 = bytes 0, 1, 1, 3, 3). */
TEST(bad_input_fuzz_nfc_reorder_offsets) {
    static char json[8192];
    byte_level_tokenizer(json, sizeof json, 1, 1);
    fl_tokenizer *tok = load_json_tokenizer(json);
    if (!tok) return;
    fl_token_ids ids = {0};
    ids.want_offsets = 1;
    const char text[] = "q\xCC\x87\xCC\xA3";
    CHECK_EQ_INT(fl_tokenizer_encode(tok, text, 5, 0, &ids), 0);
    CHECK_EQ_INT(ids.n, 5); /* q, then the bytes of U+0323 and of U+0307, no merges */
    const uint32_t want_start[5] = {0, 1, 1, 3, 3};
    for (size_t i = 0; i < ids.n && i < 5; i++) {
        CHECK_EQ_INT(ids.offsets[2 * i], want_start[i]);
        CHECK(ids.offsets[2 * i] <= ids.offsets[2 * i + 1] && ids.offsets[2 * i + 1] <= 5);
    }
    fl_token_ids_free(&ids);
    fl_tokenizer_free(tok);
}

/* Every size within its own limit, but together more parameters than int64 counts hold: the
 * parameter counts of `plan` and `bench` overflowed (UBSan: signed overflow in
 * fl_config_total_params). config.json is now rejected past 10^15 parameters. */
TEST(bad_input_fuzz_config_parameter_overflow) {
    test_file files[] = {{"config.json",
                          "{\"architectures\": [\"LlamaForCausalLM\"], \"vocab_size\": 100000000, \"hidden_size\": 100000000, "
                          "\"intermediate_size\": 100000000, \"num_hidden_layers\": 100000000, \"num_attention_heads\": 1, "
                          "\"head_dim\": 2}",
                          0}};
    char dir[64], path[128];
    CHECK(make_dir(dir, files, 1) == 0);
    snprintf(path, sizeof path, "%s/config.json", dir);
    fl_model_config cfg;
    CHECK_EQ_INT(fl_config_load(&cfg, path), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "more than 10^15 parameters");
    remove_dir(dir, files, 1);
    /* the largest preset stays far below */
    CHECK(fl_config_preset(&cfg, "qwen2.5-7b") == 0 && fl_config_total_params(&cfg) < 10000000000LL);
}

/* `plan --records`: a record's batch 1e300 was cast to int (undefined; UBSan float-cast-overflow),
 * and batch x seq = 2^40 tokens made the step's kernel count overflow int, so the predicted tok/s
 * came out negative. Now plan reads records with the board's checked reader (a batch that is not an
 * integer in range is an error naming the file, the line and the field), and the kernel count
 * saturates (its launch overhead stays in double). */
TEST(bad_input_fuzz_plan_records_absurd_sizes) {
    test_file files[] = {
        {"absurd.jsonl",
         "{\"tool\":\"fastlora\",\"model\":\"smollm2-135m\",\"device\":\"NVIDIA H100 80GB HBM3\",\"backend\":\"cuda\","
         "\"weights\":\"smollm2-135m\",\"dtype\":\"bf16\",\"date\":\"2026-11-30\",\"batch\":1e300,\"seq\":512,\"rank\":16,\"train_tok_s\":1000.0}\n",
         0},
        {"huge.jsonl",
         "{\"tool\":\"fastlora\",\"model\":\"qwen2.5-7b\",\"device\":\"NVIDIA H100 80GB HBM3\",\"backend\":\"cuda\","
         "\"weights\":\"qwen2.5-7b\",\"dtype\":\"bf16\",\"date\":\"2026-11-30\",\"batch\":1048576,\"seq\":1048576,\"rank\":16,\"train_tok_s\":1000.0}\n",
         0}};
    char dir[64], path[128];
    CHECK(make_dir(dir, files, 2) == 0);
    fl_gpu_catalog cat;
    if (fl_gpu_catalog_load(&cat, "data/gpus.csv")) {
        remove_dir(dir, files, 2);
        SKIP("data/gpus.csv not found (run from the project root)");
    }
    fl_plan_calibration cal;
    snprintf(path, sizeof path, "%s/absurd.jsonl", dir);
    CHECK_EQ_INT(fl_plan_calibration_load(&cal, path, &cat), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "absurd.jsonl");
    CHECK_STR_CONTAINS(fl_last_error(), "batch");
    fl_plan_calibration_free(&cal);
    snprintf(path, sizeof path, "%s/huge.jsonl", dir);
    CHECK_EQ_INT(fl_plan_calibration_load(&cal, path, &cat), 0);
    CHECK_EQ_INT(cal.n, 1);
    if (cal.n == 1) {
        const fl_plan_record *r = &cal.recs[0];
        CHECK_MSG(r->predicted_tok_s > 0, "predicted %g tok/s", r->predicted_tok_s);
        char how[128];
        fl_plan_device d = fl_plan_device_for(r->gpu, FL_TARGET_CUDA, &cal, how, sizeof how);
        fl_plan_step st = fl_plan_step_time(&r->cfg, &r->lc, r->batch, r->seq, 2, 0, &d);
        CHECK_MSG(st.kernels > 0 && st.overhead_s > 0, "%d kernels, %g s overhead", st.kernels, st.overhead_s);
    }
    fl_plan_calibration_free(&cal);
    fl_gpu_catalog_free(&cat);
    remove_dir(dir, files, 2);
}

/* `train --config`: an integer option of -2^63 went through llabs(), which is undefined there and
 * returned it negative, so the range check let it pass (and it became 0). */
TEST(bad_input_fuzz_options_int64_min) {
    test_file files[] = {{"run.json", "{\"seed\": -9223372036854775808}", 0}};
    char dir[64], path[128];
    CHECK(make_dir(dir, files, 1) == 0);
    snprintf(path, sizeof path, "%s/run.json", dir);
    fl_train_options o;
    fl_train_options_default(&o);
    CHECK_EQ_INT(fl_train_options_load_json(&o, path), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "seed: expected an integer");
    fl_train_options_free(&o);
    remove_dir(dir, files, 1);
}

/* `train --config` with "warmup-ratio": -0.0 (in range [0, 1]): train_config.json recorded it as
 * -0, which JSON reads back as the integer 0, so the record of a run changed when read and written
 * again (a fuzzer finding). Negative zero is now written 0. */
TEST(bad_input_fuzz_options_negative_zero_roundtrip) {
    test_file files[] = {{"run.json", "{\"warmup-ratio\": -0.0, \"lr\": -0e0, \"out\": \"y\"}", 0}};
    char dir[64], path[128], first[128], second[128];
    CHECK(make_dir(dir, files, 1) == 0);
    snprintf(path, sizeof path, "%s/run.json", dir);
    snprintf(first, sizeof first, "%s/first.json", dir);
    snprintf(second, sizeof second, "%s/second.json", dir);
    fl_train_options o, again;
    fl_train_options_default(&o);
    fl_train_options_default(&again);
    CHECK_EQ_INT(fl_train_options_load_json(&o, path), 0);
    CHECK_EQ_INT(fl_train_options_save_json(&o, first), 0);
    CHECK_EQ_INT(fl_train_options_load_json(&again, first), 0);
    CHECK_EQ_INT(fl_train_options_save_json(&again, second), 0);
    char *a = NULL, *b = NULL;
    size_t len_a = 0, len_b = 0;
    CHECK_EQ_INT(fl_file_read_all(first, FL_FILE_CONFIG, &a, &len_a), 0);
    CHECK_EQ_INT(fl_file_read_all(second, FL_FILE_CONFIG, &b, &len_b), 0);
    CHECK(a && b && len_a == len_b && !memcmp(a, b, len_a));
    CHECK(a && strstr(a, "\"warmup-ratio\": 0,") != NULL);
    free(a);
    free(b);
    unlink(first);
    unlink(second);
    fl_train_options_free(&o);
    fl_train_options_free(&again);
    remove_dir(dir, files, 1);
}

/* A llama2.c header whose vocab_size is INT32_MIN: its negation (the untied-classifier flag) was a
 * signed overflow (UBSan). Now it is a bad header like any other. */
TEST(bad_input_fuzz_llama2c_vocab_int_min) {
    const int32_t hdr[7] = {8, 16, 1, 2, 1, INT32_MIN, 4};
    test_file files[] = {{"model.bin", (const char *)hdr, sizeof hdr}};
    char dir[64], path[128], out[128];
    CHECK(make_dir(dir, files, 1) == 0);
    snprintf(path, sizeof path, "%s/model.bin", dir);
    snprintf(out, sizeof out, "%s/out", dir);
    CHECK_EQ_INT(fl_llama2c_convert(path, NULL, out, 0), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "is not a llama2.c v0 checkpoint");
    rmdir(out);
    remove_dir(dir, files, 1);
}

/* A llama2.c checkpoint with a NaN weight converted, and then no load accepted the folder (a
 * fuzzer finding, once loads refused non-finite tensors): the conversion says so, one line naming
 * the float. A NaN in the RoPE tables llama2.c keeps after rms_final (not converted) is no error.
 * dim 8, hidden 16, 1 layer, 2 heads, 1 kv head, vocab 8 (tied), seq 4: 680 floats, the RoPE
 * tables the last 16. */
TEST(bad_input_fuzz_llama2c_nan_weight) {
    enum { N_FLOATS = 680 };
    struct { int32_t hdr[7]; float w[N_FLOATS]; } ck = {{8, 16, 1, 2, 1, 8, 4}, {0}};
    for (int i = 0; i < N_FLOATS; i++) ck.w[i] = 0.01f * (float)(i % 7);
    for (int rope = 0; rope < 2; rope++) {
        ck.w[5] = rope ? 0.0f : NAN;
        ck.w[N_FLOATS - 3] = rope ? NAN : 0.0f;
        test_file files[] = {{"model.bin", (const char *)&ck, sizeof ck}};
        char dir[64], path[128], out[128];
        CHECK(make_dir(dir, files, 1) == 0);
        snprintf(path, sizeof path, "%s/model.bin", dir);
        snprintf(out, sizeof out, "%s/out", dir);
        if (!rope) {
            CHECK_EQ_INT(fl_llama2c_convert(path, NULL, out, 0), FL_ERR_INPUT);
            CHECK_STR_CONTAINS(fl_last_error(), "weight float 5 (byte 48) is NaN");
            CHECK(access(out, F_OK) != 0);
        } else {
            CHECK_MSG(fl_llama2c_convert(path, NULL, out, 0) == 0, "%s", fl_last_error());
            char cmd[200];
            snprintf(cmd, sizeof cmd, "rm -rf %s", out);
            CHECK_EQ_INT(system(cmd), 0);
        }
        remove_dir(dir, files, 1);
    }
}

/* metrics.jsonl with losses ~1e17 that differ by one ulp (a corrupted file on --resume, or a run
 * that diverged): the loss curve's y ticks advanced by y += 0.2, which no longer moves y there, so
 * drawing loss.svg never ended. The ticks now go by index. (alarm: a hang fails the suite.) */
TEST(bad_input_fuzz_metrics_svg_huge_losses) {
    test_file files[] = {{"metrics.jsonl", "{\"step\": 1, \"loss\": 100000000000000000}\n"
                                            "{\"step\": 2, \"loss\": 100000000000000016.0}\n", 0}};
    char dir[64], svg[128];
    CHECK(make_dir(dir, files, 1) == 0);
    snprintf(svg, sizeof svg, "%s/loss.svg", dir);
    fl_metrics mt;
    CHECK_EQ_INT(fl_metrics_open(&mt, dir, 10), 0);
    CHECK_EQ_INT(mt.n_train, 2);
    alarm(60);
    CHECK_EQ_INT(fl_metrics_write_svg(&mt, svg, "loss"), 0);
    alarm(0);
    fl_metrics_close(&mt);
    unlink(svg);
    remove_dir(dir, files, 1);
}
