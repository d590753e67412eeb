/* lexer.c — Jinja source to tokens, with transformers' whitespace rules applied here:
 * trim_blocks (the first "\n" after a block or comment tag goes), lstrip_blocks (spaces and tabs
 * from the start of a line up to a block or comment tag go, unless the tag opens with `+`),
 * `{%-`/`-%}` (all whitespace before/after goes), keep_trailing_newline off (one final "\n" of the
 * template goes), comments `{# #}` and `{% raw %}` blocks. String literals are decoded as jinja2
 * does (Python's unicode-escape: \n \t \xNN \uNNNN ..., a backslash-newline is a continuation).
 * The source must already be newline-normalized (template.c). Not here: grammar (parser.c).
 */
#include "template/tpl_internal.h"

#include "common/utf8.h"

#include <ctype.h>
#include <stdlib.h>

typedef struct {
    tpl_arena *a;
    jmp_buf *jb;
    const char *s;
    size_t n;
    size_t loc_pos;  // line/column bookkeeping: position, its line, the start of that line
    int loc_line;
    size_t loc_start;
    tpl_toks *out;
} lexer;

static void locate(lexer *lx, size_t pos, int *line, int *col) {
    if (pos < lx->loc_pos) { lx->loc_pos = 0; lx->loc_line = 1; lx->loc_start = 0; }
    for (size_t i = lx->loc_pos; i < pos && i < lx->n; i++)
        if (lx->s[i] == '\n') { lx->loc_line++; lx->loc_start = i + 1; }
    lx->loc_pos = pos;
    *line = lx->loc_line;
    *col = (int)(tpl_u8_count(lx->s + lx->loc_start, pos - lx->loc_start) + 1);
}

_Noreturn static void lex_fail(lexer *lx, size_t pos, const char *what) {
    int line, col;
    locate(lx, pos, &line, &col);
    tpl_fail(lx->jb, line, col, "%s", what);
}

static tpl_tok *emit(lexer *lx, int kind, size_t pos, const char *p, size_t n) {
    tpl_toks *t = lx->out;
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 256;
        tpl_tok *nt = tpl_alloc(lx->a, cap * sizeof *nt);
        if (t->n) memcpy(nt, t->t, t->n * sizeof *nt);
        t->t = nt;
        t->cap = cap;
    }
    tpl_tok *k = &t->t[t->n++];
    memset(k, 0, sizeof *k);
    k->kind = (uint8_t)kind;
    k->p = p;
    k->n = n;
    locate(lx, pos, &k->line, &k->col);
    return k;
}

static int is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Decodes the body of a string literal [p, e) (Python unicode-escape) into arena memory. */
static void decode_string(lexer *lx, size_t at, const char *p, const char *e, tpl_tok *tok) {
    char *o = tpl_alloc(lx->a, (size_t)(e - p) + 1);
    size_t n = 0;
    while (p < e) {
        if (*p != '\\' || p + 1 >= e) { o[n++] = *p++; continue; }
        char c = p[1];
        p += 2;
        const char *simple = strchr("\\'\"abfnrtv\n", c);
        if (simple && c) {
            static const char map[] = "\\'\"\a\b\f\n\r\t\v";
            if (c != '\n') o[n++] = map[simple - "\\'\"abfnrtv\n"];
            continue;
        }
        int digits = c == 'x' ? 2 : c == 'u' ? 4 : c == 'U' ? 8 : 0;
        if (digits) {
            uint32_t cp = 0;
            for (int i = 0; i < digits; i++) {
                int h = p + i < e ? hexval(p[i]) : -1;
                if (h < 0) lex_fail(lx, at, "invalid \\x, \\u or \\U escape in a string literal");
                cp = cp * 16 + (uint32_t)h;
            }
            p += digits;
            if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) lex_fail(lx, at, "escape outside Unicode in a string literal");
            n += (size_t)fl_utf8_encode(cp, o + n);
            continue;
        }
        if (c >= '0' && c <= '7') {
            uint32_t cp = (uint32_t)(c - '0');
            for (int i = 0; i < 2 && p < e && *p >= '0' && *p <= '7'; i++) cp = cp * 8 + (uint32_t)(*p++ - '0');
            n += (size_t)fl_utf8_encode(cp, o + n);
            continue;
        }
        o[n++] = '\\'; // unknown escape: kept as written
        o[n++] = c;
    }
    tok->p = o;
    tok->n = n;
}

static const char *const OPS[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "<", ">", "=",
                                  "(", ")", "[", "]", "{", "}", ",", ".", ":", "|", NULL};

/* Lexes the inside of a tag from `pos` up to its end delimiter (`}}` or `%}`, with `-`/`+`) at
 * bracket depth 0. Returns the position after the delimiter; *strip_after: 1 after `-`. */
static size_t lex_inside(lexer *lx, size_t pos, int block, int *strip_after, int *keep_newline) {
    int depth = 0;
    const char *s = lx->s;
    size_t n = lx->n;
    for (;;) {
        while (pos < n && is_ws(s[pos])) pos++;
        if (pos >= n) lex_fail(lx, pos, block ? "unexpected end of template, expected '%}'" : "unexpected end of template, expected '}}'");
        char end1 = block ? '%' : '}';
        if (depth == 0) {
            size_t q = pos;
            int mod = 0;
            if (s[q] == '-' || s[q] == '+') { mod = s[q]; q++; }
            if (q + 1 < n && s[q] == end1 && s[q + 1] == '}' && (mod != '+' || block)) {
                emit(lx, block ? T_BLOCK_END : T_VAR_END, pos, s + pos, q + 2 - pos);
                *strip_after = mod == '-';
                *keep_newline = mod == '+';
                return q + 2;
            }
        }
        char c = s[pos];
        if (isalpha((unsigned char)c) || c == '_') {
            size_t e = pos;
            while (e < n && (isalnum((unsigned char)s[e]) || s[e] == '_')) e++;
            emit(lx, T_NAME, pos, s + pos, e - pos);
            pos = e;
        } else if (isdigit((unsigned char)c)) {
            size_t e = pos;
            int is_float = 0;
            while (e < n && (isdigit((unsigned char)s[e]) || s[e] == '_')) e++;
            if (e + 1 < n && s[e] == '.' && isdigit((unsigned char)s[e + 1])) {
                is_float = 1;
                for (e++; e < n && (isdigit((unsigned char)s[e]) || s[e] == '_'); e++) {}
            }
            if (e < n && (s[e] == 'e' || s[e] == 'E')) {
                size_t q = e + 1;
                if (q < n && (s[q] == '+' || s[q] == '-')) q++;
                if (q < n && isdigit((unsigned char)s[q])) {
                    is_float = 1;
                    for (e = q; e < n && isdigit((unsigned char)s[e]); e++) {}
                }
            }
            char buf[64];
            size_t k = 0;
            for (size_t i = pos; i < e && k < sizeof buf - 1; i++)
                if (s[i] != '_') buf[k++] = s[i];
            buf[k] = 0;
            tpl_tok *t = emit(lx, is_float ? T_FLOAT : T_INT, pos, s + pos, e - pos);
            if (is_float) t->f = strtod(buf, NULL);
            else t->i = strtoll(buf, NULL, 10);
            pos = e;
        } else if (c == '\'' || c == '"') {
            size_t e = pos + 1;
            while (e < n && s[e] != c) e += s[e] == '\\' ? 2 : 1;
            if (e >= n) lex_fail(lx, pos, "unterminated string literal");
            tpl_tok *t = emit(lx, T_STRING, pos, NULL, 0);
            decode_string(lx, pos, s + pos + 1, s + e, t);
            pos = e + 1;
        } else {
            const char *const *op = OPS;
            for (; *op; op++)
                if (!strncmp(s + pos, *op, strlen(*op))) break;
            if (!*op) lex_fail(lx, pos, "unexpected character in an expression");
            size_t l = strlen(*op);
            if (**op == '(' || **op == '[' || **op == '{') depth++;
            if ((**op == ')' || **op == ']' || **op == '}') && depth > 0) depth--;
            emit(lx, T_OP, pos, s + pos, l);
            pos += l;
        }
    }
}

/* Start of the next tag ({{, {%, {#) at or after pos, or n. */
static size_t next_tag(const char *s, size_t n, size_t pos) {
    for (;;) {
        const char *p = memchr(s + pos, '{', n - pos);
        if (!p) return n;
        size_t k = (size_t)(p - s);
        if (k + 1 < n && (s[k + 1] == '{' || s[k + 1] == '%' || s[k + 1] == '#')) return k;
        pos = k + 1;
    }
}

/* The text [a, e) before a tag, after the tag's whitespace rules. */
static void trim_before(const char *s, size_t a, size_t *e, char tag, char mod) {
    if (mod == '-') {
        while (*e > a && is_ws(s[*e - 1])) (*e)--;
        return;
    }
    if (tag == '{' || mod == '+') return; // lstrip_blocks: block and comment tags only
    size_t k = *e;
    while (k > a && (s[k - 1] == ' ' || s[k - 1] == '\t')) k--;
    if ((k > a && s[k - 1] == '\n') || (k == a && (a == 0 || s[a - 1] == '\n'))) *e = k;
}

/* {% raw %} ... {% endraw %}: the body as text, with the endraw tag's `-` honoured. */
static size_t lex_raw(lexer *lx, size_t pos, size_t tag_at) {
    const char *s = lx->s;
    for (size_t k = pos; (k = next_tag(s, lx->n, k)) < lx->n; k++) {
        if (s[k + 1] != '%') continue;
        size_t q = k + 2, te = k;
        char mod = 0;
        if (q < lx->n && (s[q] == '-' || s[q] == '+')) mod = s[q++];
        while (q < lx->n && is_ws(s[q])) q++;
        if (lx->n - q < 6 || strncmp(s + q, "endraw", 6)) continue;
        q += 6;
        while (q < lx->n && is_ws(s[q])) q++;
        int strip = 0;
        if (q < lx->n && s[q] == '-') { strip = 1; q++; }
        if (q + 1 >= lx->n || s[q] != '%' || s[q + 1] != '}') continue;
        trim_before(s, pos, &te, '%', mod);
        if (te > pos) emit(lx, T_TEXT, pos, s + pos, te - pos);
        q += 2;
        if (strip) while (q < lx->n && is_ws(s[q])) q++;
        else if (q < lx->n && s[q] == '\n') q++;
        return q;
    }
    lex_fail(lx, tag_at, "unexpected end of template, expected 'endraw'");
}

void tpl_lex(tpl_arena *a, jmp_buf *jb, const char *src, size_t len, tpl_toks *out) {
    lexer lx = {.a = a, .jb = jb, .s = src, .n = len, .loc_line = 1, .out = out};
    if (lx.n && src[lx.n - 1] == '\n') lx.n--; // keep_trailing_newline = False
    size_t pos = 0;
    int strip_next = 0; // 1: all leading whitespace (after `-`), 2: one "\n" (trim_blocks)
    while (pos <= lx.n) {
        if (strip_next == 1) while (pos < lx.n && is_ws(src[pos])) pos++;
        else if (strip_next == 2 && pos < lx.n && src[pos] == '\n') pos++;
        strip_next = 0;
        size_t k = next_tag(src, lx.n, pos), te = k;
        char tag = k < lx.n ? src[k + 1] : 0, mod = k + 2 < lx.n ? src[k + 2] : 0;
        if (mod != '-' && mod != '+') mod = 0;
        if (k < lx.n) trim_before(src, pos, &te, tag, mod);
        if (te > pos) emit(&lx, T_TEXT, pos, src + pos, te - pos);
        if (k >= lx.n) break;
        size_t body = k + 2 + (mod ? 1 : 0);
        if (tag == '#') {
            const char *e = NULL;
            for (size_t q = body; q + 1 < lx.n; q++)
                if (src[q] == '#' && src[q + 1] == '}') { e = src + q; break; }
            if (!e) lex_fail(&lx, k, "unterminated comment, expected '#}'");
            size_t q = (size_t)(e - src);
            strip_next = q > body && src[q - 1] == '-' ? 1 : q > body && src[q - 1] == '+' ? 0 : 2;
            pos = q + 2;
            continue;
        }
        int block = tag == '%', strip_after = 0, keep_nl = 0;
        size_t first_tok = out->n;
        emit(&lx, block ? T_BLOCK_BEGIN : T_VAR_BEGIN, k, src + k, body - k);
        pos = lex_inside(&lx, body, block, &strip_after, &keep_nl);
        strip_next = strip_after ? 1 : block && !keep_nl ? 2 : 0;
        if (block && out->n == first_tok + 3 && out->t[first_tok + 1].kind == T_NAME &&
            out->t[first_tok + 1].n == 3 && !memcmp(out->t[first_tok + 1].p, "raw", 3)) {
            out->n = first_tok; // the raw tag itself makes no tokens
            if (strip_after) while (pos < lx.n && is_ws(src[pos])) pos++;
            else if (!keep_nl && pos < lx.n && src[pos] == '\n') pos++;
            pos = lex_raw(&lx, pos, k);
            strip_next = 0;
        }
    }
    emit(&lx, T_EOF, lx.n, src + lx.n, 0);
}
