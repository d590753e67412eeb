/* tests.c — jinja2's tests (`x is NAME args`): defined, undefined, none, string, number, integer,
 * float, mapping, iterable, sequence, boolean, true, false, callable, even, odd, divisibleby,
 * eq/equalto/==, ne/!=, lt/<, le/<=, gt/>, ge/>=, in, sameas, lower, upper, escaped. As jinja2 3.1
 * defines them over Python values (a string is iterable and a sequence; a dict is iterable, not a
 * sequence... as Python's collections.abc says: jinja2's `sequence` is "has len and getitem", so
 * a dict is a sequence too). An unknown test is an error when it runs.
 */
#include "template/tpl_internal.h"

#define IS(s) (!strcmp(name, s))

static int cmp_test(tpl_ctx *c, const tpl_node *n, const char *name, tv v, tv other, int *found) {
    *found = 1;
    if (IS("eq") || IS("equalto") || IS("==")) return tv_equal(v, other);
    if (IS("ne") || IS("!=")) return !tv_equal(v, other);
    if (IS("lt") || IS("lessthan") || IS("<")) return tpl_compare(c, n, v, other) < 0;
    if (IS("le") || IS("<=")) return tpl_compare(c, n, v, other) <= 0;
    if (IS("gt") || IS("greaterthan") || IS(">")) return tpl_compare(c, n, v, other) > 0;
    if (IS("ge") || IS(">=")) return tpl_compare(c, n, v, other) >= 0;
    if (IS("sameas")) {
        if (v.kind != other.kind) return 0;
        if (v.kind == V_NONE || v.kind == V_UNDEF) return 1;
        if (v.kind == V_BOOL || v.kind == V_INT) return v.i == other.i;
        if (v.kind == V_LIST) return v.l == other.l;
        if (v.kind == V_DICT || v.kind == V_NS) return v.d == other.d;
        return v.kind == V_STR && v.s.p == other.s.p && v.s.n == other.s.n;
    }
    if (IS("in")) {
        if (other.kind == V_STR && v.kind == V_STR) {
            for (size_t i = 0; i + v.s.n <= other.s.n; i++)
                if (!memcmp(other.s.p + i, v.s.p, v.s.n)) return 1;
            return 0;
        }
        if (other.kind == V_LIST) {
            for (size_t i = 0; i < other.l->n; i++)
                if (tv_equal(other.l->v[i], v)) return 1;
            return 0;
        }
        if (other.kind == V_DICT) return tpl_dict_find(other.d, v) != NULL;
        tpl_error(c, n, "in: the container is a %s", tv_type_name(other));
    }
    *found = 0;
    return 0;
}

/* jinja2's lower/upper tests: str(value).islower() / isupper(), non-strings false as here before */
static int has_case(tv v, int upper) { return v.kind == V_STR && tpl_py_is(v.s.p, v.s.n, upper ? 'u' : 'l'); }

int tpl_test(tpl_ctx *c, const tpl_node *n, const char *name, tv v, const tpl_args *a) {
    tpl_step(c, n);
    int k = v.kind;
    if (IS("defined")) return k != V_UNDEF;
    if (IS("undefined")) return k == V_UNDEF;
    if (IS("none")) return k == V_NONE;
    if (IS("string")) return k == V_STR;
    if (IS("number")) return k == V_INT || k == V_FLOAT || k == V_BOOL;
    if (IS("integer")) return k == V_INT;
    if (IS("float")) return k == V_FLOAT;
    if (IS("boolean")) return k == V_BOOL;
    if (IS("true")) return k == V_BOOL && v.i;
    if (IS("false")) return k == V_BOOL && !v.i;
    if (IS("mapping")) return k == V_DICT;
    if (IS("iterable")) return k == V_STR || k == V_LIST || k == V_DICT || k == V_UNDEF;
    if (IS("sequence")) return k == V_STR || k == V_LIST || k == V_DICT || k == V_UNDEF;
    if (IS("callable")) return k == V_FUNC || k == V_MACRO || k == V_METHOD;
    if (IS("lower")) return has_case(v, 0);
    if (IS("upper")) return has_case(v, 1);
    if (IS("escaped")) return 0;
    if (IS("even") || IS("odd") || IS("divisibleby")) {
        if (k == V_UNDEF) tpl_error(c, n, "'%.*s' is undefined", (int)v.s.n, v.s.p ? v.s.p : "");
        if (k != V_INT && k != V_BOOL) tpl_error(c, n, "%s: expected an integer, got %s", name, tv_type_name(v));
        if (IS("even")) return v.i % 2 == 0;
        if (IS("odd")) return v.i % 2 != 0;
        tv d = tpl_arg(a, 0, "num", tv_none());
        if (d.kind != V_INT || d.i == 0) tpl_error(c, n, "divisibleby: expected a non-zero integer");
        return v.i % d.i == 0;
    }
    int found;
    int r = cmp_test(c, n, name, v, tpl_arg(a, 0, NULL, tv_none()), &found);
    if (found) return r;
    tpl_error(c, n, "no test named '%s'", name);
}
#undef IS
