/* test_io_bad_input.c — input files are read through one reader (io/file_util.h): a FIFO, a device
 * or a directory is refused before any read (never a hang, never an endless stream), a file over
 * its kind's size limit is refused, and every command that takes a file says so in one line with
 * exit status 2. Then hostile content in the files read by gpus, plan and board: catalogs, bench
 * records, reference boards, plan --data. These run again under ASan/UBSan (`make asan-test` runs
 * the tests of files whose name says bad_input).
 *
 * Command-line cases run the real binary ($FASTLORA_BIN) under `timeout`, so a hang fails the test
 * (exit 124) instead of stopping the suite; in-process FIFO reads run under alarm(). */
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/records.h"
#include "bench/reference.h"
#include "common/error.h"
#include "io/file_util.h"
#include "plan/gpu_catalog.h"
#include "plan/plan.h"
#include "test.h"
#include "train/data.h"

/* ---- helpers ------------------------------------------------------------------------------------ */

/* A fresh folder under /tmp for one test; removed by rm_tree. */
static const char *make_tmp(char *buf, size_t cap) {
    snprintf(buf, cap, "/tmp/fastlora-io-XXXXXX");
    return mkdtemp(buf);
}

static void rm_tree(const char *dir) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

static char *path_in(const char *dir, const char *name) {
    static char buf[4][1024];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

static void write_bytes(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    if (!f) { fl_test_fail(__FILE__, __LINE__, "cannot create %s", path); return; }
    fwrite(data, 1, len, f);
    fclose(f);
}
static void write_text(const char *path, const char *text) { write_bytes(path, text, strlen(text)); }

/* A sparse file of `size` bytes (no disk space used). */
static void write_sparse(const char *path, uint64_t size) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0 && ftruncate(fd, (off_t)size) == 0);
    if (fd >= 0) close(fd);
}

static void copy_file(const char *from, const char *to) {
    FILE *f = fopen(from, "rb");
    if (!f) { fl_test_fail(__FILE__, __LINE__, "cannot read %s", from); return; }
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    write_bytes(to, buf, n);
}

/* Exit status 2, not a timeout, and exactly one line that contains `needle` and `needle2`. */
static void expect_one_line(const char *what, int rc, const char *out, const char *needle, const char *needle2) {
    CHECK_MSG(rc == 2, "%s: exit %d (124: timed out), expected 2; output: %s", what, rc, out);
    CHECK_MSG(strstr(out, needle) != NULL, "%s: output lacks '%s': %s", what, needle, out);
    if (needle2) CHECK_MSG(strstr(out, needle2) != NULL, "%s: output lacks '%s': %s", what, needle2, out);
    const char *nl = strchr(out, '\n');
    CHECK_MSG(nl && nl[1] == 0, "%s: expected one line, got: %s", what, out);
}

static void on_alarm(int sig) {
    (void)sig;
    static const char msg[] = "FAIL: reading a FIFO blocked (test_io_bad_input.c)\n";
    if (write(1, msg, sizeof msg - 1) < 0) {}
    _exit(1);
}

/* ---- the reader ----------------------------------------------------------------------------------- */

TEST(io_bad_input_reader_refuses_fifo_device_directory) {
    char dir[64];
    if (!make_tmp(dir, sizeof dir)) SKIP("mkdtemp failed");
    char *fifo = path_in(dir, "fifo");
    CHECK_EQ_INT(mkfifo(fifo, 0600), 0);
    signal(SIGALRM, on_alarm);
    alarm(20);   /* a blocking open or read of the FIFO ends the run instead of hanging it */
    struct { const char *path, *why; } cases[] = {
        {"/dev/zero", "a character device, not a regular file"},
        {fifo, "a FIFO, not a regular file"},
        {dir, "Is a directory"},
        {path_in(dir, "missing"), "No such file or directory"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char expect[600];
        snprintf(expect, sizeof expect, "cannot read %s: %s", cases[i].path, cases[i].why);
        char *data = NULL;
        size_t len = 0;
        CHECK_EQ_INT(fl_file_read_all(cases[i].path, FL_FILE_WEIGHTS, &data, &len), FL_ERR_INPUT);
        CHECK_STR_CONTAINS(fl_last_error(), expect);
        CHECK(data == NULL);
        json_t *j = (json_t *)1;
        CHECK_EQ_INT(fl_file_load_json(cases[i].path, FL_FILE_CONFIG, 0, &j), FL_ERR_INPUT);
        CHECK_STR_CONTAINS(fl_last_error(), expect);
        CHECK(j == NULL);
        FILE *f = NULL;
        CHECK_EQ_INT(fl_file_fopen_read(cases[i].path, FL_FILE_DATASET, &f), FL_ERR_INPUT);
        CHECK(f == NULL);
        CHECK_EQ_INT(fl_file_check_read(cases[i].path, FL_FILE_TABLE), FL_ERR_INPUT);
        CHECK_STR_CONTAINS(fl_last_error(), expect);
    }
    /* the readers of this area, on the same inputs */
    fl_gpu_catalog cat;
    CHECK_EQ_INT(fl_gpu_catalog_load(&cat, fifo), FL_ERR_INPUT);
    fl_gpu_catalog_free(&cat);
    fl_bench_record_list list = {0};
    CHECK_EQ_INT(fl_bench_records_read("/dev/zero", &list, NULL), FL_ERR_INPUT);
    fl_reference_board ref;
    CHECK_EQ_INT(fl_reference_board_load(&ref, fifo), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "a FIFO, not a regular file");
    fl_dataset ds = {0};
    fl_data_options opt = fl_data_options_default();
    CHECK_EQ_INT(fl_dataset_load(&ds, fifo, NULL, &opt), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "a FIFO, not a regular file");
    CHECK_EQ_INT(fl_dataset_load(&ds, "/dev/zero", NULL, &opt), FL_ERR_INPUT);
    fl_dataset_free(&ds);
    alarm(0);
    signal(SIGALRM, SIG_DFL);
    rm_tree(dir);
}

TEST(io_bad_input_reader_size_limits) {
    char dir[64];
    if (!make_tmp(dir, sizeof dir)) SKIP("mkdtemp failed");
    char *big = path_in(dir, "big");
    uint64_t limit = fl_file_limit(FL_FILE_TABLE);
    CHECK_EQ_INT(limit, 16u << 20);
    write_sparse(big, limit + 1);
    char *data = NULL;
    size_t len = 0;
    CHECK_EQ_INT(fl_file_read_all(big, FL_FILE_TABLE, &data, &len), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "big: 16.0 MiB is over the 16.0 MiB limit for a catalog or records file");
    write_sparse(big, limit);   /* exactly the limit is fine */
    CHECK_EQ_INT(fl_file_read_all(big, FL_FILE_TABLE, &data, &len), 0);
    CHECK_EQ_INT(len, limit);
    CHECK(data && data[len] == 0);
    free(data);
    /* each kind has its documented limit; weights have none */
    CHECK_EQ_INT(fl_file_limit(FL_FILE_CONFIG), 16u << 20);
    CHECK_EQ_INT(fl_file_limit(FL_FILE_TOKENIZER), 256u << 20);
    CHECK_EQ_INT(fl_file_limit(FL_FILE_TEXT), 1u << 30);
    CHECK_EQ_INT(fl_file_limit(FL_FILE_DATASET), (uint64_t)64 << 30);
    CHECK(fl_file_limit(FL_FILE_WEIGHTS) == UINT64_MAX);
    write_sparse(big, fl_file_limit(FL_FILE_DATASET) + 1);
    CHECK_EQ_INT(fl_file_check_read(big, FL_FILE_DATASET), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "64.0 GiB is over the 64.0 GiB limit for a dataset");
    rm_tree(dir);
}

TEST(io_bad_input_json_errors_name_the_file) {
    char dir[64];
    if (!make_tmp(dir, sizeof dir)) SKIP("mkdtemp failed");
    char *p = path_in(dir, "c.json");
    json_t *j = NULL;
    write_text(p, "\xEF\xBB\xBF{\"a\": 1}\r\n");   /* BOM and CRLF, as Windows editors write */
    CHECK_EQ_INT(fl_file_load_json(p, FL_FILE_CONFIG, 0, &j), 0);
    CHECK(json_integer_value(json_object_get(j, "a")) == 1);
    json_decref(j);
    const char *bad[] = {"", "{\"a\": ", "\x7f" "ELF\x01\x02", "{\"a\": NaN}", "{\"a\": 1e999}", "[1,]"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_text(p, bad[i]);
        CHECK_EQ_INT(fl_file_load_json(p, FL_FILE_CONFIG, 0, &j), FL_ERR_INPUT);
        CHECK_STR_CONTAINS(fl_last_error(), p);
        CHECK_STR_CONTAINS(fl_last_error(), "invalid JSON");
    }
    write_text(p, "{\"a\": 1, \"a\": 2}");
    CHECK_EQ_INT(fl_file_load_json(p, FL_FILE_CONFIG, JSON_REJECT_DUPLICATES, &j), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "duplicate object key");
    if (geteuid() != 0) {   /* root reads anything */
        write_text(p, "{}");
        chmod(p, 0);
        CHECK_EQ_INT(fl_file_load_json(p, FL_FILE_CONFIG, 0, &j), FL_ERR_INPUT);
        char expect[600];
        snprintf(expect, sizeof expect, "cannot read %s: Permission denied", p);
        CHECK_STR_CONTAINS(fl_last_error(), expect);
    }
    rm_tree(dir);
}

/* transformers writes model_max_length = int(1e30) into tokenizer_config.json: integers past int64
 * read as the doubles Python's float() gives; the same digits inside strings stay as they are */
TEST(io_json_integers_past_int64_read_as_reals) {
    char dir[64];
    if (!make_tmp(dir, sizeof dir)) SKIP("mkdtemp failed");
    char *p = path_in(dir, "tokenizer_config.json");
    json_t *j = NULL;
    write_text(p, "{\"model_max_length\": 1000000000000000019884624838656, \"s\": \"1000000000000000019884624838656\",\n"
                  " \"neg\": [-123456789012345678901234, 7], \"e\": \"\\\"99999999999999999999\", \"small\": 123456789012345678,"
                  " \"f\": 1.5e3}");
    CHECK_EQ_INT(fl_file_load_json(p, FL_FILE_TOKENIZER, 0, &j), 0);
    CHECK(json_is_real(json_object_get(j, "model_max_length")));
    CHECK_CLOSE(json_real_value(json_object_get(j, "model_max_length")), 1e30, 0, 1e-15);
    CHECK(!strcmp(json_string_value(json_object_get(j, "s")), "1000000000000000019884624838656"));
    CHECK_CLOSE(json_real_value(json_array_get(json_object_get(j, "neg"), 0)), -1.23456789012345678901234e23, 0, 1e-15);
    CHECK_EQ_INT(json_integer_value(json_array_get(json_object_get(j, "neg"), 1)), 7);
    CHECK(!strcmp(json_string_value(json_object_get(j, "e")), "\"99999999999999999999"));
    CHECK(json_is_integer(json_object_get(j, "small")));
    CHECK(json_integer_value(json_object_get(j, "small")) == 123456789012345678LL);
    CHECK_CLOSE(json_real_value(json_object_get(j, "f")), 1500, 0, 0);
    json_decref(j);
    rm_tree(dir);
}

/* ---- the GPU catalog ------------------------------------------------------------------------------ */

TEST(gpus_catalog_bad_input_header_errors) {
    char dir[64];
    if (!make_tmp(dir, sizeof dir)) SKIP("mkdtemp failed");
    char *p = path_in(dir, "wide.csv");
    /* header on line 3 (after two comment lines) with 65 columns: the error names line 3 (it used to
     * read the header after freeing the table) */
    char text[4096] = "# a comment\n# another\nname";
    for (int i = 1; i < 65; i++) strcat(text, ",vram_gb");
    strcat(text, "\nx,1\n");
    write_text(p, text);
    fl_gpu_catalog c;
    CHECK_EQ_INT(fl_gpu_catalog_load(&c, p), FL_ERR_INPUT);
    char expect[600];
    snprintf(expect, sizeof expect, "%s:3: header: expected at most 64 columns, got 65", p);
    CHECK_STR_CONTAINS(fl_last_error(), expect);
    fl_gpu_catalog_free(&c);
    write_text(p, "\n# no name column\nvram_gb,mem_bw_gbs\n24,900\n");
    CHECK_EQ_INT(fl_gpu_catalog_load(&c, p), FL_ERR_INPUT);
    snprintf(expect, sizeof expect, "%s:3: header: expected a 'name' column", p);
    CHECK_STR_CONTAINS(fl_last_error(), expect);
    fl_gpu_catalog_free(&c);
    rm_tree(dir);
}

TEST(gpus_catalog_bad_input_hostile_cells) {
    char dir[64];
    if (!make_tmp(dir, sizeof dir)) SKIP("mkdtemp failed");
    char *p = path_in(dir, "c.csv");
    fl_gpu_catalog c;
    /* a UTF-8 BOM and CRLF line ends (a spreadsheet's export) are fine */
    write_text(p, "\xEF\xBB\xBFname,vram_gb,mem_bw_gbs,bf16_dense_tflops\r\nCard X,24,900,100\r\n");
    CHECK_EQ_INT(fl_gpu_catalog_load(&c, p), 0);
    CHECK_EQ_INT(c.n, 1);
    if (c.n == 1) CHECK(!strcmp(c.gpus[0].name, "Card X") && c.gpus[0].vram_gb == 24);
    fl_gpu_catalog_free(&c);
    struct { const char *text, *expect; } cases[] = {
        {"", ":1: expected a header line"},
        {"name,vram_gb,mem_bw_gbs,bf16_dense_tflops\nX,nan,900,100\n", ":2: vram_gb: expected a number > 0, got 'nan'"},
        {"name,vram_gb,mem_bw_gbs,bf16_dense_tflops\nX,24,inf,100\n", ":2: mem_bw_gbs: expected a number > 0, got 'inf'"},
        {"name,vram_gb,mem_bw_gbs,bf16_dense_tflops\nX,1e999,900,100\n", ":2: vram_gb: expected a number > 0"},
        {"name,vram_gb,mem_bw_gbs,bf16_dense_tflops\nX,1e300,900,100\n", ":2: vram_gb: expected a number <= 1e+09"},
        {"name,vram_gb,mem_bw_gbs,bf16_dense_tflops\nX,24,900,0x40\n", ":2: bf16_dense_tflops: expected a number"},
        {"name,vram_gb,name\nX,24,Y\n", ":1: header: column 'name' appears twice"},
        {"name,vram_gb\n\x01\x02\x03\xff,24\n", ":2: name: expected UTF-8 text without control characters"},
        {"name,vram_gb\nX,24\0\n", "not a text file (contains NUL bytes)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = strlen(cases[i].text);
        if (strstr(cases[i].expect, "NUL")) n += 2;   /* the text holds a NUL byte */
        write_bytes(p, cases[i].text, n);
        CHECK_EQ_INT(fl_gpu_catalog_load(&c, p), FL_ERR_INPUT);
        CHECK_STR_CONTAINS(fl_last_error(), cases[i].expect);
        fl_gpu_catalog_free(&c);
    }
    rm_tree(dir);
}

/* ---- bench records and reference boards ----------------------------------------------------------- */

#define GOOD_RECORD "{\"tool\":\"fastlora\",\"weights\":\"HuggingFaceTB/SmolLM2-135M\",\"model\":\"smollm2-135m\"," \
    "\"device\":\"NVIDIA L4\",\"device_kind\":\"cuda\",\"dtype\":\"bfloat16\",\"batch\":4,\"seq\":512,\"rank\":16," \
    "\"train_tok_s\":%s,\"date\":\"2026-01-02T00:00:00Z\"}"

TEST(board_records_bad_input_hostile_lines) {
    char dir[64];
    if (!make_tmp(dir, sizeof dir)) SKIP("mkdtemp failed");
    char *p = path_in(dir, "r.jsonl");
    char text[2048];
    /* BOM, CRLF, a blank line: read */
    snprintf(text, sizeof text, "\xEF\xBB\xBF" GOOD_RECORD "\r\n\r\n" GOOD_RECORD "\n", "9000", "9100");
    write_text(p, text);
    fl_bench_record_list list = {0};
    CHECK_EQ_INT(fl_bench_records_read(p, &list, NULL), 0);
    CHECK_EQ_INT(list.n, 2);
    if (list.n == 2) CHECK_EQ_INT(list.items[1].line, 3);
    fl_bench_record_list_free(&list);
    struct { const char *tok_s, *expect; } cases[] = {
        {"NaN", ":1: record: expected one JSON object per line"},
        {"1e999", ":1: record: expected one JSON object per line"},
        {"1e300", ":1: train_tok_s: expected a number <= 1e15, got 1"},
        {"-1", ":1: train_tok_s: expected a number > 0, got -1"},
        {"9000,\"tool\":\"x\"", ":1: record: expected one JSON object per line"},   /* a duplicate key */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(text, sizeof text, GOOD_RECORD "\n", cases[i].tok_s);
        write_text(p, text);
        CHECK_EQ_INT(fl_bench_records_read(p, &list, NULL), FL_ERR_INPUT);
        CHECK_STR_CONTAINS(fl_last_error(), cases[i].expect);
        fl_bench_record_list_free(&list);
    }
    write_bytes(p, "\x00\x01\x02garbage\xff\n", 12);
    CHECK_EQ_INT(fl_bench_records_read(p, &list, NULL), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), ":1: record: expected one JSON object per line");
    fl_bench_record_list_free(&list);
    /* an empty file, or only blank lines: no records is an error (board and plan --records) */
    write_text(p, "\n\r\n");
    CHECK_EQ_INT(fl_bench_records_read(p, &list, NULL), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "r.jsonl: no records");
    /* binary garbage: every bad line counted, the first 100 shown and one line for the rest */
    char *junk = malloc(150 * 4);
    for (int i = 0; i < 150; i++) memcpy(junk + 4 * i, "\xff\x00z\n", 4);
    write_bytes(p, junk, 150 * 4);
    free(junk);
    char *errs = NULL;
    size_t errs_len = 0;
    FILE *err = open_memstream(&errs, &errs_len);
    CHECK_EQ_INT(fl_bench_records_read(p, &list, err), FL_ERR_INPUT);
    fclose(err);
    int n_lines = 0;
    for (const char *c = errs; c && *c; c++) n_lines += *c == '\n';
    CHECK_EQ_INT(n_lines, 101);
    CHECK_STR_CONTAINS(errs, "r.jsonl: 50 more bad lines not shown");
    CHECK_STR_CONTAINS(fl_last_error(), "(and 149 more bad records)");
    free(errs);
    /* the targets of a record: an array of names, joined */
    snprintf(text, sizeof text, GOOD_RECORD "\n", "1,\"targets\":[\"q_proj\",\"v_proj\"]");
    write_text(p, text);
    CHECK_EQ_INT(fl_bench_records_read(p, &list, NULL), 0);
    if (list.n == 1) CHECK(!strcmp(list.items[0].targets, "q_proj,v_proj"));
    fl_bench_record_list_free(&list);
    snprintf(text, sizeof text, GOOD_RECORD "\n", "1,\"targets\":[1]");
    write_text(p, text);
    CHECK_EQ_INT(fl_bench_records_read(p, &list, NULL), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), ":1: targets: expected a string or an array of projection names");
    fl_bench_record_list_free(&list);
    rm_tree(dir);
}

TEST(board_reference_bad_input_hostile_rows) {
    char dir[64];
    if (!make_tmp(dir, sizeof dir)) SKIP("mkdtemp failed");
    char *p = path_in(dir, "ref.csv");
    fl_reference_board ref;
    write_text(p, "\xEF\xBB\xBFmodel,gpu,train_tok_s\r\nQwen/Qwen2.5-7B,NVIDIA H200,9000\r\n");
    CHECK_EQ_INT(fl_reference_board_load(&ref, p), 0);
    CHECK_EQ_INT(ref.n, 1);
    fl_reference_board_free(&ref);
    struct { const char *text, *expect; } cases[] = {
        {"", "empty file"},
        {"model,gpu,train_tok_s\nQ,H,nan\n", ":2: train_tok_s: expected a number > 0, got 'nan'"},
        {"model,gpu,train_tok_s\nQ,H,1e300\n", ":2: train_tok_s: expected a number > 0 and <= 1e15, got '1e300'"},
        {"model,gpu,train_tok_s\nQ,H,12,13\n", ":2: row: expected 3 comma-separated fields"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_text(p, cases[i].text);
        CHECK_EQ_INT(fl_reference_board_load(&ref, p), FL_ERR_INPUT);
        CHECK_STR_CONTAINS(fl_last_error(), cases[i].expect);
    }
    rm_tree(dir);
}

/* ---- plan --data, --records, --board -------------------------------------------------------------- */

/* A model folder that plan can read (config only) with the small test tokenizer. */
static void plan_model(const char *dir) {
    mkdir(dir, 0755);
    copy_file("tests/fixtures/train/tok/tokenizer.json", path_in(dir, "tokenizer.json"));
    copy_file("tests/fixtures/train/tok/tokenizer_config.json", path_in(dir, "tokenizer_config.json"));
    write_text(path_in(dir, "config.json"),
               "{\"architectures\":[\"LlamaForCausalLM\"],\"model_type\":\"llama\",\"vocab_size\":512,"
               "\"hidden_size\":64,\"intermediate_size\":128,\"num_hidden_layers\":2,\"num_attention_heads\":4,"
               "\"num_key_value_heads\":2,\"max_position_embeddings\":256,\"rms_norm_eps\":1e-5,"
               "\"rope_theta\":10000.0,\"tie_word_embeddings\":true,\"torch_dtype\":\"float32\","
               "\"bos_token_id\":0,\"eos_token_id\":2}");
}

/* The "tokens" figure of `plan --json`, or -1. */
static double plan_tokens(const char *out) {
    const char *at = strstr(out, "\"tokens\":");
    return at ? atof(at + 9) : -1;
}

TEST(plan_cli_bad_input_data) {
    if (!fl_test_bin()) SKIP("FASTLORA_BIN not set");
    char dir[64];
    if (!make_tmp(dir, sizeof dir)) SKIP("mkdtemp failed");
    char model[600], out[16384];
    snprintf(model, sizeof model, "%s/model", dir);
    plan_model(model);
    /* a folder without data files, an empty file: errors (a folder used to count 0 tokens and
     * succeed; a folder of JSONL files is read as train reads it) */
    int rc = fl_test_run_cli(out, sizeof out, "plan --preset smollm2-135m --data %s", dir);
    expect_one_line("plan --data DIR", rc, out, dir, "a folder without .jsonl or .json files");
    write_text(path_in(dir, "empty.jsonl"), "");
    rc = fl_test_run_cli(out, sizeof out, "plan --preset smollm2-135m --data %s", path_in(dir, "empty.jsonl"));
    expect_one_line("plan --data empty", rc, out, "empty.jsonl: empty file", NULL);
    /* a tokens file: its token count, not its bytes / 4 */
    fl_dataset ds = {0};
    int32_t ids[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    fl_dataset_add(&ds, ids, NULL, 7);
    fl_dataset_add(&ds, ids, NULL, 3);
    CHECK_EQ_INT(fl_tokens_file_write(path_in(dir, "d.tok"), &ds), 0);
    fl_dataset_free(&ds);
    rc = fl_test_run_cli(out, sizeof out, "plan --preset smollm2-135m --json --data %s", path_in(dir, "d.tok"));
    CHECK_EQ_INT(rc, 0);
    CHECK_CLOSE(plan_tokens(out), 10, 0, 0);
    /* JSONL counted as train reads it, with the model's tokenizer: "hello" is h,e->"he",l,l,o =
     * 4 tokens + EOS; "the" = "the" is not a merge without the leading space: t,he = 2 + EOS */
    write_text(path_in(dir, "d.jsonl"), "{\"text\": \"hello\"}\n{\"text\": \"the\"}\n");
    rc = fl_test_run_cli(out, sizeof out, "plan --model %s --json --data %s", model, path_in(dir, "d.jsonl"));
    CHECK_EQ_INT(rc, 0);
    CHECK_CLOSE(plan_tokens(out), 8, 0, 0);
    /* --fields as train takes it: {"body"} read as {"text"} gives the same 8 tokens; without it the
     * records have no field train knows, and a bad --format or --fields is one line */
    write_text(path_in(dir, "f.jsonl"), "{\"body\": \"hello\"}\n{\"body\": \"the\"}\n");
    rc = fl_test_run_cli(out, sizeof out, "plan --model %s --json --data %s --fields text=body", model, path_in(dir, "f.jsonl"));
    CHECK_EQ_INT(rc, 0);
    CHECK_CLOSE(plan_tokens(out), 8, 0, 0);
    rc = fl_test_run_cli(out, sizeof out, "plan --model %s --data %s", model, path_in(dir, "f.jsonl"));
    CHECK_EQ_INT(rc, 2);
    rc = fl_test_run_cli(out, sizeof out, "plan --model %s --data %s --format textt", model, path_in(dir, "f.jsonl"));
    expect_one_line("plan --format", rc, out, "textt", NULL);
    /* every record bad: nothing to train on */
    write_text(path_in(dir, "bad.jsonl"), "{\"txt\": 1}\nnot json\n");
    rc = fl_test_run_cli(out, sizeof out, "plan --model %s --data %s", model, path_in(dir, "bad.jsonl"));
    CHECK_EQ_INT(rc, 2);
    CHECK_STR_CONTAINS(out, "bad.jsonl: no usable documents (2 records, 2 bad)");
    /* a corrupt tokens file is an error, not an estimate */
    write_bytes(path_in(dir, "bad.tok"), FL_TOKENS_MAGIC "\0\x05\0\0\0\0\0\0\0", 16);
    rc = fl_test_run_cli(out, sizeof out, "plan --preset smollm2-135m --data %s", path_in(dir, "bad.tok"));
    expect_one_line("plan --data truncated tokens", rc, out, "bad.tok: truncated header", NULL);
    /* --board reads the board with the board's checks (a bad figure used to be read as 0) */
    rc = fl_test_run_cli(out, sizeof out, "plan --preset smollm2-135m --board tests/fixtures/board/bad-reference.csv");
    expect_one_line("plan --board", rc, out, "bad-reference.csv:2: train_tok_s: expected a number > 0, got 'lots'", NULL);
    rm_tree(dir);
}

TEST(plan_gpus_cli_bad_input_numbers) {
    if (!fl_test_bin()) SKIP("FASTLORA_BIN not set");
    char out[16384];
    /* no 300-digit durations: counts and epochs have a ceiling, NaN and infinity are refused */
    const char *bad[] = {"--tokens 1e300", "--tokens nan", "--epochs 1e9", "--epochs nan", "--alpha inf",
                         "--dropout nan", "--tokens 0"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = fl_test_run_cli(out, sizeof out, "plan --preset smollm2-135m %s", bad[i]);
        expect_one_line(bad[i], rc, out, "plan: --", NULL);
    }
    const char *gpus_bad[] = {"--min-vram nan", "--min-vram inf", "--min-vram -1"};
    for (size_t i = 0; i < sizeof gpus_bad / sizeof gpus_bad[0]; i++) {
        int rc = fl_test_run_cli(out, sizeof out, "gpus %s", gpus_bad[i]);
        expect_one_line(gpus_bad[i], rc, out, "fastlora gpus: --min-vram: expected a number >= 0 and <= 1000000000", NULL);
    }
    char b[96];
    fl_plan_format_duration(1e300, 1, b, sizeof b);
    CHECK(strlen(b) < 40);
}

/* ---- every command's file options: FIFO, device, folder, oversize ---------------------------------- */

/* A model folder for train/bench/generate/merge/tokenize: the tiny llama fixture + test tokenizer. */
static void full_model(const char *dir) {
    mkdir(dir, 0755);
    copy_file("tests/fixtures/hf/llama_gqa/model/config.json", path_in(dir, "config.json"));
    copy_file("tests/fixtures/hf/llama_gqa/model/model.safetensors", path_in(dir, "model.safetensors"));
    copy_file("tests/fixtures/train/tok/tokenizer.json", path_in(dir, "tokenizer.json"));
    copy_file("tests/fixtures/train/tok/tokenizer_config.json", path_in(dir, "tokenizer_config.json"));
}

/* A command line from a template: X (a word) -> the hostile file, M (a word) -> the model folder,
 * D/ -> the test's folder. */
static void expand(char *out, size_t cap, const char *tmpl, const char *x, const char *model, const char *dir) {
    out[0] = 0;
    for (const char *s = tmpl; *s; s++) {
        int word = s[1] == ' ' || !s[1];
        const char *sub = *s == 'X' && word ? x : *s == 'M' && word ? model : *s == 'D' && s[1] == '/' ? dir : NULL;
        size_t n = strlen(out);
        if (sub) snprintf(out + n, cap - n, "%s", sub);
        else snprintf(out + n, cap - n, "%c", *s);
    }
}

TEST(cli_bad_input_special_files_every_command) {
    if (!fl_test_bin()) SKIP("FASTLORA_BIN not set");
    char dir[64];
    if (!make_tmp(dir, sizeof dir)) SKIP("mkdtemp failed");
    char fifo[600], model[600], out[16384];
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    snprintf(model, sizeof model, "%s/model", dir);
    CHECK_EQ_INT(mkfifo(fifo, 0600), 0);
    full_model(model);
    write_text(path_in(dir, "ok.jsonl"), "{\"text\": \"abc\"}\n");
    /* each command line with X where the hostile file goes */
    const char *lines[] = {
        "gpus --catalog X",
        "plan --preset smollm2-135m --catalog X",
        "plan --preset smollm2-135m --records X",
        "plan --preset smollm2-135m --data X",
        "plan --preset smollm2-135m --board X",
        "board X",
        "board --reference --reference-file X tests/fixtures/board/mixed.jsonl",
        "train --model M --data X --out D/run --device cpu --max-steps 1",
        "train --model M --data D/ok.jsonl --eval-data X --out D/run2 --device cpu --max-steps 1",
        "train --config X --model M --out D/run3",
        "tokenize --model M --file X",
        "tokenize --model M --chat X",
        "convert-llama2c --checkpoint X --tokenizer X --out D/conv",
    };
    const char *files[] = {"/dev/zero", fifo, dir};
    for (size_t f = 0; f < 3; f++)
        for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
            char args[2048];
            /* a folder as --data / --eval-data is a folder of data files (docs/TRAINING.md; tested in
             * test_train_data_sharegpt.c) */
            if (f == 2 && (strstr(lines[i], "--data X") || strstr(lines[i], "--eval-data X"))) continue;
            expand(args, sizeof args, lines[i], files[f], model, dir);
            int rc = fl_test_run_cli(out, sizeof out, "%s", args);
            expect_one_line(args, rc, out, "cannot read", f == 2 ? "Is a directory" : "not a regular file");
        }
    /* the files inside a model or adapter folder: config.json, model.safetensors, tokenizer.json,
     * adapter_config.json replaced by a FIFO */
    struct { const char *file, *args, *expect; } inside[] = {
        {"config.json", "bench --model M --steps 1 --warmup 0 --batch 1 --seq 4 --device cpu", "a FIFO, not a regular file"},
        {"model.safetensors", "bench --model M --steps 1 --warmup 0 --batch 1 --seq 4 --device cpu", "a FIFO, not a regular file"},
        {"tokenizer.json", "tokenize --model M --text hi", "tokenizer.json: a FIFO, not a regular file"},
        {"config.json", "generate --model M --prompt hi --max-tokens 1 --device cpu", "a FIFO, not a regular file"},
        {"model.safetensors", "merge --model M --adapter tests/fixtures/hf/llama_gqa/adapter --out D/merged", "a FIFO, not a regular file"},
    };
    for (size_t i = 0; i < sizeof inside / sizeof inside[0]; i++) {
        char *p = path_in(model, inside[i].file);
        char saved[700];
        snprintf(saved, sizeof saved, "%s.saved", p);
        CHECK_EQ_INT(rename(p, saved), 0);
        CHECK_EQ_INT(mkfifo(p, 0600), 0);
        char args[2048];
        expand(args, sizeof args, inside[i].args, NULL, model, dir);
        int rc = fl_test_run_cli(out, sizeof out, "%s", args);
        expect_one_line(inside[i].file, rc, out, inside[i].expect, NULL);
        unlink(p);
        CHECK_EQ_INT(rename(saved, p), 0);
    }
    /* an adapter folder whose adapter_config.json is a FIFO */
    char adir[600];
    snprintf(adir, sizeof adir, "%s/adapter", dir);
    mkdir(adir, 0755);
    copy_file("tests/fixtures/hf/llama_gqa/adapter/adapter_model.safetensors", path_in(adir, "adapter_model.safetensors"));
    CHECK_EQ_INT(mkfifo(path_in(adir, "adapter_config.json"), 0600), 0);
    int rc = fl_test_run_cli(out, sizeof out, "generate --model %s --adapter %s --prompt hi --max-tokens 1 --device cpu", model, adir);
    expect_one_line("generate --adapter (FIFO adapter_config.json)", rc, out, "adapter_config.json: a FIFO", NULL);
    rm_tree(dir);
}

TEST(cli_bad_input_oversize_files) {
    if (!fl_test_bin()) SKIP("FASTLORA_BIN not set");
    char dir[64];
    if (!make_tmp(dir, sizeof dir)) SKIP("mkdtemp failed");
    char model[600], out[16384];
    snprintf(model, sizeof model, "%s/model", dir);
    full_model(model);
    /* sparse files one byte over each kind's limit: refused before anything is read */
    char *table = path_in(dir, "big.csv");
    write_sparse(table, fl_file_limit(FL_FILE_TABLE) + 1);
    const char *table_lines[] = {"gpus --catalog", "plan --preset smollm2-135m --catalog",
                                 "plan --preset smollm2-135m --records", "plan --preset smollm2-135m --board", "board"};
    for (size_t i = 0; i < sizeof table_lines / sizeof table_lines[0]; i++) {
        int rc = fl_test_run_cli(out, sizeof out, "%s %s", table_lines[i], table);
        expect_one_line(table_lines[i], rc, out, "big.csv: 16.0 MiB is over the 16.0 MiB limit", NULL);
    }
    char text_path[600];
    snprintf(text_path, sizeof text_path, "%s", path_in(dir, "big.txt"));
    write_sparse(text_path, fl_file_limit(FL_FILE_TEXT) + 1);
    int rc = fl_test_run_cli(out, sizeof out, "tokenize --model %s --file %s", model, text_path);
    expect_one_line("tokenize --file (oversize)", rc, out, "big.txt: 1.0 GiB is over the 1.0 GiB limit", NULL);
    char data[600];
    snprintf(data, sizeof data, "%s", path_in(dir, "big.jsonl"));
    write_sparse(data, fl_file_limit(FL_FILE_DATASET) + 1);
    rc = fl_test_run_cli(out, sizeof out, "train --model %s --data %s --out %s/run --device cpu --max-steps 1", model, data, dir);
    expect_one_line("train --data (oversize)", rc, out, "big.jsonl: 64.0 GiB is over the 64.0 GiB limit", NULL);
    rc = fl_test_run_cli(out, sizeof out, "plan --preset smollm2-135m --data %s", data);
    expect_one_line("plan --data (oversize)", rc, out, "big.jsonl: 64.0 GiB is over the 64.0 GiB limit", NULL);
    unlink(data);
    write_sparse(path_in(model, "config.json"), fl_file_limit(FL_FILE_CONFIG) + 1);
    rc = fl_test_run_cli(out, sizeof out, "bench --model %s --steps 1 --warmup 0 --batch 1 --seq 4 --device cpu", model);
    expect_one_line("bench --model (oversize config.json)", rc, out, "config.json: 16.0 MiB is over the 16.0 MiB limit", NULL);
    write_sparse(path_in(model, "tokenizer.json"), fl_file_limit(FL_FILE_TOKENIZER) + 1);
    rc = fl_test_run_cli(out, sizeof out, "tokenize --model %s --text hi", model);
    CHECK_EQ_INT(rc, 2);
    CHECK_STR_CONTAINS(out, "tokenizer.json: 256.0 MiB is over the 256.0 MiB limit for a tokenizer file");
    rm_tree(dir);
}

/* Line-by-line readers of stdin: endless input without a newline (/dev/zero) is one line of error
 * once a line passes its bound (generate --chat: 4 MiB a turn; tokenize --jsonl -: 64 MiB a line),
 * where getline grew its buffer until memory ran out (or, under a memory limit, tokenize exited 0
 * having printed nothing). */
TEST(cli_bad_input_stdin_without_newlines) {
    if (!fl_test_bin()) SKIP("FASTLORA_BIN not set");
    char dir[64];
    if (!make_tmp(dir, sizeof dir)) SKIP("mkdtemp failed");
    char model[600], log[600], cmd[2048];
    snprintf(model, sizeof model, "%s/model", dir);
    snprintf(log, sizeof log, "%s/log", dir);
    full_model(model);
    const char *lines[][2] = {
        {"generate --model %s --chat --device cpu --max-tokens 1", "fastlora generate: stdin: a turn longer than 4 MiB"},
        {"tokenize --model %s --jsonl -", "fastlora tokenize: standard input: line 1 is longer than 64 MiB"},
    };
    for (size_t i = 0; i < 2; i++) {
        char args[1024];
        snprintf(args, sizeof args, lines[i][0], model);
        snprintf(cmd, sizeof cmd, "timeout -k 5 60 %s %s < /dev/zero > %s 2>&1", fl_test_bin(), args, log);
        int rc = system(cmd);
        char *out = NULL;
        size_t len = 0;
        fl_file_read_all(log, FL_FILE_TEXT, &out, &len);
        expect_one_line(args, WIFEXITED(rc) ? WEXITSTATUS(rc) : 128, out ? out : "", lines[i][1], NULL);
        free(out);
    }
    rm_tree(dir);
}
