/* test_tokenizer_cli.c — `fastlora tokenize` as scripts use it: the JSONL batch mode (one tokenizer
 * load, many strings) and --chat, against the HF fixtures of tests/fixtures/tokenizer/ (written by
 * tools/make_tokenizer_fixtures.py): every fixture string, decode case and conversation goes
 * through one `--jsonl` run and each output line must equal HF's ids / text; the fixture's lines
 * with lone surrogates (malformed JSON) give an {"error"} line in their place and exit status 2.
 * Needs FASTLORA_BIN (set by `make test`) and ../shared; SKIPs otherwise. */
#include "test.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *bin_or_null(void) {
    const char *bin = getenv("FASTLORA_BIN");
    return bin && access(bin, X_OK) == 0 && fl_test_shared_dir() ? bin : NULL;
}

static json_t *load_line(const char *line) { return json_loads(line, JSON_ALLOW_NUL, NULL); }

/* Appends to `in` the request for a fixture row and to `want` the expected answer (NULL: an error). */
static void add_case(FILE *in, json_t *want, json_t *row) {
    json_t *req = NULL, *exp = NULL;
    if (json_object_get(row, "bad_json")) {
        fprintf(in, "%s\n", json_string_value(json_object_get(row, "bad_json")));
        json_array_append_new(want, json_null());
        return;
    }
    if (json_object_get(row, "messages")) {
        req = json_pack("{sOsO}", "messages", json_object_get(row, "messages"), "add_generation_prompt",
                        json_object_get(row, "add_generation_prompt"));
        exp = json_pack("{sOsO}", "text", json_object_get(row, "text"), "ids", json_object_get(row, "ids"));
    } else if (json_object_get(row, "text")) {
        req = json_pack("{sO}", "text", json_object_get(row, "text"));
        exp = json_pack("{sO}", "ids", json_object_get(row, "ids"));
    } else {
        req = json_pack("{sOsb}", "ids", json_object_get(row, "decode_ids"), "skip_special_tokens",
                        json_is_true(json_object_get(row, "skip_special")));
        exp = json_pack("{sO}", "text", json_object_get(row, "decoded"));
    }
    char *s = json_dumps(req, JSON_COMPACT);
    fprintf(in, "%s\n", s);
    free(s);
    json_decref(req);
    json_array_append_new(want, exp);
}

static void add_fixture(FILE *in, json_t *want, const char *path) {
    FILE *f = fopen(path, "r");
    CHECK_MSG(f != NULL, "cannot open %s", path);
    if (!f) return;
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0) {
        json_t *row = load_line(line);
        CHECK(row != NULL);
        if (row) add_case(in, want, row);
        json_decref(row);
    }
    free(line);
    fclose(f);
}

/* Runs `cmd`, returns its exit status. */
static int run(const char *cmd) {
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* Compares the output lines of a --jsonl run with `want` (NULL entries: an {"error"} line). */
static void check_output(const char *out_path, json_t *want, const char *model) {
    FILE *f = fopen(out_path, "r");
    CHECK(f != NULL);
    if (!f) return;
    char *line = NULL;
    size_t cap = 0, n = 0, bad = 0;
    while (getline(&line, &cap, f) > 0) {
        json_t *got = load_line(line), *exp = json_array_get(want, n++);
        int ok = got && (json_is_null(exp) ? json_is_string(json_object_get(got, "error")) : json_is_object(exp));
        const char *key;
        json_t *value;
        if (ok && !json_is_null(exp))
            json_object_foreach(exp, key, value) ok = ok && json_equal(json_object_get(got, key), value); // chat adds spans
        if (!ok && bad++ < 5) printf("    %s: output line %zu: %.200s", model, n, line);
        json_decref(got);
    }
    free(line);
    fclose(f);
    CHECK_EQ_INT(n, json_array_size(want));
    CHECK_EQ_INT(bad, 0);
    printf("    %s: %zu lines through one --jsonl run, %zu differ from HF\n", model, n, bad);
}

static void check_model(const char *model) {
    const char *bin = bin_or_null();
    if (!bin) SKIP("FASTLORA_BIN or ../shared not set");
    char in_path[] = "/tmp/fl_tok_cli_XXXXXX", out_path[64], fixture[256], cmd[1024];
    int fd = mkstemp(in_path);
    CHECK(fd >= 0);
    if (fd < 0) return;
    FILE *in = fdopen(fd, "w");
    json_t *want = json_array();
    snprintf(fixture, sizeof fixture, "tests/fixtures/tokenizer/%s.jsonl", model);
    add_fixture(in, want, fixture);
    fprintf(in, "\n"); // a blank line gives no output line
    snprintf(fixture, sizeof fixture, "tests/fixtures/tokenizer/%s.chat.jsonl", model);
    add_fixture(in, want, fixture);
    fclose(in);
    snprintf(out_path, sizeof out_path, "%s.out", in_path);
    // stdin ("-") for one model, a file for the others
    int from_stdin = !strcmp(model, "SmolLM2-135M-Instruct");
    snprintf(cmd, sizeof cmd, "%s tokenize --model %s/models/%s%s --jsonl %s%s > %s 2> %s.err", bin, fl_test_shared_dir(),
             model, strstr(model, "Llama-3") ? " --chat-format llama3" : "", from_stdin ? "- < " : "", in_path, out_path,
             out_path);
    CHECK_EQ_INT(run(cmd), 2); // the fixture's malformed lines fail, the others go on
    check_output(out_path, want, model);
    char err_path[80], err[512] = "";
    snprintf(err_path, sizeof err_path, "%s.err", out_path);
    FILE *e = fopen(err_path, "r");
    if (e) { if (!fgets(err, sizeof err, e)) err[0] = 0; fclose(e); }
    CHECK_STR_CONTAINS(err, "lines failed (first: line ");
    CHECK_STR_CONTAINS(err, "malformed JSON");
    unlink(in_path);
    unlink(out_path);
    unlink(err_path);
    json_decref(want);
}

TEST(tokenizer_cli_jsonl_smollm2) { check_model("SmolLM2-135M-Instruct"); }
TEST(tokenizer_cli_jsonl_qwen25) { check_model("Qwen2.5-0.5B"); }
TEST(tokenizer_cli_jsonl_tinyllama) { check_model("TinyLlama-1.1B-Chat-v1.0"); }
TEST(tokenizer_cli_jsonl_llama3) { check_model("Llama-3.2-1B"); }

/* --chat with a U+0000 in a content (the file is read with NUL allowed): HF's rendering and ids. */
TEST(tokenizer_cli_chat_with_nul) {
    const char *bin = bin_or_null();
    if (!bin) SKIP("FASTLORA_BIN or ../shared not set");
    FILE *f = fopen("tests/fixtures/tokenizer/Qwen2.5-0.5B.chat.jsonl", "r");
    CHECK(f != NULL);
    if (!f) return;
    char *line = NULL;
    size_t cap = 0;
    json_t *row = NULL;
    while (!row && getline(&line, &cap, f) > 0) { // the conversation holding a NUL
        json_t *r = load_line(line);
        if (r && strstr(line, "\\u0000")) row = r;
        else json_decref(r);
    }
    free(line);
    fclose(f);
    CHECK(row != NULL);
    if (!row) return;
    char in_path[] = "/tmp/fl_tok_chat_XXXXXX", cmd[1024];
    int fd = mkstemp(in_path);
    json_dumpfd(row, fd, JSON_COMPACT);
    close(fd);
    snprintf(cmd, sizeof cmd, "%s tokenize --model %s/models/Qwen2.5-0.5B --chat %s%s > %s.out", bin, fl_test_shared_dir(),
             in_path, json_is_true(json_object_get(row, "add_generation_prompt")) ? " --generation-prompt" : "", in_path);
    CHECK_EQ_INT(run(cmd), 0);
    char out_path[64];
    snprintf(out_path, sizeof out_path, "%s.out", in_path);
    json_t *got = json_load_file(out_path, JSON_ALLOW_NUL, NULL);
    CHECK(got != NULL);
    CHECK(json_equal(json_object_get(got, "text"), json_object_get(row, "text")));
    CHECK(json_equal(json_object_get(got, "ids"), json_object_get(row, "ids")));
    json_decref(got);
    json_decref(row);
    unlink(in_path);
    unlink(out_path);
}

/* The batch mode is documented in the command's help. */
TEST(tokenizer_cli_help_names_jsonl) {
    const char *bin = bin_or_null();
    if (!bin) SKIP("FASTLORA_BIN or ../shared not set");
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s tokenize --help | grep -q -- '--jsonl IN'", bin);
    CHECK_EQ_INT(run(cmd), 0);
}
