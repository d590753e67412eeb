/* normalize.c — the normalizers of tokenizer.json: NFC (Qwen2), Prepend and Replace (the
 * SentencePiece-style "▁" of Llama-2 / TinyLlama), applied in that order to one segment of text
 * (the text between two added tokens), keeping the original byte offset of every output byte.
 *
 * NFC: text made only of code points that are NFC quick-check "Yes" with combining class 0 (ASCII,
 * most Latin, CJK, ...) is returned untouched; otherwise the segment is fully decomposed
 * (canonical, Hangul algorithmic), reordered by combining class and recomposed (UAX #15), with
 * tables generated from Python's unicodedata (unicode_nfc.h, tools/make_tokenizer_unicode.py).
 * Not here: NFD/NFKC/NFKD, lowercasing, stripping (tokenizers has them; no target model uses them).
 */
#include "tokenizer/tokenizer_internal.h"

#include "common/error.h"
#include "tokenizer/unicode_nfc.h"

#include <stdlib.h>
#include <string.h>

enum { SBASE = 0xAC00, LBASE = 0x1100, VBASE = 0x1161, TBASE = 0x11A7, LCOUNT = 19, VCOUNT = 21, TCOUNT = 28,
       NCOUNT = VCOUNT * TCOUNT, SCOUNT = LCOUNT * NCOUNT };

/* ============================== tables ============================== */

static int nfc_unsafe_cp(uint32_t cp) {
    if (cp < 0xC0) return 0;
    size_t lo = 0, hi = sizeof nfc_unsafe / sizeof nfc_unsafe[0];
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (cp < nfc_unsafe[mid][0]) hi = mid;
        else if (cp > nfc_unsafe[mid][1]) lo = mid + 1;
        else return 1;
    }
    return 0;
}

static int ccc_of(uint32_t cp) {
    if (cp < 0x300) return 0;
    size_t lo = 0, hi = sizeof nfc_ccc / sizeof nfc_ccc[0];
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (nfc_ccc[mid].cp == cp) return nfc_ccc[mid].ccc;
        if (nfc_ccc[mid].cp < cp) lo = mid + 1; else hi = mid;
    }
    return 0;
}

/* Full canonical decomposition of cp; returns a pointer to `n` code points (may be `buf`). */
static const uint32_t *decompose(uint32_t cp, uint32_t buf[3], int *n) {
    if (cp >= SBASE && cp < SBASE + SCOUNT) {
        uint32_t s = cp - SBASE;
        buf[0] = LBASE + s / NCOUNT;
        buf[1] = VBASE + (s % NCOUNT) / TCOUNT;
        *n = 2;
        if (s % TCOUNT) buf[(*n)++] = TBASE + s % TCOUNT;
        return buf;
    }
    size_t lo = 0, hi = sizeof nfc_decomp / sizeof nfc_decomp[0];
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (nfc_decomp[mid].cp == cp) { *n = nfc_decomp[mid].len; return nfc_decomp_data + nfc_decomp[mid].off; }
        if (nfc_decomp[mid].cp < cp) lo = mid + 1; else hi = mid;
    }
    buf[0] = cp;
    *n = 1;
    return buf;
}

/* Primary composite of (a, b), or 0. */
static uint32_t compose(uint32_t a, uint32_t b) {
    if (a >= LBASE && a < LBASE + LCOUNT && b >= VBASE && b < VBASE + VCOUNT)
        return SBASE + ((a - LBASE) * VCOUNT + (b - VBASE)) * TCOUNT;
    if (a >= SBASE && a < SBASE + SCOUNT && (a - SBASE) % TCOUNT == 0 && b > TBASE && b < TBASE + TCOUNT)
        return a + (b - TBASE);
    uint64_t key = ((uint64_t)a << 21) | b;
    size_t lo = 0, hi = sizeof nfc_comp / sizeof nfc_comp[0];
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (nfc_comp[mid].key == key) return nfc_comp[mid].cp;
        if (nfc_comp[mid].key < key) lo = mid + 1; else hi = mid;
    }
    return 0;
}

/* ============================== NFC ============================== */

static void cp_reserve(fl_tokenizer *tok, size_t n) {
    if (n <= tok->cp_cap) return;
    size_t cap = tok->cp_cap ? tok->cp_cap : 256;
    while (cap < n) cap *= 2;
    free(tok->cp_buf);
    free(tok->cp_off);
    tok->cp_buf = fl_malloc(cap * sizeof *tok->cp_buf);
    tok->cp_off = fl_malloc(cap * sizeof *tok->cp_off);
    tok->cp_cap = cap;
}

/* NFC of text[0, len) into tok->nfc_buf / nfc_map (offsets base + source byte). Returns length. */
static size_t nfc(fl_tokenizer *tok, const char *text, size_t len, uint32_t base) {
    const unsigned char *u = (const unsigned char *)text;
    cp_reserve(tok, len * 4 + 4); // worst case: every byte decomposes into up to 4 code points
    uint32_t *cp = tok->cp_buf, *off = tok->cp_off;
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        int cl = fl_utf8_len(u + i, len - i);
        if (cl <= 0) cl = 1;
        uint32_t c = fl_utf8_decode(u + i, cl), buf[3];
        int dn;
        const uint32_t *d = decompose(c, buf, &dn);
        for (int k = 0; k < dn; k++) { cp[n] = d[k]; off[n] = base + (uint32_t)i; n++; }
        i += (size_t)cl;
    }
    // canonical ordering: stable insertion sort of each run of non-starters by ccc; the offsets
    // stay in place (a moved mark takes the position it moves to, as HF's alignments do), so they
    // never decrease
    for (size_t i = 1; i < n; i++) {
        int ci = ccc_of(cp[i]);
        if (!ci) continue;
        size_t j = i;
        while (j > 0) {
            int cj = ccc_of(cp[j - 1]);
            if (cj <= ci) break;
            uint32_t t = cp[j]; cp[j] = cp[j - 1]; cp[j - 1] = t;
            j--;
        }
    }
    // canonical composition (UAX #15)
    size_t out = 0;
    if (n) {
        size_t starter = 0;
        int last_class = ccc_of(cp[0]) ? 256 : 0;
        out = 1;
        for (size_t i = 1; i < n; i++) {
            int cls = ccc_of(cp[i]);
            uint32_t comp = compose(cp[starter], cp[i]);
            if (comp && (last_class < cls || last_class == 0)) {
                cp[starter] = comp;
                continue;
            }
            if (cls == 0) starter = out;
            last_class = cls;
            cp[out] = cp[i];
            off[out] = off[i];
            out++;
        }
    }
    if (out * 4 + 1 > tok->nfc_cap) {
        free(tok->nfc_buf);
        free(tok->nfc_map);
        tok->nfc_cap = out * 4 + 1;
        tok->nfc_buf = fl_malloc(tok->nfc_cap);
        tok->nfc_map = fl_malloc((tok->nfc_cap + 1) * sizeof *tok->nfc_map);
    }
    size_t bytes = 0;
    for (size_t i = 0; i < out; i++) {
        int w = fl_utf8_encode(cp[i], tok->nfc_buf + bytes);
        for (int k = 0; k < w; k++) tok->nfc_map[bytes + (size_t)k] = off[i];
        bytes += (size_t)w;
    }
    tok->nfc_map[bytes] = base + (uint32_t)len;
    return bytes;
}

static int needs_nfc(const char *text, size_t len) {
    const unsigned char *u = (const unsigned char *)text;
    for (size_t i = 0; i < len;) {
        if (u[i] < 0xC3) { i++; continue; } // below U+00C0: always safe (continuation bytes skip too)
        int cl = fl_utf8_len(u + i, len - i);
        if (cl <= 0) { i++; continue; }
        if (nfc_unsafe_cp(fl_utf8_decode(u + i, cl))) return 1;
        i += (size_t)cl;
    }
    return 0;
}

/* ============================== pipeline ============================== */

static void norm_reserve(fl_tokenizer *tok, size_t n) {
    if (n + 1 <= tok->norm_cap) return;
    size_t cap = tok->norm_cap ? tok->norm_cap : 1024;
    while (cap < n + 1) cap *= 2;
    free(tok->norm_buf);
    free(tok->norm_map);
    tok->norm_buf = fl_malloc(cap);
    tok->norm_map = fl_malloc((cap + 1) * sizeof *tok->norm_map);
    tok->norm_cap = cap;
}

const char *fl_normalize(fl_tokenizer *tok, const char *text, size_t len, uint32_t base, size_t *out_len,
                         const uint32_t **map) {
    const fl_pipeline *p = &tok->pipe;
    const char *cur = text;
    const uint32_t *cur_map = NULL;
    size_t cur_len = len;
    if (p->nfc && needs_nfc(text, len)) {
        cur_len = nfc(tok, text, len, base);
        cur = tok->nfc_buf;
        cur_map = tok->nfc_map;
    }
    if ((!p->prepend && !p->replace_from) || cur_len == 0) {
        *out_len = cur_len;
        *map = cur_map;
        return cur;
    }
    size_t from_len = p->replace_from ? strlen(p->replace_from) : 0, to_len = p->replace_to ? strlen(p->replace_to) : 0;
    size_t pre_len = p->prepend ? strlen(p->prepend) : 0;
    size_t worst = pre_len + cur_len * (from_len && to_len > from_len ? (to_len + from_len - 1) / from_len + 1 : 1) + 1;
    norm_reserve(tok, worst);
    char *o = tok->norm_buf;
    uint32_t *m = tok->norm_map;
    size_t n = 0;
#define SRC_OFF(i) (cur_map ? cur_map[i] : base + (uint32_t)(i))
    for (size_t k = 0; k < pre_len; k++) { o[n] = p->prepend[k]; m[n] = SRC_OFF(0); n++; }
    for (size_t i = 0; i < cur_len;) {
        if (from_len && i + from_len <= cur_len && !memcmp(cur + i, p->replace_from, from_len)) {
            for (size_t k = 0; k < to_len; k++) { o[n] = p->replace_to[k]; m[n] = SRC_OFF(i); n++; }
            i += from_len;
        } else {
            o[n] = cur[i]; m[n] = SRC_OFF(i); n++;
            i++;
        }
    }
    m[n] = SRC_OFF(cur_len);
#undef SRC_OFF
    o[n] = 0;
    *out_len = n;
    *map = m;
    return o;
}
