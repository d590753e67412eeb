/* tokenizer.c — the encode pipeline and the small accessors of fl_tokenizer.
 *
 * encode = (1) split out added tokens (leftmost-longest, added_tokens.c), then for each segment of
 * text between them (2) normalize (normalize.c), (3) pre-tokenize (pretokenize.c), (4) BPE each
 * pre-token (bpe.c); finally (5) the post-processor's BOS/EOS when FL_ENCODE_ADD_SPECIAL.
 * This is HF tokenizers' `encode` order. Not here: file loading (load_hf.c), decoding (decode.c),
 * chat rendering (chat.c).
 */
#include "tokenizer/tokenizer_internal.h"
#include "tokenizer/byte_level.h"

#include "common/error.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    fl_tokenizer *tok;
    const char *text;
    fl_norm_map map; // start NULL: identity
    uint32_t base;
    fl_token_ids *out;
    int status;   // the first piece that failed (out of memory); the rest are skipped
} piece_ctx;

static void encode_piece(void *vctx, size_t start, size_t end) {
    piece_ctx *c = vctx;
    fl_norm_map m = {c->map.start ? c->map.start + start : NULL, c->map.end ? c->map.end + start : NULL};
    if (!c->status)
        c->status = fl_bpe_encode_word(c->tok, c->text + start, end - start, m.start ? &m : NULL, c->base + (uint32_t)start, c->out);
}

static int encode_segment(fl_tokenizer *tok, const char *text, size_t len, uint32_t base, fl_token_ids *out) {
    if (!len) return 0;
    size_t nlen;
    fl_norm_map map;
    const char *norm = fl_normalize(tok, text, len, base, &nlen, &map);
    if (tok->pipe.n_pre == 0) return fl_bpe_encode_word(tok, norm, nlen, map.start ? &map : NULL, base, out);
    piece_ctx ctx = {tok, norm, map, base, out, 0};
    fl_pretokenize(&tok->pipe, norm, nlen, encode_piece, &ctx);
    return ctx.status;
}

int fl_tokenizer_encode(fl_tokenizer *tok, const char *text, size_t len, int flags, fl_token_ids *out) {
    size_t bad = fl_utf8_validate(text, len);
    if (bad != len) return fl_input_error("text: invalid UTF-8 at byte %zu (encode expects UTF-8)", bad);
    if (len > UINT32_MAX - 1) return fl_input_error("text: %zu bytes is more than 4 GiB, split it first", len);
    if (out->want_offsets && out->n && !out->offsets)
        return fl_fail(FL_ERR_INTERNAL, "fl_token_ids: want_offsets set on a list that already holds ids");
    const fl_pipeline *p = &tok->pipe;
    if (flags & FL_ENCODE_ADD_SPECIAL)
        for (int i = 0; i < p->n_post_prefix; i++) fl_token_ids_push(out, p->post_prefix[i], 0, 0);
    size_t pos = 0;
    for (;;) {
        size_t ms = len, me = len;
        int k = fl_added_tokens_next(&tok->added, text, len, pos, (flags & FL_ENCODE_SPLIT_SPECIAL) != 0, &ms, &me);
        FL_TRY(encode_segment(tok, text + pos, (k >= 0 ? ms : len) - pos, (uint32_t)pos, out));
        if (k < 0) break;
        fl_token_ids_push(out, tok->added.tokens[k].id, (uint32_t)ms, (uint32_t)me);
        pos = me;
    }
    if (flags & FL_ENCODE_ADD_SPECIAL)
        for (int i = 0; i < p->n_post_suffix; i++) fl_token_ids_push(out, p->post_suffix[i], (uint32_t)len, (uint32_t)len);
    return 0;
}

int32_t fl_tokenizer_bos_id(const fl_tokenizer *tok) { return tok->bos_id; }
int32_t fl_tokenizer_eos_id(const fl_tokenizer *tok) { return tok->eos_id; }
const char *fl_tokenizer_kind(const fl_tokenizer *tok) { return tok->kind; }

int32_t fl_tokenizer_vocab_size(const fl_tokenizer *tok) {
    int32_t n = tok->vocab.n_ids;
    for (size_t i = 0; i < tok->added.n; i++)
        if (tok->added.tokens[i].id >= n) n = tok->added.tokens[i].id + 1;
    return n;
}

int32_t fl_tokenizer_token_to_id(const fl_tokenizer *tok, const char *token) {
    size_t len = strlen(token);
    for (size_t i = 0; i < tok->added.n; i++)
        if (tok->added.tokens[i].len == len && !memcmp(tok->added.tokens[i].content, token, len))
            return tok->added.tokens[i].id;
    if (tok->pipe.byte_level) { // vocab holds raw bytes: map the byte-level spelling back
        char *raw = fl_malloc(len + 1);
        size_t rl;
        int32_t id = fl_byte_level_to_bytes(token, len, raw, &rl) ? fl_vocab_find(&tok->vocab, raw, rl) : -1;
        free(raw);
        return id;
    }
    return fl_vocab_find(&tok->vocab, token, len);
}

void fl_tokenizer_free(fl_tokenizer *tok) {
    if (!tok) return;
    fl_vocab_free(&tok->vocab);
    fl_merges_free(&tok->merges);
    fl_added_tokens_free(&tok->added);
    for (int i = 0; i < tok->pipe.n_pre; i++) fl_regex_free(tok->pipe.pre[i].regex);
    free(tok->pipe.prepend);
    free(tok->pipe.replace_from);
    free(tok->pipe.replace_to);
    free(tok->pipe.meta_rep);
    free(tok->pipe.dec_replace_from);
    free(tok->pipe.dec_replace_to);
    free(tok->kind);
    free(tok->chat_template);
    free(tok->model_dir);
    fl_word_cache_free(&tok->cache);
    fl_bpe_scratch_free(&tok->bpe);
    free(tok->norm_buf);
    free(tok->norm_start);
    free(tok->norm_end);
    free(tok->nfc_buf);
    free(tok->nfc_start);
    free(tok->nfc_end);
    free(tok->cp_buf);
    free(tok->cp_start);
    free(tok->cp_end);
    free(tok);
}
