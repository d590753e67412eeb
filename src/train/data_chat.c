/* data_chat.c — a `{"messages": [...]}` record to a training document: the conversation rendered
 * by the model's chat template (tokenizer/chat_template.h, the Jinja engine) exactly as
 * transformers' apply_chat_template renders it, with the record's `tools`, `documents`,
 * `chat_template_kwargs` and `add_generation_prompt`; the loss mask is the assistant spans:
 * the template's {% generation %} blocks when it has them (transformers'
 * return_assistant_tokens_mask), otherwise turn by turn (chat_template.h says how).
 * No extra EOS: the template's end-of-turn is what the model learns to write.
 * ShareGPT rows ({"conversations": [{"from": "human"|"gpt"|..., "value"}]}) are mapped to
 * messages first (map_messages).
 *
 * Not here: the other record shapes and the file readers (data.c), bad-record reports
 * (data_report.c), the Jinja language (src/template/).
 */
#include "train/data_internal.h"

#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer_vocab.h"

/* The checks transformers makes before rendering, and the one that makes a record worth training
 * on: a non-empty list of objects with a string role, at least one of them the assistant's. */
static int check_messages(json_t *list) {
    if (!json_is_array(list) || json_array_size(list) == 0)
        return fl_input_error("field 'messages': expected a non-empty list of {\"role\", \"content\"}");
    int n_assistant = 0;
    for (size_t i = 0; i < json_array_size(list); i++) {
        json_t *m = json_array_get(list, i), *role = json_object_get(m, "role");
        if (!json_is_object(m)) return fl_input_error("field 'messages[%zu]': expected an object", i);
        if (!json_is_string(role)) return fl_input_error("field 'messages[%zu].role': expected a string", i);
        n_assistant += !strcmp(json_string_value(role), "assistant");
    }
    if (!n_assistant) return fl_input_error("field 'messages': no assistant message (nothing to learn)");
    return 0;
}

/* An optional field of the record: absent and null are NULL; otherwise it must be of the kind. */
static int optional_field(json_t *root, const char *key, int want_object, json_t **out) {
    json_t *v = json_object_get(root, key);
    *out = v && !json_is_null(v) ? v : NULL;
    if (*out && want_object && !json_is_object(*out)) return fl_input_error("field '%s': expected an object", key);
    if (*out && !want_object && !json_is_array(*out)) return fl_input_error("field '%s': expected a list", key);
    return 0;
}

/* ShareGPT and other spellings of a message, to transformers' {"role", "content"}:
 *   --fields role=X / content=Y     message[X] / message[Y] read as role / content
 *   {"from", "value"}               ShareGPT's keys, when role / content are absent
 *   human -> user, gpt -> assistant ShareGPT's roles (system, tool, user, assistant as they are)
 * The record's list is replaced by the mapped copy (root owns it); other message keys are kept. */
static void map_messages(json_t *root, const fl_data_options *opt) {
    json_t *list = json_object_get(root, "messages");
    if (!json_is_array(list)) return;
    const char *role_key = "from", *content_key = "value";
    for (int i = 0; i < opt->n_field_map; i++) {
        if (!strcmp(opt->field_to[i], "role")) role_key = opt->field_from[i];
        if (!strcmp(opt->field_to[i], "content")) content_key = opt->field_from[i];
    }
    int needed = 0;
    for (size_t i = 0; i < json_array_size(list) && !needed; i++) {
        json_t *m = json_array_get(list, i), *role = json_object_get(m, "role");
        needed = json_is_object(m) && (!role || !json_object_get(m, "content") || strcmp(role_key, "from") ||
                                       strcmp(content_key, "value") || (json_is_string(role) &&
                                       (!strcmp(json_string_value(role), "human") || !strcmp(json_string_value(role), "gpt"))));
    }
    if (!needed) return;
    json_t *mapped = json_array();
    for (size_t i = 0; i < json_array_size(list); i++) {
        json_t *m = json_array_get(list, i);
        if (!json_is_object(m)) { json_array_append(mapped, m); continue; }
        json_t *c = json_copy(m), *role = json_object_get(m, role_key), *content = json_object_get(m, content_key);
        if (role && (strcmp(role_key, "from") || !json_object_get(m, "role"))) json_object_set(c, "role", role);
        if (content && (strcmp(content_key, "value") || !json_object_get(m, "content"))) json_object_set(c, "content", content);
        json_t *r = json_object_get(c, "role");
        if (json_is_string(r) && !strcmp(json_string_value(r), "human")) json_object_set_new(c, "role", json_string("user"));
        if (json_is_string(r) && !strcmp(json_string_value(r), "gpt")) json_object_set_new(c, "role", json_string("assistant"));
        json_array_append_new(mapped, c);
    }
    json_object_set_new(root, "messages", mapped);
}

/* Fills in (borrowed from root) from the record's fields. */
static int chat_input(json_t *root, const fl_data_options *opt, fl_chat_input *in) {
    memset(in, 0, sizeof *in);
    map_messages(root, opt);
    in->messages = json_object_get(root, "messages");
    FL_TRY(check_messages(in->messages));
    FL_TRY(optional_field(root, "tools", 0, &in->tools));
    FL_TRY(optional_field(root, "documents", 0, &in->documents));
    FL_TRY(optional_field(root, "chat_template_kwargs", 1, &in->kwargs));
    json_t *gen = json_object_get(root, "add_generation_prompt");
    if (gen && !json_is_boolean(gen) && !json_is_null(gen)) return fl_input_error("field 'add_generation_prompt': expected true or false");
    in->add_generation_prompt = json_is_true(gen);
    in->now = opt->chat_now;
    return 0;
}

/* The rendered conversation to (ids, mask): mask[t] = 1 for the tokens of the assistant spans. */
static void rendered_doc(const fl_chat_rendered *r, fl_doc *doc) {
    doc->n = (int)r->ids.n;
    doc->ids = fl_malloc(sizeof(int32_t) * (r->ids.n + 1));
    doc->mask = fl_calloc(r->ids.n + 1, 1);
    memcpy(doc->ids, r->ids.ids, sizeof(int32_t) * r->ids.n);
    memcpy(doc->mask, r->assistant_mask, r->ids.n);
}

int fl_data_encode_messages(json_t *root, fl_tokenizer *tok, const fl_data_options *opt, fl_doc *doc) {
    memset(doc, 0, sizeof *doc);
    fl_chat_input in;
    FL_TRY(chat_input(root, opt, &in));
    const fl_chat_template *ct = opt->chat_template;
    fl_chat_template *own = NULL;
    if (!ct) { /* a caller without a run's compiled template (fl_data_parse_line alone): this record's */
        FL_TRY(fl_chat_template_for(&own, tok, NULL, 0));
        ct = own;
    }
    fl_chat_rendered r;
    int status = fl_chat_encode(tok, ct, &in, &r);
    fl_chat_template_free(own);
    if (status) return status;
    if (r.n_spans == 0)
        status = fl_input_error("the chat template marks no assistant tokens (its {%% generation %%} blocks are empty here)");
    else
        rendered_doc(&r, doc);
    fl_chat_rendered_free(&r);
    return status;
}

int fl_data_chat_template(fl_tokenizer *tok, const char *path, fl_chat_template **out) {
    *out = NULL;
    if (!tok) return 0;
    if (path) return fl_chat_template_for_file(out, tok, path);
    if (!fl_tokenizer_chat_template(tok)) return 0;
    if (fl_chat_template_for(out, tok, NULL, 0)) { fl_clear_error(); *out = NULL; } /* each messages record then says why */
    return 0;
}
