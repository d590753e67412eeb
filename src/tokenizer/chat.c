/* chat.c — chat formats: render a list of messages exactly as the model's Jinja chat template
 * does (transformers apply_chat_template, trim_blocks + lstrip_blocks), tokenize the result and
 * report the assistant spans for loss masking.
 *
 * Built in (no Jinja interpreter):
 *   chatml  Qwen2/2.5 and SmolLM2-Instruct: "<|im_start|>{role}\n{content}<|im_end|>\n"; when the
 *           first message is not a system message, the template's default system prompt (read out
 *           of the template text, e.g. "You are a helpful assistant.") is emitted first.
 *   zephyr  TinyLlama-Chat: "<|{role}|>\n{content}{eos}\n", generation prompt "<|assistant|>\n".
 *   llama3  Llama-3 Instruct: "{bos}" then "<|start_header_id|>{role}<|end_header_id|>\n\n
 *           {content.strip()}<|eot_id|>"; generation prompt the assistant header.
 * A folder's format is recognized from its template's content; a missing or unknown template
 * (including Qwen tool calls and the Llama-3.1+ template with dates and tools) is an error that
 * lists these formats. Not here: tool/function messages, other roles.
 */
#include "common/strbuf.h"
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

typedef fl_strbuf sbuf;

static void put(sbuf *b, const char *s, size_t n) { fl_strbuf_append(b, s, n); }
static void puts_(sbuf *b, const char *s) { put(b, s, strlen(s)); }

/* Python str.isspace() code points (Jinja's `trim` is str.strip()). */
static int py_space(uint32_t c) {
    return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

static void py_strip(const char *s, size_t *start, size_t *end) {
    const unsigned char *u = (const unsigned char *)s;
    size_t a = *start, e = *end;
    while (a < e) {
        int l = fl_utf8_len(u + a, e - a);
        if (!l || !py_space(fl_utf8_decode(u + a, l))) break;
        a += (size_t)l;
    }
    while (e > a) {
        size_t k = e - 1;
        while (k > a && (u[k] & 0xC0) == 0x80) k--;
        int l = fl_utf8_len(u + k, e - k);
        if (!l || !py_space(fl_utf8_decode(u + k, l))) break;
        e = k;
    }
    *start = a;
    *end = e;
}

static size_t message_len(const fl_chat_message *m) {
    return m->content_len ? m->content_len : strlen(m->content);
}

static const char *token_content(const fl_tokenizer *tok, int32_t id) {
    const fl_added_token *t = fl_added_tokens_by_id(&tok->added, id);
    return t ? t->content : NULL;
}

int fl_tokenizer_chat_render(fl_tokenizer *tok, fl_chat_format format, const fl_chat_message *messages,
                             size_t n_messages, int add_generation_prompt, fl_chat_rendered *out) {
    memset(out, 0, sizeof *out);
    if (format == FL_CHAT_AUTO) FL_TRY(fl_tokenizer_chat_format(tok, &format));
    if (format != FL_CHAT_CHATML && format != FL_CHAT_ZEPHYR && format != FL_CHAT_LLAMA3)
        return fl_input_error("chat: format %d is not built in; %s", (int)format, BUILT_IN);
    if (n_messages == 0) return fl_input_error("chat: messages: empty conversation");
    for (size_t i = 0; i < n_messages; i++) {
        const char *r = messages[i].role;
        if (!r || (strcmp(r, "system") && strcmp(r, "user") && strcmp(r, "assistant")))
            return fl_input_error("chat: messages[%zu].role: '%s' is not system, user or assistant", i, r ? r : "(null)");
        if (!messages[i].content) return fl_input_error("chat: messages[%zu].content: missing", i);
        size_t cl = message_len(&messages[i]);
        if (fl_utf8_validate(messages[i].content, cl) != cl) return fl_input_error("chat: messages[%zu].content: invalid UTF-8", i);
    }
    const char *eos = NULL, *bos = NULL;
    if (format == FL_CHAT_ZEPHYR && !(eos = token_content(tok, tok->eos_id)))
        return fl_input_error("%s: eos_token: needed by the zephyr chat format", tok->model_dir);
    if (format == FL_CHAT_LLAMA3 && !(bos = token_content(tok, tok->bos_id)))
        return fl_input_error("%s: bos_token: needed by the llama3 chat format", tok->model_dir);
    const char *eot = format == FL_CHAT_CHATML ? "<|im_end|>" : format == FL_CHAT_ZEPHYR ? eos : "<|eot_id|>";
    sbuf b = {0};
    fl_span *spans = fl_malloc(n_messages * sizeof *spans);
    size_t n_spans = 0;
    if (format == FL_CHAT_CHATML && strcmp(messages[0].role, "system")) {
        char *sys = chatml_default_system(tok->chat_template);
        if (sys) {
            puts_(&b, "<|im_start|>system\n");
            puts_(&b, sys);
            puts_(&b, "<|im_end|>\n");
            free(sys);
        }
    }
    if (format == FL_CHAT_LLAMA3) puts_(&b, bos);
    for (size_t i = 0; i < n_messages; i++) {
        const char *role = messages[i].role, *c = messages[i].content;
        size_t cs = 0, ce = message_len(&messages[i]);
        if (format == FL_CHAT_CHATML) { puts_(&b, "<|im_start|>"); puts_(&b, role); puts_(&b, "\n"); }
        else if (format == FL_CHAT_ZEPHYR) { puts_(&b, "<|"); puts_(&b, role); puts_(&b, "|>\n"); }
        else { puts_(&b, "<|start_header_id|>"); puts_(&b, role); puts_(&b, "<|end_header_id|>\n\n"); py_strip(c, &cs, &ce); }
        size_t start = b.n;
        put(&b, c + cs, ce - cs);
        puts_(&b, eot);
        if (!strcmp(role, "assistant")) spans[n_spans++] = (fl_span){start, b.n};
        if (format != FL_CHAT_LLAMA3) puts_(&b, "\n");
    }
    if (add_generation_prompt) {
        if (format == FL_CHAT_CHATML) puts_(&b, "<|im_start|>assistant\n");
        else if (format == FL_CHAT_ZEPHYR) puts_(&b, "<|assistant|>\n");
        else puts_(&b, "<|start_header_id|>assistant<|end_header_id|>\n\n");
    }
    out->text = b.p;
    out->len = b.n;
    out->assistant_bytes = spans;
    out->n_spans = n_spans;
    out->assistant_tokens = fl_malloc((n_spans ? n_spans : 1) * sizeof *out->assistant_tokens);
    out->ids.want_offsets = 1;
    int rc = fl_tokenizer_encode(tok, b.p, b.n, 0, &out->ids);
    if (rc) { fl_chat_rendered_free(out); return rc; }
    for (size_t s = 0; s < n_spans; s++) {
        size_t first = out->ids.n, last = 0;
        for (size_t i = 0; i < out->ids.n; i++) {
            uint32_t a = out->ids.offsets[2 * i], e = out->ids.offsets[2 * i + 1];
            if (a < spans[s].end && e > spans[s].start) {
                if (first == out->ids.n) first = i;
                last = i + 1;
            }
        }
        out->assistant_tokens[s] = first == out->ids.n ? (fl_span){0, 0} : (fl_span){first, last};
    }
    return 0;
}

void fl_chat_rendered_free(fl_chat_rendered *r) {
    free(r->text);
    fl_token_ids_free(&r->ids);
    free(r->assistant_bytes);
    free(r->assistant_tokens);
    memset(r, 0, sizeof *r);
}
