/* test_tokenizer_bad_input.c — malformed or unsupported tokenizer files give one clear line naming
 * the file and the field, and nothing leaks or crashes (`make asan-test` runs these under ASan).
 * Each test writes a small folder under /tmp. */
#include "test.h"
#include "tokenizer/chat_template.h"

#include "tokenizer/tokenizer.h"
#include "common/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pwd.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
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
    expect_load_error(files, "no tokenizer files: looked for tokenizer.json, vocab.json + merges.txt, tokenizer.model "
                             "and original/tokenizer.model in this folder", NULL);
}

/* An instruct folder with configs only (its tokenizer lives in the base model's folder, as
 * ../shared/models/Qwen2.5-0.5B-Instruct): the error names the folder, what was looked for, and why. */
TEST(tokenizer_bad_input_config_only_folder) {
    const char *files[] = {"config.json", "{}", "tokenizer_config.json", "{\"eos_token\": \"<|im_end|>\"}", NULL};
    expect_load_error(files, "in this folder (tokenizer_config.json alone has no vocabulary: copy the tokenizer files of "
                             "the base model into it)", "looked for tokenizer.json, vocab.json + merges.txt");
    const char *shared = fl_test_shared_dir();
    if (!shared) return;
    char dir[512];
    snprintf(dir, sizeof dir, "%s/models/Qwen2.5-0.5B-Instruct", shared);
    fl_tokenizer *tok;
    CHECK_EQ_INT(fl_tokenizer_load(&tok, dir), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "Qwen2.5-0.5B-Instruct: no tokenizer files: looked for tokenizer.json");
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
    const char *files[] = {"tokenizer.json", "{\"pre_tokenizer\": {\"type\": \"Whitespace\"}, " TINY_MODEL "}", NULL};
    expect_load_error(files, "tokenizer.json: pre_tokenizer.type: 'Whitespace' is not supported", NULL);
}

/* Metaspace is a rewrite of each segment before the splits: after a split step, beside a normalizer
 * that rewrites too, or with an unknown scheme it is refused, not approximated. */
TEST(tokenizer_bad_input_metaspace) {
#define META(extra) "{\"type\": \"Metaspace\", \"replacement\": \"\xE2\x96\x81\"" extra "}"
    const char *after_split[] = {"tokenizer.json", "{\"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": "
                                 "[{\"type\": \"Digits\"}, " META("") "]}, " TINY_MODEL "}", NULL};
    expect_load_error(after_split, "Metaspace after another pre-tokenizer is not supported", NULL);
    const char *with_prepend[] = {"tokenizer.json", "{\"normalizer\": {\"type\": \"Prepend\", \"prepend\": \"x\"}, "
                                  "\"pre_tokenizer\": " META("") ", " TINY_MODEL "}", NULL};
    expect_load_error(with_prepend, "Metaspace beside ByteLevel or a Prepend/Replace normalizer", NULL);
    const char *scheme[] = {"tokenizer.json", "{\"pre_tokenizer\": " META(", \"prepend_scheme\": \"sometimes\"") ", "
                            TINY_MODEL "}", NULL};
    expect_load_error(scheme, "pre_tokenizer.prepend_scheme: 'sometimes' is not one of always, first, never", NULL);
    const char *no_rep[] = {"tokenizer.json", "{\"pre_tokenizer\": {\"type\": \"Metaspace\"}, " TINY_MODEL "}", NULL};
    expect_load_error(no_rep, "pre_tokenizer.replacement: expected a non-empty string", NULL);
#undef META
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
    fl_chat_message m = {.role = "user", .content = "hi"};
    fl_chat_rendered r;
    CHECK_EQ_INT(fl_tokenizer_chat_render(tok, FL_CHAT_AUTO, &m, 1, 1, &r), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "chat_template: none");
    CHECK_STR_CONTAINS(fl_last_error(), "built-in chat formats: chatml");
    fl_token_ids_free(&ids);
    fl_tokenizer_free(tok);
}

/* A template outside the three formats fastlora once recognized ([INST] here) used to be refused
 * ("chat_template: not a known format"); the Jinja engine now renders it, for the trainer's data
 * and generate --chat alike. A template that does not parse is one line with its line and column.
 * The struct API still takes system/user/assistant messages only. */
TEST(tokenizer_bad_input_any_chat_template_or_one_line) {
    const char *files[] = {"tokenizer.json", "{" TINY_MODEL "}", "tokenizer_config.json",
                           "{\"chat_template\": \"{% for m in messages %}[INST] {{ m.content }} [/INST]{% endfor %}\"}", NULL};
    const char *dir = make_dir(files);
    fl_tokenizer *tok;
    CHECK_EQ_INT(fl_tokenizer_load(&tok, dir), 0);
    remove_dir(dir, files);
    if (!tok) return;
    fl_chat_message m[] = {{.role = "user", .content = "ab"}, {.role = "assistant", .content = "ba"}};
    fl_chat_rendered r;
    CHECK_EQ_INT(fl_tokenizer_chat_render(tok, FL_CHAT_AUTO, m, 2, 0, &r), 0);
    CHECK_MSG(r.len == strlen("[INST] ab [/INST][INST] ba [/INST]") && !memcmp(r.text, "[INST] ab [/INST][INST] ba [/INST]", r.len),
              "rendered '%s'", r.text);
    fl_chat_rendered_free(&r);
    fl_chat_template *ct = NULL;
    CHECK_EQ_INT(fl_chat_template_for(&ct, tok, "{% if x %}\n{{ x }\n", strlen("{% if x %}\n{{ x }\n")), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "chat template: line ");
    CHECK_STR_CONTAINS(fl_last_error(), " column ");
    CHECK(!strchr(fl_last_error(), '\n'));
    fl_chat_message bad[] = {{.role = "tool", .content = "x"}};
    CHECK_EQ_INT(fl_tokenizer_chat_render(tok, FL_CHAT_CHATML, bad, 1, 0, &r), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "messages[0].role: 'tool'");
    fl_tokenizer_free(tok);
}

/* The tokenizer of ../shared/models/<name> (the caller SKIPs when ../shared is absent). */
static fl_tokenizer *load_shared_model(const char *name) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s/models/%s", fl_test_shared_dir(), name);
    fl_tokenizer *tok = NULL;
    CHECK_MSG(fl_tokenizer_load(&tok, dir) == 0, "load %s: %s", dir, fl_last_error());
    return tok;
}

TEST(tokenizer_bad_input_llama3_without_template) {
    if (!fl_test_shared_dir()) SKIP("../shared not found");
    fl_tokenizer *tok = load_shared_model("Llama-3.2-1B");
    if (!tok) return;
    fl_chat_format f;
    CHECK_EQ_INT(fl_tokenizer_chat_format(tok, &f), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "Llama-3.2-1B: chat_template: none");
    fl_tokenizer_free(tok);
}

/* A word that encodes to no ids into an empty list (SmolLM2 has no token for byte 0x16; HF
 * tokenizers gives [] for "\x16\x16" and [81] for "a\x16\x16"): no NULL arithmetic or memcpy from
 * NULL on the miss nor on the word-cache hit (UBSan in `make asan-test`). */
TEST(tokenizer_bad_input_word_without_tokens) {
    if (!fl_test_shared_dir()) SKIP("../shared not found");
    fl_tokenizer *tok = load_shared_model("SmolLM2-135M-Instruct");
    if (!tok) return;
    for (int round = 0; round < 2; round++) { // round 1 hits the word cache
        fl_token_ids ids = {0};
        CHECK_EQ_INT(fl_tokenizer_encode(tok, "\x16\x16", 2, FL_ENCODE_ADD_SPECIAL, &ids), 0);
        CHECK_EQ_INT(ids.n, 0);
        CHECK_EQ_INT(fl_tokenizer_encode(tok, "a\x16\x16", 3, 0, &ids), 0);
        CHECK_EQ_INT(ids.n, 1);
        if (ids.n == 1) CHECK_EQ_INT(ids.ids[0], 81);
        fl_token_ids_free(&ids);
    }
    fl_tokenizer_free(tok);
}

/* Loads `dir` in a child process that cannot read `unreadable` (mode 000; as root the child drops
 * to user nobody, for whom permissions apply) and returns the child's error line in `msg`. */
static int load_error_unprivileged(const char *dir, const char *unreadable, char *msg, size_t cap) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, unreadable);
    if (chmod(dir, 0755) || chmod(path, 0)) return -1;
    int fd[2];
    if (pipe(fd)) return -1;
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        struct passwd *nobody = getpwnam("nobody");
        if (geteuid() == 0 && (!nobody || setgid(nobody->pw_gid) || setuid(nobody->pw_uid))) _exit(3);
        fl_tokenizer *tok;
        int rc = fl_tokenizer_load(&tok, dir);
        if (!rc) fl_tokenizer_free(tok);
        const char *e = rc ? fl_last_error() : "loaded";
        if (write(fd[1], e, strlen(e)) < 0) _exit(4);
        _exit(rc == FL_ERR_INPUT ? 0 : 5);
    }
    close(fd[1]);
    size_t n = 0;
    ssize_t got;
    while (n + 1 < cap && (got = read(fd[0], msg + n, cap - 1 - n)) > 0) n += (size_t)got;
    msg[n] = 0;
    close(fd[0]);
    int status;
    waitpid(pid, &status, 0);
    chmod(path, 0644);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* An unreadable file is "cannot read FILE: Permission denied" (not a JSON parse error at line -1),
 * for each file the loader reads. */
TEST(tokenizer_bad_input_unreadable_files) {
    const char *tj[] = {"tokenizer.json", "{" TINY_MODEL "}", "tokenizer_config.json", "{}", "chat_template.jinja", "x", NULL};
    const char *vm[] = {"vocab.json", "{\"a\": 0}", "merges.txt", "", "tokenizer_config.json",
                        "{\"tokenizer_class\": \"Qwen2Tokenizer\"}", NULL};
    const char *tt[] = {"tokenizer.model", "IQ== 0\n", "tokenizer_config.json", "{}", NULL};
    struct { const char *const *files; const char *unreadable; } cases[] = {
        {tj, "tokenizer.json"}, {tj, "tokenizer_config.json"}, {tj, "chat_template.jinja"},
        {vm, "vocab.json"}, {vm, "merges.txt"}, {tt, "tokenizer.model"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *dir = make_dir(cases[i].files);
        CHECK(dir != NULL);
        if (!dir) continue;
        char msg[512], want[256];
        int rc = load_error_unprivileged(dir, cases[i].unreadable, msg, sizeof msg);
        snprintf(want, sizeof want, "cannot read %s/%s: Permission denied", dir, cases[i].unreadable);
        CHECK_MSG(rc == 0, "%s: child exited %d (%s)", cases[i].unreadable, rc, msg);
        CHECK_STR_CONTAINS(msg, want);
        CHECK(strstr(msg, "line -1") == NULL);
        remove_dir(dir, cases[i].files);
    }
}

static void on_alarm_tok(int sig) {
    (void)sig;
    static const char msg[] = "FAIL: a tokenizer file that is a FIFO blocked the load (test_tokenizer_bad_input.c)\n";
    if (write(1, msg, sizeof msg - 1) < 0) {}
    _exit(1);
}

/* Each tokenizer file as a FIFO, a device or a dangling link: "cannot read PATH: why" from the one
 * reader, at once (a FIFO used to count as no file: "no tokenizer files" or "vocab.json: missing"). */
TEST(tokenizer_bad_input_special_files) {
    const char *tj[] = {"tokenizer.json", "{" TINY_MODEL "}", "tokenizer_config.json", "{}", "chat_template.jinja", "x", NULL};
    const char *vm[] = {"vocab.json", "{\"a\": 0}", "merges.txt", "", "tokenizer_config.json",
                        "{\"tokenizer_class\": \"Qwen2Tokenizer\"}", NULL};
    const char *tt[] = {"tokenizer.model", "IQ== 0\n", "tokenizer_config.json", "{}", NULL};
    struct { const char *const *files; const char *special; } cases[] = {
        {tj, "tokenizer.json"}, {tj, "tokenizer_config.json"}, {tj, "chat_template.jinja"},
        {vm, "vocab.json"}, {vm, "merges.txt"}, {tt, "tokenizer.model"},
    };
    const char *kinds[][2] = {{"fifo", "a FIFO, not a regular file"}, {"/dev/zero", "a character device, not a regular file"},
                              {"/nonexistent/x", "No such file or directory"}};
    signal(SIGALRM, on_alarm_tok);
    alarm(20);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (size_t k = 0; k < 3; k++) {
            const char *dir = make_dir(cases[i].files);
            CHECK(dir != NULL);
            if (!dir) continue;
            char path[256], want[320];
            snprintf(path, sizeof path, "%s/%s", dir, cases[i].special);
            unlink(path);
            CHECK(k == 0 ? mkfifo(path, 0600) == 0 : symlink(kinds[k][0], path) == 0);
            fl_tokenizer *tok = NULL;
            CHECK_EQ_INT(fl_tokenizer_load(&tok, dir), FL_ERR_INPUT);
            snprintf(want, sizeof want, "cannot read %s: %s", path, kinds[k][1]);
            CHECK_STR_CONTAINS(fl_last_error(), want);
            fl_tokenizer_free(tok);
            remove_dir(dir, cases[i].files);
        }
    alarm(0);
    signal(SIGALRM, SIG_DFL);
}

/* `tokenize --jsonl` on bad lines: each gives {"error": "line N: ..."} in its place, good lines
 * still answer, exit status 2 with one summary line; never a crash (ASan in `make asan-test`). */
TEST(tokenizer_bad_input_jsonl_lines) {
    const char *bin = getenv("FASTLORA_BIN");
    if (!bin || access(bin, X_OK) != 0) SKIP("FASTLORA_BIN not set");
    const char *files[] = {"tokenizer.json", "{" TINY_MODEL "}", "in.jsonl",
                           "{\"text\": \"ab\"}\n"
                           "not json\n"
                           "{\"text\": \"lone \\ud800\"}\n"
                           "[1, 2]\n"
                           "{}\n"
                           "{\"text\": 5}\n"
                           "{\"text\": \"a\", \"ids\": [0]}\n"
                           "{\"ids\": [0, 99]}\n"
                           "{\"ids\": [-1]}\n"
                           "{\"ids\": [1e3]}\n"
                           "{\"ids\": \"0\"}\n"
                           "{\"ids\": [0], \"skip_special_tokens\": 1}\n"
                           "{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}]}\n"
                           "{\"messages\": [{\"role\": \"us\\u0000er\", \"content\": \"a\"}]}\n"
                           "{\"messages\": 3}\n"
                           "\n"
                           "{\"ids\": [2, 0]}\n",
                           NULL};
    const char *dir = make_dir(files);
    CHECK(dir != NULL);
    if (!dir) return;
    char cmd[1024], out[128];
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(cmd, sizeof cmd, "%s tokenize --model %s --jsonl %s/in.jsonl > %s 2> %s.err", bin, dir, dir, out, out);
    int rc = system(cmd);
    CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 2);
    FILE *f = fopen(out, "r");
    CHECK(f != NULL);
    char line[512];
    int n = 0, errors = 0;
    while (f && fgets(line, sizeof line, f)) {
        n++;
        if (strstr(line, "{\"error\":")) {
            char want[32];
            snprintf(want, sizeof want, "\"line %d: ", n + (n >= 16)); // the blank line 16 gives no output
            CHECK_STR_CONTAINS(line, want);
            errors++;
        }
    }
    if (f) fclose(f);
    CHECK_EQ_INT(n, 16);
    CHECK_EQ_INT(errors, 14); // all but the first and the last line
    snprintf(cmd, sizeof cmd, "grep -q 'in.jsonl: 14 of 16 lines failed (first: line 2: column' %s.err", out);
    CHECK_EQ_INT(system(cmd), 0);
    unlink(out);
    snprintf(out + strlen(out), sizeof out - strlen(out), ".err");
    unlink(out);
    remove_dir(dir, files);
}

/* A piece of text without a split point larger than memory allows (BPE needs ~36 bytes a byte of
 * it): an input error naming the size, not an abort in the allocator (`tokenize --file` of 1 GiB of
 * NUL bytes asked for 72 GiB and died). The child's address space is capped at 1 GiB, so a 64 MiB
 * piece (4.5 GiB of work memory) cannot fit. Not under ASan: it reserves its shadow memory outside
 * such a cap. */
TEST(tokenizer_bad_input_piece_larger_than_memory) {
#if defined(__SANITIZE_ADDRESS__)
    SKIP("ASan build: RLIMIT_AS and the sanitizer's allocator do not mix");
#else
    fl_tokenizer *tok = NULL;
    if (fl_tokenizer_load(&tok, "tests/fixtures/train/tok")) { CHECK_MSG(0, "%s", fl_last_error()); return; }
    size_t len = (size_t)64 << 20;
    char *text = malloc(len);
    memset(text, 'a', len);
    int fd[2];
    CHECK(pipe(fd) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        struct rlimit lim = {(rlim_t)1 << 30, (rlim_t)1 << 30};
        if (setrlimit(RLIMIT_AS, &lim)) _exit(3);
        fl_token_ids ids = {0};
        int rc = fl_tokenizer_encode(tok, text, len, 0, &ids);
        const char *e = rc ? fl_last_error() : "encoded";
        if (write(fd[1], e, strlen(e)) < 0) _exit(4);
        _exit(rc == FL_ERR_INPUT ? 0 : 5);
    }
    close(fd[1]);
    char msg[512];
    size_t n = 0;
    ssize_t got;
    while (n + 1 < sizeof msg && (got = read(fd[0], msg + n, sizeof msg - 1 - n)) > 0) n += (size_t)got;
    msg[n] = 0;
    close(fd[0]);
    int status;
    waitpid(pid, &status, 0);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child: %s (status %d)", msg, status);
    CHECK_STR_CONTAINS(msg, "text: a piece of 67108864 bytes without a split point needs");
    free(text);
    fl_tokenizer_free(tok);
#endif
}

/* Added tokens: a later one replaces every earlier one with its id or its content
 * (tokenizer_config.json's added_tokens_decoder over tokenizer.json's added_tokens), and many of
 * them load in n log n: each add used to scan all earlier ones, so 100,000 took ~17 s of CPU and
 * 200,000 a quarter of an hour (a hostile tokenizer.json as a hang). */
TEST(tokenizer_bad_input_many_added_tokens) {
    const char *files[] = {
        "tokenizer.json",
        "{\"added_tokens\": [{\"id\": 3, \"content\": \"<x>\"}, {\"id\": 4, \"content\": \"<y>\"}], " TINY_MODEL "}",
        "tokenizer_config.json", "{\"added_tokens_decoder\": {\"3\": {\"content\": \"<y>\"}}}", NULL};
    const char *dir = make_dir(files);
    CHECK(dir != NULL);
    if (!dir) return;
    fl_tokenizer *tok = NULL;
    CHECK_EQ_INT(fl_tokenizer_load(&tok, dir), 0);
    CHECK_EQ_INT(fl_tokenizer_token_to_id(tok, "<y>"), 3);   /* id 3 now reads <y>; <x> and id 4 are gone */
    CHECK_EQ_INT(fl_tokenizer_token_to_id(tok, "<x>"), -1);
    fl_token_ids ids = {0};
    CHECK_EQ_INT(fl_tokenizer_encode(tok, "a<y>b", 5, 0, &ids), 0);
    CHECK(ids.n == 3 && ids.ids[0] == 0 && ids.ids[1] == 3 && ids.ids[2] == 1);
    fl_token_ids_free(&ids);
    fl_tokenizer_free(tok);
    remove_dir(dir, files);
    /* 100,000 of them: well under a second of CPU now; the bound (5 s) is CPU time, not wall time */
    size_t n = 100000, cap = n * 64 + 256, len = 0;
    char *json = malloc(cap);
    len += (size_t)snprintf(json + len, cap - len, "{\"added_tokens\": [");
    for (size_t i = 0; i < n; i++)
        len += (size_t)snprintf(json + len, cap - len, "%s{\"id\": %zu, \"content\": \"<t%zu>\", \"special\": true}",
                                i ? ", " : "", i + 3, i);
    snprintf(json + len, cap - len, "], " TINY_MODEL "}");
    const char *big[] = {"tokenizer.json", json, NULL};
    dir = make_dir(big);
    CHECK(dir != NULL);
    clock_t t0 = clock();
    CHECK_EQ_INT(dir ? fl_tokenizer_load(&tok, dir) : -1, 0);
    double cpu = (double)(clock() - t0) / CLOCKS_PER_SEC;
    CHECK_MSG(cpu < 5.0, "loading 100,000 added tokens took %.1f s of CPU", cpu);
    if (dir) CHECK_EQ_INT(fl_tokenizer_token_to_id(tok, "<t99999>"), 100002);
    fl_tokenizer_free(tok);
    if (dir) remove_dir(dir, big);
    free(json);
}

/* `tokenize --file` of bytes that are not UTF-8 (a binary, a Latin-1 file): one line naming the
 * file and the byte, exit 2 (the tokenizer's own message speaks of "text"). */
TEST(tokenizer_cli_file_not_utf8_names_the_file) {
    if (!fl_test_bin()) SKIP("FASTLORA_BIN not set");
    char path[] = "/tmp/fastlora-notutf8-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd < 0) return;
    static const char bytes[] = "caf\xe9 au lait\n";
    CHECK(write(fd, bytes, sizeof bytes - 1) == (ssize_t)(sizeof bytes - 1));
    close(fd);
    char out[4096];
    int rc = fl_test_run_cli(out, sizeof out, "tokenize --model tests/fixtures/train/tok --file %s", path);
    CHECK_EQ_INT(rc, 2);
    char want[128];
    snprintf(want, sizeof want, "%s: invalid UTF-8 at byte 3", path);
    CHECK_STR_CONTAINS(out, want);
    CHECK_MSG(strchr(out, '\n') == strrchr(out, '\n'), "more than one line: %s", out);
    unlink(path);
}
