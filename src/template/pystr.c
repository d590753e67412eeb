/* pystr.c — the Python str behaviour templates rely on, over UTF-8 bytes: code point counting and
 * indexing, str.isspace(), strip with and without a character set, upper/lower/title/capitalize,
 * and str.splitlines()'s line breaks.
 *
 * Case mapping covers ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic (simple one-to-one
 * mappings); other scripts keep their case, and the few one-to-many mappings (ß -> SS) are not
 * applied. Templates case-map roles and tool names, not user text, so this is documented rather
 * than a Unicode table.
 */
#include "template/tpl_internal.h"

#include "tokenizer/tokenizer_internal.h"

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

static uint32_t to_upper(uint32_t c) {
    if (c >= 'a' && c <= 'z') return c - 32;
    if (c < 0x80) return c;
    if ((c >= 0xE0 && c <= 0xFE && c != 0xF7)) return c - 32;
    if (c == 0xFF) return 0x178;
    if (c == 0xB5) return 0x39C;
    if (((c >= 0x100 && c <= 0x137) || (c >= 0x14A && c <= 0x177)) && (c & 1)) return c - 1;
    if (((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) && !(c & 1)) return c - 1;
    if (c == 0x3C2) return 0x3A3;
    if (c >= 0x3B1 && c <= 0x3C9) return c - 32;
    if (c >= 0x430 && c <= 0x44F) return c - 32;
    if (c >= 0x450 && c <= 0x45F) return c - 80;
    return c;
}

static uint32_t to_lower(uint32_t c) {
    if (c >= 'A' && c <= 'Z') return c + 32;
    if (c < 0x80) return c;
    if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 32;
    if (c == 0x178) return 0xFF;
    if (((c >= 0x100 && c <= 0x137) || (c >= 0x14A && c <= 0x177)) && !(c & 1)) return c + 1;
    if (((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) && (c & 1)) return c + 1;
    if (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) return c + 32;
    if (c >= 0x410 && c <= 0x42F) return c + 32;
    if (c >= 0x400 && c <= 0x40F) return c + 80;
    return c;
}

static int is_cased(uint32_t c) { return to_upper(c) != c || to_lower(c) != c; }

static int jinja_title_sep(uint32_t c) {
    return c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || tpl_py_space(c);
}

/* mode 'u' upper, 'l' lower, 't' str.title(), 'c' str.capitalize(), 'j' jinja's title filter
 * (each run after `-`, whitespace or an opening bracket: first character upper, rest lower). */
tv tpl_case(tpl_arena *a, tv s, int mode) {
    char *out = tpl_alloc(a, s.s.n * 2 + 1);
    size_t o = 0, pos = 0;
    int prev_cased = 0, first = 1, at_start = 1;
    while (pos < s.s.n) {
        uint32_t c = tpl_u8_get(s.s.p, s.s.n, &pos), r = c;
        switch (mode) {
        case 'u': r = to_upper(c); break;
        case 'l': r = to_lower(c); break;
        case 't': r = prev_cased ? to_lower(c) : to_upper(c); prev_cased = is_cased(c); break;
        case 'c': r = first ? to_upper(c) : to_lower(c); break;
        default:
            if (jinja_title_sep(c)) { at_start = 1; r = c; }
            else { r = at_start ? to_upper(c) : to_lower(c); at_start = 0; }
        }
        first = 0;
        o += (size_t)fl_utf8_encode(r, out + o);
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
