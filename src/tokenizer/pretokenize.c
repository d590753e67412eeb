/* pretokenize.c — splitting normalized text into pre-tokens ("words") before BPE.
 *
 * Each pre-tokenizer step of tokenizer.json becomes one PCRE2 pattern applied with the `Isolated`
 * behaviour (every match and every gap between matches is a piece): `Split(regex)` uses the file's
 * pattern, `Digits(individual_digits)` is `\p{N}` (`\p{N}+` when not individual), and
 * `ByteLevel(use_regex=true)` is the GPT-2 pattern. Steps apply in order, each to the pieces of
 * the previous one, so a later pattern sees a piece's end as the end of the text (this is what
 * makes `\s+(?!\S)` behave as in HF after SmolLM2's digit split).
 *
 * HF compiles patterns with Oniguruma, where `\s` is Unicode White_Space (including U+0085 NEL);
 * PCRE2 with UCP leaves NEL out, so `\s` / `\S` are rewritten to an explicit White_Space class
 * before compiling with PCRE2_UTF | PCRE2_UCP (JIT when available). Not here: normalization,
 * added tokens, the byte-to-unicode mapping (bytes are used directly; see tokenizer_internal.h).
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/tokenizer_internal.h"

#include "common/error.h"

#include <pcre2.h>
#include <stdlib.h>
#include <string.h>

struct fl_regex {
    pcre2_code *code;
    pcre2_match_data *md;
    int jit;
};

/* tokenizers ByteLevel::use_regex (GPT-2). */
const char fl_gpt2_pattern[] = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

#define WS_CLASS_BODY "\\t-\\r \\x{85}\\p{Z}" // Unicode White_Space = Zs|Zl|Zp, TAB..CR, NEL

/* Rewrites `\s` and `\S` of an Oniguruma pattern for PCRE2; returns NULL when \S appears inside a
 * character class (not expressible by substitution). */
static char *translate_pattern(const char *src) {
    size_t n = strlen(src);
    char *out = fl_malloc(n * 24 + 1), *o = out;
    int in_class = 0;
    for (size_t i = 0; i < n; i++) {
        char c = src[i];
        if (c == '\\' && i + 1 < n) {
            char d = src[++i];
            if (d == 's') {
                const char *rep = in_class ? WS_CLASS_BODY : "[" WS_CLASS_BODY "]";
                o += strlen(strcpy(o, rep));
            } else if (d == 'S') {
                if (in_class) { free(out); return NULL; }
                o += strlen(strcpy(o, "[^" WS_CLASS_BODY "]"));
            } else {
                *o++ = c;
                *o++ = d;
            }
            continue;
        }
        if (!in_class && c == '[') {
            in_class = 1;
            *o++ = c;
            if (i + 1 < n && src[i + 1] == '^') *o++ = src[++i];
            if (i + 1 < n && src[i + 1] == ']') *o++ = src[++i]; // leading ] is literal
            continue;
        }
        if (in_class && c == ']') in_class = 0;
        *o++ = c;
    }
    *o = 0;
    return out;
}

int fl_regex_compile(fl_regex **out, const char *hf_pattern, const char *where) {
    *out = NULL;
    char *pat = translate_pattern(hf_pattern);
    if (!pat) return fl_input_error("%s: pattern uses \\S inside a character class (unsupported): %.80s", where, hf_pattern);
    int err;
    PCRE2_SIZE erroff;
    pcre2_code *code = pcre2_compile((PCRE2_SPTR)pat, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &err, &erroff, NULL);
    free(pat);
    if (!code) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(err, msg, sizeof msg);
        return fl_input_error("%s: regex does not compile (%s): %.80s", where, (char *)msg, hf_pattern);
    }
    fl_regex *re = fl_calloc(1, sizeof *re);
    re->code = code;
    re->jit = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
    re->md = pcre2_match_data_create_from_pattern(code, NULL);
    *out = re;
    return 0;
}

void fl_regex_free(fl_regex *re) {
    if (!re) return;
    pcre2_match_data_free(re->md);
    pcre2_code_free(re->code);
    free(re);
}

/* Calls step k on [start, end) of text, recursing into the remaining steps for each piece. */
static void split_step(const fl_pipeline *p, int k, const char *text, size_t start, size_t end,
                       fl_piece_fn fn, void *ctx) {
    if (start >= end) return;
    if (k == p->n_pre) { fn(ctx, start, end); return; }
    fl_regex *re = p->pre[k].regex;
    PCRE2_SPTR subject = (PCRE2_SPTR)(text + start);
    size_t len = end - start, pos = 0, gap = 0; // gap: start of the unmatched text before pos
    while (pos < len) {
        int rc = re->jit ? pcre2_jit_match(re->code, subject, len, pos, PCRE2_NO_UTF_CHECK, re->md, NULL)
                         : pcre2_match(re->code, subject, len, pos, PCRE2_NO_UTF_CHECK, re->md, NULL);
        if (rc < 0) break;
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(re->md);
        size_t ms = ov[0], me = ov[1];
        if (me == ms) { // empty match: not a piece; search again one character later
            int cl = fl_utf8_len((const unsigned char *)text + start + ms, len - ms);
            pos = ms + (size_t)(cl > 0 ? cl : 1);
            continue;
        }
        if (ms > gap) split_step(p, k + 1, text, start + gap, start + ms, fn, ctx);
        split_step(p, k + 1, text, start + ms, start + me, fn, ctx);
        gap = pos = me;
    }
    if (gap < len) split_step(p, k + 1, text, start + gap, end, fn, ctx);
}

void fl_pretokenize(const fl_pipeline *p, const char *text, size_t len, fl_piece_fn fn, void *ctx) {
    split_step(p, 0, text, 0, len, fn, ctx);
}
