/* test_tokenizer_bad_input.c — malformed or unsupported tokenizer files give one clear line naming
 * the file and the field, and nothing leaks or crashes (`make asan-test` runs these under ASan).
 * Each test writes a small folder under /tmp. */
#include "test.h"

#include "tokenizer/tokenizer.h"
#include "common/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A folder with files {name, content, name, content, ..., NULL}; returns its path (static). */
static const char *make_dir(const char *const *files) {
    static char dir[64];
    strcpy(dir, "/tmp/fl_tok_XXXXXX");
    if (!mkdtemp(dir)) return NULL;
    for (size_t i = 0; files[i]; i += 2) {
        char path[256];
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        char *slash = strrchr(path, '/');
        if (slash > path + strlen(dir)) { *slash = 0; mkdir(path, 0755); *slash = '/'; }
        FILE *f = fopen(path, "wb");
        if (!f) return NULL;
        fputs(files[i + 1], f);
        fclose(f);
    }
    return dir;
}

static void remove_dir(const char *dir, const char *const *files) {
    char path[256];
    for (size_t i = 0; files[i]; i += 2) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        unlink(path);
        char *slash = strrchr(path, '/');
        *slash = 0;
        if (strcmp(path, dir)) rmdir(path);
    }
    rmdir(dir);
}

/* Loading the folder must fail with a message containing every string of `want`. */
static void expect_load_error(const char *const *files, const char *want1, const char *want2) {
    const char *dir = make_dir(files);
    CHECK(dir != NULL);
    if (!dir) return;
    fl_tokenizer *tok = (fl_tokenizer *)1;
    int rc = fl_tokenizer_load(&tok, dir);
    CHECK_EQ_INT(rc, FL_ERR_INPUT);
    CHECK(tok == NULL);
    CHECK_STR_CONTAINS(fl_last_error(), want1);
    if (want2) CHECK_STR_CONTAINS(fl_last_error(), want2);
    CHECK(strchr(fl_last_error(), '\n') == NULL);
    if (!rc) fl_tokenizer_free(tok);
    remove_dir(dir, files);
}

#define TINY_MODEL "\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2}, \"merges\": [\"a b\"]}"

TEST(tokenizer_bad_input_missing_dir) {
    fl_tokenizer *tok;
    CHECK_EQ_INT(fl_tokenizer_load(&tok, "/nonexistent/model"), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "/nonexistent/model: not a directory");
}

TEST(tokenizer_bad_input_no_tokenizer_files) {
    const char *files[] = {"config.json", "{}", NULL};
    expect_load_error(files, "no tokenizer.json, vocab.json + merges.txt, or tokenizer.model", NULL);
}

TEST(tokenizer_bad_input_malformed_json) {
    const char *files[] = {"tokenizer.json", "{\"model\": {\"type\": \"BPE\",\n \"vocab\": {\"a\": 0,", NULL};
    expect_load_error(files, "tokenizer.json:2:", "invalid JSON");
}

TEST(tokenizer_bad_input_unknown_model_type) {
    const char *files[] = {"tokenizer.json", "{\"model\": {\"type\": \"Unigram\", \"vocab\": []}}", NULL};
    expect_load_error(files, "tokenizer.json: model.type: 'Unigram' is not supported", NULL);
}

TEST(tokenizer_bad_input_vocab_merge_mismatch) {
    const char *files[] = {"tokenizer.json",
                           "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1}, \"merges\": [\"a b\"]}}", NULL};
    expect_load_error(files, "tokenizer.json: model.merges[0]: merge 'a b': merged token", "vocab/merges mismatch");
}

TEST(tokenizer_bad_input_merges_txt_mismatch) {
    const char *files[] = {"vocab.json", "{\"a\": 0, \"b\": 1, \"ab\": 2}", "merges.txt", "#version: 0.2\na b\nab c\n",
                           "tokenizer_config.json", "{\"tokenizer_class\": \"Qwen2Tokenizer\"}", NULL};
    expect_load_error(files, "merges.txt: line 3: merge 'ab c': right token", "vocab/merges mismatch");
}

TEST(tokenizer_bad_input_vocab_without_merges) {
    const char *files[] = {"vocab.json", "{\"a\": 0}", NULL};
    expect_load_error(files, "merges.txt: missing", NULL);
}

TEST(tokenizer_bad_input_unknown_tokenizer_class) {
    const char *files[] = {"vocab.json", "{\"a\": 0}", "merges.txt", "", "tokenizer_config.json",
                           "{\"tokenizer_class\": \"BertTokenizer\"}", NULL};
    expect_load_error(files, "tokenizer_config.json: tokenizer_class: 'BertTokenizer' is not known", NULL);
}

TEST(tokenizer_bad_input_bad_vocab_id) {
    const char *files[] = {"tokenizer.json", "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": -3}, \"merges\": []}}", NULL};
    expect_load_error(files, "tokenizer.json: model.vocab: 'a'", NULL);
}

TEST(tokenizer_bad_input_unsupported_pre_tokenizer) {
    const char *files[] = {"tokenizer.json", "{\"pre_tokenizer\": {\"type\": \"Metaspace\"}, " TINY_MODEL "}", NULL};
    expect_load_error(files, "tokenizer.json: pre_tokenizer.type: 'Metaspace' is not supported", NULL);
}

TEST(tokenizer_bad_input_bad_regex) {
    const char *files[] = {"tokenizer.json",
                           "{\"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"Regex\": \"(\\\\p{L}\"}, "
                           "\"behavior\": \"Isolated\", \"invert\": false}, " TINY_MODEL "}", NULL};
    expect_load_error(files, "tokenizer.json: pre_tokenizer: regex does not compile", NULL);
}

TEST(tokenizer_bad_input_added_token_without_content) {
    const char *files[] = {"tokenizer.json", "{\"added_tokens\": [{\"id\": 3, \"special\": true}], " TINY_MODEL "}", NULL};
    expect_load_error(files, "tokenizer.json: added_tokens[0]: content", NULL);
}

TEST(tokenizer_bad_input_malformed_config) {
    const char *files[] = {"tokenizer.json", "{" TINY_MODEL "}", "tokenizer_config.json", "{\"eos_token\": ", NULL};
    expect_load_error(files, "tokenizer_config.json:1:", "invalid JSON");
}

TEST(tokenizer_bad_input_unknown_eos_token) {
    const char *files[] = {"tokenizer.json", "{" TINY_MODEL "}", "tokenizer_config.json", "{\"eos_token\": \"</nope>\"}", NULL};
    expect_load_error(files, "tokenizer_config.json: eos_token: '</nope>' is not a token", NULL);
}

TEST(tokenizer_bad_input_tiktoken_bad_line) {
    const char *files[] = {"original/tokenizer.model", "IQ== 0\nIg== 1\n!!notbase64 2\n", "tokenizer_config.json",
                           "{\"bos_token\": \"<|begin_of_text|>\"}", NULL};
    expect_load_error(files, "original/tokenizer.model: line 3: expected `base64 rank`", NULL);
}

TEST(tokenizer_bad_input_sentencepiece_protobuf) {
    const char *files[] = {"tokenizer.model", "\n\x0e\n\x05<unk>\x15\x00\x00", NULL};
    expect_load_error(files, "tokenizer.model: not a tiktoken file", NULL);
}

/* A valid tiny tokenizer, then bad calls on it. */
TEST(tokenizer_bad_input_encode_decode) {
    const char *files[] = {"tokenizer.json", "{" TINY_MODEL "}", NULL};
    const char *dir = make_dir(files);
    fl_tokenizer *tok;
    CHECK_EQ_INT(fl_tokenizer_load(&tok, dir), 0);
    remove_dir(dir, files);
    if (!tok) return;
    fl_token_ids ids = {0};
    CHECK_EQ_INT(fl_tokenizer_encode(tok, "abab", 4, 0, &ids), 0);
    CHECK_EQ_INT(ids.n, 2);
    CHECK_EQ_INT(ids.ids[0], 2);
    CHECK_EQ_INT(fl_tokenizer_encode(tok, "a\xC3(b", 4, 0, &ids), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "invalid UTF-8 at byte 1");
    int32_t bad[] = {0, 99};
    char *text;
    size_t len;
    CHECK_EQ_INT(fl_tokenizer_decode(tok, bad, 2, 0, &text, &len), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "id 99 at position 1 is not in the vocabulary");
    fl_chat_message m = {"user", "hi"};
    fl_chat_rendered r;
    CHECK_EQ_INT(fl_tokenizer_chat_render(tok, FL_CHAT_AUTO, &m, 1, 1, &r), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "chat_template: none");
    CHECK_STR_CONTAINS(fl_last_error(), "built-in chat formats: chatml");
    fl_token_ids_free(&ids);
    fl_tokenizer_free(tok);
}

TEST(tokenizer_bad_input_unknown_chat_template) {
    const char *files[] = {"tokenizer.json", "{" TINY_MODEL "}", "tokenizer_config.json",
                           "{\"chat_template\": \"{% for m in messages %}[INST] {{ m.content }} [/INST]{% endfor %}\"}", NULL};
    const char *dir = make_dir(files);
    fl_tokenizer *tok;
    CHECK_EQ_INT(fl_tokenizer_load(&tok, dir), 0);
    remove_dir(dir, files);
    if (!tok) return;
    fl_chat_format f;
    CHECK_EQ_INT(fl_tokenizer_chat_format(tok, &f), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "chat_template: not a known format");
    CHECK_STR_CONTAINS(fl_last_error(), "zephyr (TinyLlama-Chat), llama3");
    fl_chat_message m[] = {{"tool", "x"}};
    fl_chat_rendered r;
    CHECK_EQ_INT(fl_tokenizer_chat_render(tok, FL_CHAT_CHATML, m, 1, 0, &r), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "messages[0].role: 'tool'");
    fl_tokenizer_free(tok);
}

TEST(tokenizer_bad_input_llama3_without_template) {
    const char *shared = fl_test_shared_dir();
    if (!shared) SKIP("../shared not found");
    char dir[512];
    snprintf(dir, sizeof dir, "%s/models/Llama-3.2-1B", shared);
    fl_tokenizer *tok;
    CHECK_EQ_INT(fl_tokenizer_load(&tok, dir), 0);
    if (!tok) return;
    fl_chat_format f;
    CHECK_EQ_INT(fl_tokenizer_chat_format(tok, &f), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "Llama-3.2-1B: chat_template: none");
    fl_tokenizer_free(tok);
}
