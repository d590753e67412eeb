/* vocab_view.c — read-only views of a tokenizer's tables for exporters (see tokenizer_vocab.h). */
#include "tokenizer/tokenizer_vocab.h"

#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "tokenizer/tokenizer_internal.h"
#include "tokenizer/byte_level.h"

int fl_tokenizer_is_byte_level(const fl_tokenizer *tok) { return tok->pipe.byte_level; }
int fl_tokenizer_prepends_space(const fl_tokenizer *tok) {
    return tok->pipe.prepend != NULL || (tok->pipe.meta_rep != NULL && tok->pipe.meta_prepend != FL_META_NEVER);
}

static int is_byte_piece(const char *s, int32_t len) {
    static const char hex[] = "0123456789ABCDEFabcdef";
    return len == 6 && !memcmp(s, "<0x", 3) && s[5] == '>' && s[3] && s[4] && strchr(hex, s[3]) && strchr(hex, s[4]);
}

fl_token_kind fl_tokenizer_token_kind(const fl_tokenizer *tok, int32_t id) {
    const fl_added_token *a = fl_added_tokens_by_id(&tok->added, id);
    if (a) return a->special ? FL_TOKEN_SPECIAL : FL_TOKEN_ADDED;
    int32_t len;
    const char *s = fl_vocab_bytes(&tok->vocab, id, &len);
    if (!s) return FL_TOKEN_ABSENT;
    if (id == tok->pipe.unk_id) return FL_TOKEN_UNKNOWN;
    if (tok->pipe.byte_fallback && !tok->pipe.byte_level && is_byte_piece(s, len)) return FL_TOKEN_BYTE;
    return FL_TOKEN_NORMAL;
}

char *fl_tokenizer_token_text(const fl_tokenizer *tok, int32_t id, size_t *len) {
    const fl_added_token *a = fl_added_tokens_by_id(&tok->added, id);
    if (a) {
        char *s = fl_malloc(a->len + 1);
        memcpy(s, a->content, a->len);
        s[a->len] = 0;
        *len = a->len;
        return s;
    }
    int32_t n;
    const char *b = fl_vocab_bytes(&tok->vocab, id, &n);
    if (!b) { *len = 0; return NULL; }
    if (!tok->pipe.byte_level) {
        char *s = fl_malloc((size_t)n + 1);
        memcpy(s, b, (size_t)n);
        s[n] = 0;
        *len = (size_t)n;
        return s;
    }
    uint32_t byte_to_cp[256];
    fl_byte_level_tables(byte_to_cp);
    char *s = fl_malloc(4 * (size_t)n + 1); /* each byte becomes one code point below U+0800: <= 2 bytes */
    size_t k = 0;
    for (int32_t i = 0; i < n; i++) k += (size_t)fl_utf8_encode(byte_to_cp[(unsigned char)b[i]], s + k);
    s[k] = 0;
    *len = k;
    return s;
}

static int cmp_rank(const void *a, const void *b) {
    const fl_merge_entry *x = *(const fl_merge_entry *const *)a, *y = *(const fl_merge_entry *const *)b;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

void fl_tokenizer_merges(const fl_tokenizer *tok, int32_t **left, int32_t **right, int32_t **merged, size_t *n) {
    const fl_merges *m = &tok->merges;
    const fl_merge_entry **order = fl_malloc(sizeof *order * (m->count + 1));
    size_t k = 0;
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].key != UINT64_MAX) order[k++] = &m->slots[i];
    qsort(order, k, sizeof *order, cmp_rank);
    *left = fl_malloc(sizeof **left * (k + 1));
    *right = fl_malloc(sizeof **right * (k + 1));
    *merged = fl_malloc(sizeof **merged * (k + 1));
    for (size_t i = 0; i < k; i++) {
        (*left)[i] = (int32_t)(uint32_t)(order[i]->key >> 32);
        (*right)[i] = (int32_t)(uint32_t)order[i]->key;
        (*merged)[i] = order[i]->merged;
    }
    *n = k;
    free(order);
}

int fl_tokenizer_post_ids(const fl_tokenizer *tok, const int32_t **prefix, const int32_t **suffix, int *n_suffix) {
    *prefix = tok->pipe.post_prefix;
    *suffix = tok->pipe.post_suffix;
    *n_suffix = tok->pipe.n_post_suffix;
    return tok->pipe.n_post_prefix;
}

int32_t fl_tokenizer_unk_id(const fl_tokenizer *tok) { return tok->pipe.unk_id; }
const char *fl_tokenizer_chat_template(const fl_tokenizer *tok) { return tok->chat_template; }
