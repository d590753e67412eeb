/* filters.c — jinja2's filters as jinja2 3.1 defines them, plus transformers' tojson:
 * trim, upper, lower, title, capitalize, length/count, first, last, join, replace, default/d,
 * tojson, string, int, float, list, items, dictsort, selectattr/rejectattr, select/reject, map,
 * unique, indent, safe, escape/e (jinja2 Markup: `Markup + str` escapes the str), forceescape, abs,
 * round, sum, min, max, sort, reverse, wordcount, batch. An unknown filter is an error when it
 * runs, not when parsed (jinja2 3).
 * Not here: iteration of values (tpl_iterate, below), tests, methods.
 */
#include "template/tpl_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* list(v) as a for loop sees it: a list's items, a dict's keys, a string's characters, nothing
 * for undefined. None and numbers are not iterable. */
tpl_list *tpl_iterate(tpl_ctx *c, const tpl_node *n, tv v) {
    switch (v.kind) {
    case V_LIST: return v.l;
    case V_UNDEF: return tpl_list_new(&c->arena, 1);
    case V_DICT: case V_NS: {
        tpl_list *l = tpl_list_new(&c->arena, v.d->n);
        for (size_t i = 0; i < v.d->n; i++) l->v[l->n++] = v.d->k[i];
        return l;
    }
    case V_STR: {
        tpl_list *l = tpl_list_new(&c->arena, v.s.n);
        for (size_t pos = 0; pos < v.s.n;) {
            size_t a = pos;
            tpl_u8_get(v.s.p, v.s.n, &pos);
            l->v[l->n++] = tv_str(v.s.p + a, pos - a);
        }
        return l;
    }
    default: tpl_error(c, n, "'%s' object is not iterable", tv_type_name(v));
    }
}

static tv str_of(tpl_ctx *c, tv v) { return tpl_to_str(c, v); }

tv tpl_html_escape(tpl_ctx *c, tv s) {
    tpl_buf b;
    tpl_buf_init(&b, &c->arena, 0, &c->jb);
    for (size_t i = 0; i < s.s.n; i++) {
        char ch = s.s.p[i];
        const char *rep = ch == '&' ? "&amp;" : ch == '<' ? "&lt;" : ch == '>' ? "&gt;" : ch == '"' ? "&#34;" : ch == '\'' ? "&#39;" : NULL;
        if (rep) tpl_buf_puts(&b, rep);
        else tpl_buf_put(&b, &ch, 1);
    }
    tv r = tpl_buf_value(&b);
    r.markup = 1;
    return r;
}

static tv need_str(tpl_ctx *c, const tpl_node *n, tv v, const char *what) {
    if (v.kind != V_STR) tpl_error(c, n, "%s: expected a string, got %s", what, tv_type_name(v));
    return v;
}

/* Looks up a dotted attribute path ("a.b", "0") as jinja2's make_attrgetter does. */
static tv attr_path(tpl_ctx *c, const tpl_node *n, tv obj, tv path) {
    if (path.kind == V_INT) return tpl_getitem(c, n, obj, path);
    path = need_str(c, n, path, "attribute");
    size_t a = 0;
    while (a <= path.s.n) {
        size_t e = a;
        while (e < path.s.n && path.s.p[e] != '.') e++;
        char *part = tpl_strdup(&c->arena, path.s.p + a, e - a);
        char *end;
        long long idx = strtoll(part, &end, 10);
        obj = e > a && !*end ? tpl_getitem(c, n, obj, tv_int(idx)) : tpl_getitem(c, n, obj, tv_str(part, e - a));
        if (e >= path.s.n) break;
        a = e + 1;
    }
    return obj;
}

static tv f_join(tpl_ctx *c, const tpl_node *n, tv v, const tpl_args *a) {
    tv sep = str_of(c, tpl_arg(a, 0, "d", tv_str("", 0))), attr = tpl_arg(a, 1, "attribute", tv_none());
    tpl_list *items = tpl_iterate(c, n, v);
    tpl_buf b;
    tpl_buf_init(&b, &c->arena, 0, &c->jb);
    for (size_t i = 0; i < items->n; i++) {
        if (i) tpl_buf_put(&b, sep.s.p, sep.s.n);
        tv x = attr.kind == V_NONE ? items->v[i] : attr_path(c, n, items->v[i], attr);
        tv_write_str(&b, x);
    }
    return tpl_buf_value(&b);
}

static tv f_replace(tpl_ctx *c, const tpl_node *n, tv v, const tpl_args *a) {
    tv s = str_of(c, v), old = str_of(c, tpl_arg(a, 0, "old", tv_str("", 0))), new = str_of(c, tpl_arg(a, 1, "new", tv_str("", 0)));
    tv cnt = tpl_arg(a, 2, "count", tv_none());
    int64_t left = cnt.kind == V_INT ? cnt.i : -1;
    tpl_buf b;
    tpl_buf_init(&b, &c->arena, 0, &c->jb);
    size_t i = 0;
    if (!old.s.n) { // Python inserts `new` between characters
        tpl_list *chars = tpl_iterate(c, n, s);
        for (size_t k = 0; k <= chars->n; k++) {
            if (left != 0) { tpl_buf_put(&b, new.s.p, new.s.n); if (left > 0) left--; }
            if (k < chars->n) tpl_buf_put(&b, chars->v[k].s.p, chars->v[k].s.n);
        }
        return tpl_buf_value(&b);
    }
    while (i < s.s.n) {
        if (left != 0 && i + old.s.n <= s.s.n && !memcmp(s.s.p + i, old.s.p, old.s.n)) {
            tpl_buf_put(&b, new.s.p, new.s.n);
            i += old.s.n;
            if (left > 0) left--;
        } else tpl_buf_put(&b, s.s.p + i++, 1);
    }
    return tpl_buf_value(&b);
}

/* jinja2's do_indent: lines after the first (and the first with first=True) get the indent;
 * blank lines only with blank=True. */
static tv f_indent(tpl_ctx *c, const tpl_node *n, tv v, const tpl_args *a) {
    tv s = str_of(c, v), w = tpl_arg(a, 0, "width", tv_int(4));
    int first = tv_truthy(tpl_arg(a, 1, "first", tv_bool(0))), blank = tv_truthy(tpl_arg(a, 2, "blank", tv_bool(0)));
    tpl_buf ind;
    tpl_buf_init(&ind, &c->arena, 0, &c->jb);
    if (w.kind == V_STR) tpl_buf_put(&ind, w.s.p, w.s.n);
    else for (int64_t i = 0; i < w.i && i < 4096; i++) tpl_buf_put(&ind, " ", 1);
    (void)n;
    // s + "\n", split into lines (str.splitlines)
    tpl_buf b;
    tpl_buf_init(&b, &c->arena, 0, &c->jb);
    if (first) tpl_buf_put(&b, ind.p, ind.n);
    size_t pos = 0, line = 0;
    tpl_buf src;
    tpl_buf_init(&src, &c->arena, 0, &c->jb);
    tpl_buf_put(&src, s.s.p, s.s.n);
    tpl_buf_put(&src, "\n", 1);
    while (pos < src.n) {
        size_t e = pos, brk = 0;
        while (e < src.n && !tpl_is_linebreak(src.p, src.n, e, &brk)) e++;
        if (e >= src.n) brk = 0;
        if (line > 0) {
            tpl_buf_put(&b, "\n", 1);
            if (blank || e > pos) tpl_buf_put(&b, ind.p, ind.n);
        }
        tpl_buf_put(&b, src.p + pos, e - pos);
        line++;
        pos = e + brk;
        if (!brk) break;
    }
    return tpl_buf_value(&b);
}

static int sort_cmp_key(tpl_ctx *c, const tpl_node *n, tv x, tv y, int case_sensitive) {
    if (!case_sensitive && x.kind == V_STR && y.kind == V_STR) {
        x = tpl_case(&c->arena, x, 'l');
        y = tpl_case(&c->arena, y, 'l');
    }
    return tpl_compare(c, n, x, y);
}

/* Stable insertion-merge sort of items by key (attribute path or the item). */
static void sort_items(tpl_ctx *c, const tpl_node *n, tv *items, size_t count, tv attr, int reverse, int cs) {
    tv *keys = tpl_alloc(&c->arena, (count + 1) * sizeof *keys);
    for (size_t i = 0; i < count; i++) keys[i] = attr.kind == V_NONE ? items[i] : attr_path(c, n, items[i], attr);
    for (size_t i = 1; i < count; i++) { // stable insertion sort (templates sort short lists)
        tv it = items[i], k = keys[i];
        size_t j = i;
        while (j > 0) {
            int r = sort_cmp_key(c, n, keys[j - 1], k, cs);
            if (reverse ? r >= 0 : r <= 0) break;
            items[j] = items[j - 1];
            keys[j] = keys[j - 1];
            j--;
        }
        items[j] = it;
        keys[j] = k;
        tpl_step(c, n);
    }
}

static tv f_dictsort(tpl_ctx *c, const tpl_node *n, tv v, const tpl_args *a) {
    if (v.kind != V_DICT) tpl_error(c, n, "dictsort: expected a mapping, got %s", tv_type_name(v));
    int cs = tv_truthy(tpl_arg(a, 0, "case_sensitive", tv_bool(0)));
    tv by = tpl_arg(a, 1, "by", tv_str("key", 3));
    int reverse = tv_truthy(tpl_arg(a, 2, "reverse", tv_bool(0)));
    tpl_list *l = tpl_method(c, n, v, "items", &(tpl_args){0}).l; // a fresh list of (key, value) tuples
    int by_value = by.kind == V_STR && by.s.n == 5 && !memcmp(by.s.p, "value", 5);
    sort_items(c, n, l->v, l->n, tv_int(by_value ? 1 : 0), reverse, cs);
    return tv_list(l);
}

static tv f_select(tpl_ctx *c, const tpl_node *n, tv v, const tpl_args *a, int by_attr, int keep) {
    if (!tv_truthy(v)) return tv_list(tpl_list_new(&c->arena, 1)); // jinja2: `if value:` first
    tpl_list *items = tpl_iterate(c, n, v), *out = tpl_list_new(&c->arena, items->n);
    size_t first_test = by_attr ? 1 : 0;
    tv test = a->npos > first_test ? a->pos[first_test] : tv_none();
    tpl_args targs = {.pos = a->npos > first_test + 1 ? a->pos + first_test + 1 : NULL,
                      .npos = a->npos > first_test + 1 ? a->npos - first_test - 1 : 0};
    for (size_t i = 0; i < items->n; i++) {
        tv x = by_attr ? attr_path(c, n, items->v[i], a->npos ? a->pos[0] : tv_none()) : items->v[i];
        int ok;
        if (test.kind == V_NONE) ok = tv_truthy(x);
        else {
            need_str(c, n, test, "select test");
            ok = tpl_test(c, n, tpl_strdup(&c->arena, test.s.p, test.s.n), x, &targs);
        }
        if (ok == keep) tpl_list_push(&c->arena, out, items->v[i]);
    }
    return tv_list(out);
}

static tv f_map(tpl_ctx *c, tpl_frame *f, const tpl_node *n, tv v, const tpl_args *a) {
    if (!tv_truthy(v)) return tv_list(tpl_list_new(&c->arena, 1));
    tpl_list *items = tpl_iterate(c, n, v), *out = tpl_list_new(&c->arena, items->n);
    tv attr = tpl_arg(a, a->npos, "attribute", tv_none()), dflt = tpl_arg(a, a->npos, "default", tv_undef("default"));
    for (size_t i = 0; i < items->n; i++) {
        tv x;
        if (attr.kind != V_NONE) {
            x = attr_path(c, n, items->v[i], attr);
            if (x.kind == V_UNDEF && dflt.kind != V_UNDEF) x = dflt;
        } else {
            if (!a->npos || a->pos[0].kind != V_STR) tpl_error(c, n, "map: expected a filter name or attribute=");
            tpl_args rest = {.pos = a->pos + 1, .npos = a->npos - 1, .kwn = a->kwn, .kwv = a->kwv, .nkw = a->nkw};
            x = tpl_filter(c, f, n, tpl_strdup(&c->arena, a->pos[0].s.p, a->pos[0].s.n), items->v[i], &rest);
        }
        out->v[out->n++] = x;
    }
    return tv_list(out);
}

static tv f_unique(tpl_ctx *c, const tpl_node *n, tv v, const tpl_args *a) {
    int cs = tv_truthy(tpl_arg(a, 0, "case_sensitive", tv_bool(0)));
    tv attr = tpl_arg(a, 1, "attribute", tv_none());
    tpl_list *items = tpl_iterate(c, n, v), *out = tpl_list_new(&c->arena, items->n), *seen = tpl_list_new(&c->arena, items->n);
    for (size_t i = 0; i < items->n; i++) {
        tv k = attr.kind == V_NONE ? items->v[i] : attr_path(c, n, items->v[i], attr);
        if (!cs && k.kind == V_STR) k = tpl_case(&c->arena, k, 'l');
        int dup = 0;
        for (size_t j = 0; j < seen->n && !dup; j++) dup = tv_equal(seen->v[j], k);
        if (!dup) { seen->v[seen->n++] = k; out->v[out->n++] = items->v[i]; }
    }
    return tv_list(out);
}

static tv f_tojson(tpl_ctx *c, const tpl_node *n, tv v, const tpl_args *a) {
    tpl_json_opts o = {.ensure_ascii = tv_truthy(tpl_arg(a, 99, "ensure_ascii", tv_bool(0))), .indent = -1,
                       .sort_keys = tv_truthy(tpl_arg(a, 99, "sort_keys", tv_bool(0)))};
    tv ind = tpl_arg(a, 0, "indent", tv_none()), seps = tpl_arg(a, 99, "separators", tv_none());
    if (ind.kind == V_INT) o.indent = (int)(ind.i < 0 ? 0 : ind.i > 64 ? 64 : ind.i);
    else if (ind.kind == V_STR) { o.indent = 0; o.indent_str = tpl_strdup(&c->arena, ind.s.p, ind.s.n); }
    if (seps.kind == V_LIST && seps.l->n == 2 && seps.l->v[0].kind == V_STR && seps.l->v[1].kind == V_STR) {
        o.item_sep = tpl_strdup(&c->arena, seps.l->v[0].s.p, seps.l->v[0].s.n);
        o.key_sep = tpl_strdup(&c->arena, seps.l->v[1].s.p, seps.l->v[1].s.n);
    }
    tpl_buf b;
    tpl_buf_init(&b, &c->arena, c->max_output, &c->jb);
    tpl_write_json(&b, v, &o, n->line, n->col);
    return tpl_buf_value(&b);
}

static tv f_number(tpl_ctx *c, const tpl_node *n, tv v, const tpl_args *a, int want_int) {
    (void)n;
    tv dflt = tpl_arg(a, 0, "default", want_int ? tv_int(0) : tv_float(0.0));
    if (v.kind == V_INT || v.kind == V_BOOL) return want_int ? tv_int(v.i) : tv_float((double)v.i);
    if (v.kind == V_FLOAT) return want_int ? tv_int((int64_t)v.f) : v;
    if (v.kind != V_STR) return dflt;
    char *s = tpl_strdup(&c->arena, v.s.p, v.s.n), *end;
    size_t x, e;
    tpl_strip(s, v.s.n, NULL, 0, 1, 1, &x, &e);
    s[e] = 0;
    if (want_int) {
        long long i = strtoll(s + x, &end, 10);
        if (end != s + x && !*end) return tv_int(i);
    }
    double d = strtod(s + x, &end);
    if (end == s + x || *end) return dflt;
    return want_int ? tv_int((int64_t)d) : tv_float(d);
}

static tv f_minmax_sum(tpl_ctx *c, const tpl_node *n, tv v, const tpl_args *a, int which) {
    tpl_list *items = tpl_iterate(c, n, v);
    if (which == 's') {
        tv acc = tpl_arg(a, 1, "start", tv_int(0));
        for (size_t i = 0; i < items->n; i++) {
            tv x = items->v[i];
            if (!tv_is_number(x) || !tv_is_number(acc)) tpl_error(c, n, "sum: expected numbers");
            acc = acc.kind == V_FLOAT || x.kind == V_FLOAT ? tv_float(tv_num(acc) + tv_num(x)) : tv_int(acc.i + x.i);
        }
        return acc;
    }
    if (!items->n) return tv_undef("min/max of an empty sequence");
    tv best = items->v[0];
    for (size_t i = 1; i < items->n; i++) {
        int r = sort_cmp_key(c, n, items->v[i], best, 0);
        if (which == 'm' ? r < 0 : r > 0) best = items->v[i];
    }
    return best;
}

#define IS(s) (!strcmp(name, s))

static tv filter_strings(tpl_ctx *c, const tpl_node *n, const char *name, tv v, const tpl_args *a, int *found) {
    *found = 1;
    if (IS("trim")) {
        tv s = str_of(c, v), chars = tpl_arg(a, 0, "chars", tv_none());
        size_t x, e;
        if (chars.kind == V_STR) tpl_strip(s.s.p, s.s.n, chars.s.p, chars.s.n, 1, 1, &x, &e);
        else tpl_strip(s.s.p, s.s.n, NULL, 0, 1, 1, &x, &e);
        return tv_str(s.s.p + x, e - x);
    }
    if (IS("upper")) return tpl_case(&c->arena, str_of(c, v), 'u');
    if (IS("lower")) return tpl_case(&c->arena, str_of(c, v), 'l');
    if (IS("title")) return tpl_case(&c->arena, str_of(c, v), 'j');
    if (IS("capitalize")) return tpl_case(&c->arena, str_of(c, v), 'c');
    if (IS("string")) return str_of(c, v);
    if (IS("safe")) { tv r = str_of(c, v); r.markup = 1; return r; }
    if (IS("forceescape")) return tpl_html_escape(c, str_of(c, v));
    if (IS("replace")) return f_replace(c, n, v, a);
    if (IS("indent")) return f_indent(c, n, v, a);
    if (IS("join")) return f_join(c, n, v, a);
    if (IS("tojson")) return f_tojson(c, n, v, a);
    if (IS("wordcount")) {
        tv s = str_of(c, v);
        int64_t words = 0;
        int in = 0;
        for (size_t pos = 0; pos < s.s.n;) {
            uint32_t ch = tpl_u8_get(s.s.p, s.s.n, &pos);
            int w = ch == '_' || (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch >= 0x80;
            if (w && !in) words++;
            in = w;
        }
        return tv_int(words);
    }
    if (IS("escape") || IS("e")) return v.kind == V_STR && v.markup ? v : tpl_html_escape(c, str_of(c, v));
    *found = 0;
    return v;
}

static tv filter_sequences(tpl_ctx *c, tpl_frame *f, const tpl_node *n, const char *name, tv v, const tpl_args *a, int *found) {
    *found = 1;
    if (IS("length") || IS("count")) {
        if (v.kind == V_STR) return tv_int((int64_t)tpl_u8_count(v.s.p, v.s.n));
        if (v.kind == V_LIST) return tv_int((int64_t)v.l->n);
        if (v.kind == V_DICT || v.kind == V_NS) return tv_int((int64_t)v.d->n);
        if (v.kind == V_UNDEF) return tv_int(0);
        tpl_error(c, n, "object of type '%s' has no len()", tv_type_name(v));
    }
    if (IS("first") || IS("last")) {
        tpl_list *items = tpl_iterate(c, n, v);
        if (!items->n) return tv_undef(name);
        return items->v[IS("first") ? 0 : items->n - 1];
    }
    if (IS("list")) { tpl_list *items = tpl_iterate(c, n, v); tpl_list *l = tpl_list_new(&c->arena, items->n); memcpy(l->v, items->v, items->n * sizeof *l->v); l->n = items->n; return tv_list(l); }
    if (IS("items")) {
        if (v.kind == V_UNDEF) return tv_list(tpl_list_new(&c->arena, 1));
        if (v.kind != V_DICT && v.kind != V_NS) tpl_error(c, n, "items: expected a mapping, got %s", tv_type_name(v));
        return tpl_method(c, n, v, "items", &(tpl_args){0});
    }
    if (IS("dictsort")) return f_dictsort(c, n, v, a);
    if (IS("selectattr")) return f_select(c, n, v, a, 1, 1);
    if (IS("rejectattr")) return f_select(c, n, v, a, 1, 0);
    if (IS("select")) return f_select(c, n, v, a, 0, 1);
    if (IS("reject")) return f_select(c, n, v, a, 0, 0);
    if (IS("map")) return f_map(c, f, n, v, a);
    if (IS("unique")) return f_unique(c, n, v, a);
    if (IS("sort")) {
        tpl_list *items = tpl_iterate(c, n, v), *l = tpl_list_new(&c->arena, items->n);
        memcpy(l->v, items->v, items->n * sizeof *l->v);
        l->n = items->n;
        sort_items(c, n, l->v, l->n, tpl_arg(a, 2, "attribute", tv_none()), tv_truthy(tpl_arg(a, 0, "reverse", tv_bool(0))),
                   tv_truthy(tpl_arg(a, 1, "case_sensitive", tv_bool(0))));
        return tv_list(l);
    }
    if (IS("reverse")) {
        if (v.kind == V_STR) {
            tpl_list *chars = tpl_iterate(c, n, v);
            tpl_buf b;
            tpl_buf_init(&b, &c->arena, 0, &c->jb);
            for (size_t i = chars->n; i-- > 0;) tpl_buf_put(&b, chars->v[i].s.p, chars->v[i].s.n);
            return tpl_buf_value(&b);
        }
        tpl_list *items = tpl_iterate(c, n, v), *l = tpl_list_new(&c->arena, items->n);
        for (size_t i = items->n; i-- > 0;) l->v[l->n++] = items->v[i];
        return tv_list(l);
    }
    if (IS("sum")) return f_minmax_sum(c, n, v, a, 's');
    if (IS("min")) return f_minmax_sum(c, n, v, a, 'm');
    if (IS("max")) return f_minmax_sum(c, n, v, a, 'M');
    if (IS("batch")) {
        tv size = tpl_arg(a, 0, "linecount", tv_int(1));
        if (size.kind != V_INT || size.i <= 0) tpl_error(c, n, "batch: expected a positive size");
        tpl_list *items = tpl_iterate(c, n, v), *out = tpl_list_new(&c->arena, 4), *cur = NULL;
        for (size_t i = 0; i < items->n; i++) {
            if (!cur || (int64_t)cur->n == size.i) { cur = tpl_list_new(&c->arena, (size_t)size.i); tpl_list_push(&c->arena, out, tv_list(cur)); }
            tpl_list_push(&c->arena, cur, items->v[i]);
        }
        return tv_list(out);
    }
    *found = 0;
    return v;
}

tv tpl_filter(tpl_ctx *c, tpl_frame *f, const tpl_node *n, const char *name, tv v, const tpl_args *a) {
    int found;
    tpl_step(c, n);
    if (IS("default") || IS("d")) {
        tv dflt = tpl_arg(a, 0, "default_value", tv_str("", 0));
        int boolean = tv_truthy(tpl_arg(a, 1, "boolean", tv_bool(0)));
        return v.kind == V_UNDEF || (boolean && !tv_truthy(v)) ? dflt : v;
    }
    if (IS("int")) return f_number(c, n, v, a, 1);
    if (IS("float")) return f_number(c, n, v, a, 0);
    if (IS("abs")) {
        if (!tv_is_number(v)) tpl_error(c, n, "bad operand type for abs(): '%s'", tv_type_name(v));
        return v.kind == V_FLOAT ? tv_float(fabs(v.f)) : tv_int(v.i < 0 ? -v.i : v.i);
    }
    if (IS("round")) {
        tv prec = tpl_arg(a, 0, "precision", tv_int(0)), method = tpl_arg(a, 1, "method", tv_str("common", 6));
        double x = tv_num(v), m = pow(10, (double)prec.i);
        double r = method.s.n == 4 && !memcmp(method.s.p, "ceil", 4) ? ceil(x * m) / m
                   : method.s.n == 5 && !memcmp(method.s.p, "floor", 5) ? floor(x * m) / m : nearbyint(x * m) / m; // Python's round: half to even
        return tv_float(r);
    }
    if (v.kind == V_UNDEF && (IS("upper") || IS("lower") || IS("trim") || IS("string") || IS("title") || IS("capitalize")))
        v = tv_str("", 0);
    tv r = filter_strings(c, n, name, v, a, &found);
    if (found) return r;
    r = filter_sequences(c, f, n, name, v, a, &found);
    if (found) return r;
    tpl_error(c, n, "no filter named '%s'", name);
}
#undef IS
