/* pystr.c — the Python str behaviour templates rely on, over UTF-8 bytes: code point counting and
 * indexing, str.isspace(), strip with and without a character set, upper/lower/title/capitalize,
 * and str.splitlines()'s line breaks.
 *
 * Case mapping and the str tests are Python's own, from tables generated out of Python's str
 * (tools/make_template_unicode.py): full mappings (ß -> SS, İ -> i̇), title case, the final-sigma
 * rule of lower(), the Unicode version of that Python (unicode_case.h says which).
 */
#include "template/tpl_internal.h"

#include "template/unicode_case.h"
#include "template/unicode_props.h"
#include "common/utf8.h"

#include <string.h>

uint32_t tpl_u8_get(const char *s, size_t n, size_t *pos) {
    const unsigned char *u = (const unsigned char *)s;
    int l = fl_utf8_len(u + *pos, n - *pos);
    if (l <= 0) { uint32_t c = u[*pos]; (*pos)++; return c; }
    uint32_t c = fl_utf8_decode(u + *pos, l);
    *pos += (size_t)l;
    return c;
}

size_t tpl_u8_count(const char *s, size_t n) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++) k += ((unsigned char)s[i] & 0xC0) != 0x80;
    return k;
}

size_t tpl_u8_offset(const char *s, size_t n, size_t index) {
    size_t pos = 0;
    for (size_t k = 0; k < index && pos < n; k++) tpl_u8_get(s, n, &pos);
    return pos;
}

int tpl_py_space(uint32_t c) {
    return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

static int in_set(uint32_t c, const char *chars, size_t nchars) {
    if (!chars) return tpl_py_space(c);
    size_t pos = 0;
    while (pos < nchars)
        if (tpl_u8_get(chars, nchars, &pos) == c) return 1;
    return 0;
}

/* str.strip/lstrip/rstrip(chars): [*a, *e) of s without the leading/trailing characters that are
 * whitespace (chars NULL) or in `chars`. */
void tpl_strip(const char *s, size_t n, const char *chars, size_t nchars, int left, int right, size_t *a, size_t *e) {
    size_t x = 0, y = n;
    while (left && x < y) {
        size_t p = x;
        if (!in_set(tpl_u8_get(s, y, &p), chars, nchars)) break;
        x = p;
    }
    while (right && y > x) {
        size_t k = y - 1;
        while (k > x && ((unsigned char)s[k] & 0xC0) == 0x80) k--;
        size_t p = k;
        if (!in_set(tpl_u8_get(s, y, &p), chars, nchars)) break;
        y = k;
    }
    *a = x;
    *e = y;
}

/* ===== Python's case mapping (unicode_case.h, unicode_props.h: generated from Python's str) ===== */
static unsigned props(uint32_t c) {
    if (c >= 0x110000) return 0;
    size_t lo = 0, hi = sizeof tpl_prop_start / sizeof *tpl_prop_start; // last run starting at or before c
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (tpl_prop_start[mid] <= c) lo = mid;
        else hi = mid;
    }
    return tpl_prop_flags[lo];
}

/* Python's str.isX() over s[0, n): 'u' isupper, 'l' islower, 't' istitle, 'a' isalpha, 'd' isdigit,
 * 'e' isdecimal, 'm' isnumeric, 'n' isalnum, 's' isspace (as CPython's unicodeobject.c). */
int tpl_py_is(const char *s, size_t n, int kind) {
    if (!n) return 0;
    int cased = 0, prev_cased = 0;
    for (size_t pos = 0; pos < n;) {
        uint32_t c = tpl_u8_get(s, n, &pos);
        unsigned f = props(c), upper = f & TPL_U_UPPER, lower = f & TPL_U_LOWER, title = f & TPL_U_TITLE;
        switch (kind) {
        case 'u': if (lower || title) return 0; cased |= upper != 0; break;
        case 'l': if (upper || title) return 0; cased |= lower != 0; break;
        case 't': // cased letters: upper/title only after uncased, lower only after cased
            if (upper || title) { if (prev_cased) return 0; prev_cased = cased = 1; }
            else if (lower) { if (!prev_cased) return 0; prev_cased = cased = 1; }
            else prev_cased = 0;
            break;
        case 'a': if (!(f & TPL_U_ALPHA)) return 0; break;
        case 'd': if (!(f & TPL_U_DIGIT)) return 0; break;
        case 'e': if (!(f & TPL_U_DECIMAL)) return 0; break;
        case 'm': if (!(f & TPL_U_NUMERIC)) return 0; break;
        case 'n': if (!(f & (TPL_U_ALPHA | TPL_U_DECIMAL | TPL_U_DIGIT | TPL_U_NUMERIC))) return 0; break;
        default: if (!tpl_py_space(c)) return 0;
        }
    }
    return kind == 'u' || kind == 'l' || kind == 't' ? cased : 1;
}

/* The full mapping of c (which 1: upper, 2: lower, 3: title) into out (up to 3 code points). */
static int map_case(uint32_t c, int which, uint32_t out[3]) {
    size_t lo = 0, hi = sizeof tpl_case_map / sizeof *tpl_case_map;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (tpl_case_map[mid][0] < c) lo = mid + 1;
        else hi = mid;
    }
    if (lo == sizeof tpl_case_map / sizeof *tpl_case_map || tpl_case_map[lo][0] != c) { out[0] = c; return 1; }
    uint32_t m = tpl_case_map[lo][which];
    if (!(m & 0x80000000u)) { out[0] = m; return 1; }
    const uint32_t *sp = tpl_case_special + (m & 0x7FFFFFFFu);
    for (uint32_t k = 0; k < sp[0]; k++) out[k] = sp[1 + k];
    return (int)sp[0];
}

/* Python's final-sigma rule for U+03A3 at byte `at` of s[lo, hi): ς when a cased letter precedes it
 * (case-ignorable ones skipped) and none follows (likewise), else σ. */
static uint32_t lower_sigma(const char *s, size_t lo, size_t hi, size_t at, size_t after) {
    size_t k = at;
    unsigned f = 0;
    int found = 0;
    while (k > lo) {
        do k--; while (k > lo && ((unsigned char)s[k] & 0xC0) == 0x80);
        size_t p = k;
        f = props(tpl_u8_get(s, hi, &p));
        if (!(f & TPL_U_IGNORABLE)) { found = 1; break; }
    }
    if (!found || !(f & TPL_U_CASED)) return 0x3C3;
    for (size_t p = after; p < hi;) {
        f = props(tpl_u8_get(s, hi, &p));
        if (!(f & TPL_U_IGNORABLE)) return f & TPL_U_CASED ? 0x3C3 : 0x3C2;
    }
    return 0x3C2;
}

static int is_jinja_title_sep(uint32_t c) { return c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || tpl_py_space(c); }

/* Where the piece of jinja's title filter that holds byte `pos` ends: at the next separator. */
static size_t piece_end(const char *p, size_t n, size_t pos) {
    while (pos < n) {
        size_t q = pos;
        if (is_jinja_title_sep(tpl_u8_get(p, n, &q))) break;
        pos = q;
    }
    return pos;
}

/* mode 'u' str.upper, 'l' str.lower, 't' str.title, 'c' str.capitalize, 'j' jinja's title filter
 * (the text split at runs of `-`, whitespace and opening brackets; each piece p becomes
 * p[0].upper() + p[1:].lower(), so the sigma rule sees p[1:] alone). Full mappings: ß -> SS. */
tv tpl_case(tpl_arena *a, tv s, int mode) {
    const char *p = s.s.p;
    size_t n = s.s.n, cap = 3 * n + 16, o = 0, pos = 0, rest = 0;
    char *out = tpl_alloc(a, cap);
    int prev_cased = 0, first = 1, prev_sep = -1;
    while (pos < n) {
        size_t at = pos;
        uint32_t c = tpl_u8_get(p, n, &pos), m[3];
        int which; // 1 upper, 2 lower, 3 title
        switch (mode) {
        case 'u': which = 1; break;
        case 'l': which = 2; break;
        case 't': which = prev_cased ? 2 : 3; prev_cased = (props(c) & TPL_U_CASED) != 0; break;
        case 'c': which = first ? 3 : 2; break;
        default: {
            int sep = is_jinja_title_sep(c);
            which = sep == prev_sep ? 2 : 1; // a piece is a run of separators or of the others
            if (sep != prev_sep) rest = pos;
            prev_sep = sep;
        }
        }
        first = 0;
        int k = 1;
        if (which == 2 && c == 0x3A3) m[0] = mode == 'j' ? lower_sigma(p, rest, piece_end(p, n, pos), at, pos)
                                                          : lower_sigma(p, 0, n, at, pos);
        else k = map_case(c, which, m);
        if (o + 12 > cap) { // a code point maps to at most 3 of up to 4 bytes each
            char *grown = tpl_alloc(a, 2 * cap);
            memcpy(grown, out, o);
            out = grown;
            cap *= 2;
        }
        for (int i = 0; i < k; i++) o += (size_t)fl_utf8_encode(m[i], out + o);
    }
    return tv_str(out, o);
}

/* The line break at s[pos] for str.splitlines(): \n, \r, \r\n, \v, \f, \x1c-\x1e, U+0085,
 * U+2028, U+2029. Returns 1 and its byte length. */
int tpl_is_linebreak(const char *s, size_t n, size_t pos, size_t *len) {
    unsigned char c = (unsigned char)s[pos];
    if (c == '\r') { *len = pos + 1 < n && s[pos + 1] == '\n' ? 2 : 1; return 1; }
    if (c == '\n' || c == 0x0B || c == 0x0C || (c >= 0x1C && c <= 0x1E)) { *len = 1; return 1; }
    if (c == 0xC2 && pos + 1 < n && (unsigned char)s[pos + 1] == 0x85) { *len = 2; return 1; }
    if (c == 0xE2 && pos + 2 < n && (unsigned char)s[pos + 1] == 0x80 &&
        ((unsigned char)s[pos + 2] == 0xA8 || (unsigned char)s[pos + 2] == 0xA9)) { *len = 3; return 1; }
    return 0;
}
