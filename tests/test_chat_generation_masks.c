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
