/* added_tokens.c — the added-token vocabulary (`added_tokens` of tokenizer.json,
 * `added_tokens_decoder` of tokenizer_config.json): strings split out of the text before
 * normalization and emitted as their own id.
 *
 * Matching is leftmost-longest, as HF's Aho-Corasick matcher: at the first position where some
 * added token starts, the longest one wins. Candidates are bucketed by first byte and sorted by
 * length (the target models have at most a few hundred, all starting with '<'). `lstrip` /
 * `rstrip` widen a match over the whitespace beside it. Special tokens can be excluded from
 * matching (HF split_special_tokens). Not here: tokens with `normalized: true` or `single_word`
 * (rejected at load, load_hf.c), encoding of the text between matches (tokenizer.c).
 */
#include "tokenizer/tokenizer_internal.h"

#include "common/error.h"

#include <stdlib.h>
#include <string.h>

void fl_added_tokens_free(fl_added_tokens *a) {
    for (size_t i = 0; i < a->n; i++) free(a->tokens[i].content);
    free(a->tokens);
    memset(a, 0, sizeof *a);
}

void fl_added_tokens_add(fl_added_tokens *a, const char *content, size_t len, int32_t id, bool special,
                         bool lstrip, bool rstrip) {
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 32;
        fl_added_token *t = fl_malloc(cap * sizeof *t);
        if (a->n) memcpy(t, a->tokens, a->n * sizeof *t);
        free(a->tokens);
        a->tokens = t;
        a->cap = cap;
    }
    fl_added_token *t = &a->tokens[a->n++];
    t->content = fl_malloc(len + 1);
    memcpy(t->content, content, len);
    t->content[len] = 0;
    t->len = len;
    t->id = id;
    t->special = special;
    t->lstrip = lstrip;
    t->rstrip = rstrip;
}

static int cmp_added(const void *pa, const void *pb) {
    const fl_added_token *a = pa, *b = pb;
    unsigned char fa = (unsigned char)a->content[0], fb = (unsigned char)b->content[0];
    if (fa != fb) return fa < fb ? -1 : 1;
    if (a->len != b->len) return a->len > b->len ? -1 : 1;
    return memcmp(a->content, b->content, a->len);
}

/* qsort_r orders of token indices: by id, or by content; equal keys by the order they were added */
static int cmp_index_id(const void *pa, const void *pb, void *ctx) {
    const fl_added_token *t = ctx;
    size_t x = *(const size_t *)pa, y = *(const size_t *)pb;
    if (t[x].id != t[y].id) return t[x].id < t[y].id ? -1 : 1;
    return (x > y) - (x < y);
}

static int cmp_index_content(const void *pa, const void *pb, void *ctx) {
    const fl_added_token *t = ctx;
    size_t x = *(const size_t *)pa, y = *(const size_t *)pb;
    if (t[x].len != t[y].len) return t[x].len < t[y].len ? -1 : 1;
    int c = memcmp(t[x].content, t[y].content, t[x].len);
    return c ? c : (x > y) - (x < y);
}

/* A token added later replaces every earlier one with its id or its content (added_tokens_decoder of
 * tokenizer_config.json over tokenizer.json's added_tokens). Sorting indices by each key finds them
 * in n log n; a scan on every add made 200,000 added tokens a load of a quarter of an hour. */
static void drop_replaced(fl_added_tokens *a) {
    size_t n = a->n, *idx = fl_malloc(n * sizeof *idx);
    unsigned char *dead = fl_calloc(n, 1);
    for (int key = 0; key < 2; key++) {
        for (size_t i = 0; i < n; i++) idx[i] = i;
        qsort_r(idx, n, sizeof *idx, key ? cmp_index_content : cmp_index_id, a->tokens);
        for (size_t i = 0; i + 1 < n; i++) {   /* equal keys are adjacent, the latest last */
            const fl_added_token *x = &a->tokens[idx[i]], *y = &a->tokens[idx[i + 1]];
            if (key ? x->len == y->len && !memcmp(x->content, y->content, x->len) : x->id == y->id) dead[idx[i]] = 1;
        }
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (dead[i]) free(a->tokens[i].content);
        else a->tokens[k++] = a->tokens[i];
    }
    a->n = k;
    free(idx);
    free(dead);
}

void fl_added_tokens_finish(fl_added_tokens *a) {
    if (a->n) drop_replaced(a);
    if (a->n) qsort(a->tokens, a->n, sizeof *a->tokens, cmp_added);
    size_t k = 0;
    for (int b = 0; b <= 256; b++) {
        while (k < a->n && (unsigned char)a->tokens[k].content[0] < b) k++;
        a->first[b] = (int32_t)k;
    }
}

const fl_added_token *fl_added_tokens_by_id(const fl_added_tokens *a, int32_t id) {
    for (size_t i = 0; i < a->n; i++)
        if (a->tokens[i].id == id) return &a->tokens[i];
    return NULL;
}

/* Unicode White_Space ending at / starting at a position (Rust char::is_whitespace). */
static size_t space_len_at(const char *s, size_t avail) {
    const unsigned char *u = (const unsigned char *)s;
    if (!avail) return 0;
    if (u[0] == ' ' || (u[0] >= 0x09 && u[0] <= 0x0D)) return 1;
    int n = fl_utf8_len(u, avail);
    if (n < 2) return 0;
    uint32_t c = fl_utf8_decode(u, n);
    int ws = c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
             c == 0x202F || c == 0x205F || c == 0x3000;
    return ws ? (size_t)n : 0;
}

static size_t space_len_before(const char *s, size_t pos, size_t floor) {
    for (size_t back = 1; back <= 3 && back <= pos - floor; back++) {
        size_t l = space_len_at(s + pos - back, back);
        if (l == back) return l;
    }
    return 0;
}

int fl_added_tokens_next(const fl_added_tokens *a, const char *text, size_t len, size_t from,
                         bool skip_special, size_t *start, size_t *end) {
    if (!a->n) return -1;
    for (size_t i = from; i < len; i++) {
        unsigned char b = (unsigned char)text[i];
        int32_t lo = a->first[b], hi = a->first[b + 1];
        for (int32_t k = lo; k < hi; k++) {
            const fl_added_token *t = &a->tokens[k];
            if (t->len > len - i || (skip_special && t->special) || memcmp(text + i, t->content, t->len)) continue;
            size_t s = i, e = i + t->len, l;
            if (t->lstrip)
                while (s > from && (l = space_len_before(text, s, from)) > 0) s -= l;
            if (t->rstrip)
                while (e < len && (l = space_len_at(text + e, len - e)) > 0) e += l;
            *start = s;
            *end = e;
            return k;
        }
    }
    return -1;
}
