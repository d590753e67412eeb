/* chat_session.h — the conversation of `fastlora generate --chat`: the model's chat template (or
 * `--chat-template FILE`) run by the Jinja engine with add_generation_prompt, as transformers'
 * apply_chat_template(add_generation_prompt=True) renders it, so any template works (Llama 3.1+
 * with its dates and tools preamble, Qwen3's thinking, Gemma, Mistral, ...); and the token that
 * ends an assistant turn under that template, to stop generating at.
 *
 *     fl_chat_session s;
 *     if (fl_chat_session_init(&s, tok, NULL, "be brief")) ...      // folder's template, a system turn
 *     fl_token_ids ids = {0};
 *     fl_chat_session_prompt(&s, "hi", 2, &ids);   // history + user turn + generation prompt, tokenized
 *     ... generate until eos or s.end_of_turn ..., then fl_chat_session_reply(&s, text, len);
 *     fl_token_ids_free(&ids); fl_chat_session_free(&s);
 *
 * Not the decoding (infer/generate.h) nor the reading of turns (the command's).
 */
#ifndef FL_INFER_CHAT_SESSION_H
#define FL_INFER_CHAT_SESSION_H

#include <jansson.h>
#include <stdint.h>

#include "tokenizer/chat_template.h"

typedef struct {
    fl_tokenizer *tok;         // borrowed
    fl_chat_template *ct;
    json_t *messages;          // [{"role", "content"}, ...] so far
    int32_t end_of_turn;       // the special token after an assistant turn's text (-1: none found)
    int64_t now;               // strftime_now's time (0: the clock)
} fl_chat_session;

/* The template of template_path (NULL: the tokenizer folder's; an error naming what to pass when
 * it has none); a system message first when `system` is not NULL. */
int fl_chat_session_init(fl_chat_session *s, fl_tokenizer *tok, const char *template_path, const char *system);
/* Appends the user turn and renders the conversation with the generation prompt into *ids
 * (tokenized as apply_chat_template does: no post-processor; the template writes BOS). */
int fl_chat_session_prompt(fl_chat_session *s, const char *user, size_t len, fl_token_ids *ids);
/* Appends the assistant's reply (its text, special tokens left out). */
void fl_chat_session_reply(fl_chat_session *s, const char *text, size_t len);
void fl_chat_session_free(fl_chat_session *s);

#endif
