/* pretokenize.c — splitting normalized text into pre-tokens ("words") before BPE.
 *
 * Each pre-tokenizer step of tokenizer.json becomes one PCRE2 pattern applied with the `Isolated`
 * behaviour (every match and every gap between matches is a piece) or, for a Split that says so,
 * `MergedWithPrevious` (as HF: a match right after a gap joins it, a match after a match or at the
 * start stays a piece of its own; Gemma's Split(" ")) or `MergedWithNext` (the mirror image: a match
 * joins the gap after it; Metaspace with split=true): `Split(regex)` uses the file's pattern,
 * `Metaspace` its replacement, `Digits(individual_digits)` is `\p{N}` (`\p{N}+` when not
 * individual), and `ByteLevel(use_regex=true)` is the GPT-2 pattern. (Metaspace's rewrite of the
 * text — spaces to "▁", "▁" in front — is done before, with the normalizers: normalize.c.) Steps
 * apply in order, each to the pieces of the previous one, so a later pattern sees a piece's end as
 * the end of the text (this is what makes `\s+(?!\S)` behave as in HF after SmolLM2's digit split).
 *
 * HF compiles patterns with Oniguruma, where `\s` is Unicode White_Space (including U+0085 NEL);
 * PCRE2 with UCP leaves NEL out, so `\s` / `\S` are rewritten to an explicit White_Space class
 * before compiling with PCRE2_UTF | PCRE2_UCP (JIT when available). PCRE2 10.42's \p{L} / \p{N}
 * are Unicode 14.0; HF's are 16.0 (Oniguruma) and 17.0 (Digits, Rust's char::is_numeric). Each
 * pattern is also compiled with \p{L} / \p{N} (and the \p{Lu} .. \p{Lo}, \p{M} of Mistral's Tekken
 * regex) widened by the code points assigned since (unicode_props.h), and a segment holding one of
 * those is split with the widened pattern: the same pieces as HF, at no cost for text without them. Not here: normalization,
 * added tokens, the byte-to-unicode mapping (bytes are used directly; see tokenizer_internal.h).
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/tokenizer_internal.h"

#include "common/error.h"
#include "common/strbuf.h"
#include "tokenizer/unicode_props.h"

#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fl_regex {
    pcre2_code *code;        // PCRE2's own \p{L} / \p{N} (Unicode 14.0)
    pcre2_code *code_wide;   // the same with \p{L} / \p{N} widened to HF's Unicode version, or NULL
    pcre2_match_data *md;
    int jit, jit_wide;
};

/* tokenizers ByteLevel::use_regex (GPT-2). */
const char fl_gpt2_pattern[] = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

#define WS_CLASS_BODY "\\t-\\r \\x{85}\\p{Z}" // Unicode White_Space = Zs|Zl|Zp, TAB..CR, NEL

/* Appends the ranges of a table as class items "\x{A}-\x{B}" (an empty table holds one range past
 * U+10FFFF: C has no empty array). */
static void put_ranges(fl_strbuf *b, const uint32_t (*r)[2], size_t n) {
    char item[40];
    for (size_t i = 0; i < n && r[i][0] <= 0x10FFFF; i++) {
        int w = r[i][0] == r[i][1] ? snprintf(item, sizeof item, "\\x{%X}", (unsigned)r[i][0])
                                   : snprintf(item, sizeof item, "\\x{%X}-\\x{%X}", (unsigned)r[i][0], (unsigned)r[i][1]);
        fl_strbuf_append(b, item, (size_t)w);
    }
}

typedef struct { const uint32_t (*r)[2]; size_t n; } range_set;
#define RANGES(t) ((range_set){t, sizeof t / sizeof t[0]})

/* The code points the class named src[0, len) of `\p{...}` gains after PCRE2's Unicode (N: `numbers`),
 * or {NULL, 0} for a class the tables do not cover. */
static range_set new_ranges(const char *name, size_t len, range_set numbers) {
    static const struct { const char *name; range_set set; } classes[] = {
        {"L", RANGES(fl_new_letters)}, {"Lu", RANGES(fl_new_Lu)}, {"Ll", RANGES(fl_new_Ll)}, {"Lt", RANGES(fl_new_Lt)},
        {"Lm", RANGES(fl_new_Lm)}, {"Lo", RANGES(fl_new_Lo)}, {"M", RANGES(fl_new_M)},
    };
    if (len == 1 && name[0] == 'N') return numbers;
    for (size_t k = 0; k < sizeof classes / sizeof classes[0]; k++)
        if (strlen(classes[k].name) == len && !memcmp(classes[k].name, name, len)) return classes[k].set;
    return (range_set){NULL, 0};
}

/* Rewrites an Oniguruma pattern for PCRE2: `\s` / `\S` become an explicit White_Space class, and
 * when `wide` `\p{X}` / `\P{X}` for X = L, N, Lu, Ll, Lt, Lm, Lo, M get the code points assigned
 * after PCRE2's Unicode (`numbers`: fl_new_numbers for HF's regexes, fl_new_digits for its Digits
 * pre-tokenizer). Returns NULL when \S or a widened \P appears inside a character class (not
 * expressible by substitution). */
static char *translate_pattern(const char *src, int wide, range_set numbers) {
    size_t n = strlen(src);
    fl_strbuf b = {0};
    int in_class = 0;
    for (size_t i = 0; i < n; i++) {
        char c = src[i];
        if (c == '\\' && i + 1 < n) {
            char d = src[++i];
            const char *close = (d == 'p' || d == 'P') && i + 1 < n && src[i + 1] == '{' ? strchr(src + i + 2, '}') : NULL;
            range_set gained = close ? new_ranges(src + i + 2, (size_t)(close - (src + i + 2)), numbers) : (range_set){NULL, 0};
            int prop = gained.r != NULL;
            if (d == 'Q') { // quoted literal (Split with a String pattern): copied as is up to \\E
                const char *e = strstr(src + i + 1, "\\E");
                size_t stop = e ? (size_t)(e - src) + 2 : n;
                fl_strbuf_append(&b, src + i - 1, stop - (i - 1));
                i = stop - 1;
            } else if (d == 's') {
                fl_strbuf_append_str(&b, in_class ? WS_CLASS_BODY : "[" WS_CLASS_BODY "]");
            } else if (d == 'S') {
                if (in_class) { free(b.p); return NULL; }
                fl_strbuf_append_str(&b, "[^" WS_CLASS_BODY "]");
            } else if (wide && prop) {
                if (d == 'P' && in_class) { free(b.p); return NULL; }
                if (!in_class) fl_strbuf_append_str(&b, d == 'P' ? "[^" : "[");
                fl_strbuf_append(&b, "\\p", 2);
                fl_strbuf_append(&b, src + i + 1, (size_t)(close - (src + i)));  // "{X}"
                put_ranges(&b, gained.r, gained.n);
                if (!in_class) fl_strbuf_append_str(&b, "]");
                i = (size_t)(close - src);
            } else {
                fl_strbuf_append(&b, src + i - 1, 2);
            }
            continue;
        }
        if (!in_class && c == '[') {
            in_class = 1;
            fl_strbuf_append(&b, &c, 1);
            if (i + 1 < n && src[i + 1] == '^') fl_strbuf_append(&b, src + ++i, 1);
            if (i + 1 < n && src[i + 1] == ']') fl_strbuf_append(&b, src + ++i, 1); // leading ] is literal
            continue;
        }
        if (in_class && c == ']') in_class = 0;
        fl_strbuf_append(&b, &c, 1);
    }
    if (!b.p) fl_strbuf_append(&b, "", 0);
    return b.p;
}

static int compile_one(pcre2_code **out, const char *pat, const char *where, const char *hf_pattern) {
    int err;
    PCRE2_SIZE erroff;
    *out = pcre2_compile((PCRE2_SPTR)pat, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &err, &erroff, NULL);
    if (*out) return 0;
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    return fl_input_error("%s: regex does not compile (%s): %.80s", where, (char *)msg, hf_pattern);
}

int fl_regex_compile(fl_regex **out, const char *hf_pattern, int digits, const char *where) {
    *out = NULL;
    range_set numbers = digits ? RANGES(fl_new_digits) : RANGES(fl_new_numbers);
    char *pat = translate_pattern(hf_pattern, 0, numbers);
    char *wide = pat ? translate_pattern(hf_pattern, 1, numbers) : NULL;
    if (!pat || !wide) {
        free(pat);
        return fl_input_error("%s: pattern uses \\S or a \\P{...} class inside a character class (unsupported): %.80s", where,
                              hf_pattern);
    }
    pcre2_code *code = NULL, *code_wide = NULL;
    int rc = compile_one(&code, pat, where, hf_pattern);
    if (!rc && strcmp(pat, wide)) rc = compile_one(&code_wide, wide, where, hf_pattern);
    free(pat);
    free(wide);
    if (rc) { pcre2_code_free(code); return rc; }
    fl_regex *re = fl_calloc(1, sizeof *re);
    re->code = code;
    re->code_wide = code_wide;
    re->jit = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
    re->jit_wide = code_wide && pcre2_jit_compile(code_wide, PCRE2_JIT_COMPLETE) == 0;
    re->md = pcre2_match_data_create_from_pattern(code, NULL);
    *out = re;
    return 0;
}

void fl_regex_free(fl_regex *re) {
    if (!re) return;
    pcre2_match_data_free(re->md);
    pcre2_code_free(re->code);
    pcre2_code_free(re->code_wide);
    free(re);
}

/* Whether text holds a code point that is \p{L} / \p{N} for HF but not for PCRE2 (fl_new_any):
 * only such text needs the widened patterns, which are several times slower. */
static int needs_wide(const char *text, size_t len) {
    const unsigned char *u = (const unsigned char *)text;
    size_t n_any = sizeof fl_new_any / sizeof fl_new_any[0];
    for (size_t i = 0; i < len; i++) {
        if (u[i] < 0xE0) continue; // below U+0800 (and continuation bytes): none is new (make_tokenizer_unicode.py checks)
        int cl = fl_utf8_len(u + i, len - i);
        if (cl <= 0) continue;
        if (fl_in_ranges(fl_new_any, n_any, fl_utf8_decode(u + i, cl))) return 1;
        i += (size_t)cl - 1;
    }
    return 0;
}

/* Calls step k on [start, end) of text, recursing into the remaining steps for each piece. */
static void split_step(const fl_pipeline *p, int k, int wide, const char *text, size_t start, size_t end,
                       fl_piece_fn fn, void *ctx) {
    if (start >= end) return;
    if (k == p->n_pre) { fn(ctx, start, end); return; }
    fl_regex *re = p->pre[k].regex;
    pcre2_code *code = wide && re->code_wide ? re->code_wide : re->code;
    int jit = wide && re->code_wide ? re->jit_wide : re->jit;
    PCRE2_SPTR subject = (PCRE2_SPTR)(text + start);
    size_t len = end - start, pos = 0, gap = 0, open = 0; // gap: start of the unmatched text before pos
    while (pos < len) {
        int rc = jit ? pcre2_jit_match(code, subject, len, pos, PCRE2_NO_UTF_CHECK, re->md, NULL)
                     : pcre2_match(code, subject, len, pos, PCRE2_NO_UTF_CHECK, re->md, NULL);
        if (rc < 0) break;
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(re->md);
        size_t ms = ov[0], me = ov[1];
        if (me == ms) { // empty match: not a piece; search again one character later
            int cl = fl_utf8_len((const unsigned char *)text + start + ms, len - ms);
            pos = ms + (size_t)(cl > 0 ? cl : 1);
            continue;
        }
        int behavior = p->pre[k].behavior;
        if (behavior == FL_SPLIT_MERGED_WITH_PREVIOUS) {
            split_step(p, k + 1, wide, text, start + (ms > gap ? gap : ms), start + me, fn, ctx);
        } else if (behavior == FL_SPLIT_MERGED_WITH_NEXT) {
            // the piece pending since `open` (a gap, or a match and the gap after it) ends where a
            // gap ends or where a match follows a match; this match opens the next one
            if (ms > open) split_step(p, k + 1, wide, text, start + open, start + ms, fn, ctx);
            open = ms;
        } else {
            if (ms > gap) split_step(p, k + 1, wide, text, start + gap, start + ms, fn, ctx);
            split_step(p, k + 1, wide, text, start + ms, start + me, fn, ctx);
        }
        gap = pos = me;
    }
    if (p->pre[k].behavior == FL_SPLIT_MERGED_WITH_NEXT) split_step(p, k + 1, wide, text, start + open, end, fn, ctx);
    else if (gap < len) split_step(p, k + 1, wide, text, start + gap, end, fn, ctx);
}

void fl_pretokenize(const fl_pipeline *p, const char *text, size_t len, fl_piece_fn fn, void *ctx) {
    split_step(p, 0, needs_wide(text, len), text, 0, len, fn, ctx);
}
