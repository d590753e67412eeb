/* tokenizer_internal.h — the tokenizer's data structures, shared by the files of src/tokenizer/.
 *
 * One fl_tokenizer owns: the vocabulary (token bytes for every id, and a bytes -> id hash), the
 * merge table ((left id, right id) -> rank, merged id), the added tokens, the normalizer /
 * pre-tokenizer / decoder / post-processor settings read from the files, and the encode scratch
 * (word cache, regex match data). Not part of the public API (tokenizer.h); nothing outside
 * src/tokenizer/ includes it.
 *
 * Byte-level models store each token as its raw bytes (the GPT-2 byte-to-unicode mapping is undone
 * at load), so tiktoken files and merges.txt meet in one representation; SentencePiece-style models
 * store the UTF-8 text of the piece ("▁the").
 */
#ifndef FL_TOKENIZER_INTERNAL_H
#define FL_TOKENIZER_INTERNAL_H

#include "common/utf8.h"
#include "tokenizer/tokenizer.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- vocabulary: id -> bytes, bytes -> id ---------------------------------------------------- */
typedef struct {
    char *arena;          // token bytes, back to back
    size_t arena_len, arena_cap;
    uint32_t *off;        // (n_ids,) offset of token id in arena
    int32_t *len;         // (n_ids,) byte length, -1 when no token has this id
    int32_t n_ids, cap_ids;
    int32_t *index;       // (index_cap,) open addressing: id or -1
    size_t index_cap, index_count;
} fl_vocab;

void fl_vocab_init(fl_vocab *v);
void fl_vocab_free(fl_vocab *v);
/* Sets token `id` to bytes; returns 0, or 1 when id already had a different token. */
int fl_vocab_set(fl_vocab *v, int32_t id, const char *bytes, size_t len);
int32_t fl_vocab_find(const fl_vocab *v, const char *bytes, size_t len); // -1 if absent
static inline const char *fl_vocab_bytes(const fl_vocab *v, int32_t id, int32_t *len) {
    if (id < 0 || id >= v->n_ids || v->len[id] < 0) { *len = 0; return NULL; }
    *len = v->len[id];
    return v->arena + v->off[id];
}
uint64_t fl_tok_hash(const char *bytes, size_t len);

/* ---- merges: (left, right) -> (rank, merged) ------------------------------------------------- */
typedef struct {
    uint64_t key;         // left << 32 | right, or UINT64_MAX when empty
    int32_t rank, merged;
} fl_merge_entry;         // one 16-byte slot: a probe touches one cache line

typedef struct {
    fl_merge_entry *slots; // (cap,)
    size_t cap, count;
} fl_merges;

void fl_merges_init(fl_merges *m, size_t expected);
void fl_merges_free(fl_merges *m);
/* Adds a merge; a pair already present keeps its first (lowest) rank, as HF does. */
void fl_merges_add(fl_merges *m, int32_t left, int32_t right, int32_t rank, int32_t merged);
static inline int fl_merges_find(const fl_merges *m, int32_t left, int32_t right, int32_t *rank, int32_t *merged) {
    uint64_t key = ((uint64_t)(uint32_t)left << 32) | (uint32_t)right;
    uint64_t h = key * 0x9E3779B97F4A7C15ull;
    size_t mask = m->cap - 1, i = (size_t)(h >> 20) & mask;
    for (;;) {
        const fl_merge_entry *e = &m->slots[i];
        if (e->key == key) { *rank = e->rank; *merged = e->merged; return 1; }
        if (e->key == UINT64_MAX) return 0;
        i = (i + 1) & mask;
    }
}

/* ---- added tokens ---------------------------------------------------------------------------- */
typedef struct {
    char *content;
    size_t len;
    int32_t id;
    bool special, lstrip, rstrip;
} fl_added_token;

typedef struct {
    fl_added_token *tokens; // (n,) sorted by first byte, then length descending
    size_t n, cap;
    int32_t first[257];     // tokens starting with byte b: [first[b], first[b+1])
} fl_added_tokens;

void fl_added_tokens_free(fl_added_tokens *a);
/* Adds or updates (same content) a token; call fl_added_tokens_finish before matching. */
void fl_added_tokens_add(fl_added_tokens *a, const char *content, size_t len, int32_t id, bool special,
                         bool lstrip, bool rstrip);
void fl_added_tokens_finish(fl_added_tokens *a);
const fl_added_token *fl_added_tokens_by_id(const fl_added_tokens *a, int32_t id);
/* Finds the leftmost-longest added token in text[from, len); returns its index or -1. The match,
 * widened by lstrip/rstrip whitespace, is [*start, *end). */
int fl_added_tokens_next(const fl_added_tokens *a, const char *text, size_t len, size_t from,
                         bool skip_special, size_t *start, size_t *end);

/* ---- pipeline settings ----------------------------------------------------------------------- */
enum { FL_PRE_SPLIT = 1, FL_PRE_DIGITS = 2, FL_PRE_BYTELEVEL_REGEX = 3 };
#define FL_MAX_PRE_STEPS 4

typedef struct fl_regex fl_regex; // pretokenize.c: a compiled PCRE2 pattern + match data

/* How a split step turns matches into pieces (HF's SplitDelimiterBehavior): every match and every
 * gap a piece of its own, or a match joined to the gap before it (Gemma's Split(" ")), or to the gap
 * after it (Metaspace with split); a match beside another match stays alone. */
enum { FL_SPLIT_ISOLATED = 0, FL_SPLIT_MERGED_WITH_PREVIOUS, FL_SPLIT_MERGED_WITH_NEXT };
/* Metaspace's prepend_scheme: when a segment gets the replacement in front (never when it already
 * starts with one once its spaces are replaced): every segment, only the one at text offset 0, none. */
enum { FL_META_NEVER = 0, FL_META_ALWAYS, FL_META_FIRST };

typedef struct {
    int kind;            // FL_PRE_*
    fl_regex *regex;     // SPLIT, BYTELEVEL_REGEX
    int behavior;        // SPLIT: FL_SPLIT_*
} fl_pre_step;

typedef struct {
    // model
    bool byte_level;     // tokens are raw bytes; decode undoes nothing more
    bool byte_fallback;  // <0xNN> tokens for symbols not in vocab
    bool ignore_merges;  // a pre-token found whole in vocab is emitted directly (Llama-3)
    bool fuse_unk;
    int32_t unk_id;      // -1 when none
    int32_t byte_ids[256]; // byte_fallback: id of <0xNN>; byte_level: id of the single-byte token
    int32_t ascii_ids[128]; // SentencePiece style: vocab id of each ASCII character, -1 if none
    // normalizer
    bool nfc;
    char *prepend;       // Prepend("▁") or NULL
    char *replace_from, *replace_to; // Replace(" " -> "▁") or NULL
    // pre-tokenizer: Metaspace first (a rewrite of each segment: ' ' -> meta_rep, meta_rep in front
    // by meta_prepend; normalize.c, after the normalizers), then the split steps
    char *meta_rep;      // Metaspace replacement ("▁") or NULL
    int meta_prepend;    // FL_META_*
    fl_pre_step pre[FL_MAX_PRE_STEPS];
    int n_pre;
    // post-processor: ids put before / after the sequence when FL_ENCODE_ADD_SPECIAL
    int32_t post_prefix[4], post_suffix[4];
    int n_post_prefix, n_post_suffix;
    // decoder (SentencePiece style; byte-level models decode raw bytes)
    char *dec_replace_from, *dec_replace_to; // Replace("▁" -> " ") or Metaspace
    bool dec_byte_fallback;
    int dec_strip_left;  // Strip(" ", start=N) / Metaspace prefix removal
} fl_pipeline;

/* ---- word cache: pre-token bytes -> ids ------------------------------------------------------ */
typedef struct {
    uint64_t *hash;      // (cap,) 0 = empty
    uint32_t *key_off, *key_len, *ids_off, *ids_len; // (cap,) into arenas
    char *key_arena; size_t key_len_total, key_cap;
    int32_t *id_arena; size_t id_len_total, id_cap;
    size_t cap, count;
} fl_word_cache;

void fl_word_cache_init(fl_word_cache *c, size_t cap);
void fl_word_cache_free(fl_word_cache *c);

/* ---- BPE scratch ----------------------------------------------------------------------------- */
typedef struct {
    int32_t *id, *prev, *next; // (cap,) symbol list
    uint32_t *start, *end;     // (cap,) byte range of each symbol in the word
    uint64_t *heap;            // (heap_cap,) rank << 32 | position
    size_t cap, heap_cap;
} fl_bpe_scratch;

struct fl_tokenizer {
    fl_vocab vocab;
    fl_merges merges;
    fl_added_tokens added;
    fl_pipeline pipe;
    int32_t bos_id, eos_id;
    char *kind;
    char *chat_template;         // tokenizer_config.json chat_template or chat_template.jinja, or NULL
    char *model_dir;
    fl_word_cache cache;
    fl_bpe_scratch bpe;
    char *norm_buf; size_t norm_cap;     // normalized segment
    uint32_t *norm_start, *norm_end;     // (norm_cap,) original range of each normalized byte (fl_norm_map)
    char *nfc_buf; size_t nfc_cap;       // NFC output (before Prepend/Replace)
    uint32_t *nfc_start, *nfc_end;       // (nfc_cap,)
    uint32_t *cp_buf, *cp_start, *cp_end; size_t cp_cap; // NFC work: code points and their source ranges
};

/* Where normalized bytes came from: normalized byte i stems from the original bytes
 * [start[i], end[i]), the whole character(s) it was made from (each byte of a prepended "▁" stems
 * from the first character, as in HF tokenizers). A token over normalized bytes [s, e) covers
 * [start[s], end[e - 1]). A NULL map means the normalizer changed nothing: byte i is base + i. */
typedef struct {
    const uint32_t *start, *end; // (len,)
} fl_norm_map;

/* bpe.c: encodes one pre-token (bytes [0, len) of `word`) with the model; appends ids and, when
 * out->want_offsets, the original byte range of each token through `map` (entries for the word's
 * bytes), or base + i when map is NULL. A range always covers whole characters: a byte-level token
 * holding part of a character's bytes covers that character, as in HF tokenizers. */
int fl_bpe_encode_word(fl_tokenizer *tok, const char *word, size_t len, const fl_norm_map *map, uint32_t base,
                       fl_token_ids *out);
void fl_bpe_scratch_free(fl_bpe_scratch *s);
void fl_token_ids_push(fl_token_ids *out, int32_t id, uint32_t start, uint32_t end);

/* pretokenize.c */
/* Compiles an Oniguruma pattern of tokenizer.json for PCRE2; `digits`: its \p{N} is Rust's
 * char::is_numeric (the Digits pre-tokenizer) rather than Oniguruma's. */
int fl_regex_compile(fl_regex **out, const char *hf_pattern, int digits, const char *where);
void fl_regex_free(fl_regex *re);
/* Splits [0, len) of text into pre-tokens with the pipeline's steps and calls fn on each. */
typedef void (*fl_piece_fn)(void *ctx, size_t start, size_t end);
void fl_pretokenize(const fl_pipeline *p, const char *text, size_t len, fl_piece_fn fn, void *ctx);
extern const char fl_gpt2_pattern[];

/* normalize.c: normalizes one segment text[0, len) that starts at original offset `base`. Returns
 * the normalized text (text itself when nothing changes, else a buffer of tok) and its length;
 * *map is the origin of each normalized byte, with map->start NULL when nothing changed. */
const char *fl_normalize(fl_tokenizer *tok, const char *text, size_t len, uint32_t base, size_t *out_len,
                         fl_norm_map *map);

/* Whether cp lies in one of n sorted, disjoint, inclusive ranges (the generated Unicode tables). */
static inline int fl_in_ranges(const uint32_t (*r)[2], size_t n, uint32_t cp) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (cp < r[mid][0]) hi = mid;
        else if (cp > r[mid][1]) lo = mid + 1;
        else return 1;
    }
    return 0;
}

#endif
