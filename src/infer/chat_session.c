/* chat_session.c — generate --chat's conversation through the chat template (chat_session.h).
 * Not the template engine (src/template/), nor transformers' input conventions
 * (tokenizer/chat_template.c). */
#include "infer/chat_session.h"

#include <string.h>

#include "common/error.h"

int fl_chat_session_init(fl_chat_session *s, fl_tokenizer *tok, const char *template_path, const char *system) {
    memset(s, 0, sizeof *s);
    s->tok = tok;
    s->end_of_turn = -1;
    FL_TRY(fl_chat_template_for_file(&s->ct, tok, template_path));
    s->messages = json_array();
    if (system) json_array_append_new(s->messages, json_pack("{s:s, s:s}", "role", "system", "content", system));
    s->end_of_turn = fl_chat_template_end_of_turn(tok, s->ct);
    return 0;
}

int fl_chat_session_prompt(fl_chat_session *s, const char *user, size_t len, fl_token_ids *ids) {
    json_array_append_new(s->messages, json_pack("{s:s, s:s%}", "role", "user", "content", user, len));
    fl_chat_input in = {.messages = s->messages, .add_generation_prompt = 1, .now = s->now};
    fl_tpl_output out;
    FL_TRY(fl_chat_template_render(s->ct, &in, &out));
    int rc = fl_tokenizer_encode(s->tok, out.text, out.len, 0, ids);
    fl_tpl_output_free(&out);
    return rc;
}

void fl_chat_session_reply(fl_chat_session *s, const char *text, size_t len) {
    json_array_append_new(s->messages, json_pack("{s:s, s:s%}", "role", "assistant", "content", text, len));
}

void fl_chat_session_free(fl_chat_session *s) {
    fl_chat_template_free(s->ct);
    json_decref(s->messages);
    memset(s, 0, sizeof *s);
}
