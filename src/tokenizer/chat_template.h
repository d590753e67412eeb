/* chat_template.h — a model's chat template run by the Jinja engine (src/template/) with
 * transformers' apply_chat_template conventions, and the conversation encodings the trainer needs.
 *
 * transformers' conventions applied here (transformers 5.x tokenization_utils_base.py and
 * utils/chat_template_utils.py): message keys whose value is null are dropped; a message with
 * `reasoning_content`, `thinking` or `reasoning` gets `thinking` and `reasoning_content` both;
 * `tools` and `documents` are always passed (None when absent); the special tokens of
 * tokenizer_config.json (bos_token, eos_token, unk_token, sep_token, pad_token, cls_token,
 * mask_token) are variables, and caller keyword arguments (chat_template_kwargs:
 * enable_thinking, date_string, ...) override them.
 *
 * Assistant spans for loss masking (fl_chat_encode): from the template's {% generation %} blocks
 * when it has them (transformers' return_assistant_tokens_mask: one pass over the tokens and the
 * spans in order, a token in the mask when its bytes overlap the current span; template.h says
 * what a span is), otherwise turn by turn: for each assistant message i the
 * conversation is rendered up to message i with the generation prompt and up to message i
 * inclusive; the bytes between the two (trailing whitespace excluded: it formats the next turn)
 * are the span, provided both renders are prefixes of the whole conversation's text and the first
 * holds a generation prompt (a template writing it inside the message loop writes none for an
 * assistant turn that opens the conversation: the span then starts where the content does, found
 * by rendering the turn with two different contents). A template
 * that rewrites earlier turns when later ones follow (e.g. drops past reasoning) makes that
 * condition fail for those turns: they are then located by their rendered text alone, and a turn
 * whose text is not in the conversation is an error naming it.
 *
 * Not here: the Jinja language (template/), tokenization (tokenizer.h).
 */
#ifndef FL_CHAT_TEMPLATE_H
#define FL_CHAT_TEMPLATE_H

#include "template/template.h"
#include "tokenizer/tokenizer.h"

#include <jansson.h>

typedef struct fl_chat_template fl_chat_template;

/* Parses template text with the given special tokens (a JSON object {"bos_token": str, ...}, or
 * NULL). Parse errors name the template's line and column. */
int fl_chat_template_new(fl_chat_template **out, const char *text, size_t len, json_t *special_tokens);
/* The template of a tokenizer's folder, or `override_text` (e.g. `--chat-template FILE`) when not
 * NULL, with the special tokens of the folder's tokenizer_config.json. An error when the folder
 * has no template and none is given. */
int fl_chat_template_for(fl_chat_template **out, const fl_tokenizer *tok, const char *override_text, size_t override_len);
/* Reads a template file (`--chat-template FILE`, the tokenizer files' size limit) into *text
 * (malloc'd, *len bytes) after checking that it parses; errors name the file ("FILE: chat
 * template: line 3 column 17: ..."). */
int fl_chat_template_read_file(const char *path, char **text, size_t *len);
/* fl_chat_template_for with the text of the file `path`, or the folder's template when NULL. */
int fl_chat_template_for_file(fl_chat_template **out, const fl_tokenizer *tok, const char *path);
/* FL_CHAT_AUTO: the folder's template (an error listing the built-in formats when it has none);
 * FL_CHAT_CHATML/ZEPHYR/LLAMA3: that built-in format as a template (chat.c). */
int fl_chat_template_builtin(fl_chat_template **out, const fl_tokenizer *tok, fl_chat_format format);
void fl_chat_template_free(fl_chat_template *ct);
int fl_chat_template_has_generation(const fl_chat_template *ct);

/* One conversation as the caller has it (borrowed JSON; only `messages` is required). */
typedef struct {
    json_t *messages;            // list of {"role", "content", "tool_calls", "reasoning_content", ...}
    json_t *tools;               // list of tool schemas, or NULL
    json_t *documents;           // list, or NULL
    json_t *kwargs;              // object of extra template variables (chat_template_kwargs), or NULL
    int add_generation_prompt;
    int64_t now;                 // strftime_now's time (0: the clock); pin it for reproducible data
} fl_chat_input;

/* Renders exactly as transformers' apply_chat_template(tokenize=False) does. */
int fl_chat_template_render(const fl_chat_template *ct, const fl_chat_input *in, fl_tpl_output *out);

/* Renders, tokenizes (encode without the post-processor, as apply_chat_template(tokenize=True))
 * and finds the assistant spans (see above): out->assistant_bytes/_tokens, one per span. */
int fl_chat_encode(fl_tokenizer *tok, const fl_chat_template *ct, const fl_chat_input *in, fl_chat_rendered *out);

/* The token that ends an assistant turn under this template: the first token after the assistant's
 * text in a probe conversation (user, assistant), when it is an added/special token
 * (<|im_end|>, <|eot_id|>, <end_of_turn>, </s>, ...); -1 when there is none (text follows, or the
 * template refuses the probe). What generation stops at besides EOS. */
int32_t fl_chat_template_end_of_turn(fl_tokenizer *tok, const fl_chat_template *ct);

#endif
