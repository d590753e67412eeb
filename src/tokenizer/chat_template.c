/* chat_template.c — a folder's chat template through the Jinja engine with transformers'
 * apply_chat_template conventions, and conversation encoding with assistant spans
 * (chat_template.h says which conventions and how spans are found). Not here: the Jinja
 * language (src/template/), the legacy struct API and built-in formats (chat.c).
 */
#include "tokenizer/chat_template.h"

#include "common/error.h"
#include "io/file_util.h"
#include "tokenizer/tokenizer_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fl_chat_template {
    fl_tpl *tpl;
    json_t *special; // {"bos_token": ..., ...}
};

int fl_chat_template_new(fl_chat_template **out, const char *text, size_t len, json_t *special_tokens) {
    *out = NULL;
    fl_tpl *t;
    FL_TRY(fl_tpl_parse(text, len, &t));
    fl_chat_template *ct = fl_calloc(1, sizeof *ct);
    ct->tpl = t;
    ct->special = special_tokens ? json_deep_copy(special_tokens) : json_object();
    *out = ct;
    return 0;
}

/* The named special tokens of DIR/tokenizer_config.json (a string or {"content": str}). */
static json_t *folder_special_tokens(const char *dir) {
    static const char *const names[] = {"bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"};
    json_t *special = json_object();
    char path[4096];
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    json_t *cfg = NULL;
    if (fl_file_exists(path) && fl_file_load_json(path, FL_FILE_TOKENIZER, 0, &cfg) == 0) {
        for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
            json_t *v = json_object_get(cfg, names[i]);
            if (json_is_object(v)) v = json_object_get(v, "content");
            if (json_is_string(v)) json_object_set(special, names[i], v);
        }
    }
    fl_clear_error();
    json_decref(cfg);
    return special;
}

int fl_chat_template_for(fl_chat_template **out, const fl_tokenizer *tok, const char *override_text, size_t override_len) {
    *out = NULL;
    const char *text = override_text ? override_text : tok->chat_template;
    size_t len = override_text ? override_len : text ? strlen(text) : 0;
    if (!text)
        return fl_input_error("%s: chat_template: none (tokenizer_config.json / chat_template.jinja); pass --chat-template FILE",
                              tok->model_dir);
    json_t *special = folder_special_tokens(tok->model_dir);
    int rc = fl_chat_template_new(out, text, len, special);
    json_decref(special);
    return rc;
}

/* Prefixes the last error with `path` (copied first: the message buffer is the one written). */
static int error_in_file(const char *path, int rc) {
    char why[1024];
    snprintf(why, sizeof why, "%s", fl_last_error());
    return fl_fail(rc, "%s: %s", path, why);
}

int fl_chat_template_read_file(const char *path, char **text, size_t *len) {
    *text = NULL;
    FL_TRY(fl_file_read_all(path, FL_FILE_TOKENIZER, text, len));
    fl_tpl *t = NULL;
    int rc = fl_tpl_parse(*text, *len, &t);
    fl_tpl_free(t);
    if (!rc) return 0;
    free(*text);
    *text = NULL;
    return error_in_file(path, rc);
}

int fl_chat_template_for_file(fl_chat_template **out, const fl_tokenizer *tok, const char *path) {
    *out = NULL;
    if (!path) return fl_chat_template_for(out, tok, NULL, 0);
    char *text;
    size_t len;
    FL_TRY(fl_chat_template_read_file(path, &text, &len));
    int rc = fl_chat_template_for(out, tok, text, len);
    free(text);
    return rc ? error_in_file(path, rc) : 0;
}

void fl_chat_template_free(fl_chat_template *ct) {
    if (!ct) return;
    fl_tpl_free(ct->tpl);
    json_decref(ct->special);
    free(ct);
}

int fl_chat_template_has_generation(const fl_chat_template *ct) { return fl_tpl_has_generation(ct->tpl); }

/* transformers' _normalize_chat_messages (null values dropped) then _alias_reasoning_fields. */
static int normalize_messages(json_t *messages, size_t count, json_t **out) {
    *out = NULL;
    if (!json_is_array(messages)) return fl_input_error("messages: expected a list of {\"role\", \"content\", ...}");
    json_t *list = json_array();
    for (size_t i = 0; i < count; i++) {
        json_t *m = json_array_get(messages, i), *n = json_object(), *v;
        const char *k;
        if (!json_is_object(m)) {
            json_decref(n);
            json_decref(list);
            return fl_input_error("messages[%zu]: expected an object", i);
        }
        json_t *reasoning = NULL;
        static const char *const fields[] = {"reasoning_content", "thinking", "reasoning"};
        for (size_t f = 0; f < 3 && !reasoning; f++) {
            json_t *r = json_object_get(m, fields[f]);
            if (r && !json_is_null(r)) reasoning = r;
        }
        if (reasoning) json_object_set(n, "thinking", reasoning);
        json_object_foreach(m, k, v) if (!json_is_null(v)) json_object_set(n, k, v);
        if (reasoning) json_object_set(n, "reasoning_content", reasoning);
        json_array_append_new(list, n);
    }
    *out = list;
    return 0;
}

/* The top-level variables of one render: special tokens, then the caller's kwargs over them,
 * then messages, tools, documents, add_generation_prompt. */
static int build_vars(const fl_chat_template *ct, const fl_chat_input *in, size_t n_messages, int gen, json_t **out) {
    json_t *msgs;
    FL_TRY(normalize_messages(in->messages, n_messages, &msgs));
    json_t *vars = json_deep_copy(ct->special);
    if (in->kwargs && !json_is_object(in->kwargs)) {
        json_decref(msgs);
        json_decref(vars);
        return fl_input_error("chat_template_kwargs: expected an object");
    }
    if (in->kwargs) json_object_update(vars, in->kwargs);
    json_object_set_new(vars, "messages", msgs);
    json_object_set(vars, "tools", in->tools ? in->tools : json_null());
    json_object_set(vars, "documents", in->documents ? in->documents : json_null());
    json_object_set_new(vars, "add_generation_prompt", json_boolean(gen));
    *out = vars;
    return 0;
}

static int render_prefix(const fl_chat_template *ct, const fl_chat_input *in, size_t n_messages, int gen, fl_tpl_output *out) {
    json_t *vars = NULL;
    memset(out, 0, sizeof *out);
    FL_TRY(build_vars(ct, in, n_messages, gen, &vars));
    fl_tpl_limits lim = {.now = in->now};
    int rc = fl_tpl_render(ct->tpl, vars, &lim, out);
    json_decref(vars);
    return rc;
}

int fl_chat_template_render(const fl_chat_template *ct, const fl_chat_input *in, fl_tpl_output *out) {
    return render_prefix(ct, in, json_array_size(in->messages), in->add_generation_prompt, out);
}

static int is_prefix(const fl_tpl_output *p, const fl_tpl_output *full, size_t n) {
    return n <= full->len && n <= p->len && !memcmp(p->text, full->text, n);
}

static size_t trimmed_end(const fl_tpl_output *q) {
    size_t end = q->len;
    while (end > 0 && (q->text[end - 1] == ' ' || q->text[end - 1] == '\n' || q->text[end - 1] == '\t' || q->text[end - 1] == '\r')) end--;
    return end;
}

/* Renders messages[:i+1] with message i's content replaced by `mark` (a one-byte string). */
static int render_marked(const fl_chat_template *ct, const fl_chat_input *in, size_t i, const char *mark, fl_tpl_output *out) {
    json_t *list = json_array();
    for (size_t k = 0; k < i; k++) json_array_append(list, json_array_get(in->messages, k));
    json_t *m = json_copy(json_array_get(in->messages, i));
    json_object_set_new(m, "content", json_string(mark));
    json_array_append_new(list, m);
    fl_chat_input marked = *in;
    marked.messages = list;
    int rc = render_prefix(ct, &marked, i + 1, 0, out);
    json_decref(list);
    return rc;
}

/* Where message i's content starts, when messages[:i] cannot be rendered as a prefix (a template
 * that needs a message, e.g. messages[0] of an empty list, or puts its default system prompt
 * inside the loop): render messages[:i+1] with the content "\x01" and with "\x02"; they agree
 * up to the content. 0 when that prefix is not the whole conversation's or the content is not a
 * non-empty string. */
static int content_start(const fl_chat_template *ct, const fl_chat_input *in, const fl_tpl_output *full, size_t i, size_t *at) {
    *at = 0;
    json_t *content = json_object_get(json_array_get(in->messages, i), "content");
    if (!json_is_string(content) || !json_string_length(content)) return 0;
    fl_tpl_output a, b;
    memset(&b, 0, sizeof b);
    int ok = !render_marked(ct, in, i, "\x01", &a) && !render_marked(ct, in, i, "\x02", &b);
    if (!ok) fl_clear_error();
    size_t n = 0;
    while (ok && n < a.len && n < b.len && a.text[n] == b.text[n]) n++;
    ok = ok && n < a.len && is_prefix(&a, full, n);
    if (ok) *at = n;
    fl_tpl_output_free(&a);
    fl_tpl_output_free(&b);
    return ok;
}

/* The span of assistant message i, turn by turn (chat_template.h). */
static int turn_span(const fl_chat_template *ct, const fl_chat_input *in, const fl_tpl_output *full, size_t i, size_t after,
                     fl_span *span) {
    fl_tpl_output p, q, h;
    memset(&p, 0, sizeof p);
    memset(&h, 0, sizeof h);
    int rc = render_prefix(ct, in, i + 1, 0, &q);
    int have_p = !rc && render_prefix(ct, in, i, 1, &p) == 0;
    if (!rc && !have_p) fl_clear_error(); /* messages[:i] alone may not render (i = 0): content_start below */
    /* p ends where the turn's content starts only when it holds a generation prompt: a template
     * that writes it inside the message loop (TinyLlama's) writes none for messages[:0] */
    int have_prompt = have_p && render_prefix(ct, in, i, 0, &h) == 0 && h.len < p.len && is_prefix(&h, &p, h.len);
    if (have_p && !have_prompt) fl_clear_error();
    size_t end = rc ? 0 : trimmed_end(&q), start = 0;
    if (!rc && have_prompt && is_prefix(&p, full, p.len) && is_prefix(&q, full, end) && p.len <= end && p.len >= after)
        *span = (fl_span){p.len, end};
    else if (!rc && is_prefix(&q, full, end) && content_start(ct, in, full, i, &start) && start >= after && start <= end)
        *span = (fl_span){start, end};
    else if (!rc) { // a template that renders history differently: find the turn's own text
        size_t common = 0;
        while (have_p && common < p.len && common < end && p.text[common] == q.text[common]) common++;
        size_t n = end - common;
        const char *hit = NULL;
        for (size_t k = after; n && k + n <= full->len && !hit; k++)
            if (!memcmp(full->text + k, q.text + common, n)) hit = full->text + k;
        if (!hit) rc = fl_input_error("messages[%zu]: the template renders this assistant turn differently inside the whole conversation; cannot find its span (use a template with {%% generation %%} blocks)", i);
        else *span = (fl_span){(size_t)(hit - full->text), (size_t)(hit - full->text) + n};
    }
    fl_tpl_output_free(&p);
    fl_tpl_output_free(&q);
    fl_tpl_output_free(&h);
    return rc;
}

static int assistant_spans(const fl_chat_template *ct, const fl_chat_input *in, const fl_tpl_output *full, fl_span **out, size_t *n_out) {
    size_t n = json_array_size(in->messages), k = 0, after = 0;
    *out = fl_malloc((n + full->n_gen + 1) * sizeof **out);
    *n_out = 0;
    if (fl_tpl_has_generation(ct->tpl)) {
        for (size_t i = 0; i < full->n_gen; i++) (*out)[k++] = (fl_span){full->gen[i].start, full->gen[i].end};
        *n_out = k;
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        const char *role = json_string_value(json_object_get(json_array_get(in->messages, i), "role"));
        if (!role || strcmp(role, "assistant")) continue;
        int rc = turn_span(ct, in, full, i, after, &(*out)[k]);
        if (rc) return rc;
        after = (*out)[k++].end;
    }
    *n_out = k;
    return 0;
}

int fl_chat_encode(fl_tokenizer *tok, const fl_chat_template *ct, const fl_chat_input *in, fl_chat_rendered *out) {
    memset(out, 0, sizeof *out);
    fl_tpl_output full;
    FL_TRY(fl_chat_template_render(ct, in, &full));
    fl_span *spans = NULL;
    size_t n_spans = 0;
    int rc = assistant_spans(ct, in, &full, &spans, &n_spans);
    out->text = full.text;
    out->len = full.len;
    full.text = NULL;
    fl_tpl_output_free(&full);
    out->assistant_bytes = spans;
    out->n_spans = n_spans;
    out->assistant_tokens = fl_malloc((n_spans ? n_spans : 1) * sizeof *out->assistant_tokens);
    out->ids.want_offsets = 1;
    if (!rc) rc = fl_tokenizer_encode(tok, out->text, out->len, 0, &out->ids);
    if (rc) { fl_chat_rendered_free(out); return rc; }
    for (size_t s = 0; s < n_spans; s++) { // tokens overlapping the span (transformers' mask rule)
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
    out->assistant_mask = fl_calloc(out->ids.n + 1, 1);
    size_t s = 0; // transformers' assistant_masks: one pass over the tokens, the spans in their order
    for (size_t i = 0; i < out->ids.n; i++) {
        uint32_t a = out->ids.offsets[2 * i], e = out->ids.offsets[2 * i + 1];
        while (s < n_spans && a >= spans[s].end) s++;
        if (s == n_spans) break;
        if (e > spans[s].start) out->assistant_mask[i] = 1;
    }
    return 0;
}

int32_t fl_chat_template_end_of_turn(fl_tokenizer *tok, const fl_chat_template *ct) {
    static const char probe[] = "fastlora-end-of-turn-probe";
    json_t *msgs = json_pack("[{s:s, s:s}, {s:s, s:s}]", "role", "user", "content", "Hi", "role", "assistant", "content", probe);
    fl_chat_input in = {.messages = msgs};
    fl_tpl_output out;
    fl_token_ids ids = {0};
    ids.want_offsets = 1;
    int32_t id = -1;
    int rendered = fl_chat_template_render(ct, &in, &out) == 0;
    const char *at = rendered ? strstr(out.text, probe) : NULL;
    if (at && fl_tokenizer_encode(tok, out.text, out.len, 0, &ids) == 0) {
        size_t end = (size_t)(at - out.text) + sizeof probe - 1;
        for (size_t i = 0; i < ids.n && id < 0; i++)
            if (ids.offsets[2 * i] >= end) id = fl_added_tokens_by_id(&tok->added, ids.ids[i]) ? ids.ids[i] : -2;
    }
    fl_clear_error();
    if (rendered) fl_tpl_output_free(&out);
    fl_token_ids_free(&ids);
    json_decref(msgs);
    return id < 0 ? -1 : id;
}
