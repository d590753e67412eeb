/* methods.c — the Python methods templates call on values, and the globals transformers gives
 * them. str: strip/lstrip/rstrip, split/rsplit, splitlines, startswith/endswith, replace,
 * upper/lower/title/capitalize, format, join, find/rfind/index/count, removeprefix/removesuffix,
 * is* predicates, `%` formatting (%s %d %r); dict: get, items, keys, values; loop: cycle.
 * Mutating methods (append, pop, update, ...) exist but refuse, as transformers'
 * ImmutableSandboxedEnvironment does. Globals: range, namespace, dict, raise_exception,
 * strftime_now (its clock is fl_tpl_limits.now, so data can be rendered with a pinned date).
 */
#include "template/tpl_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static const char *const STR_METHODS[] = {
    "strip", "lstrip", "rstrip", "split", "rsplit", "splitlines", "startswith", "endswith", "replace", "upper", "lower",
    "title", "capitalize", "format", "join", "find", "rfind", "index", "count", "removeprefix", "removesuffix",
    "isdigit", "isalpha", "isalnum", "isspace", "isupper", "islower", "istitle", "isdecimal", "isnumeric", "__mod__", NULL};
static const char *const DICT_METHODS[] = {"get", "items", "keys", "values", "pop", "update", "setdefault", "clear", "copy", NULL};
static const char *const LIST_METHODS[] = {"index", "count", "append", "pop", "extend", "insert", "remove", "sort", "reverse", "copy", NULL};
static const char *const MUTATING[] = {"pop", "update", "setdefault", "clear", "append", "extend", "insert", "remove", "sort", "reverse", NULL};

static int in_list(const char *const *l, const char *name) {
    for (; *l; l++)
        if (!strcmp(*l, name)) return 1;
    return 0;
}

int tpl_has_method(tv self, const char *name) {
    switch (self.kind) {
    case V_STR: return in_list(STR_METHODS, name);
    case V_DICT: return in_list(DICT_METHODS, name);
    case V_LIST: return in_list(LIST_METHODS, name);
    default: return 0;
    }
}

static tv want_str(tpl_ctx *c, const tpl_node *n, tv v, const char *what) {
    if (v.kind != V_STR) tpl_error(c, n, "%s: expected a string, got %s", what, tv_type_name(v));
    return v;
}

static int match_at(tv s, size_t pos, tv w) { return pos + w.s.n <= s.s.n && !memcmp(s.s.p + pos, w.s.p, w.s.n); }

static tv str_split(tpl_ctx *c, const tpl_node *n, tv s, const tpl_args *a, int from_right) {
    tv sep = tpl_arg(a, 0, "sep", tv_none()), maxv = tpl_arg(a, 1, "maxsplit", tv_int(-1));
    int64_t max = maxv.kind == V_INT ? maxv.i : -1;
    tpl_list *l = tpl_list_new(&c->arena, 4);
    if (sep.kind == V_NONE) { // runs of whitespace; leading/trailing ignored
        tpl_list *parts = tpl_list_new(&c->arena, 4);
        size_t pos = 0;
        while (pos < s.s.n) {
            size_t p0 = pos;
            if (tpl_py_space(tpl_u8_get(s.s.p, s.s.n, &pos))) continue;
            size_t a0 = p0, e = pos;
            while (e < s.s.n) { size_t q = e; if (tpl_py_space(tpl_u8_get(s.s.p, s.s.n, &q))) break; e = q; }
            tpl_list_push(&c->arena, parts, tv_str(s.s.p + a0, e - a0));
            pos = e;
        }
        if (max < 0 || (size_t)max >= parts->n) return tv_list(parts);
        if (from_right) tpl_error(c, n, "rsplit with maxsplit and no separator is not supported");
        for (int64_t i = 0; i < max; i++) tpl_list_push(&c->arena, l, parts->v[i]);
        size_t rest = (size_t)(parts->v[max].s.p - s.s.p), e = s.s.n;
        size_t x, y;
        tpl_strip(s.s.p + rest, e - rest, NULL, 0, 0, 1, &x, &y);
        tpl_list_push(&c->arena, l, tv_str(s.s.p + rest, y));
        return tv_list(l);
    }
    want_str(c, n, sep, "split separator");
    if (!sep.s.n) tpl_error(c, n, "empty separator");
    if (!from_right) {
        size_t start = 0;
        for (size_t pos = 0; pos + sep.s.n <= s.s.n;) {
            if ((max < 0 || (int64_t)l->n < max) && match_at(s, pos, sep)) {
                tpl_list_push(&c->arena, l, tv_str(s.s.p + start, pos - start));
                pos += sep.s.n;
                start = pos;
            } else pos++;
        }
        tpl_list_push(&c->arena, l, tv_str(s.s.p + start, s.s.n - start));
        return tv_list(l);
    }
    tpl_list *rev = tpl_list_new(&c->arena, 4);
    size_t end = s.s.n;
    for (size_t pos = s.s.n; pos >= sep.s.n;) {
        size_t at = pos - sep.s.n;
        if ((max < 0 || (int64_t)rev->n < max) && match_at(s, at, sep)) {
            tpl_list_push(&c->arena, rev, tv_str(s.s.p + pos, end - pos));
            end = at;
            pos = at;
        } else pos--;
    }
    tpl_list_push(&c->arena, rev, tv_str(s.s.p, end));
    for (size_t i = rev->n; i-- > 0;) tpl_list_push(&c->arena, l, rev->v[i]);
    return tv_list(l);
}

static int affix(tpl_ctx *c, const tpl_node *n, tv s, tv w, int end) {
    if (w.kind == V_LIST) {
        for (size_t i = 0; i < w.l->n; i++)
            if (affix(c, n, s, w.l->v[i], end)) return 1;
        return 0;
    }
    want_str(c, n, w, end ? "endswith" : "startswith");
    if (w.s.n > s.s.n) return 0;
    return !memcmp(s.s.p + (end ? s.s.n - w.s.n : 0), w.s.p, w.s.n);
}

/* str.format: {} {0} {name} and {{ }}; a conversion !r/!s; format specs are not applied. */
static tv str_format(tpl_ctx *c, const tpl_node *n, tv s, const tpl_args *a) {
    tpl_buf b;
    tpl_buf_init(&b, &c->arena, 0, &c->jb);
    size_t auto_i = 0;
    for (size_t i = 0; i < s.s.n; i++) {
        char ch = s.s.p[i];
        if ((ch == '{' || ch == '}') && i + 1 < s.s.n && s.s.p[i + 1] == ch) { tpl_buf_put(&b, &ch, 1); i++; continue; }
        if (ch != '{') { tpl_buf_put(&b, &ch, 1); continue; }
        size_t e = i + 1;
        while (e < s.s.n && s.s.p[e] != '}') e++;
        if (e >= s.s.n) tpl_error(c, n, "format: single '{' encountered in format string");
        size_t fe = i + 1;
        while (fe < e && s.s.p[fe] != '!' && s.s.p[fe] != ':') fe++;
        int repr = fe + 1 < e && s.s.p[fe] == '!' && s.s.p[fe + 1] == 'r';
        tv v;
        if (fe == i + 1) v = tpl_arg(a, auto_i++, NULL, tv_undef("format argument"));
        else if (s.s.p[i + 1] >= '0' && s.s.p[i + 1] <= '9') v = tpl_arg(a, (size_t)atoi(s.s.p + i + 1), NULL, tv_undef("format argument"));
        else v = tpl_arg(a, (size_t)-1, tpl_strdup(&c->arena, s.s.p + i + 1, fe - i - 1), tv_undef("format argument"));
        if (v.kind == V_UNDEF) tpl_error(c, n, "format: missing argument");
        if (repr) tv_write_repr(&b, v);
        else tv_write_str(&b, v);
        i = e;
    }
    return tpl_buf_value(&b);
}

/* "fmt" % args: %s %r %d %i %f %% (what templates use). */
static tv str_percent(tpl_ctx *c, const tpl_node *n, tv s, tv args) {
    tpl_list *items = args.kind == V_LIST && args.tuple ? args.l : NULL;
    size_t k = 0;
    tpl_buf b;
    tpl_buf_init(&b, &c->arena, 0, &c->jb);
    for (size_t i = 0; i < s.s.n; i++) {
        if (s.s.p[i] != '%' || i + 1 >= s.s.n) { tpl_buf_put(&b, s.s.p + i, 1); continue; }
        char f = s.s.p[++i];
        if (f == '%') { tpl_buf_put(&b, "%", 1); continue; }
        tv v = items ? (k < items->n ? items->v[k++] : tv_undef("")) : (k++ == 0 ? args : tv_undef(""));
        if (v.kind == V_UNDEF) tpl_error(c, n, "not enough arguments for format string");
        if (f == 's') tv_write_str(&b, v);
        else if (f == 'r') tv_write_repr(&b, v);
        else if ((f == 'd' || f == 'i') && tv_is_number(v)) tpl_buf_printf(&b, "%lld", (long long)(v.kind == V_FLOAT ? (int64_t)v.f : v.i));
        else if (f == 'f' && tv_is_number(v)) tpl_buf_printf(&b, "%f", tv_num(v));
        else tpl_error(c, n, "unsupported format character '%c'", f);
    }
    return tpl_buf_value(&b);
}

static tv str_find(tpl_ctx *c, const tpl_node *n, tv s, tv w, int from_right, int count) {
    want_str(c, n, w, "find");
    int64_t found = -1, cnt = 0;
    for (size_t pos = 0; pos + w.s.n <= s.s.n;) {
        if (match_at(s, pos, w)) {
            cnt++;
            if (found < 0 || from_right) found = (int64_t)pos;
            if (!from_right && !count) break;
            pos += w.s.n ? w.s.n : 1;
        } else pos++;
    }
    if (count) return tv_int(cnt);
    return tv_int(found < 0 ? -1 : (int64_t)tpl_u8_count(s.s.p, (size_t)found));
}

#define IS(s) (!strcmp(name, s))

static tv str_method(tpl_ctx *c, const tpl_node *n, tv s, const char *name, const tpl_args *a) {
    if (IS("strip") || IS("lstrip") || IS("rstrip")) {
        tv chars = tpl_arg(a, 0, "chars", tv_none());
        size_t x, e;
        int l = !IS("rstrip"), r = !IS("lstrip");
        if (chars.kind == V_STR) tpl_strip(s.s.p, s.s.n, chars.s.p, chars.s.n, l, r, &x, &e);
        else tpl_strip(s.s.p, s.s.n, NULL, 0, l, r, &x, &e);
        return tv_str(s.s.p + x, e - x);
    }
    if (IS("split") || IS("rsplit")) return str_split(c, n, s, a, IS("rsplit"));
    if (IS("splitlines")) {
        tpl_list *l = tpl_list_new(&c->arena, 4);
        int keep = tv_truthy(tpl_arg(a, 0, "keepends", tv_bool(0)));
        for (size_t pos = 0; pos < s.s.n;) {
            size_t e = pos, brk = 0;
            while (e < s.s.n && !tpl_is_linebreak(s.s.p, s.s.n, e, &brk)) e++;
            if (e >= s.s.n) brk = 0;
            tpl_list_push(&c->arena, l, tv_str(s.s.p + pos, e - pos + (keep ? brk : 0)));
            pos = e + brk;
        }
        return tv_list(l);
    }
    if (IS("startswith") || IS("endswith")) return tv_bool(affix(c, n, s, tpl_arg(a, 0, "prefix", tv_none()), IS("endswith")));
    if (IS("replace")) return tpl_filter(c, NULL, n, "replace", s, a);
    if (IS("upper")) return tpl_case(&c->arena, s, 'u');
    if (IS("lower")) return tpl_case(&c->arena, s, 'l');
    if (IS("title")) return tpl_case(&c->arena, s, 't');
    if (IS("capitalize")) return tpl_case(&c->arena, s, 'c');
    if (IS("format")) return str_format(c, n, s, a);
    if (IS("__mod__")) return str_percent(c, n, s, tpl_arg(a, 0, NULL, tv_none()));
    if (IS("join")) {
        tpl_list *items = tpl_iterate(c, n, tpl_arg(a, 0, "iterable", tv_none()));
        tpl_buf b;
        tpl_buf_init(&b, &c->arena, 0, &c->jb);
        for (size_t i = 0; i < items->n; i++) {
            if (i) tpl_buf_put(&b, s.s.p, s.s.n);
            tpl_buf_put(&b, want_str(c, n, items->v[i], "join item").s.p, items->v[i].s.n);
        }
        return tpl_buf_value(&b);
    }
    if (IS("find") || IS("rfind") || IS("index") || IS("count")) {
        tv r = str_find(c, n, s, tpl_arg(a, 0, "sub", tv_none()), IS("rfind"), IS("count"));
        if (IS("index") && r.i < 0) tpl_error(c, n, "substring not found");
        return r;
    }
    if (IS("removeprefix") || IS("removesuffix")) {
        tv w = want_str(c, n, tpl_arg(a, 0, NULL, tv_none()), name);
        int end = IS("removesuffix");
        if (!affix(c, n, s, w, end)) return s;
        return tv_str(s.s.p + (end ? 0 : w.s.n), s.s.n - w.s.n);
    }
    static const char *const is_names[] = {"isdigit", "isalpha", "isalnum", "isspace", "isupper", "islower", "istitle",
                                           "isdecimal", "isnumeric"};
    static const char is_kinds[] = "dansultem"; // tpl_py_is kinds, in is_names order
    for (size_t k = 0; k < sizeof is_names / sizeof *is_names; k++)
        if (IS(is_names[k])) return tv_bool(tpl_py_is(s.s.p, s.s.n, is_kinds[k]));
    tpl_error(c, n, "str has no method %s", name);
}

static tv dict_method(tpl_ctx *c, tv d, const char *name, const tpl_args *a) {
    if (IS("get")) {
        tv *v = tpl_dict_find(d.d, tpl_arg(a, 0, "key", tv_none()));
        return v ? *v : tpl_arg(a, 1, "default", tv_none());
    }
    if (IS("copy")) {
        tpl_dict *nd = tpl_dict_new(&c->arena, d.d->n);
        for (size_t i = 0; i < d.d->n; i++) tpl_dict_set(&c->arena, nd, d.d->k[i], d.d->v[i]);
        return tv_dict(nd);
    }
    tpl_list *l = tpl_list_new(&c->arena, d.d->n);
    for (size_t i = 0; i < d.d->n; i++) {
        if (IS("keys")) { l->v[l->n++] = d.d->k[i]; continue; }
        if (IS("values")) { l->v[l->n++] = d.d->v[i]; continue; }
        tpl_list *pair = tpl_list_new(&c->arena, 2);
        pair->v[0] = d.d->k[i];
        pair->v[1] = d.d->v[i];
        pair->n = 2;
        tv t = tv_list(pair);
        t.tuple = 1;
        l->v[l->n++] = t;
    }
    return tv_list(l);
}

tv tpl_method(tpl_ctx *c, const tpl_node *n, tv self, const char *name, const tpl_args *a) {
    tpl_step(c, n);
    if (self.kind == V_LOOP) {
        if (!strcmp(name, "cycle")) {
            if (!a->npos) tpl_error(c, n, "no items for cycling given");
            return a->pos[self.loop->index % a->npos];
        }
        tpl_error(c, n, "loop.%s() is not supported", name);
    }
    if (in_list(MUTATING, name)) tpl_error(c, n, "access to attribute '%s' of '%s' object is unsafe", name, tv_type_name(self));
    if (self.kind == V_STR) return str_method(c, n, self, name, a);
    if (self.kind == V_DICT) return dict_method(c, self, name, a);
    if (self.kind == V_LIST) {
        tv x = tpl_arg(a, 0, NULL, tv_none());
        int64_t cnt = 0;
        for (size_t i = 0; i < self.l->n; i++)
            if (tv_equal(self.l->v[i], x)) { if (!strcmp(name, "index")) return tv_int((int64_t)i); cnt++; }
        if (!strcmp(name, "index")) tpl_error(c, n, "x not in list");
        if (!strcmp(name, "copy")) return self;
        return tv_int(cnt);
    }
    tpl_error(c, n, "'%s' object has no method '%s'", tv_type_name(self), name);
}

/* ===== globals ===== */
enum { B_RANGE = 1, B_NAMESPACE, B_DICT, B_RAISE, B_STRFTIME };

int tpl_builtin_id(const char *name) {
    if (IS("range")) return B_RANGE;
    if (IS("namespace")) return B_NAMESPACE;
    if (IS("dict")) return B_DICT;
    if (IS("raise_exception")) return B_RAISE;
    if (IS("strftime_now")) return B_STRFTIME;
    return 0;
}
#undef IS

static tv b_range(tpl_ctx *c, const tpl_node *n, const tpl_args *a) {
    int64_t start = 0, stop, step = 1;
    for (size_t i = 0; i < a->npos; i++)
        if (a->pos[i].kind != V_INT && a->pos[i].kind != V_BOOL) tpl_error(c, n, "range: expected integers, got %s", tv_type_name(a->pos[i]));
    if (a->npos == 1) stop = a->pos[0].i;
    else if (a->npos >= 2) { start = a->pos[0].i; stop = a->pos[1].i; if (a->npos > 2) step = a->pos[2].i; }
    else tpl_error(c, n, "range expected at least 1 argument, got 0");
    if (step == 0) tpl_error(c, n, "range() arg 3 must not be zero");
    int64_t count = step > 0 ? (stop > start ? (stop - start + step - 1) / step : 0) : (start > stop ? (start - stop - step - 1) / -step : 0);
    if (count > 10000000) tpl_error(c, n, "range of %lld items (limit 10000000)", (long long)count);
    tpl_list *l = tpl_list_new(&c->arena, (size_t)count + 1);
    for (int64_t i = 0; i < count; i++) l->v[l->n++] = tv_int(start + i * step);
    return tv_list(l);
}

static tv b_dict(tpl_ctx *c, const tpl_args *a, int ns) {
    tpl_dict *d = tpl_dict_new(&c->arena, a->nkw + 1);
    if (a->npos && (a->pos[0].kind == V_DICT || a->pos[0].kind == V_NS))
        for (size_t i = 0; i < a->pos[0].d->n; i++) tpl_dict_set(&c->arena, d, a->pos[0].d->k[i], a->pos[0].d->v[i]);
    for (size_t i = 0; i < a->nkw; i++) tpl_dict_set(&c->arena, d, tv_str(a->kwn[i], strlen(a->kwn[i])), a->kwv[i]);
    tv v = tv_dict(d);
    if (ns) v.kind = V_NS;
    return v;
}

tv tpl_call_builtin(tpl_ctx *c, const tpl_node *n, int64_t id, const tpl_args *a) {
    switch (id) {
    case B_RANGE: return b_range(c, n, a);
    case B_NAMESPACE:
        for (size_t i = 0; i < a->nkw; i++)
            if (a->kwn[i][0] == '_') tpl_error(c, n, "chat templates cannot store underscore-prefixed attributes on a namespace");
        return b_dict(c, a, 1);
    case B_DICT: return b_dict(c, a, 0);
    case B_RAISE: {
        tv msg = tpl_to_str(c, tpl_arg(a, 0, "message", tv_str("", 0)));
        fl_tpl_raise(c, n, msg.s.p, msg.s.n);
    }
    default: {
        tv fmt = tpl_arg(a, 0, "format", tv_none());
        if (fmt.kind != V_STR) tpl_error(c, n, "strftime_now: expected a format string");
        time_t t = (time_t)c->now;
        struct tm tm;
        localtime_r(&t, &tm);
        char out[512];
        char *f = tpl_strdup(&c->arena, fmt.s.p, fmt.s.n);
        size_t len = strftime(out, sizeof out, f, &tm);
        return tv_str(tpl_strdup(&c->arena, out, len), len);
    }
    }
}
