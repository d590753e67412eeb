/* vocab.c — the two lookup tables of a BPE model: the vocabulary (id <-> token bytes) and the
 * merge table ((left id, right id) -> rank, merged id), both open-addressing hash tables.
 *
 * This file only stores and finds; it does not read files (load_hf.c) or apply merges (bpe.c).
 */
#include "tokenizer/tokenizer_internal.h"

#include "common/error.h"

#include <stdlib.h>
#include <string.h>

/* ============================== hashing ============================== */

/* 64-bit hash of a short byte string (8 bytes at a time, multiply-xorshift mixing). */
uint64_t fl_tok_hash(const char *bytes, size_t len) {
    uint64_t h = 0x243F6A8885A308D3ull ^ (len * 0x9E3779B97F4A7C15ull);
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, bytes + i, 8);
        h = (h ^ w) * 0xBF58476D1CE4E5B9ull;
        h ^= h >> 31;
    }
    uint64_t w = 0;
    memcpy(&w, bytes + i, len - i);
    h = (h ^ w) * 0x94D049BB133111EBull;
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 32;
    return h;
}

/* ============================== vocabulary ============================== */

void fl_vocab_init(fl_vocab *v) {
    memset(v, 0, sizeof *v);
}

void fl_vocab_free(fl_vocab *v) {
    free(v->arena);
    free(v->off);
    free(v->len);
    free(v->index);
    memset(v, 0, sizeof *v);
}

static void vocab_index_insert(fl_vocab *v, int32_t id) {
    size_t mask = v->index_cap - 1;
    size_t i = (size_t)fl_tok_hash(v->arena + v->off[id], (size_t)v->len[id]) & mask;
    while (v->index[i] >= 0) {
        int32_t other = v->index[i];
        if (v->len[other] == v->len[id] && !memcmp(v->arena + v->off[other], v->arena + v->off[id], (size_t)v->len[id]))
            return; // same bytes under two ids: the first id wins lookups
        i = (i + 1) & mask;
    }
    v->index[i] = id;
    v->index_count++;
}

static void vocab_index_grow(fl_vocab *v) {
    size_t cap = v->index_cap ? v->index_cap * 2 : 1024;
    free(v->index);
    v->index = fl_malloc(cap * sizeof *v->index);
    for (size_t i = 0; i < cap; i++) v->index[i] = -1;
    v->index_cap = cap;
    v->index_count = 0;
    for (int32_t id = 0; id < v->n_ids; id++)
        if (v->len[id] >= 0) vocab_index_insert(v, id);
}

int fl_vocab_set(fl_vocab *v, int32_t id, const char *bytes, size_t len) {
    if (id < v->n_ids && v->len[id] >= 0) {
        return ((size_t)v->len[id] == len && !memcmp(v->arena + v->off[id], bytes, len)) ? 0 : 1;
    }
    if (id >= v->cap_ids) {
        int32_t cap = v->cap_ids ? v->cap_ids : 1024;
        while (cap <= id) cap *= 2;
        int32_t *nl = fl_malloc((size_t)cap * sizeof *nl);
        uint32_t *no = fl_malloc((size_t)cap * sizeof *no);
        if (v->n_ids) {
            memcpy(nl, v->len, (size_t)v->n_ids * sizeof *nl);
            memcpy(no, v->off, (size_t)v->n_ids * sizeof *no);
        }
        free(v->len);
        free(v->off);
        v->len = nl;
        v->off = no;
        v->cap_ids = cap;
    }
    for (int32_t i = v->n_ids; i <= id; i++) v->len[i] = -1;
    if (id >= v->n_ids) v->n_ids = id + 1;
    if (!v->arena || v->arena_len + len > v->arena_cap) { /* allocated on the first set, an empty token's too */
        size_t cap = v->arena_cap ? v->arena_cap : 65536;
        while (cap < v->arena_len + len) cap *= 2;
        char *na = fl_malloc(cap);
        if (v->arena_len) memcpy(na, v->arena, v->arena_len);
        free(v->arena);
        v->arena = na;
        v->arena_cap = cap;
    }
    memcpy(v->arena + v->arena_len, bytes, len);
    v->off[id] = (uint32_t)v->arena_len;
    v->len[id] = (int32_t)len;
    v->arena_len += len;
    if ((v->index_count + 1) * 2 > v->index_cap) vocab_index_grow(v);
    else vocab_index_insert(v, id);
    return 0;
}

int32_t fl_vocab_find(const fl_vocab *v, const char *bytes, size_t len) {
    if (!v->index_cap) return -1;
    size_t mask = v->index_cap - 1;
    size_t i = (size_t)fl_tok_hash(bytes, len) & mask;
    for (;;) {
        int32_t id = v->index[i];
        if (id < 0) return -1;
        if ((size_t)v->len[id] == len && !memcmp(v->arena + v->off[id], bytes, len)) return id;
        i = (i + 1) & mask;
    }
}

/* ============================== merges ============================== */

void fl_merges_init(fl_merges *m, size_t expected) {
    size_t cap = 1024;
    while (cap < expected * 2) cap *= 2;
    m->cap = cap;
    m->count = 0;
    m->slots = fl_malloc(cap * sizeof *m->slots);
    for (size_t i = 0; i < cap; i++) m->slots[i].key = UINT64_MAX;
}

void fl_merges_free(fl_merges *m) {
    free(m->slots);
    memset(m, 0, sizeof *m);
}

static void merges_insert(fl_merges *m, uint64_t key, int32_t rank, int32_t merged) {
    uint64_t h = key * 0x9E3779B97F4A7C15ull;
    size_t mask = m->cap - 1, i = (size_t)(h >> 20) & mask;
    while (m->slots[i].key != UINT64_MAX) {
        if (m->slots[i].key == key) return; // first (lowest) rank wins
        i = (i + 1) & mask;
    }
    m->slots[i] = (fl_merge_entry){key, rank, merged};
    m->count++;
}

void fl_merges_add(fl_merges *m, int32_t left, int32_t right, int32_t rank, int32_t merged) {
    if ((m->count + 1) * 2 > m->cap) {
        fl_merges old = *m;
        fl_merges_init(m, old.cap);
        for (size_t i = 0; i < old.cap; i++)
            if (old.slots[i].key != UINT64_MAX) merges_insert(m, old.slots[i].key, old.slots[i].rank, old.slots[i].merged);
        fl_merges_free(&old);
    }
    merges_insert(m, ((uint64_t)(uint32_t)left << 32) | (uint32_t)right, rank, merged);
}
