/* test_generate_chat.c — `generate --chat` through the Jinja engine (infer/chat_session.c): the
 * prompt of a turn is the conversation rendered with add_generation_prompt as transformers renders
 * it (checked against tests/fixtures/chat/ on the real Llama 3.2 and Qwen3 templates with the real
 * tokenizers of ../shared), generation stops at EOS and at the template's end-of-turn token
 * (<|im_end|>, <|eot_id|>, </s>), `--chat-template FILE` replaces the folder's, and a template that
 * does not parse is one line with its line and column.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "chat_fixture.h"
#include "common/error.h"
#include "infer/chat_session.h"
#include "test.h"

/* The session's first prompt for `user` equals `want` tokenized (no post-processor). */
static void check_prompt(fl_chat_session *s, const char *user, const char *want, size_t want_len, const char *what) {
    fl_token_ids got = {0}, ref = {0};
    CHECK_MSG(fl_chat_session_prompt(s, user, strlen(user), &got) == 0, "%s: %s", what, fl_last_error());
    CHECK(fl_tokenizer_encode(s->tok, want, want_len, 0, &ref) == 0);
    CHECK_MSG(got.n == ref.n && !memcmp(got.ids, ref.ids, sizeof(int32_t) * got.n), "%s: the prompt's ids differ from transformers' text", what);
    fl_token_ids_free(&got);
    fl_token_ids_free(&ref);
}

TEST(generate_chat_session_chatml_folder_template) {
    fl_tokenizer *tok = NULL;
    CHECK_MSG(fl_tokenizer_load(&tok, "tests/fixtures/train/tok") == 0, "%s", fl_last_error());
    if (!tok) return;
    fl_chat_session s;
    CHECK_EQ_INT(fl_chat_session_init(&s, tok, NULL, NULL), 0);
    CHECK_EQ_INT(s.end_of_turn, 2); /* <|im_end|> */
    const char *want = "<|im_start|>system\nYou are a test<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n";
    check_prompt(&s, "hi", want, strlen(want), "chatml turn 1");
    fl_chat_session_reply(&s, "the one", 7);
    const char *want2 = "<|im_start|>system\nYou are a test<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
                        "the one<|im_end|>\n<|im_start|>user\nagain<|im_end|>\n<|im_start|>assistant\n";
    check_prompt(&s, "again", want2, strlen(want2), "chatml turn 2");
    fl_chat_session_free(&s);
    fl_tokenizer_free(tok);
}

/* Real templates the old code refused (Llama 3.1+ with its dates, Qwen3 with thinking) on real tokenizers. */
TEST(generate_chat_session_real_templates_as_transformers) {
    if (!fl_test_shared_dir()) SKIP("../shared not found");
    static const struct { const char *model, *tpl, *eot; } cases[] = {
        {"Llama-3.2-1B", "meta-llama-Llama-3.2-3B-Instruct", "<|eot_id|>"},
        {"Llama-3.2-1B", "meta-llama-Llama-3.1-8B-Instruct", "<|eot_id|>"},
        {"Qwen2.5-0.5B", "Qwen-Qwen3-0.6B", "<|im_end|>"},
        {"TinyLlama-1.1B-Chat-v1.0", NULL, "</s>"},
    };
    json_t *index = chat_fixture_index(), *all = chat_fixture_cases();
    if (!index || !all) { json_decref(index); json_decref(all); return; }
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char dir[512], path[512];
        snprintf(dir, sizeof dir, "%s/models/%s", fl_test_shared_dir(), cases[k].model);
        snprintf(path, sizeof path, CHAT_FIXTURE_DIR "/templates/%s.jinja", cases[k].tpl ? cases[k].tpl : "shared-TinyLlama-1.1B-Chat-v1.0");
        fl_tokenizer *tok = NULL;
        CHECK_MSG(fl_tokenizer_load(&tok, dir) == 0, "%s: %s", dir, fl_last_error());
        if (!tok) continue;
        fl_chat_session s;
        CHECK_MSG(fl_chat_session_init(&s, tok, cases[k].tpl ? path : NULL, NULL) == 0, "%s: %s", path, fl_last_error());
        s.now = json_integer_value(json_object_get(index, "now"));
        CHECK_MSG(s.end_of_turn == fl_tokenizer_token_to_id(tok, cases[k].eot), "%s: end of turn %d, want %s", path, s.end_of_turn, cases[k].eot);
        const char *name = cases[k].tpl ? cases[k].tpl : "shared-TinyLlama-1.1B-Chat-v1.0";
        int found = 0;
        for (size_t i = 0; i < json_array_size(all); i++) { /* conversation 0: one user turn "Hello!", generation prompt on */
            json_t *c = json_array_get(all, i);
            if (strcmp(json_string_value(json_object_get(c, "template")), name) || json_integer_value(json_object_get(c, "conversation")) != 0) continue;
            json_t *text = json_object_get(c, "text");
            check_prompt(&s, "Hello!", json_string_value(text), json_string_length(text), name);
            found++;
        }
        CHECK_MSG(found == 1, "%s: conversation 0 not in cases.jsonl", name);
        fl_chat_session_free(&s);
        fl_tokenizer_free(tok);
    }
    json_decref(all);
    json_decref(index);
}

/* `printf INPUT | fastlora ARGS`: exit status, output (stdout + stderr) in out. */
static int run_with_stdin(const char *input, char *out, size_t cap, const char *args) {
    char cmd[4096], log[] = "/tmp/fastlora-genchat-XXXXXX";
    close(mkstemp(log));
    snprintf(cmd, sizeof cmd, "printf '%s' | timeout -k 5 60 %s %s > %s 2>&1", input, fl_test_bin(), args, log);
    int rc = system(cmd);
    FILE *f = fopen(log, "rb");
    size_t n = f ? fread(out, 1, cap - 1, f) : 0;
    out[n] = 0;
    if (f) fclose(f);
    unlink(log);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
}

/* The command: a folder without a template refuses --chat in one line naming --chat-template; with
 * --chat-template FILE it chats; a template that does not parse is one line with line:column. */
TEST(generate_chat_cli_template_file) {
    if (!fl_test_bin()) SKIP("FASTLORA_BIN not set");
    if (!fl_test_shared_dir()) SKIP("../shared not found");
    char dir[] = "/tmp/fastlora-genchat-dir-XXXXXX", model[600], args[2048], out[1 << 14];
    if (!mkdtemp(dir)) { CHECK(0); return; }
    int rc = chat_fixture_stories260k(dir, model, sizeof model);
    char tpl[700], bad[700];
    snprintf(tpl, sizeof tpl, "%s/chat.jinja", dir);
    snprintf(bad, sizeof bad, "%s/bad.jinja", dir);
    FILE *f = fopen(tpl, "w");
    fputs("{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}{% if add_generation_prompt %}assistant:{% endif %}", f);
    fclose(f);
    f = fopen(bad, "w");
    fputs("{% for m in messages %}\n\n{{ m.content }\n{% endfor %}", f);
    fclose(f);
    const char *common = "--device cpu --temperature 0 --max-tokens 4";
    snprintf(args, sizeof args, "generate --model %s --chat %s", model, common);
    CHECK_EQ_INT(run_with_stdin("hi\\n", out, sizeof out, args), 2);
    CHECK_STR_CONTAINS(out, "chat_template: none");
    CHECK_STR_CONTAINS(out, "--chat-template FILE");
    snprintf(args, sizeof args, "generate --model %s --chat --chat-template %s --system 'a story' %s", model, tpl, common);
    rc = run_with_stdin("Once upon a time\\nthe end\\n", out, sizeof out, args);
    CHECK_MSG(rc == 0, "%s", out);
    snprintf(args, sizeof args, "generate --model %s --chat --chat-template %s %s", model, bad, common);
    CHECK_EQ_INT(run_with_stdin("hi\\n", out, sizeof out, args), 2);
    char want[800];
    snprintf(want, sizeof want, "fastlora generate: %s: chat template: line 4 column 13", bad);
    CHECK_STR_CONTAINS(out, want);
    CHECK_MSG(strchr(out, '\n') == out + strlen(out) - 1, "one line: %s", out);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
}
