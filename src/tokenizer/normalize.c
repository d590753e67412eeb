/* normalize.c — the normalizers of tokenizer.json: NFC (Qwen2), Prepend and Replace (the
 * SentencePiece-style "▁" of Llama-2 / TinyLlama), applied in that order to one segment of text
 * (the text between two added tokens), keeping for every output byte the original range of the
 * character(s) it stems from (fl_norm_map): a prepended "▁" stems from the segment's first
 * character, as in HF tokenizers, so a token made of it alone covers that character. The rewrite
 * of the Metaspace pre-tokenizer (Mistral v3, transformers 5's Llama tokenizers) is the same pass:
 * ' ' -> "▁", and "▁" in front by prepend_scheme — "always": every segment, "first": only the one at
 * offset 0 of the text, so text after an added token gets none — unless the rewritten segment
 * already starts with "▁" (HF checks after replacing, so a leading space counts).
 *
 * NFC: text made only of code points that are NFC quick-check "Yes" with combining class 0 (ASCII,
 * most Latin, CJK, ...) is returned untouched; otherwise the segment is fully decomposed
 * (canonical, Hangul algorithmic), reordered by combining class and recomposed (UAX #15), with
 * Unicode 9.0.0 tables — the version of HF tokenizers' NFC, so marks assigned later stay unordered
 * and later compositions are not made (unicode_nfc.h, tools/make_tokenizer_unicode.py).
 * Not here: NFD/NFKC/NFKD, lowercasing, stripping (tokenizers has them; no target model uses them).
 */
#include "tokenizer/tokenizer_internal.h"

#include "common/error.h"
#include "tokenizer/unicode_nfc.h"
#include "tokenizer/unicode_nfc_compose.h"

#include <stdlib.h>
#include <string.h>

enum { SBASE = 0xAC00, LBASE = 0x1100, VBASE = 0x1161, TBASE = 0x11A7, LCOUNT = 19, VCOUNT = 21, TCOUNT = 28,
       NCOUNT = VCOUNT * TCOUNT, SCOUNT = LCOUNT * NCOUNT };

/* ============================== tables ============================== */

static int nfc_unsafe_cp(uint32_t cp) {
    return cp >= 0xC0 && fl_in_ranges(nfc_unsafe, sizeof nfc_unsafe / sizeof nfc_unsafe[0], cp);
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
    free(tok->cp_start);
    free(tok->cp_end);
    tok->cp_buf = fl_malloc(cap * sizeof *tok->cp_buf);
    tok->cp_start = fl_malloc(cap * sizeof *tok->cp_start);
    tok->cp_end = fl_malloc(cap * sizeof *tok->cp_end);
    tok->cp_cap = cap;
}

/* NFC of text[0, len) into tok->nfc_buf, with the original range of each output byte in
 * tok->nfc_start / nfc_end: the source character of each code point (a composed character covers
 * the characters it was made from). Returns the output length. */
static size_t nfc(fl_tokenizer *tok, const char *text, size_t len, uint32_t base) {
    const unsigned char *u = (const unsigned char *)text;
    cp_reserve(tok, len * 4 + 4); // worst case: every byte decomposes into up to 4 code points
    uint32_t *cp = tok->cp_buf, *cs = tok->cp_start, *ce = tok->cp_end;
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        int cl = fl_utf8_len(u + i, len - i);
        if (cl <= 0) cl = 1;
        uint32_t c = fl_utf8_decode(u + i, cl), buf[3];
        int dn;
        const uint32_t *d = decompose(c, buf, &dn);
        for (int k = 0; k < dn; k++) { cp[n] = d[k]; cs[n] = base + (uint32_t)i; ce[n] = base + (uint32_t)(i + (size_t)cl); n++; }
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
                if (cs[i] < cs[starter]) cs[starter] = cs[i];
                if (ce[i] > ce[starter]) ce[starter] = ce[i];
                continue;
            }
            if (cls == 0) starter = out;
            last_class = cls;
            cp[out] = cp[i];
            cs[out] = cs[i];
            ce[out] = ce[i];
            out++;
        }
    }
    if (out * 4 > tok->nfc_cap) {
        free(tok->nfc_buf);
        free(tok->nfc_start);
        free(tok->nfc_end);
        tok->nfc_cap = out * 4 + 1;
        tok->nfc_buf = fl_malloc(tok->nfc_cap);
        tok->nfc_start = fl_malloc(tok->nfc_cap * sizeof *tok->nfc_start);
        tok->nfc_end = fl_malloc(tok->nfc_cap * sizeof *tok->nfc_end);
    }
    size_t bytes = 0;
    for (size_t i = 0; i < out; i++) {
        int w = fl_utf8_encode(cp[i], tok->nfc_buf + bytes);
        for (int k = 0; k < w; k++) {
            tok->nfc_start[bytes + (size_t)k] = cs[i];
            tok->nfc_end[bytes + (size_t)k] = ce[i];
        }
        bytes += (size_t)w;
    }
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
    if (n <= tok->norm_cap) return;
    size_t cap = tok->norm_cap ? tok->norm_cap : 1024;
    while (cap < n) cap *= 2;
    free(tok->norm_buf);
    free(tok->norm_start);
    free(tok->norm_end);
    tok->norm_buf = fl_malloc(cap);
    tok->norm_start = fl_malloc(cap * sizeof *tok->norm_start);
    tok->norm_end = fl_malloc(cap * sizeof *tok->norm_end);
    tok->norm_cap = cap;
}

const char *fl_normalize(fl_tokenizer *tok, const char *text, size_t len, uint32_t base, size_t *out_len,
                         fl_norm_map *map) {
    const fl_pipeline *p = &tok->pipe;
    const char *cur = text;
    fl_norm_map cur_map = {NULL, NULL};
    size_t cur_len = len;
    if (p->nfc && needs_nfc(text, len)) {
        cur_len = nfc(tok, text, len, base);
        cur = tok->nfc_buf;
        cur_map = (fl_norm_map){tok->nfc_start, tok->nfc_end};
    }
    // Prepend and Replace, or Metaspace's rewrite (load_hf.c never sets both): ' ' -> replacement,
    // and the replacement in front unless the rewritten segment starts with it
    const char *prepend = p->prepend, *from = p->replace_from, *to = p->replace_to;
    if (p->meta_rep) {
        size_t rl = strlen(p->meta_rep);
        int starts = cur_len && (cur[0] == ' ' || (cur_len >= rl && !memcmp(cur, p->meta_rep, rl)));
        int want = p->meta_prepend == FL_META_ALWAYS || (p->meta_prepend == FL_META_FIRST && base == 0);
        prepend = want && !starts ? p->meta_rep : NULL;
        from = " ";
        to = p->meta_rep;
    }
    if ((!prepend && !from) || cur_len == 0) {
        *out_len = cur_len;
        *map = cur_map;
        return cur;
    }
    size_t from_len = from ? strlen(from) : 0, to_len = to ? strlen(to) : 0;
    size_t pre_len = prepend ? strlen(prepend) : 0;
    size_t worst = pre_len + cur_len * (from_len && to_len > from_len ? (to_len + from_len - 1) / from_len + 1 : 1) + 1;
    norm_reserve(tok, worst);
    char *o = tok->norm_buf;
    uint32_t *ms = tok->norm_start, *me = tok->norm_end;
    size_t n = 0;
#define SRC_START(i) (cur_map.start ? cur_map.start[i] : base + (uint32_t)(i))
#define SRC_END(i) (cur_map.end ? cur_map.end[i] : base + (uint32_t)(i) + 1)
    // Prepend: the added text stems from the first character (HF tokenizers aligns it there)
    int first_len = fl_utf8_len((const unsigned char *)cur, cur_len);
    size_t first_last = first_len > 0 ? (size_t)first_len - 1 : 0;
    for (size_t k = 0; k < pre_len; k++) { o[n] = prepend[k]; ms[n] = SRC_START(0); me[n] = SRC_END(first_last); n++; }
    for (size_t i = 0; i < cur_len;) { // character by character: every byte stems from its whole character
        size_t cl = from_len && i + from_len <= cur_len && !memcmp(cur + i, from, from_len) ? from_len : 0;
        const char *src = cl ? to : cur + i;
        size_t out = cl ? to_len : (cl = (size_t)fl_utf8_len((const unsigned char *)cur + i, cur_len - i));
        for (size_t k = 0; k < out; k++) { o[n] = src[k]; ms[n] = SRC_START(i); me[n] = SRC_END(i + cl - 1); n++; }
        i += cl;
    }
#undef SRC_START
#undef SRC_END
    o[n] = 0;
    *out_len = n;
    *map = (fl_norm_map){ms, me};
    return o;
}
