/* value.c — the engine's arena, values and text builder, and Python's str()/repr() of values.
 * Values are what jinja2 templates see from transformers: JSON data (dict keeps insertion order),
 * Python numbers and strings, tuples, namespaces, macros and bound methods. Not here: json.dumps
 * (tojson.c), string algorithms (pystr.c).
 */
#include "template/tpl_internal.h"

#include "common/error.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* ===== arena ===== */
struct tpl_chunk { tpl_chunk *next; size_t cap, used; _Alignas(16) unsigned char data[]; };

void *tpl_alloc(tpl_arena *a, size_t n) {
    n = (n + 15) & ~(size_t)15;
    if (a->limit && a->used + n > a->limit) {
        if (a->on_fail) tpl_fail(a->on_fail, 0, 0, "uses more than %zu MiB of memory (limit)", a->limit >> 20);
        fl_die("template arena over its limit");
    }
    tpl_chunk *c = a->head;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > (64u << 10) ? n : (64u << 10);
        c = malloc(sizeof *c + cap);
        if (!c) fl_die("out of memory (%zu bytes)", cap);
        c->cap = cap;
        c->used = 0;
        c->next = a->head;
        a->head = c;
    }
    void *p = c->data + c->used;
    c->used += n;
    a->used += n;
    memset(p, 0, n);
    return p;
}

char *tpl_strdup(tpl_arena *a, const char *s, size_t n) {
    char *p = tpl_alloc(a, n + 1);
    if (n) memcpy(p, s, n);
    return p;
}

void tpl_arena_free(tpl_arena *a) {
    for (tpl_chunk *c = a->head, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    a->head = NULL;
    a->used = 0;
}

/* ===== lists and dicts ===== */
tpl_list *tpl_list_new(tpl_arena *a, size_t cap) {
    tpl_list *l = tpl_alloc(a, sizeof *l);
    l->cap = cap ? cap : 4;
    l->v = tpl_alloc(a, l->cap * sizeof *l->v);
    return l;
}

void tpl_list_push(tpl_arena *a, tpl_list *l, tv v) {
    if (l->n == l->cap) {
        tv *nv = tpl_alloc(a, 2 * l->cap * sizeof *nv);
        memcpy(nv, l->v, l->n * sizeof *nv);
        l->v = nv;
        l->cap *= 2;
    }
    l->v[l->n++] = v;
}

tv tv_list(tpl_list *l) { tv v = {.kind = V_LIST}; v.l = l; return v; }
tv tv_dict(tpl_dict *d) { tv v = {.kind = V_DICT}; v.d = d; return v; }

tpl_dict *tpl_dict_new(tpl_arena *a, size_t cap) {
    tpl_dict *d = tpl_alloc(a, sizeof *d);
    d->cap = cap ? cap : 4;
    d->k = tpl_alloc(a, d->cap * sizeof *d->k);
    d->v = tpl_alloc(a, d->cap * sizeof *d->v);
    return d;
}

tv *tpl_dict_find(const tpl_dict *d, tv k) {
    for (size_t i = 0; i < d->n; i++)
        if (tv_equal(d->k[i], k)) return &d->v[i];
    return NULL;
}

tv *tpl_dict_find_str(const tpl_dict *d, const char *k, size_t n) {
    for (size_t i = 0; i < d->n; i++)
        if (d->k[i].kind == V_STR && d->k[i].s.n == n && !memcmp(d->k[i].s.p, k, n)) return &d->v[i];
    return NULL;
}

void tpl_dict_set(tpl_arena *a, tpl_dict *d, tv k, tv v) {
    tv *old = tpl_dict_find(d, k);
    if (old) { *old = v; return; }
    if (d->n == d->cap) {
        tv *nk = tpl_alloc(a, 2 * d->cap * sizeof *nk), *nv = tpl_alloc(a, 2 * d->cap * sizeof *nv);
        memcpy(nk, d->k, d->n * sizeof *nk);
        memcpy(nv, d->v, d->n * sizeof *nv);
        d->k = nk;
        d->v = nv;
        d->cap *= 2;
    }
    d->k[d->n] = k;
    d->v[d->n++] = v;
}

/* ===== Python semantics ===== */
int tv_is_number(tv v) { return v.kind == V_INT || v.kind == V_FLOAT || v.kind == V_BOOL; }
double tv_num(tv v) { return v.kind == V_FLOAT ? v.f : (double)v.i; }

int tv_truthy(tv v) {
    switch (v.kind) {
    case V_UNDEF: case V_NONE: return 0;
    case V_BOOL: case V_INT: return v.i != 0;
    case V_FLOAT: return v.f != 0.0;
    case V_STR: return v.s.n != 0;
    case V_LIST: return v.l->n != 0;
    case V_DICT: return v.d->n != 0;
    default: return 1;
    }
}

int tv_equal(tv a, tv b) {
    if (tv_is_number(a) && tv_is_number(b)) {
        if (a.kind != V_FLOAT && b.kind != V_FLOAT) return a.i == b.i;
        return tv_num(a) == tv_num(b);
    }
    if (a.kind != b.kind) return 0;
    switch (a.kind) {
    case V_UNDEF: case V_NONE: return 1;
    case V_STR: return a.s.n == b.s.n && !memcmp(a.s.p, b.s.p, a.s.n);
    case V_LIST:
        if (a.l->n != b.l->n || a.tuple != b.tuple) return 0;
        for (size_t i = 0; i < a.l->n; i++)
            if (!tv_equal(a.l->v[i], b.l->v[i])) return 0;
        return 1;
    case V_DICT:
        if (a.d->n != b.d->n) return 0;
        for (size_t i = 0; i < a.d->n; i++) {
            tv *o = tpl_dict_find(b.d, a.d->k[i]);
            if (!o || !tv_equal(a.d->v[i], *o)) return 0;
        }
        return 1;
    case V_NS: return a.d == b.d;
    case V_MACRO: return a.m == b.m;
    case V_FUNC: return a.i == b.i;
    default: return 0;
    }
}

const char *tv_type_name(tv v) {
    static const char *names[] = {"Undefined", "NoneType", "bool", "int", "float", "str", "list", "dict",
                                  "Namespace", "LoopContext", "function", "Macro", "method"};
    if (v.kind == V_LIST && v.tuple) return "tuple";
    return names[v.kind];
}

tv tv_from_json(tpl_arena *a, json_t *j) {
    switch (json_typeof(j)) {
    case JSON_OBJECT: {
        tpl_dict *d = tpl_dict_new(a, json_object_size(j));
        const char *k;
        json_t *x;
        json_object_foreach(j, k, x) {
            d->k[d->n] = tv_str(k, strlen(k));
            d->v[d->n++] = tv_from_json(a, x);
        }
        return tv_dict(d);
    }
    case JSON_ARRAY: {
        tpl_list *l = tpl_list_new(a, json_array_size(j));
        for (size_t i = 0; i < json_array_size(j); i++) l->v[l->n++] = tv_from_json(a, json_array_get(j, i));
        return tv_list(l);
    }
    case JSON_STRING: return tv_str(json_string_value(j), json_string_length(j));
    case JSON_INTEGER: return tv_int(json_integer_value(j));
    case JSON_REAL: return tv_float(json_real_value(j));
    case JSON_TRUE: return tv_bool(1);
    case JSON_FALSE: return tv_bool(0);
    default: return tv_none();
    }
}

/* ===== text builder ===== */
void tpl_buf_init(tpl_buf *b, tpl_arena *a, size_t limit, jmp_buf *on_fail) {
    *b = (tpl_buf){.a = a, .limit = limit, .on_fail = on_fail};
}

void tpl_buf_put(tpl_buf *b, const char *s, size_t n) {
    if (!n) return;
    if (b->limit && b->n + n > b->limit)
        tpl_fail(b->on_fail, 0, 0, "output longer than %zu bytes (limit)", b->limit);
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 256;
        while (cap < b->n + n + 1) cap *= 2;
        char *p = tpl_alloc(b->a, cap);
        if (b->n) memcpy(p, b->p, b->n);
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

void tpl_buf_printf(tpl_buf *b, const char *fmt, ...) {
    char tmp[128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    tpl_buf_put(b, tmp, n < 0 ? 0 : (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

tv tpl_buf_value(tpl_buf *b) { return b->n ? tv_str(b->p, b->n) : tv_str("", 0); }

/* ===== str() and repr() ===== */

/* Python's repr(float): the shortest digits that read back to the same double, in fixed notation
 * when the decimal exponent is in [-4, 16), else as d.ddde+XX. */
void tpl_write_float(tpl_buf *b, double f) {
    if (isnan(f)) { tpl_buf_puts(b, "nan"); return; }
    if (isinf(f)) { tpl_buf_puts(b, f < 0 ? "-inf" : "inf"); return; }
    char tmp[40];
    int prec = 1;
    for (; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*e", prec - 1, f);
        if (strtod(tmp, NULL) == f) break;
    }
    // tmp = [-]d[.ddd]e[+-]XX
    const char *p = tmp;
    int neg = *p == '-';
    if (neg) p++;
    char digits[24];
    size_t nd = 0;
    for (; *p && *p != 'e'; p++)
        if (*p != '.') digits[nd++] = *p;
    int exp10 = atoi(p + 1);
    while (nd > 1 && digits[nd - 1] == '0') nd--;
    if (neg) tpl_buf_put(b, "-", 1);
    if (exp10 >= -4 && exp10 < 16) {
        if (exp10 < 0) {
            tpl_buf_puts(b, "0.");
            for (int i = 0; i < -exp10 - 1; i++) tpl_buf_put(b, "0", 1);
            tpl_buf_put(b, digits, nd);
        } else {
            size_t ip = (size_t)exp10 + 1;
            for (size_t i = 0; i < ip; i++) tpl_buf_put(b, i < nd ? &digits[i] : "0", 1);
            tpl_buf_put(b, ".", 1);
            if (nd > ip) tpl_buf_put(b, digits + ip, nd - ip);
            else tpl_buf_put(b, "0", 1);
        }
    } else {
        tpl_buf_put(b, digits, 1);
        if (nd > 1) { tpl_buf_put(b, ".", 1); tpl_buf_put(b, digits + 1, nd - 1); }
        tpl_buf_printf(b, "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
    }
}

/* Python repr(str): single quotes unless the text has ' and no ", escapes for \\, the quote,
 * \t \n \r and other non-printable characters (C0, DEL, C1, NBSP/soft hyphen, line separators). */
static void write_repr_str(tpl_buf *b, const char *s, size_t n) {
    int has_sq = memchr(s, '\'', n) != NULL, has_dq = memchr(s, '"', n) != NULL;
    char q = has_sq && !has_dq ? '"' : '\'';
    tpl_buf_put(b, &q, 1);
    size_t pos = 0;
    while (pos < n) {
        size_t at = pos;
        uint32_t c = tpl_u8_get(s, n, &pos);
        if (c == '\\') tpl_buf_puts(b, "\\\\");
        else if (c == (uint32_t)q) { tpl_buf_put(b, "\\", 1); tpl_buf_put(b, &q, 1); }
        else if (c == '\t') tpl_buf_puts(b, "\\t");
        else if (c == '\n') tpl_buf_puts(b, "\\n");
        else if (c == '\r') tpl_buf_puts(b, "\\r");
        else if (c < 0x20 || c == 0x7F || (c >= 0x80 && c <= 0xA0) || c == 0xAD) tpl_buf_printf(b, "\\x%02x", c);
        else if (c == 0x2028 || c == 0x2029 || (c >= 0x200B && c <= 0x200F) || c == 0xFEFF || (c >= 0x2060 && c <= 0x2064))
            tpl_buf_printf(b, "\\u%04x", c);
        else tpl_buf_put(b, s + at, pos - at);
    }
    tpl_buf_put(b, &q, 1);
}

void tv_write_repr(tpl_buf *b, tv v) {
    switch (v.kind) {
    case V_STR: write_repr_str(b, v.s.p, v.s.n); return;
    case V_UNDEF: tpl_buf_puts(b, "Undefined"); return;
    case V_LIST: {
        tpl_buf_puts(b, v.tuple ? "(" : "[");
        for (size_t i = 0; i < v.l->n; i++) {
            if (i) tpl_buf_puts(b, ", ");
            tv_write_repr(b, v.l->v[i]);
        }
        if (v.tuple && v.l->n == 1) tpl_buf_puts(b, ",");
        tpl_buf_puts(b, v.tuple ? ")" : "]");
        return;
    }
    case V_DICT: case V_NS: {
        tpl_buf_puts(b, v.kind == V_NS ? "<Namespace {" : "{");
        for (size_t i = 0; i < v.d->n; i++) {
            if (i) tpl_buf_puts(b, ", ");
            tv_write_repr(b, v.d->k[i]);
            tpl_buf_puts(b, ": ");
            tv_write_repr(b, v.d->v[i]);
        }
        tpl_buf_puts(b, v.kind == V_NS ? "}>" : "}");
        return;
    }
    default: tv_write_str(b, v);
    }
}

void tv_write_str(tpl_buf *b, tv v) {
    switch (v.kind) {
    case V_UNDEF: return;
    case V_NONE: tpl_buf_puts(b, "None"); return;
    case V_BOOL: tpl_buf_puts(b, v.i ? "True" : "False"); return;
    case V_INT: tpl_buf_printf(b, "%lld", (long long)v.i); return;
    case V_FLOAT: tpl_write_float(b, v.f); return;
    case V_STR: tpl_buf_put(b, v.s.p, v.s.n); return;
    case V_LIST: case V_DICT: case V_NS: tv_write_repr(b, v); return;
    case V_LOOP: tpl_buf_puts(b, "<LoopContext>"); return;
    case V_MACRO: tpl_buf_puts(b, "<Macro>"); return;
    case V_METHOD: tpl_buf_puts(b, "<built-in method>"); return;
    default: tpl_buf_puts(b, "<function>"); return;
    }
}
