/* tojson.c — transformers' tojson filter: Python's json.dumps(x, ensure_ascii=False, indent=None,
 * separators=None, sort_keys=False) over template values. Separators are ", " and ": " without an
 * indent, "," and ": " with one; keys keep insertion order unless sort_keys; floats print as
 * repr(float) (NaN, Infinity as Python writes them); strings escape " \ and control characters
 * (\n \r \t \b \f, others \u00XX) and, with ensure_ascii, everything above U+007F as \uXXXX
 * (surrogate pairs above U+FFFF). Tuples are lists. Undefined, macros and other non-JSON values
 * are an error, as json.dumps raises TypeError. No HTML escaping (that is jinja2's own tojson).
 */
#include "template/tpl_internal.h"

#include <math.h>

static void write_json_string(tpl_buf *b, const char *s, size_t n, int ensure_ascii) {
    tpl_buf_put(b, "\"", 1);
    size_t pos = 0;
    while (pos < n) {
        size_t at = pos;
        unsigned char ch = (unsigned char)s[pos];
        if (ch < 0x80) {
            pos++;
            switch (ch) {
            case '"': tpl_buf_puts(b, "\\\""); break;
            case '\\': tpl_buf_puts(b, "\\\\"); break;
            case '\n': tpl_buf_puts(b, "\\n"); break;
            case '\r': tpl_buf_puts(b, "\\r"); break;
            case '\t': tpl_buf_puts(b, "\\t"); break;
            case '\b': tpl_buf_puts(b, "\\b"); break;
            case '\f': tpl_buf_puts(b, "\\f"); break;
            default:
                if (ch < 0x20) tpl_buf_printf(b, "\\u%04x", ch);
                else tpl_buf_put(b, s + at, 1);
            }
            continue;
        }
        uint32_t cp = tpl_u8_get(s, n, &pos);
        if (!ensure_ascii) tpl_buf_put(b, s + at, pos - at);
        else if (cp < 0x10000) tpl_buf_printf(b, "\\u%04x", cp);
        else {
            cp -= 0x10000;
            tpl_buf_printf(b, "\\u%04x\\u%04x", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
        }
    }
    tpl_buf_put(b, "\"", 1);
}

static void newline_indent(tpl_buf *b, const tpl_json_opts *o, int level) {
    tpl_buf_put(b, "\n", 1);
    for (int i = 0; i < level; i++) {
        if (o->indent_str) tpl_buf_puts(b, o->indent_str);
        else for (int k = 0; k < o->indent; k++) tpl_buf_put(b, " ", 1);
    }
}

static int indented(const tpl_json_opts *o) { return o->indent >= 0; }

static void write_json(tpl_buf *b, tv v, const tpl_json_opts *o, int level, int line, int col);

static void write_container(tpl_buf *b, tv v, const tpl_json_opts *o, int level, int line, int col) {
    const char *item_sep = o->item_sep ? o->item_sep : indented(o) ? "," : ", ";
    const char *key_sep = o->key_sep ? o->key_sep : ": ";
    int is_list = v.kind == V_LIST;
    size_t n = is_list ? v.l->n : v.d->n;
    tpl_buf_puts(b, is_list ? "[" : "{");
    if (!n) { tpl_buf_puts(b, is_list ? "]" : "}"); return; }
    size_t *order = tpl_alloc(b->a, n * sizeof *order);
    for (size_t i = 0; i < n; i++) order[i] = i;
    if (!is_list && o->sort_keys) // insertion sort by key bytes (= code point order)
        for (size_t i = 1; i < n; i++)
            for (size_t j = i; j > 0; j--) {
                tv x = v.d->k[order[j - 1]], y = v.d->k[order[j]];
                size_t m = x.s.n < y.s.n ? x.s.n : y.s.n;
                int r = memcmp(x.s.p, y.s.p, m);
                if (r < 0 || (r == 0 && x.s.n <= y.s.n)) break;
                size_t t = order[j]; order[j] = order[j - 1]; order[j - 1] = t;
            }
    for (size_t i = 0; i < n; i++) {
        if (i) tpl_buf_puts(b, item_sep);
        if (indented(o)) newline_indent(b, o, level + 1);
        if (is_list) { write_json(b, v.l->v[i], o, level + 1, line, col); continue; }
        tv k = v.d->k[order[i]];
        if (k.kind == V_STR) write_json_string(b, k.s.p, k.s.n, o->ensure_ascii);
        else if (k.kind == V_INT || k.kind == V_FLOAT || k.kind == V_BOOL || k.kind == V_NONE) {
            tpl_buf_put(b, "\"", 1);
            if (k.kind == V_BOOL) tpl_buf_puts(b, k.i ? "true" : "false");
            else if (k.kind == V_NONE) tpl_buf_puts(b, "null");
            else tv_write_str(b, k);
            tpl_buf_put(b, "\"", 1);
        } else tpl_fail(b->on_fail, line, col, "tojson: keys must be str, int, float, bool or None, not %s", tv_type_name(k));
        tpl_buf_puts(b, key_sep);
        write_json(b, v.d->v[order[i]], o, level + 1, line, col);
    }
    if (indented(o)) newline_indent(b, o, level);
    tpl_buf_puts(b, is_list ? "]" : "}");
}

static void write_json(tpl_buf *b, tv v, const tpl_json_opts *o, int level, int line, int col) {
    if (level > 200) tpl_fail(b->on_fail, line, col, "tojson: nested deeper than 200 levels");
    switch (v.kind) {
    case V_NONE: tpl_buf_puts(b, "null"); return;
    case V_BOOL: tpl_buf_puts(b, v.i ? "true" : "false"); return;
    case V_INT: tv_write_str(b, v); return;
    case V_FLOAT:
        if (isnan(v.f)) tpl_buf_puts(b, "NaN");
        else if (isinf(v.f)) tpl_buf_puts(b, v.f < 0 ? "-Infinity" : "Infinity");
        else tpl_write_float(b, v.f);
        return;
    case V_STR: write_json_string(b, v.s.p, v.s.n, o->ensure_ascii); return;
    case V_LIST: case V_DICT: write_container(b, v, o, level, line, col); return;
    default: tpl_fail(b->on_fail, line, col, "tojson: Object of type %s is not JSON serializable", tv_type_name(v));
    }
}

void tpl_write_json(tpl_buf *b, tv v, const tpl_json_opts *o, int line, int col) { write_json(b, v, o, 0, line, col); }
