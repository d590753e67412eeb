/* chat.c — the legacy chat API (fl_tokenizer_chat_render over role/content structs) and the
 * three built-in formats, all rendered by the Jinja engine (src/template/) — there is no second
 * rendering path:
 *   FL_CHAT_AUTO  the folder's own template (any template transformers can render).
 *   chatml        "<|im_start|>{role}\n{content}<|im_end|>\n"; when the first message is not a
 *                 system message, the folder template's default system prompt (read out of its
 *                 text, e.g. "You are a helpful assistant.") comes first.
 *   zephyr        "<|{role}|>\n{content}{eos}\n", generation prompt "<|assistant|>\n".
 *   llama3        "{bos}<|start_header_id|>{role}<|end_header_id|>\n\n{content|trim}<|eot_id|>".
 * fl_tokenizer_chat_format still recognizes those three by content (callers pick an end-of-turn
 * marker from it); rendering does not need it. The struct API takes system/user/assistant
 * messages only; tools, tool calls, content parts and template kwargs go through
 * chat_template.h's JSON API. Assistant spans: chat_template.h (turn by turn here: content plus
 * the end-of-turn marker).
 */
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer_internal.h"

#include "common/error.h"

#include <stdlib.h>
#include <string.h>

static const char BUILT_IN[] = "built-in chat formats: chatml (Qwen2.5, SmolLM2-Instruct), zephyr (TinyLlama-Chat), llama3 (Llama-3 Instruct)";

const char *fl_chat_format_name(fl_chat_format format) {
    switch (format) {
    case FL_CHAT_CHATML: return "chatml";
    case FL_CHAT_ZEPHYR: return "zephyr";
    case FL_CHAT_LLAMA3: return "llama3";
    default: return "auto";
    }
}

int fl_tokenizer_chat_format(const fl_tokenizer *tok, fl_chat_format *out) {
    const char *t = tok->chat_template;
    *out = FL_CHAT_AUTO;
    if (!t) return fl_input_error("%s: chat_template: none (tokenizer_config.json / chat_template.jinja); choose a format: %s",
                                  tok->model_dir, BUILT_IN);
    if (strstr(t, "<|im_start|>") && strstr(t, "<|im_end|>") && strstr(t, "role")) { *out = FL_CHAT_CHATML; return 0; }
    if (strstr(t, "<|user|>") && strstr(t, "<|assistant|>") && strstr(t, "eos_token")) { *out = FL_CHAT_ZEPHYR; return 0; }
    if (strstr(t, "<|start_header_id|>") && strstr(t, "<|end_header_id|>") && strstr(t, "<|eot_id|>") &&
        !strstr(t, "Cutting Knowledge Date")) {
        *out = FL_CHAT_LLAMA3;
        return 0;
    }
    return fl_input_error("%s: chat_template: not a known format (%.40s...); %s", tok->model_dir, t, BUILT_IN);
}

/* The default system prompt of a ChatML template: the literal text after "<|im_start|>system\n"
 * (newline written as an escape or as is) up to "<|im_end|>", where it is not a variable. NULL
 * when the template has none. */
static char *chatml_default_system(const char *t) {
    if (!t) return NULL;
    for (const char *p = strstr(t, "<|im_start|>system"); p; p = strstr(p + 1, "<|im_start|>system")) {
        const char *q = p + strlen("<|im_start|>system");
        if (!strncmp(q, "\\n", 2)) q += 2;
        else if (*q == '\n') q++;
        else continue;
        if (*q == '\'' || *q == '"') continue; // followed by `' + messages[0]...`: not a literal
        const char *end = strstr(q, "<|im_end|>");
        if (!end) return NULL;
        size_t n = (size_t)(end - q);
        if (memchr(q, '\'', n) || memchr(q, '"', n) || memchr(q, '{', n)) continue;
        char *s = fl_malloc(n + 1);
        memcpy(s, q, n);
        s[n] = 0;
        return s;
    }
    return NULL;
}

static size_t message_len(const fl_chat_message *m) {
    return m->content_len ? m->content_len : strlen(m->content);
}

static const char *token_content(const fl_tokenizer *tok, int32_t id) {
    const fl_added_token *t = fl_added_tokens_by_id(&tok->added, id);
    return t ? t->content : NULL;
}

/* The built-in formats as Jinja templates, run by the same engine as a folder's template. */
static const char CHATML_TEMPLATE[] =
    "{% if messages[0].role != 'system' and default_system is defined %}<|im_start|>system\n{{ default_system }}<|im_end|>\n"
    "{% endif %}{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";
static const char ZEPHYR_TEMPLATE[] =
    "{% for m in messages %}<|{{ m.role }}|>\n{{ m.content }}{{ eos_token }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}";
static const char LLAMA3_TEMPLATE[] =
    "{{ bos_token }}{% for m in messages %}<|start_header_id|>{{ m.role }}<|end_header_id|>\n\n{{ m.content | trim }}<|eot_id|>"
    "{% endfor %}{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}";

int fl_chat_template_builtin(fl_chat_template **out, const fl_tokenizer *tok, fl_chat_format format) {
    *out = NULL;
    if (format != FL_CHAT_AUTO && format != FL_CHAT_CHATML && format != FL_CHAT_ZEPHYR && format != FL_CHAT_LLAMA3)
        return fl_input_error("chat: format %d is not built in; %s", (int)format, BUILT_IN);
    if (format == FL_CHAT_AUTO) {
        if (!tok->chat_template)
            return fl_input_error("%s: chat_template: none (tokenizer_config.json / chat_template.jinja); choose a format: %s",
                                  tok->model_dir, BUILT_IN);
        return fl_chat_template_for(out, tok, NULL, 0);
    }
    const char *text = format == FL_CHAT_CHATML ? CHATML_TEMPLATE : format == FL_CHAT_ZEPHYR ? ZEPHYR_TEMPLATE : LLAMA3_TEMPLATE;
    const char *eos = token_content(tok, tok->eos_id), *bos = token_content(tok, tok->bos_id);
    if (format == FL_CHAT_ZEPHYR && !eos) return fl_input_error("%s: eos_token: needed by the zephyr chat format", tok->model_dir);
    if (format == FL_CHAT_LLAMA3 && !bos) return fl_input_error("%s: bos_token: needed by the llama3 chat format", tok->model_dir);
    json_t *special = json_object();
    if (eos) json_object_set_new(special, "eos_token", json_string(eos));
    if (bos) json_object_set_new(special, "bos_token", json_string(bos));
    char *sys = format == FL_CHAT_CHATML ? chatml_default_system(tok->chat_template) : NULL;
    if (sys) json_object_set_new(special, "default_system", json_string(sys));
    free(sys);
    int rc = fl_chat_template_new(out, text, strlen(text), special);
    json_decref(special);
    return rc;
}

int fl_tokenizer_chat_render(fl_tokenizer *tok, fl_chat_format format, const fl_chat_message *messages,
                             size_t n_messages, int add_generation_prompt, fl_chat_rendered *out) {
    memset(out, 0, sizeof *out);
    if (format != FL_CHAT_AUTO && format != FL_CHAT_CHATML && format != FL_CHAT_ZEPHYR && format != FL_CHAT_LLAMA3)
        return fl_input_error("chat: format %d is not built in; %s", (int)format, BUILT_IN);
    if (n_messages == 0) return fl_input_error("chat: messages: empty conversation");
    json_t *list = json_array();
    for (size_t i = 0; i < n_messages; i++) {
        const char *r = messages[i].role;
        int bad = 0;
        if (!r || (strcmp(r, "system") && strcmp(r, "user") && strcmp(r, "assistant")))
            bad = fl_input_error("chat: messages[%zu].role: '%s' is not system, user or assistant", i, r ? r : "(null)");
        else if (!messages[i].content) bad = fl_input_error("chat: messages[%zu].content: missing", i);
        size_t cl = bad ? 0 : message_len(&messages[i]);
        if (!bad && fl_utf8_validate(messages[i].content, cl) != cl) bad = fl_input_error("chat: messages[%zu].content: invalid UTF-8", i);
        if (bad) { json_decref(list); return bad; }
        json_array_append_new(list, json_pack("{s:s, s:o}", "role", r, "content", json_stringn(messages[i].content, cl)));
    }
    fl_chat_template *ct;
    int rc = fl_chat_template_builtin(&ct, tok, format);
    if (!rc) {
        fl_chat_input in = {.messages = list, .add_generation_prompt = add_generation_prompt};
        rc = fl_chat_encode(tok, ct, &in, out);
    }
    fl_chat_template_free(ct);
    json_decref(list);
    return rc;
}

void fl_chat_rendered_free(fl_chat_rendered *r) {
    free(r->text);
    fl_token_ids_free(&r->ids);
    free(r->assistant_bytes);
    free(r->assistant_tokens);
    free(r->assistant_mask);
    memset(r, 0, sizeof *r);
}
