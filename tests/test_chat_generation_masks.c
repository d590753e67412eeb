/* test_chat_generation_masks.c — the loss mask of {% generation %} templates against transformers'
 * assistant_masks where a span is not simply the block's text (tests/fixtures/chat/
 * generation_masks.json, written by tools/make_generation_mask_fixtures.py): blocks inside macros,
 * set, filter and call blocks, nested blocks, a block never written, spans past the end, empty
 * blocks, with multi-byte text (transformers counts characters, we count bytes). The text, the ids
 * and every mask bit must be equal; the spans must keep the engine's promises (template.h).
 */
#include "test.h"

#include "common/error.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

#include <jansson.h>
#include <string.h>
#include <unistd.h>

TEST(chat_generation_masks_match_transformers) {
    json_error_t err;
    json_t *root = json_load_file("tests/fixtures/chat/generation_masks.json", 0, &err);
    CHECK_MSG(root != NULL, "generation_masks.json: %s", err.text);
    if (!root) return;
    fl_tokenizer *tok;
    CHECK_MSG(fl_tokenizer_load(&tok, "tests/fixtures/train/tok") == 0, "%s", fl_last_error());
    json_t *cases = json_object_get(root, "cases");
    size_t n = json_array_size(cases), same = 0, masked = 0;
    for (size_t c = 0; c < n; c++) {
        json_t *row = json_array_get(cases, c);
        const char *name = json_string_value(json_object_get(row, "name"));
        int conv = (int)json_integer_value(json_object_get(row, "conversation"));
        const char *src = json_string_value(json_object_get(row, "template"));
        fl_chat_template *ct;
        if (fl_chat_template_new(&ct, src, strlen(src), NULL)) {
            fl_test_fail(__FILE__, __LINE__, "%s: %s", name, fl_last_error());
            continue;
        }
        fl_chat_input in = {.messages = json_object_get(row, "messages")};
        fl_chat_rendered r;
        if (fl_chat_encode(tok, ct, &in, &r)) {
            fl_test_fail(__FILE__, __LINE__, "%s/%d: %s", name, conv, fl_last_error());
            fl_chat_template_free(ct);
            continue;
        }
        const char *text = json_string_value(json_object_get(row, "text"));
        json_t *ids = json_object_get(row, "ids"), *mask = json_object_get(row, "assistant_masks");
        int ok = r.len == strlen(text) && !memcmp(r.text, text, r.len) && r.ids.n == json_array_size(ids) &&
                 r.ids.n == json_array_size(mask);
        CHECK_MSG(ok, "%s/%d: text or ids differ from transformers' (%zu ids, want %zu)", name, conv, r.ids.n,
                  json_array_size(ids));
        for (size_t t = 0; ok && t < r.ids.n; t++) {
            ok = r.ids.ids[t] == json_integer_value(json_array_get(ids, t)) &&
                 r.assistant_mask[t] == json_integer_value(json_array_get(mask, t));
            CHECK_MSG(ok, "%s/%d: token %zu: id %d mask %d, transformers: id %lld mask %lld", name, conv, t, r.ids.ids[t],
                      r.assistant_mask[t], (long long)json_integer_value(json_array_get(ids, t)),
                      (long long)json_integer_value(json_array_get(mask, t)));
            masked += r.assistant_mask[t];
        }
        size_t last = 0;
        for (size_t s = 0; s < r.n_spans; s++) {
            CHECK_MSG(r.assistant_bytes[s].start >= last && r.assistant_bytes[s].start <= r.assistant_bytes[s].end &&
                          r.assistant_bytes[s].end <= r.len,
                      "%s/%d: span %zu [%zu, %zu) breaks template.h's promises (text %zu bytes)", name, conv, s,
                      r.assistant_bytes[s].start, r.assistant_bytes[s].end, r.len);
            last = r.assistant_bytes[s].start;
        }
        same += ok;
        fl_chat_rendered_free(&r);
        fl_chat_template_free(ct);
    }
    CHECK_MSG(n >= 30, "only %zu cases in the fixture", n);
    printf("    %zu cases, %zu identical to transformers (%zu masked tokens)\n", n, same, masked);
    fl_tokenizer_free(tok);
    json_decref(root);
}

/* `tokenize --jsonl` prints assistant_masks as transformers' return_assistant_tokens_mask does: the
 * {% generation %} mask with such a template (the fixture's first case, bit for bit), all 0 with a
 * template without blocks (the fixture tokenizer's ChatML; its turn-by-turn spans stay in
 * assistant_tokens). */
TEST(chat_generation_masks_tokenize_cli) {
    if (!fl_test_bin()) SKIP("FASTLORA_BIN not set");
    json_t *root = json_load_file("tests/fixtures/chat/generation_masks.json", 0, NULL);
    CHECK(root != NULL);
    if (!root) return;
    json_t *c = json_array_get(json_object_get(root, "cases"), 0);
    char tpl[] = "/tmp/fastlora-gen-tpl-XXXXXX", rows[] = "/tmp/fastlora-gen-rows-XXXXXX";
    int ft = mkstemp(tpl), fr = mkstemp(rows);
    const char *src = json_string_value(json_object_get(c, "template"));
    json_t *row = json_pack("{s:O}", "messages", json_object_get(c, "messages"));
    char *line = json_dumps(row, JSON_COMPACT);
    CHECK(write(ft, src, strlen(src)) == (ssize_t)strlen(src) && write(fr, line, strlen(line)) == (ssize_t)strlen(line));
    close(ft);
    close(fr);
    static char out[1 << 16];
    for (int with_blocks = 1; with_blocks >= 0; with_blocks--) {
        int rc = with_blocks ? fl_test_run_cli(out, sizeof out, "tokenize --model tests/fixtures/train/tok --jsonl %s --chat-template %s", rows, tpl)
                             : fl_test_run_cli(out, sizeof out, "tokenize --model tests/fixtures/train/tok --jsonl %s", rows);
        CHECK_MSG(rc == 0, "tokenize --jsonl: %s", out);
        json_t *got = json_loads(out, 0, NULL), *mask = json_object_get(got, "assistant_masks");
        json_t *want = json_object_get(c, "assistant_masks");
        size_t ones = 0;
        for (size_t i = 0; i < json_array_size(mask); i++) ones += json_integer_value(json_array_get(mask, i)) != 0;
        if (with_blocks) CHECK_MSG(json_equal(mask, want), "assistant_masks differ from transformers': %s", out);
        else CHECK_MSG(json_array_size(mask) > 0 && ones == 0 && json_array_size(json_object_get(got, "assistant_tokens")) > 0,
                       "without {%% generation %%} blocks: %zu mask bits set (transformers: none): %s", ones, out);
        json_decref(got);
    }
    unlink(tpl);
    unlink(rows);
    free(line);
    json_decref(row);
    json_decref(root);
}
