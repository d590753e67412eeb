/* tokenizer.h — the public API of fastlora's tokenizer: Hugging Face BPE tokenizers in C.
 *
 * A tokenizer is loaded from a model folder, the way transformers finds it: tokenizer.json if
 * present, else vocab.json + merges.txt (Qwen2), else a tiktoken tokenizer.model / original/
 * tokenizer.model (Llama-3), plus tokenizer_config.json (added/special tokens, BOS/EOS, chat
 * template). It encodes UTF-8 text to ids exactly as HF `tokenizers` does with that file (byte-level
 * BPE: Qwen2/2.5, SmolLM2, Llama-3, Mistral's Tekken; SentencePiece-style BPE with byte fallback:
 * Llama-2/TinyLlama, Mistral v1 and v3),
 * decodes ids back to text, and renders chat conversations (ChatML, Zephyr, Llama-3) with the
 * assistant spans needed for loss masking.
 *
 * What it is not: a Jinja interpreter (chat formats are built in and recognized by the template's
 * content), a SentencePiece .model (protobuf) reader, a WordPiece/Unigram implementation, or
 * thread-safe: one fl_tokenizer per thread (encode updates a word cache).
 *
 * Errors: functions return 0 or an error status (error.h); fl_last_error() holds one line naming
 * the file and the field, e.g. "tokenizer.json: model.type: 'Unigram' is not supported (BPE only)".
 *
 *     fl_tokenizer *tok;
 *     if (fl_tokenizer_load(&tok, "../shared/models/Qwen2.5-0.5B")) { puts(fl_last_error()); ... }
 *     fl_token_ids ids = {0};
 *     fl_tokenizer_encode(tok, "Hello world", 11, FL_ENCODE_ADD_SPECIAL, &ids);
 *     char *text; size_t len;
 *     fl_tokenizer_decode(tok, ids.ids, ids.n, 0, &text, &len);
 *     free(text); fl_token_ids_free(&ids); fl_tokenizer_free(tok);
 */
#ifndef FL_TOKENIZER_H
#define FL_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

typedef struct fl_tokenizer fl_tokenizer;

/* A growable list of ids; zero-initialize, reuse across calls (encode appends), free once. The
 * optional `offsets` (2 per id: start, end byte in the encoded text) are filled when the caller sets
 * `want_offsets` before encoding. */
typedef struct {
    int32_t *ids;      // (n,)
    size_t n, cap;
    int want_offsets;
    uint32_t *offsets; // (n, 2) when want_offsets
} fl_token_ids;
void fl_token_ids_free(fl_token_ids *ids);

/* Loads the tokenizer of a model folder. On failure *out is NULL and the error names the file. */
int fl_tokenizer_load(fl_tokenizer **out, const char *model_dir);
void fl_tokenizer_free(fl_tokenizer *tok);

enum {
    FL_ENCODE_ADD_SPECIAL = 1,   // apply the post-processor (BOS for Llama/TinyLlama), as HF add_special_tokens=True
    FL_ENCODE_SPLIT_SPECIAL = 2, // encode special tokens written in the text as plain text (HF split_special_tokens)
};

/* Encodes `len` bytes of UTF-8 `text`, appending to *out. Invalid UTF-8 is an input error. */
int fl_tokenizer_encode(fl_tokenizer *tok, const char *text, size_t len, int flags, fl_token_ids *out);

/* Decodes ids to a malloc'd NUL-terminated UTF-8 string, as HF decode(ids, skip_special_tokens):
 * invalid byte sequences (from cut multi-byte characters) become U+FFFD as HF does. */
int fl_tokenizer_decode(const fl_tokenizer *tok, const int32_t *ids, size_t n, int skip_special,
                        char **out, size_t *out_len);

int32_t fl_tokenizer_bos_id(const fl_tokenizer *tok);   // -1 when the model has none
int32_t fl_tokenizer_eos_id(const fl_tokenizer *tok);   // tokenizer_config eos_token, -1 when none
int32_t fl_tokenizer_vocab_size(const fl_tokenizer *tok); // 1 + largest id (model vocab and added tokens)
int32_t fl_tokenizer_token_to_id(const fl_tokenizer *tok, const char *token); // added/special token or vocab entry, -1 if none
const char *fl_tokenizer_kind(const fl_tokenizer *tok);  // "byte-level BPE", "SentencePiece BPE", ...

/* ---- chat ------------------------------------------------------------------------------------ */

typedef enum { FL_CHAT_AUTO = 0, FL_CHAT_CHATML, FL_CHAT_ZEPHYR, FL_CHAT_LLAMA3 } fl_chat_format;

typedef struct {
    const char *role;    // "system", "user" or "assistant"
    const char *content; // UTF-8
    size_t content_len;  // bytes of content (it may hold U+0000); 0: content is NUL-terminated
} fl_chat_message;

typedef struct { size_t start, end; } fl_span; // half-open

/* A rendered conversation: the exact string the model's Jinja template produces, its ids
 * (encode(text) without post-processor, as apply_chat_template(tokenize=True)), and the assistant
 * spans: the content of each assistant message plus the end-of-turn marker after it (`<|im_end|>`,
 * `</s>`, `<|eot_id|>`): what the model should learn to write. Token span i covers the ids whose
 * bytes overlap byte span i; assistant_mask is the loss mask, transformers' assistant_masks (the
 * same as the union of the token spans when spans are ordered and apart, as every real template's
 * are; chat_template.c applies transformers' one-pass rule for the rest). */
typedef struct {
    char *text;
    size_t len;
    fl_token_ids ids;
    fl_span *assistant_bytes;  // (n_spans,)
    fl_span *assistant_tokens; // (n_spans,)
    size_t n_spans;
    uint8_t *assistant_mask;   // (ids.n,) 1 for a token the loss counts
} fl_chat_rendered;

/* The chat format of the folder's template (recognized by content), or an error listing the
 * built-in formats when the template is missing or unknown. */
int fl_tokenizer_chat_format(const fl_tokenizer *tok, fl_chat_format *out);
const char *fl_chat_format_name(fl_chat_format format);

/* Renders messages with `format` (FL_CHAT_AUTO: the folder's) and tokenizes the result. */
int fl_tokenizer_chat_render(fl_tokenizer *tok, fl_chat_format format, const fl_chat_message *messages,
                             size_t n_messages, int add_generation_prompt, fl_chat_rendered *out);
void fl_chat_rendered_free(fl_chat_rendered *r);

#endif
