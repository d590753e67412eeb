/* eval.c — expressions: names, literals, attribute/item/slice access, calls, operators and
 * comparisons, with jinja2's rules over Python values: an undefined value prints empty, iterates
 * empty and is falsy, but arithmetic, attribute access, indexing or calling it raises ("'x' is
 * undefined"); a missing key or attribute of a defined value is undefined; `a.b` tries the
 * attribute (a str/dict/list method) before the key, `a['b']` the key first. Not here:
 * statements (exec.c), filters, tests and methods (their own files).
 */
#include "template/tpl_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

_Noreturn static void undefined_error(tpl_ctx *c, const tpl_node *n, tv u) {
    if (u.s.p && !strncmp(u.s.p, "\x01", 1)) tpl_error(c, n, "%s", u.s.p + 1);
    tpl_error(c, n, "'%.*s' is undefined", (int)u.s.n, u.s.p ? u.s.p : "");
}

/* An undefined value that, when used, says which object lacked which attribute (jinja2's
 * "'dict object' has no attribute 'x'"). The message is kept behind a \x01 marker. */
static tv missing(tpl_ctx *c, tv obj, const char *name, size_t len) {
    tpl_buf b;
    tpl_buf_init(&b, &c->arena, 0, &c->jb);
    tpl_buf_puts(&b, "\x01'");
    tpl_buf_puts(&b, obj.kind == V_NONE ? "None" : tv_type_name(obj));
    tpl_buf_puts(&b, obj.kind == V_NONE ? "' has no attribute '" : " object' has no attribute '");
    tpl_buf_put(&b, name, len);
    tpl_buf_puts(&b, "'");
    tv u = {.kind = V_UNDEF};
    u.s.p = b.p;
    u.s.n = b.n;
    return u;
}

static tv method_value(tpl_ctx *c, tv self, const char *name) {
    tpl_bound *m = tpl_alloc(&c->arena, sizeof *m);
    m->self = self;
    m->name = name;
    tv v = {.kind = V_METHOD};
    v.meth = m;
    return v;
}

static tv loop_field(tpl_ctx *c, tv obj, const char *name, size_t len) {
    tpl_loop *l = obj.loop;
    int64_t i = (int64_t)l->index, n = (int64_t)l->items->n;
#define IS(s) (len == sizeof(s) - 1 && !memcmp(name, s, len))
    if (IS("index")) return tv_int(i + 1);
    if (IS("index0")) return tv_int(i);
    if (IS("revindex")) return tv_int(n - i);
    if (IS("revindex0")) return tv_int(n - i - 1);
    if (IS("first")) return tv_bool(i == 0);
    if (IS("last")) return tv_bool(i == n - 1);
    if (IS("length")) return tv_int(n);
    if (IS("depth")) return tv_int(l->depth0 + 1);
    if (IS("depth0")) return tv_int(l->depth0);
    if (IS("previtem")) return i > 0 ? l->items->v[i - 1] : tv_undef("previtem");
    if (IS("nextitem")) return i + 1 < n ? l->items->v[i + 1] : tv_undef("nextitem");
    if (IS("cycle") || IS("changed")) return method_value(c, obj, IS("cycle") ? "cycle" : "changed");
#undef IS
    return missing(c, obj, name, len);
}

tv tpl_getattr(tpl_ctx *c, const tpl_node *n, tv obj, const char *name, size_t len) {
    switch (obj.kind) {
    case V_UNDEF: undefined_error(c, n, obj);
    case V_DICT: {
        if (tpl_has_method(obj, name)) return method_value(c, obj, name);
        tv *v = tpl_dict_find_str(obj.d, name, len);
        return v ? *v : missing(c, obj, name, len);
    }
    case V_NS: {
        tv *v = tpl_dict_find_str(obj.d, name, len);
        return v ? *v : missing(c, obj, name, len);
    }
    case V_LOOP: return loop_field(c, obj, name, len);
    default:
        if (tpl_has_method(obj, name)) return method_value(c, obj, name);
        return missing(c, obj, name, len);
    }
}

/* Python's index normalization for obj[i] over `len` items: -1 when out of range. */
static int64_t norm_index(tv key, size_t len) {
    int64_t i = key.i;
    if (i < 0) i += (int64_t)len;
    return i < 0 || i >= (int64_t)len ? -1 : i;
}

tv tpl_getitem(tpl_ctx *c, const tpl_node *n, tv obj, tv key) {
    if (obj.kind == V_UNDEF) undefined_error(c, n, obj);
    if (key.kind == V_UNDEF) return tv_undef("item");
    int int_key = key.kind == V_INT || key.kind == V_BOOL;
    switch (obj.kind) {
    case V_DICT: case V_NS: {
        tv *v = tpl_dict_find(obj.d, key);
        if (v) return *v;
        break;
    }
    case V_LIST:
        if (int_key) {
            int64_t i = norm_index(key, obj.l->n);
            if (i >= 0) return obj.l->v[i];
        }
        break;
    case V_STR:
        if (int_key) {
            int64_t i = norm_index(key, tpl_u8_count(obj.s.p, obj.s.n));
            if (i >= 0) {
                size_t a = tpl_u8_offset(obj.s.p, obj.s.n, (size_t)i), e = a;
                tpl_u8_get(obj.s.p, obj.s.n, &e);
                return tv_str(obj.s.p + a, e - a);
            }
        }
        break;
    default: break;
    }
    if (key.kind == V_STR) {
        char *nm = tpl_strdup(&c->arena, key.s.p, key.s.n);
        if (obj.kind == V_LOOP || tpl_has_method(obj, nm)) return tpl_getattr(c, n, obj, nm, key.s.n);
        return missing(c, obj, key.s.p, key.s.n);
    }
    return tv_undef("item");
}

static int64_t slice_bound(tpl_ctx *c, const tpl_node *n, tv v, int64_t len, int64_t step, int is_start) {
    if (v.kind == V_NONE || v.kind == V_UNDEF)
        return step > 0 ? (is_start ? 0 : len) : (is_start ? len - 1 : -1);
    if (v.kind != V_INT && v.kind != V_BOOL) tpl_error(c, n, "slice indices must be integers or None");
    int64_t i = v.i;
    if (i < 0) { i += len; if (i < 0) i = step > 0 ? 0 : -1; }
    else if (i >= len) i = step > 0 ? len : len - 1;
    return i;
}

static tv eval_slice(tpl_ctx *c, tpl_frame *f, const tpl_node *n) {
    tv obj = tpl_eval(c, f, n->a);
    tv vs = n->b ? tpl_eval(c, f, n->b) : tv_none(), ve = n->c ? tpl_eval(c, f, n->c) : tv_none();
    tv vstep = n->kids[0] ? tpl_eval(c, f, n->kids[0]) : tv_none();
    if (obj.kind == V_UNDEF) undefined_error(c, n, obj);
    int64_t step = vstep.kind == V_NONE ? 1 : vstep.i;
    if (vstep.kind != V_NONE && vstep.kind != V_INT) tpl_error(c, n, "slice indices must be integers or None");
    if (step == 0) tpl_error(c, n, "slice step cannot be zero");
    int is_str = obj.kind == V_STR;
    if (!is_str && obj.kind != V_LIST) tpl_error(c, n, "'%s' object is not subscriptable", tv_type_name(obj));
    int64_t len = is_str ? (int64_t)tpl_u8_count(obj.s.p, obj.s.n) : (int64_t)obj.l->n;
    int64_t a = slice_bound(c, n, vs, len, step, 1), e = slice_bound(c, n, ve, len, step, 0);
    tpl_list *out = is_str ? NULL : tpl_list_new(&c->arena, 4);
    tpl_buf b;
    tpl_buf_init(&b, &c->arena, 0, &c->jb);
    for (int64_t i = a; step > 0 ? i < e : i > e; i += step) {
        if (!is_str) { tpl_list_push(&c->arena, out, obj.l->v[i]); continue; }
        size_t x = tpl_u8_offset(obj.s.p, obj.s.n, (size_t)i), y = x;
        tpl_u8_get(obj.s.p, obj.s.n, &y);
        tpl_buf_put(&b, obj.s.p + x, y - x);
    }
    if (is_str) return tpl_buf_value(&b);
    tv r = tv_list(out);
    r.tuple = obj.tuple;
    return r;
}

static void eval_args(tpl_ctx *c, tpl_frame *f, tpl_node **kids, size_t n, tpl_args *a, size_t extra_kw) {
    memset(a, 0, sizeof *a);
    a->pos = tpl_alloc(&c->arena, (n + 1) * sizeof *a->pos);
    a->kwn = tpl_alloc(&c->arena, (n + extra_kw + 1) * sizeof *a->kwn);
    a->kwv = tpl_alloc(&c->arena, (n + extra_kw + 1) * sizeof *a->kwv);
    for (size_t i = 0; i < n; i++) {
        if (kids[i]->kind == N_KWARG) {
            a->kwn[a->nkw] = kids[i]->name;
            a->kwv[a->nkw++] = tpl_eval(c, f, kids[i]->a);
        } else a->pos[a->npos++] = tpl_eval(c, f, kids[i]);
    }
}

tv tpl_arg(const tpl_args *a, size_t i, const char *name, tv dflt) {
    if (a && i < a->npos) return a->pos[i];
    for (size_t k = 0; a && name && k < a->nkw; k++)
        if (!strcmp(a->kwn[k], name)) return a->kwv[k];
    return dflt;
}

/* Calls `callee` (already evaluated) with evaluated arguments. */
static tv call_value(tpl_ctx *c, const tpl_node *n, tv callee, tpl_args *args) {
    switch (callee.kind) {
    case V_FUNC: return tpl_call_builtin(c, n, callee.i, args);
    case V_MACRO: return tpl_call_macro(c, n, callee.m, args->pos, args->npos, args->kwn, args->kwv, args->nkw);
    case V_METHOD: return tpl_method(c, n, callee.meth->self, callee.meth->name, args);
    case V_UNDEF: undefined_error(c, n, callee);
    default: tpl_error(c, n, "'%s' object is not callable", tv_type_name(callee));
    }
}

tv tpl_eval_call(tpl_ctx *c, tpl_frame *f, const tpl_node *n, const char *extra_kw, tv extra_val) {
    tv callee;
    if (n->a->kind == N_ATTR) {
        tv obj = tpl_eval(c, f, n->a->a);
        callee = tpl_getattr(c, n->a, obj, n->a->name, strlen(n->a->name));
    } else callee = tpl_eval(c, f, n->a);
    tpl_args args;
    eval_args(c, f, n->kids, n->n, &args, extra_kw ? 1 : 0);
    if (extra_kw) { args.kwn[args.nkw] = extra_kw; args.kwv[args.nkw++] = extra_val; }
    tpl_step(c, n);
    return call_value(c, n, callee, &args);
}

/* ===== operators ===== */
static void need_defined(tpl_ctx *c, const tpl_node *n, tv a, tv b) {
    if (a.kind == V_UNDEF) undefined_error(c, n, a);
    if (b.kind == V_UNDEF) undefined_error(c, n, b);
}

static const char *op_name(int op) {
    static const char *names[] = {"", "+", "-", "*", "/", "//", "%", "**"};
    return op >= OP_ADD && op <= OP_POW ? names[op] : "?";
}

static tv repeat(tpl_ctx *c, const tpl_node *n, tv seq, int64_t k) {
    if (k < 0) k = 0;
    if (seq.kind == V_STR) {
        if (seq.s.n && (uint64_t)k > (64u << 20) / seq.s.n) tpl_error(c, n, "string repetition longer than 64 MiB (limit)");
        tpl_buf b;
        tpl_buf_init(&b, &c->arena, 0, &c->jb);
        for (int64_t i = 0; i < k; i++) tpl_buf_put(&b, seq.s.p, seq.s.n);
        return tpl_buf_value(&b);
    }
    if (seq.l->n && (uint64_t)k > (1u << 22) / seq.l->n) tpl_error(c, n, "list repetition longer than 4M items (limit)");
    tpl_list *l = tpl_list_new(&c->arena, seq.l->n * (size_t)k + 1);
    for (int64_t i = 0; i < k; i++)
        for (size_t j = 0; j < seq.l->n; j++) l->v[l->n++] = seq.l->v[j];
    return tv_list(l);
}

static tv arith(tpl_ctx *c, const tpl_node *n, int op, tv a, tv b) {
    need_defined(c, n, a, b);
    if (tv_is_number(a) && tv_is_number(b)) {
        int ints = a.kind != V_FLOAT && b.kind != V_FLOAT;
        double x = tv_num(a), y = tv_num(b);
        int64_t r;
        switch (op) {
        case OP_ADD: if (ints && !__builtin_add_overflow(a.i, b.i, &r)) return tv_int(r); return tv_float(x + y);
        case OP_SUB: if (ints && !__builtin_sub_overflow(a.i, b.i, &r)) return tv_int(r); return tv_float(x - y);
        case OP_MUL: if (ints && !__builtin_mul_overflow(a.i, b.i, &r)) return tv_int(r); return tv_float(x * y);
        case OP_DIV: if (y == 0) tpl_error(c, n, "division by zero"); return tv_float(x / y);
        case OP_FLOORDIV: case OP_MOD:
            if (y == 0) tpl_error(c, n, "integer division or modulo by zero");
            if (ints) {
                int64_t q = a.i / b.i, m = a.i % b.i;
                if (m != 0 && ((m < 0) != (b.i < 0))) { q--; m += b.i; }
                return tv_int(op == OP_MOD ? m : q);
            } else {
                double m = fmod(x, y);
                if (m != 0 && ((m < 0) != (y < 0))) m += y;
                return tv_float(op == OP_MOD ? m : floor(x / y));
            }
        case OP_POW:
            if (ints && b.i >= 0) {
                int64_t acc = 1;
                for (int64_t i = 0; i < b.i; i++)
                    if (__builtin_mul_overflow(acc, a.i, &acc)) return tv_float(pow(x, y));
                return tv_int(acc);
            }
            return tv_float(pow(x, y));
        }
    }
    if (op == OP_ADD && a.kind == V_STR && b.kind == V_STR) {
        int markup = a.markup || b.markup; // Markup + str escapes the str
        if (markup && !a.markup) a = tpl_html_escape(c, a);
        if (markup && !b.markup) b = tpl_html_escape(c, b);
        char *s = tpl_alloc(&c->arena, a.s.n + b.s.n + 1);
        memcpy(s, a.s.p, a.s.n);
        memcpy(s + a.s.n, b.s.p, b.s.n);
        tv r = tv_str(s, a.s.n + b.s.n);
        r.markup = (uint8_t)markup;
        return r;
    }
    if (op == OP_ADD && a.kind == V_LIST && b.kind == V_LIST) {
        tpl_list *l = tpl_list_new(&c->arena, a.l->n + b.l->n + 1);
        for (size_t i = 0; i < a.l->n; i++) l->v[l->n++] = a.l->v[i];
        for (size_t i = 0; i < b.l->n; i++) l->v[l->n++] = b.l->v[i];
        tv r = tv_list(l);
        r.tuple = a.tuple && b.tuple;
        return r;
    }
    if (op == OP_MUL && (a.kind == V_STR || a.kind == V_LIST) && (b.kind == V_INT || b.kind == V_BOOL)) return repeat(c, n, a, b.i);
    if (op == OP_MUL && (b.kind == V_STR || b.kind == V_LIST) && (a.kind == V_INT || a.kind == V_BOOL)) return repeat(c, n, b, a.i);
    if (op == OP_MOD && a.kind == V_STR) return tpl_method(c, n, a, "__mod__", &(tpl_args){.pos = &b, .npos = 1});
    tpl_error(c, n, "unsupported operand type(s) for %s: '%s' and '%s'", op_name(op), tv_type_name(a), tv_type_name(b));
}

int tpl_compare(tpl_ctx *c, const tpl_node *n, tv a, tv b) {
    if (tv_is_number(a) && tv_is_number(b)) {
        if (a.kind != V_FLOAT && b.kind != V_FLOAT) return a.i < b.i ? -1 : a.i > b.i;
        double x = tv_num(a), y = tv_num(b);
        return x < y ? -1 : x > y;
    }
    if (a.kind == V_STR && b.kind == V_STR) {
        size_t m = a.s.n < b.s.n ? a.s.n : b.s.n;
        int r = memcmp(a.s.p, b.s.p, m);
        return r ? (r < 0 ? -1 : 1) : a.s.n < b.s.n ? -1 : a.s.n > b.s.n;
    }
    if (a.kind == V_LIST && b.kind == V_LIST) {
        for (size_t i = 0; i < a.l->n && i < b.l->n; i++)
            if (!tv_equal(a.l->v[i], b.l->v[i])) return tpl_compare(c, n, a.l->v[i], b.l->v[i]);
        return a.l->n < b.l->n ? -1 : a.l->n > b.l->n;
    }
    need_defined(c, n, a, b);
    tpl_error(c, n, "'<' not supported between instances of '%s' and '%s'", tv_type_name(a), tv_type_name(b));
}

static int contains(tpl_ctx *c, const tpl_node *n, tv item, tv seq) {
    switch (seq.kind) {
    case V_UNDEF: return 0;
    case V_STR:
        if (item.kind != V_STR) tpl_error(c, n, "'in <string>' requires string as left operand, not %s", tv_type_name(item));
        if (!item.s.n) return 1;
        for (size_t i = 0; i + item.s.n <= seq.s.n; i++)
            if (!memcmp(seq.s.p + i, item.s.p, item.s.n)) return 1;
        return 0;
    case V_LIST:
        for (size_t i = 0; i < seq.l->n; i++)
            if (tv_equal(seq.l->v[i], item)) return 1;
        return 0;
    case V_DICT: case V_NS: return tpl_dict_find(seq.d, item) != NULL;
    default: tpl_error(c, n, "argument of type '%s' is not iterable", tv_type_name(seq));
    }
}

static int compare_op(tpl_ctx *c, const tpl_node *n, int op, tv a, tv b) {
    switch (op) {
    case OP_EQ: return tv_equal(a, b);
    case OP_NE: return !tv_equal(a, b);
    case OP_IN: return contains(c, n, a, b);
    case OP_NOTIN: return !contains(c, n, a, b);
    case OP_LT: return tpl_compare(c, n, a, b) < 0;
    case OP_LE: return tpl_compare(c, n, a, b) <= 0;
    case OP_GT: return tpl_compare(c, n, a, b) > 0;
    default: return tpl_compare(c, n, a, b) >= 0;
    }
}

tv tpl_to_str(tpl_ctx *c, tv v) {
    if (v.kind == V_STR) return v;
    tpl_buf b;
    tpl_buf_init(&b, &c->arena, 0, &c->jb);
    tv_write_str(&b, v);
    return tpl_buf_value(&b);
}

static tv eval_sequence(tpl_ctx *c, tpl_frame *f, const tpl_node *n) {
    if (n->kind == N_DICT) {
        tpl_dict *d = tpl_dict_new(&c->arena, n->n);
        for (size_t i = 0; i < n->n; i++) tpl_dict_set(&c->arena, d, tpl_eval(c, f, n->kids[i]), tpl_eval(c, f, n->kids2[i]));
        return tv_dict(d);
    }
    tpl_list *l = tpl_list_new(&c->arena, n->n);
    for (size_t i = 0; i < n->n; i++) l->v[l->n++] = tpl_eval(c, f, n->kids[i]);
    tv r = tv_list(l);
    r.tuple = n->kind == N_TUPLE;
    return r;
}

tv tpl_eval(tpl_ctx *c, tpl_frame *f, const tpl_node *n) {
    switch (n->kind) {
    case N_LIT: return n->lit;
    case N_NAME: return tpl_lookup(c, f, n->name);
    case N_LIST: case N_TUPLE: case N_DICT: return eval_sequence(c, f, n);
    case N_ATTR: return tpl_getattr(c, n, tpl_eval(c, f, n->a), n->name, strlen(n->name));
    case N_INDEX: { tv o = tpl_eval(c, f, n->a); return tpl_getitem(c, n, o, tpl_eval(c, f, n->b)); }
    case N_SLICE: return eval_slice(c, f, n);
    case N_CALL: return tpl_eval_call(c, f, n, NULL, tv_none());
    case N_FILTER: {
        tv v = tpl_eval(c, f, n->a);
        tpl_args args;
        eval_args(c, f, n->kids, n->n, &args, 0);
        return tpl_filter(c, f, n, n->name, v, &args);
    }
    case N_TEST: {
        tv v = tpl_eval(c, f, n->a);
        tpl_args args;
        eval_args(c, f, n->kids, n->n, &args, 0);
        return tv_bool(tpl_test(c, n, n->name, v, &args) != n->op);
    }
    case N_NOT: return tv_bool(!tv_truthy(tpl_eval(c, f, n->a)));
    case N_NEG: case N_POS: {
        tv v = tpl_eval(c, f, n->a);
        if (v.kind == V_UNDEF) undefined_error(c, n, v);
        if (!tv_is_number(v)) tpl_error(c, n, "bad operand type for unary %c: '%s'", n->kind == N_NEG ? '-' : '+', tv_type_name(v));
        if (n->kind == N_POS) return v.kind == V_BOOL ? tv_int(v.i) : v;
        return v.kind == V_FLOAT ? tv_float(-v.f) : tv_int(-v.i);
    }
    case N_BIN: { tv a = tpl_eval(c, f, n->a); return arith(c, n, n->op, a, tpl_eval(c, f, n->b)); }
    case N_AND: { tv a = tpl_eval(c, f, n->a); return tv_truthy(a) ? tpl_eval(c, f, n->b) : a; }
    case N_OR: { tv a = tpl_eval(c, f, n->a); return tv_truthy(a) ? a : tpl_eval(c, f, n->b); }
    case N_COND:
        if (tv_truthy(tpl_eval(c, f, n->b))) return tpl_eval(c, f, n->a);
        return n->c ? tpl_eval(c, f, n->c) : tv_undef("else");
    case N_CONCAT: {
        tv a = tpl_to_str(c, tpl_eval(c, f, n->a)), b = tpl_to_str(c, tpl_eval(c, f, n->b));
        a.markup = b.markup = 0; // `~` is str_join, not markup_join, without autoescape
        return arith(c, n, OP_ADD, a, b);
    }
    case N_CMP: {
        tv a = tpl_eval(c, f, n->kids[0]);
        for (size_t i = 1; i < n->n; i++) {
            tv b = tpl_eval(c, f, n->kids[i]);
            if (!compare_op(c, n, (int)n->kids2[i - 1]->lit.i, a, b)) return tv_bool(0);
            a = b;
        }
        return tv_bool(1);
    }
    default: tpl_error(c, n, "not an expression");
    }
}
