/* decode.c — ids back to text, as HF tokenizers' `decode(ids, skip_special_tokens)`.
 *
 * Byte-level models: concatenate each token's raw bytes (the byte-to-unicode mapping was undone at
 * load) and repair invalid UTF-8 the way Rust's String::from_utf8_lossy does (one U+FFFD per
 * maximal invalid subsequence; Python's errors="replace" agrees). SentencePiece-style models run
 * the decoder chain of TinyLlama/Llama-2: Replace("▁" -> " "), ByteFallback (runs of <0xNN> become
 * their bytes, or one U+FFFD per byte when the run is not valid UTF-8), Fuse, Strip(1 leading
 * space). Not here: transformers' clean_up_tokenization_spaces (a transformers-level option).
 */
#include "common/strbuf.h"
#include "tokenizer/tokenizer_internal.h"
#include "tokenizer/byte_level.h"

#include "common/error.h"

#include <stdlib.h>
#include <string.h>

typedef fl_strbuf buf;

static void buf_put(buf *b, const void *src, size_t n) { fl_strbuf_append(b, src, n); }

static const char REPLACEMENT[] = "\xEF\xBF\xBD";

/* Length of the maximal invalid subsequence at s (>= 1), for a position where s is not valid. */
static size_t invalid_len(const unsigned char *s, size_t avail) {
    unsigned char c = s[0];
    if (c < 0xC2 || c > 0xF4) return 1;
    size_t need = c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    for (size_t k = 1; k < need; k++) {
        if (k >= avail) return k;
        unsigned char lo = 0x80, hi = 0xBF;
        if (k == 1) {
            if (c == 0xE0) lo = 0xA0;
            else if (c == 0xED) hi = 0x9F;
            else if (c == 0xF0) lo = 0x90;
            else if (c == 0xF4) hi = 0x8F;
        }
        if (s[k] < lo || s[k] > hi) return k;
    }
    return need; // unreachable for invalid input
}

static void put_lossy(buf *b, const char *src, size_t n) {
    const unsigned char *u = (const unsigned char *)src;
    size_t i = 0, run = 0;
    while (i < n) {
        if (u[i] < 0x80) { i++; continue; }
        int l = fl_utf8_len(u + i, n - i);
        if (l) { i += (size_t)l; continue; }
        buf_put(b, src + run, i - run);
        buf_put(b, REPLACEMENT, 3);
        i += invalid_len(u + i, n - i);
        run = i;
    }
    buf_put(b, src + run, n - run);
}

/* Token text of id for the decoder, or NULL when the id is unknown. */
static const char *token_text(const fl_tokenizer *tok, int32_t id, size_t *len, const fl_added_token **added) {
    *added = fl_added_tokens_by_id(&tok->added, id);
    int32_t l;
    const char *s = fl_vocab_bytes(&tok->vocab, id, &l);
    if (s) { *len = (size_t)l; return s; }
    if (*added) { *len = (*added)->len; return (*added)->content; }
    return NULL;
}

static int byte_token(const char *s, size_t len) {
    if (len != 6 || memcmp(s, "<0x", 3) || s[5] != '>') return -1;
    int v = 0;
    for (int k = 3; k < 5; k++) {
        char c = s[k];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0) return -1;
        v = v * 16 + d;
    }
    return v;
}

static void flush_bytes(buf *b, buf *pending) {
    if (!pending->n) return;
    if (fl_utf8_validate(pending->p, pending->n) == pending->n) buf_put(b, pending->p, pending->n);
    else for (size_t i = 0; i < pending->n; i++) buf_put(b, REPLACEMENT, 3);
    pending->n = 0;
}

static void put_replaced(buf *b, const fl_pipeline *p, const char *s, size_t len) {
    if (!p->dec_replace_from) { buf_put(b, s, len); return; }
    size_t fl = strlen(p->dec_replace_from), tl = strlen(p->dec_replace_to);
    size_t run = 0;
    for (size_t i = 0; i + fl <= len;) {
        if (!memcmp(s + i, p->dec_replace_from, fl)) {
            buf_put(b, s + run, i - run);
            buf_put(b, p->dec_replace_to, tl);
            i += fl;
            run = i;
        } else {
            i++;
        }
    }
    buf_put(b, s + run, len - run);
}

int fl_tokenizer_decode(const fl_tokenizer *tok, const int32_t *ids, size_t n, int skip_special,
                        char **out, size_t *out_len) {
    *out = NULL;
    *out_len = 0;
    const fl_pipeline *p = &tok->pipe;
    buf raw = {0}, res = {0}, pending = {0};
    for (size_t i = 0; i < n; i++) {
        size_t len;
        const fl_added_token *added;
        const char *s = token_text(tok, ids[i], &len, &added);
        if (!s) {
            free(raw.p); free(res.p); free(pending.p);
            return fl_input_error("decode: id %d at position %zu is not in the vocabulary (size %d)", ids[i], i,
                                  fl_tokenizer_vocab_size(tok));
        }
        if (skip_special && added && added->special) continue;
        if (p->byte_level) {
            int32_t vl;
            if (added && !fl_vocab_bytes(&tok->vocab, ids[i], &vl)) {
                // ByteLevel decoder: map the token's chars back to bytes, or keep its UTF-8 when
                // one of them is outside the byte-to-unicode table
                char *conv = fl_malloc(len + 1);
                size_t cl;
                if (fl_byte_level_to_bytes(s, len, conv, &cl)) buf_put(&raw, conv, cl);
                else buf_put(&raw, s, len);
                free(conv);
            } else {
                buf_put(&raw, s, len);
            }
            continue;
        }
        // SentencePiece chain: Replace, then ByteFallback on the replaced token
        int bt = -1;
        if (p->dec_byte_fallback) bt = byte_token(s, len);
        if (bt >= 0) { unsigned char c = (unsigned char)bt; buf_put(&pending, &c, 1); continue; }
        flush_bytes(&res, &pending);
        put_replaced(&res, p, s, len);
    }
    if (p->byte_level) {
        put_lossy(&res, raw.p ? raw.p : "", raw.n);
    } else {
        flush_bytes(&res, &pending);
        size_t skip = 0;
        for (int k = 0; k < p->dec_strip_left && skip < res.n && res.p[skip] == ' '; k++) skip++;
        if (skip) { memmove(res.p, res.p + skip, res.n - skip); res.n -= skip; res.p[res.n] = 0; }
    }
    free(raw.p);
    free(pending.p);
    if (!res.p) buf_put(&res, "", 0);
    *out = res.p;
    *out_len = res.n;
    return 0;
}
