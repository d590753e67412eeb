/* fuzz_chat.c — fuzzes chat rendering (src/tokenizer/chat.c) of arbitrary messages JSON, the file
 * `fastlora tokenize --chat FILE` reads: a list of {"role", "content"}, or {"messages": [...],
 * "add_generation_prompt": bool}. The first input byte picks the tokenizer (low 3 bits, the real
 * ones of fuzz_tokenizer.h), the format (bits 3-4: the folder's own, chatml, zephyr, llama3) and the
 * generation prompt (bit 5); the rest is the JSON. Checks: rendering fails only with an input
 * error; ids lie in the vocabulary, offsets and spans in the text and ids; in the chatml and zephyr
 * formats each assistant span starts with that message's content, byte for byte.
 * (Role/content extraction mirrors cmd_tokenize.c's; the JSON itself is Jansson's.)
 */
/* fuzz-dict: json chat */
#include "fuzz.h"

#include <jansson.h>

#include "fuzz_tokenizer.h"

/* The tokenizers load here, before the clock of -timeout starts. */
int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    fz_model *models;
    fz_real_tokenizers(&models);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    fz_model *models;
    int n_models = fz_real_tokenizers(&models);
    const fz_model *m = &models[(data[0] & 7) % n_models];
    static const fl_chat_format formats[4] = {FL_CHAT_AUTO, FL_CHAT_CHATML, FL_CHAT_ZEPHYR, FL_CHAT_LLAMA3};
    fl_chat_format format = formats[data[0] >> 3 & 3];
    int gen = data[0] >> 5 & 1;
    json_t *root = json_loadb((const char *)data + 1, size - 1, JSON_ALLOW_NUL, NULL);
    json_t *msgs = json_is_array(root) ? root : json_object_get(root, "messages");
    if (json_is_object(root) && json_is_true(json_object_get(root, "add_generation_prompt"))) gen = 1;
    if (!json_is_array(msgs)) { json_decref(root); return 0; }
    size_t n = json_array_size(msgs);
    fl_chat_message *list = calloc(n ? n : 1, sizeof *list);
    for (size_t i = 0; i < n; i++) {
        json_t *it = json_array_get(msgs, i);
        list[i].role = json_string_value(json_object_get(it, "role"));
        list[i].content = json_string_value(json_object_get(it, "content"));
    }
    fl_chat_rendered r;
    fl_clear_error();
    int status = fl_tokenizer_chat_render(m->tok, format, list, n, gen, &r);
    fz_check(status, "fl_tokenizer_chat_render");
    if (!status) {
        fz_check_rendered(m->tok, &r);
        fl_chat_format used = format;
        if (used == FL_CHAT_AUTO && fl_tokenizer_chat_format(m->tok, &used)) abort();
        if (used != FL_CHAT_LLAMA3) {
            size_t s = 0;
            for (size_t i = 0; i < n; i++) {
                if (strcmp(list[i].role, "assistant")) continue;
                size_t cl = strlen(list[i].content);
                if (s >= r.n_spans || r.assistant_bytes[s].end - r.assistant_bytes[s].start < cl ||
                    memcmp(r.text + r.assistant_bytes[s].start, list[i].content, cl)) {
                    fprintf(stderr, "fuzz: %s: assistant span %zu is not message %zu's content\n", m->name, s, i);
                    abort();
                }
                s++;
            }
            if (s != r.n_spans) abort();
        }
        fl_chat_rendered_free(&r);
    }
    free(list);
    json_decref(root);
    return 0;
}
