/* tokenizer_vocab.h — read access to a loaded tokenizer's tables, for writing them into other
 * formats (GGUF): every id's token as the tokenizer's files spell it, what kind of token it is,
 * the merges in rank order, the post-processor's special ids and the chat template.
 *
 * Byte-level models store raw bytes internally; here their tokens come back in the GPT-2
 * byte-to-unicode spelling of vocab.json / tokenizer.json ("Ġthe"), added tokens as their content,
 * SentencePiece-style tokens as their piece ("▁the", "<0x0A>").
 * Not for encoding (tokenizer.h) and not a writer of any format.
 */
#ifndef FL_TOKENIZER_VOCAB_H
#define FL_TOKENIZER_VOCAB_H

#include <stddef.h>
#include <stdint.h>

#include "tokenizer/tokenizer.h"

typedef enum {
    FL_TOKEN_ABSENT = 0,   /* no token has this id */
    FL_TOKEN_NORMAL,       /* a model vocabulary entry */
    FL_TOKEN_BYTE,         /* a byte-fallback token <0xNN> */
    FL_TOKEN_UNKNOWN,      /* the model's unk_token */
    FL_TOKEN_ADDED,        /* an added token that is not special */
    FL_TOKEN_SPECIAL,      /* an added token marked special */
} fl_token_kind;

/* Whether tokens are byte-level (GPT-2 style) rather than SentencePiece-style pieces. */
int fl_tokenizer_is_byte_level(const fl_tokenizer *tok);
/* Whether the pipeline puts a "▁" before the text: a Prepend normalizer (Llama-2's SentencePiece
 * dummy prefix) or a Metaspace whose prepend_scheme is not "never"; Gemma's has none. */
int fl_tokenizer_prepends_space(const fl_tokenizer *tok);
fl_token_kind fl_tokenizer_token_kind(const fl_tokenizer *tok, int32_t id);
/* The token's text (file spelling) as a malloc'd string of *len bytes, or NULL when absent. */
char *fl_tokenizer_token_text(const fl_tokenizer *tok, int32_t id, size_t *len);

/* The merges ordered by rank: (*left)[i] + (*right)[i] -> (*merged)[i]; malloc'd arrays of *n ids. */
void fl_tokenizer_merges(const fl_tokenizer *tok, int32_t **left, int32_t **right, int32_t **merged, size_t *n);

/* The ids the post-processor puts before / after a sequence with FL_ENCODE_ADD_SPECIAL. */
int fl_tokenizer_post_ids(const fl_tokenizer *tok, const int32_t **prefix, const int32_t **suffix, int *n_suffix);
int32_t fl_tokenizer_unk_id(const fl_tokenizer *tok);          /* -1 when none */
const char *fl_tokenizer_chat_template(const fl_tokenizer *tok); /* NULL when the folder has none */

#endif
