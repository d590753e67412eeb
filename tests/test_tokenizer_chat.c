/* test_tokenizer_chat.c — chat rendering against transformers' apply_chat_template: the rendered
 * string and the ids of every conversation in tests/fixtures/tokenizer/<model>.chat.jsonl, and the
 * assistant spans (each must cover exactly the assistant content + end-of-turn marker). */
#include "test.h"

#include "tokenizer/tokenizer.h"
#include "common/error.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void check_chat(const char *model, fl_chat_format format, const char *eot) {
    const char *shared = fl_test_shared_dir();
    if (!shared) SKIP("../shared not found");
    char dir[512], path[512];
    snprintf(dir, sizeof dir, "%s/models/%s", shared, model);
    snprintf(path, sizeof path, "tests/fixtures/tokenizer/%s.chat.jsonl", model);
    fl_tokenizer *tok;
    if (fl_tokenizer_load(&tok, dir)) { fl_test_fail(__FILE__, __LINE__, "%s", fl_last_error()); return; }
    if (format == FL_CHAT_AUTO) {
        fl_chat_format got;
        CHECK_EQ_INT(fl_tokenizer_chat_format(tok, &got), 0);
    }
    FILE *f = fopen(path, "r");
    CHECK_MSG(f != NULL, "cannot open %s", path);
    char *line = NULL;
    size_t cap = 0;
    int n = 0;
    while (f && getline(&line, &cap, f) > 0) {
        json_t *row = json_loads(line, JSON_ALLOW_NUL, NULL); // contents may hold U+0000
        json_t *msgs = json_object_get(row, "messages");
        size_t nm = json_array_size(msgs);
        fl_chat_message *m = calloc(nm, sizeof *m);
        size_t n_asst = 0;
        for (size_t i = 0; i < nm; i++) {
            m[i].role = json_string_value(json_object_get(json_array_get(msgs, i), "role"));
            json_t *content = json_object_get(json_array_get(msgs, i), "content");
            m[i].content = json_string_value(content);
            m[i].content_len = json_string_length(content);
            n_asst += !strcmp(m[i].role, "assistant");
        }
        fl_chat_rendered r;
        int rc = fl_tokenizer_chat_render(tok, format, m, nm, json_is_true(json_object_get(row, "add_generation_prompt")), &r);
        CHECK_MSG(rc == 0, "%s: render: %s", model, fl_last_error());
        if (!rc) {
            const char *want = json_string_value(json_object_get(row, "text"));
            size_t want_len = json_string_length(json_object_get(row, "text"));
            CHECK_MSG(r.len == want_len && !memcmp(r.text, want, r.len), "%s: rendered\n%s\nwant\n%s", model, r.text, want);
            json_t *ids = json_object_get(row, "ids");
            int same = r.ids.n == json_array_size(ids);
            for (size_t i = 0; same && i < r.ids.n; i++) same = r.ids.ids[i] == json_integer_value(json_array_get(ids, i));
            CHECK_MSG(same, "%s: chat ids differ (%zu vs %zu) for\n%s", model, r.ids.n, json_array_size(ids), want);
            CHECK_EQ_INT(r.n_spans, n_asst);
            // spans: each assistant message's content then the end-of-turn marker
            size_t k = 0;
            for (size_t i = 0; i < nm && k < r.n_spans; i++) {
                if (strcmp(m[i].role, "assistant")) continue;
                fl_span s = r.assistant_bytes[k];
                size_t el = strlen(eot);
                CHECK(s.end - s.start >= el && !memcmp(r.text + s.end - el, eot, el));
                CHECK_MSG(s.end - s.start - el <= m[i].content_len, "span longer than content");
                fl_span t = r.assistant_tokens[k];
                CHECK(t.end > t.start && t.end <= r.ids.n);
                // last token of the span is the end-of-turn token (or contains the eos)
                char *dec;
                size_t dl;
                CHECK_EQ_INT(fl_tokenizer_decode(tok, r.ids.ids + t.start, t.end - t.start, 0, &dec, &dl), 0);
                CHECK_MSG(memmem(dec, dl, eot, strlen(eot)) != NULL, "%s: span tokens decode to '%s'", model, dec);
                free(dec);
                k++;
            }
            fl_chat_rendered_free(&r);
        }
        free(m);
        json_decref(row);
        n++;
    }
    free(line);
    if (f) fclose(f);
    printf("    %s: %d conversations\n", model, n);
    CHECK(n >= 5);
    fl_tokenizer_free(tok);
}

TEST(tokenizer_chat_qwen25) { check_chat("Qwen2.5-0.5B", FL_CHAT_AUTO, "<|im_end|>"); }
TEST(tokenizer_chat_smollm2) { check_chat("SmolLM2-135M-Instruct", FL_CHAT_AUTO, "<|im_end|>"); }
TEST(tokenizer_chat_tinyllama) { check_chat("TinyLlama-1.1B-Chat-v1.0", FL_CHAT_AUTO, "</s>"); }
TEST(tokenizer_chat_llama3) { check_chat("Llama-3.2-1B", FL_CHAT_LLAMA3, "<|eot_id|>"); }

/* Which folder gets which format, by template content. */
TEST(tokenizer_chat_recognition) {
    const char *shared = fl_test_shared_dir();
    if (!shared) SKIP("../shared not found");
    struct { const char *model; fl_chat_format want; } cases[] = {
        {"Qwen2.5-0.5B", FL_CHAT_CHATML}, {"SmolLM2-135M-Instruct", FL_CHAT_CHATML},
        {"TinyLlama-1.1B-Chat-v1.0", FL_CHAT_ZEPHYR},
    };
    char dir[512];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(dir, sizeof dir, "%s/models/%s", shared, cases[i].model);
        fl_tokenizer *tok;
        CHECK_EQ_INT(fl_tokenizer_load(&tok, dir), 0);
        fl_chat_format f;
        CHECK_EQ_INT(fl_tokenizer_chat_format(tok, &f), 0);
        CHECK_EQ_INT(f, cases[i].want);
        fl_tokenizer_free(tok);
    }
}
