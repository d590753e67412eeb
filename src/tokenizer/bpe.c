/* bpe.c — BPE on one pre-token: rank-ordered merges with a priority queue, plus the word cache.
 *
 * Algorithm (HF tokenizers `Word::merge_all`): start from one symbol per byte (byte-level) or per
 * UTF-8 character (SentencePiece style, with <0xNN> byte fallback or <unk>); push every adjacent
 * pair found in the merge table on a min-heap keyed (rank, position); pop the lowest, skip it when
 * stale (a side was merged away or the pair changed), else merge and push the two new neighbour
 * pairs. O(n log n) per word, versus O(n²) rescans. Ties on rank go to the leftmost pair.
 * `ignore_merges` models (Llama-3) first emit a pre-token found whole in the vocabulary.
 *
 * Words up to 64 bytes are cached (bytes -> ids) in a hash table that is cleared when full; long
 * words (a whole SentencePiece segment) are not. Not here: splitting text into words
 * (pretokenize.c), normalization (normalize.c), added tokens (added_tokens.c).
 */
#include "tokenizer/tokenizer_internal.h"

#include "common/error.h"

#include <stdlib.h>
#include <string.h>

#define CACHE_MAX_WORD 64

/* ============================== id list ============================== */

void fl_token_ids_push(fl_token_ids *out, int32_t id, uint32_t start, uint32_t end) {
    if (out->n == out->cap || (out->want_offsets && !out->offsets)) {
        size_t cap = out->n == out->cap ? (out->cap ? out->cap * 2 : 256) : out->cap;
        int32_t *ids = fl_malloc(cap * sizeof *ids);
        if (out->n) memcpy(ids, out->ids, out->n * sizeof *ids);
        free(out->ids);
        out->ids = ids;
        if (out->want_offsets) {
            uint32_t *offs = fl_malloc(cap * 2 * sizeof *offs);
            if (out->n && out->offsets) memcpy(offs, out->offsets, out->n * 2 * sizeof *offs);
            free(out->offsets);
            out->offsets = offs;
        }
        out->cap = cap;
    }
    if (out->want_offsets && !out->offsets) fl_die("fl_token_ids: want_offsets set after ids were added");
    out->ids[out->n] = id;
    if (out->want_offsets) {
        out->offsets[2 * out->n] = start;
        out->offsets[2 * out->n + 1] = end;
    }
    out->n++;
}

void fl_token_ids_free(fl_token_ids *ids) {
    free(ids->ids);
    free(ids->offsets);
    memset(ids, 0, sizeof *ids);
}

/* ============================== word cache ============================== */

void fl_word_cache_init(fl_word_cache *c, size_t cap) {
    memset(c, 0, sizeof *c);
    c->cap = cap;
    c->hash = fl_calloc(cap, sizeof *c->hash);
    c->key_off = fl_malloc(cap * sizeof *c->key_off);
    c->key_len = fl_malloc(cap * sizeof *c->key_len);
    c->ids_off = fl_malloc(cap * sizeof *c->ids_off);
    c->ids_len = fl_malloc(cap * sizeof *c->ids_len);
    c->key_cap = cap * 16;
    c->key_arena = fl_malloc(c->key_cap);
    c->id_cap = cap * 4;
    c->id_arena = fl_malloc(c->id_cap * sizeof *c->id_arena);
}

void fl_word_cache_free(fl_word_cache *c) {
    free(c->hash);
    free(c->key_off);
    free(c->key_len);
    free(c->ids_off);
    free(c->ids_len);
    free(c->key_arena);
    free(c->id_arena);
    memset(c, 0, sizeof *c);
}

static void cache_clear(fl_word_cache *c) {
    memset(c->hash, 0, c->cap * sizeof *c->hash);
    c->count = 0;
    c->key_len_total = 0;
    c->id_len_total = 0;
}

/* Slot of word in the cache: found (hash[slot] == h and key equal) or the empty slot to fill. */
static size_t cache_slot(const fl_word_cache *c, const char *word, size_t len, uint64_t h, int *found) {
    size_t mask = c->cap - 1, i = (size_t)h & mask;
    for (;;) {
        if (c->hash[i] == 0) { *found = 0; return i; }
        if (c->hash[i] == h && c->key_len[i] == len && !memcmp(c->key_arena + c->key_off[i], word, len)) {
            *found = 1;
            return i;
        }
        i = (i + 1) & mask;
    }
}

static void cache_put(fl_word_cache *c, const char *word, size_t len, uint64_t h, const int32_t *ids, size_t n) {
    if ((c->count + 1) * 2 > c->cap || c->key_len_total + len > c->key_cap || c->id_len_total + n > c->id_cap)
        cache_clear(c);
    int found;
    size_t i = cache_slot(c, word, len, h, &found);
    if (found) return;
    c->hash[i] = h;
    c->key_off[i] = (uint32_t)c->key_len_total;
    c->key_len[i] = (uint32_t)len;
    memcpy(c->key_arena + c->key_len_total, word, len);
    c->key_len_total += len;
    c->ids_off[i] = (uint32_t)c->id_len_total;
    c->ids_len[i] = (uint32_t)n;
    if (n) memcpy(c->id_arena + c->id_len_total, ids, n * sizeof *ids);
    c->id_len_total += n;
    c->count++;
}

/* ============================== merge loop ============================== */

void fl_bpe_scratch_free(fl_bpe_scratch *s) {
    free(s->id);
    free(s->prev);
    free(s->next);
    free(s->start);
    free(s->end);
    free(s->heap);
    memset(s, 0, sizeof *s);
}

static void scratch_reserve(fl_bpe_scratch *s, size_t n) {
    if (n <= s->cap) return;
    size_t cap = s->cap ? s->cap : 256;
    while (cap < n) cap *= 2;
    fl_bpe_scratch_free(s);
    s->cap = cap;
    s->id = fl_malloc(cap * sizeof *s->id);
    s->prev = fl_malloc(cap * sizeof *s->prev);
    s->next = fl_malloc(cap * sizeof *s->next);
    s->start = fl_malloc(cap * sizeof *s->start);
    s->end = fl_malloc(cap * sizeof *s->end);
    s->heap_cap = cap * 2;
    s->heap = fl_malloc(s->heap_cap * sizeof *s->heap);
}

static inline void heap_push(uint64_t *heap, size_t *n, uint64_t v) {
    size_t i = (*n)++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (heap[p] <= v) break;
        heap[i] = heap[p];
        i = p;
    }
    heap[i] = v;
}

static inline uint64_t heap_pop(uint64_t *heap, size_t *n) {
    uint64_t top = heap[0], last = heap[--(*n)];
    size_t i = 0, count = *n;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= count) break;
        if (c + 1 < count && heap[c + 1] < heap[c]) c++;
        if (heap[c] >= last) break;
        heap[i] = heap[c];
        i = c;
    }
    if (count) heap[i] = last;
    return top;
}

/* Fills the initial symbols of a word; returns their count. */
static size_t initial_symbols(fl_tokenizer *tok, const char *word, size_t len) {
    fl_bpe_scratch *s = &tok->bpe;
    const fl_pipeline *p = &tok->pipe;
    size_t n = 0;
    if (p->byte_level) {
        for (size_t i = 0; i < len; i++) {
            s->id[n] = p->byte_ids[(unsigned char)word[i]];
            if (s->id[n] < 0) continue; // byte missing from the vocabulary: dropped, as HF does
            s->start[n] = (uint32_t)i;
            s->end[n] = (uint32_t)i + 1;
            n++;
        }
        return n;
    }
    size_t i = 0;
    while (i < len) {
        unsigned char c0 = (unsigned char)word[i];
        int cl = c0 < 0x80 ? 1 : fl_utf8_len((const unsigned char *)word + i, len - i);
        if (cl <= 0) cl = 1; // input was validated; defensive
        int32_t id = c0 < 0x80 ? p->ascii_ids[c0] : fl_vocab_find(&tok->vocab, word + i, (size_t)cl);
        if (id >= 0) {
            s->id[n] = id; s->start[n] = (uint32_t)i; s->end[n] = (uint32_t)(i + cl); n++;
        } else if (p->byte_fallback) {
            for (int b = 0; b < cl; b++) {
                s->id[n] = p->byte_ids[(unsigned char)word[i + b]];
                s->start[n] = (uint32_t)(i + b); s->end[n] = (uint32_t)(i + b + 1); n++;
            }
        } else if (p->unk_id >= 0) {
            if (p->fuse_unk && n > 0 && s->id[n - 1] == p->unk_id) {
                s->end[n - 1] = (uint32_t)(i + cl);
            } else {
                s->id[n] = p->unk_id; s->start[n] = (uint32_t)i; s->end[n] = (uint32_t)(i + cl); n++;
            }
        } // else: HF drops characters it cannot represent (no unk, no fallback)
        i += (size_t)cl;
    }
    return n;
}

/* Runs the merges over symbols [0, n), linking survivors through next; symbol 0 stays first. */
static void merge_all(fl_tokenizer *tok, size_t n) {
    fl_bpe_scratch *s = &tok->bpe;
    const fl_merges *m = &tok->merges;
    size_t hn = 0;
    for (size_t i = 0; i < n; i++) {
        s->prev[i] = (int32_t)i - 1;
        s->next[i] = i + 1 < n ? (int32_t)i + 1 : -1;
    }
    int32_t rank, merged;
    for (size_t i = 0; i + 1 < n; i++)
        if (fl_merges_find(m, s->id[i], s->id[i + 1], &rank, &merged))
            heap_push(s->heap, &hn, ((uint64_t)(uint32_t)rank << 32) | i);
    while (hn) {
        uint64_t top = heap_pop(s->heap, &hn);
        int32_t pos = (int32_t)(uint32_t)top, top_rank = (int32_t)(top >> 32);
        if (s->id[pos] < 0) continue;                 // merged away
        int32_t nx = s->next[pos];
        if (nx < 0) continue;
        if (!fl_merges_find(m, s->id[pos], s->id[nx], &rank, &merged) || rank != top_rank) continue; // stale
        s->id[pos] = merged;
        s->end[pos] = s->end[nx];
        s->id[nx] = -1;
        s->next[pos] = s->next[nx];
        if (s->next[nx] >= 0) s->prev[s->next[nx]] = pos;
        int32_t pv = s->prev[pos], unused;
        if (pv >= 0 && fl_merges_find(m, s->id[pv], s->id[pos], &rank, &unused))
            heap_push(s->heap, &hn, ((uint64_t)(uint32_t)rank << 32) | (uint32_t)pv);
        int32_t nn = s->next[pos];
        if (nn >= 0 && fl_merges_find(m, s->id[pos], s->id[nn], &rank, &unused))
            heap_push(s->heap, &hn, ((uint64_t)(uint32_t)rank << 32) | (uint32_t)pos);
    }
}

void fl_bpe_encode_word(fl_tokenizer *tok, const char *word, size_t len, const uint32_t *map, uint32_t base,
                        fl_token_ids *out) {
    if (len == 0) return;
    const fl_pipeline *p = &tok->pipe;
    uint32_t wstart = map ? map[0] : base, wend = map ? map[len] : base + (uint32_t)len;
    int cacheable = len <= CACHE_MAX_WORD && !out->want_offsets;
    uint64_t h = 0;
    if (cacheable) {
        h = fl_tok_hash(word, len) | 1;
        int found;
        size_t slot = cache_slot(&tok->cache, word, len, h, &found);
        if (found) {
            const int32_t *ids = tok->cache.id_arena + tok->cache.ids_off[slot];
            for (uint32_t i = 0; i < tok->cache.ids_len[slot]; i++) fl_token_ids_push(out, ids[i], 0, 0);
            return;
        }
    }
    if (p->ignore_merges) {
        int32_t id = fl_vocab_find(&tok->vocab, word, len);
        if (id >= 0) {
            fl_token_ids_push(out, id, wstart, wend);
            if (cacheable) cache_put(&tok->cache, word, len, h, &id, 1);
            return;
        }
    }
    if (len == 1 && p->byte_level) {
        int32_t id = p->byte_ids[(unsigned char)word[0]];
        if (id >= 0) fl_token_ids_push(out, id, wstart, wend);
        return;
    }
    fl_bpe_scratch *s = &tok->bpe;
    scratch_reserve(s, len + 1);
    size_t n = initial_symbols(tok, word, len);
    merge_all(tok, n);
    size_t first = out->n;
    for (size_t i = 0; i < n; i = s->next[i] >= 0 ? (size_t)s->next[i] : n) {
        uint32_t a = map ? map[s->start[i]] : base + s->start[i], b = map ? map[s->end[i]] : base + s->end[i];
        fl_token_ids_push(out, s->id[i], a, b);
    }
    if (cacheable) cache_put(&tok->cache, word, len, h, out->n > first ? out->ids + first : NULL, out->n - first);
}
