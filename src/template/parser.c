/* parser.c — tokens to the syntax tree, with jinja2's grammar and operator precedence:
 *   condexpr  or ('if' or ('else' condexpr)?)*
 *   or/and/not, compare (== != < <= > >= in, not in; chained), + -, ~, * / // %, **, unary - +,
 *   primary with postfix . [] () and filter/test chains (| name(args), is [not] name args).
 * Statements: if/elif/else, for (targets, `if` filter, else, recursive), set (name, ns.attr,
 * tuple targets, block set), macro, call, filter, with, generation, break, continue, raw (lexer).
 *
 * Node layouts: N_ATTR a.name; N_INDEX a[b]; N_SLICE a, b, c (start, stop, step; NULL absent);
 * N_CALL a(kids: args, N_KWARG for name=value); N_FILTER name(a | kids); N_TEST name(a, kids), op
 * negated; N_BIN/N_CMP a op b (N_CMP chains: kids operands, kids2 N_LIT ops); N_COND a if b else c;
 * N_IF a: cond, kids: body, kids2: else (an elif is an N_IF inside else); N_FOR a: target
 * (N_NAME or N_TUPLE), b: iterable, c: filter, kids/kids2 body/else; N_SET a: target, b: value;
 * N_SETBLOCK a: target, kids body, kids2 filters; N_MACRO name, kids params (N_NAME), kids2 defaults
 * (NULL entries for none), c: body (N_BODY); N_CALLBLOCK a: the call, kids2 params, c body;
 * N_FILTERBLOCK kids2 filters (N_FILTER with a NULL), c body; N_WITH kids N_SET list, c body.
 * Nesting is bounded (256), so a hostile template cannot overflow the stack. Not here: meaning.
 */
#include "template/tpl_internal.h"

#include <stdio.h>

typedef struct {
    tpl_arena *a;
    jmp_buf *jb;
    const tpl_tok *t;
    size_t n, i;
    int depth;
    int has_generation;
} parser;

enum { MAX_DEPTH = 256 };

static const tpl_tok *peek(parser *p) { return &p->t[p->i]; }
static const tpl_tok *next(parser *p) { const tpl_tok *t = &p->t[p->i]; if (t->kind != T_EOF) p->i++; return t; }

static const char *tok_desc(const tpl_tok *t, char *buf, size_t cap) {
    switch (t->kind) {
    case T_EOF: return "end of template";
    case T_TEXT: return "template text";
    case T_BLOCK_BEGIN: return "'{%'";
    case T_VAR_BEGIN: return "'{{'";
    case T_STRING: return "a string";
    case T_INT: case T_FLOAT: return "a number";
    default: snprintf(buf, cap, "'%.*s'", (int)(t->n > 40 ? 40 : t->n), t->p); return buf;
    }
}

_Noreturn static void expected(parser *p, const char *what) {
    char buf[64];
    const tpl_tok *t = peek(p);
    tpl_fail(p->jb, t->line, t->col, "expected %s, got %s", what, tok_desc(t, buf, sizeof buf));
}

static int is_op(const tpl_tok *t, const char *op) { return t->kind == T_OP && t->n == strlen(op) && !memcmp(t->p, op, t->n); }
static int is_name(const tpl_tok *t, const char *nm) { return t->kind == T_NAME && t->n == strlen(nm) && !memcmp(t->p, nm, t->n); }
static int skip_op(parser *p, const char *op) { if (is_op(peek(p), op)) { p->i++; return 1; } return 0; }
static int skip_name(parser *p, const char *nm) { if (is_name(peek(p), nm)) { p->i++; return 1; } return 0; }
static void want_op(parser *p, const char *op) {
    char what[16];
    snprintf(what, sizeof what, "'%s'", op);
    if (!skip_op(p, op)) expected(p, what);
}

static tpl_node *node(parser *p, int kind, const tpl_tok *at) {
    tpl_node *n = tpl_alloc(p->a, sizeof *n);
    n->kind = (uint8_t)kind;
    n->line = at->line;
    n->col = at->col;
    return n;
}

typedef struct { tpl_node **v; size_t n, cap; } nodes;
static void push(parser *p, nodes *l, tpl_node *x) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 4;
        tpl_node **nv = tpl_alloc(p->a, cap * sizeof *nv);
        if (l->n) memcpy(nv, l->v, l->n * sizeof *nv);
        l->v = nv;
        l->cap = cap;
    }
    l->v[l->n++] = x;
}

static const char *name_of(parser *p, const tpl_tok *t) { return tpl_strdup(p->a, t->p, t->n); }

static void enter(parser *p) {
    if (++p->depth > MAX_DEPTH) tpl_fail(p->jb, peek(p)->line, peek(p)->col, "nested deeper than %d levels (limit)", MAX_DEPTH);
}

/* ===== expressions ===== */
static tpl_node *parse_expr(parser *p);
static tpl_node *parse_or(parser *p);
static tpl_node *parse_unary(parser *p, int with_filter);

static void parse_args(parser *p, nodes *args) { // after '('
    while (!skip_op(p, ")")) {
        if (args->n) want_op(p, ",");
        if (skip_op(p, ")")) break;
        const tpl_tok *t = peek(p);
        if (t->kind == T_NAME && is_op(&p->t[p->i + 1], "=")) {
            tpl_node *kw = node(p, N_KWARG, t);
            kw->name = name_of(p, t);
            p->i += 2;
            kw->a = parse_expr(p);
            push(p, args, kw);
        } else push(p, args, parse_expr(p));
    }
}

static tpl_node *parse_list_like(parser *p, const tpl_tok *at, int kind, const char *close) {
    tpl_node *n = node(p, kind, at);
    nodes items = {0}, vals = {0};
    while (!skip_op(p, close)) {
        if (items.n) { want_op(p, ","); if (skip_op(p, close)) break; }
        push(p, &items, parse_expr(p));
        if (kind == N_DICT) { want_op(p, ":"); push(p, &vals, parse_expr(p)); }
    }
    n->kids = items.v; n->n = items.n;
    n->kids2 = vals.v; n->n2 = vals.n;
    return n;
}

static tpl_node *parse_primary(parser *p) {
    const tpl_tok *t = next(p);
    tpl_node *n;
    switch (t->kind) {
    case T_NAME:
        n = node(p, N_LIT, t);
        if (is_name(t, "true") || is_name(t, "True")) n->lit = tv_bool(1);
        else if (is_name(t, "false") || is_name(t, "False")) n->lit = tv_bool(0);
        else if (is_name(t, "none") || is_name(t, "None")) n->lit = tv_none();
        else { n->kind = N_NAME; n->name = name_of(p, t); }
        return n;
    case T_STRING: {
        n = node(p, N_LIT, t);
        size_t len = t->n, k = p->i;
        while (p->t[k].kind == T_STRING) len += p->t[k++].n;
        if (k == p->i) { n->lit = tv_str(t->p, t->n); return n; }
        char *s = tpl_alloc(p->a, len + 1), *o = s; // adjacent literals concatenate
        memcpy(o, t->p, t->n); o += t->n;
        while (peek(p)->kind == T_STRING) { const tpl_tok *u = next(p); memcpy(o, u->p, u->n); o += u->n; }
        n->lit = tv_str(s, len);
        return n;
    }
    case T_INT: n = node(p, N_LIT, t); n->lit = tv_int(t->i); return n;
    case T_FLOAT: n = node(p, N_LIT, t); n->lit = tv_float(t->f); return n;
    default: break;
    }
    if (is_op(t, "(")) {
        if (skip_op(p, ")")) { n = node(p, N_TUPLE, t); return n; }
        tpl_node *first = parse_expr(p);
        if (skip_op(p, ")")) return first;
        nodes items = {0};
        push(p, &items, first);
        while (skip_op(p, ",")) {
            if (is_op(peek(p), ")")) break;
            push(p, &items, parse_expr(p));
        }
        want_op(p, ")");
        n = node(p, N_TUPLE, t);
        n->kids = items.v; n->n = items.n;
        return n;
    }
    if (is_op(t, "[")) return parse_list_like(p, t, N_LIST, "]");
    if (is_op(t, "{")) return parse_list_like(p, t, N_DICT, "}");
    p->i--;
    expected(p, "an expression");
}

static tpl_node *parse_subscript(parser *p, tpl_node *obj, const tpl_tok *at) { // after '['
    tpl_node *parts[3] = {0};
    int k = 0, is_slice = 0;
    for (;;) {
        if (!is_op(peek(p), ":") && !is_op(peek(p), "]")) parts[k] = parse_expr(p);
        if (skip_op(p, ":")) { is_slice = 1; if (++k > 2) expected(p, "']'"); continue; }
        break;
    }
    if (!is_slice && !parts[0]) parts[0] = node(p, N_TUPLE, at); // x[]: Jinja2 indexes by the empty tuple
    want_op(p, "]");
    tpl_node *n = node(p, is_slice ? N_SLICE : N_INDEX, at);
    n->a = obj;
    n->b = parts[0];
    if (is_slice) { n->b = parts[0]; n->c = parts[1]; n->kids = tpl_alloc(p->a, sizeof *n->kids); n->kids[0] = parts[2]; n->n = 1; }
    return n;
}

static tpl_node *parse_postfix(parser *p, tpl_node *n) {
    for (;;) {
        const tpl_tok *t = peek(p);
        if (is_op(t, ".")) {
            p->i++;
            const tpl_tok *nm = next(p);
            tpl_node *x;
            if (nm->kind == T_NAME) { x = node(p, N_ATTR, t); x->name = name_of(p, nm); }
            else if (nm->kind == T_INT) { x = node(p, N_INDEX, t); x->b = node(p, N_LIT, nm); x->b->lit = tv_int(nm->i); }
            else { p->i--; expected(p, "an attribute name"); }
            x->a = n;
            n = x;
        } else if (is_op(t, "[")) {
            p->i++;
            n = parse_subscript(p, n, t);
        } else if (is_op(t, "(")) {
            p->i++;
            tpl_node *call = node(p, N_CALL, t);
            nodes args = {0};
            parse_args(p, &args);
            call->a = n;
            call->kids = args.v; call->n = args.n;
            n = call;
        } else return n;
    }
}

static tpl_node *parse_filter(parser *p, tpl_node *input) { // after '|'
    const tpl_tok *t = peek(p);
    if (t->kind != T_NAME) expected(p, "a filter name");
    p->i++;
    size_t len = t->n;
    char *nm = tpl_alloc(p->a, 128);
    memcpy(nm, t->p, len < 100 ? len : 100);
    while (is_op(peek(p), ".") && p->t[p->i + 1].kind == T_NAME) { // dotted filter names
        const tpl_tok *u = &p->t[p->i + 1];
        if (len + 1 + u->n < 127) { nm[len++] = '.'; memcpy(nm + len, u->p, u->n); len += u->n; }
        p->i += 2;
    }
    tpl_node *f = node(p, N_FILTER, t);
    f->name = nm;
    f->a = input;
    if (skip_op(p, "(")) {
        nodes args = {0};
        parse_args(p, &args);
        f->kids = args.v; f->n = args.n;
    }
    return f;
}

static int starts_test_arg(const tpl_tok *t) {
    if (t->kind == T_STRING || t->kind == T_INT || t->kind == T_FLOAT) return 1;
    if (t->kind == T_NAME)
        return !is_name(t, "else") && !is_name(t, "or") && !is_name(t, "and") && !is_name(t, "if") &&
               !is_name(t, "is") && !is_name(t, "in") && !is_name(t, "not");
    return is_op(t, "[") || is_op(t, "{");
}

static tpl_node *parse_test(parser *p, tpl_node *input) { // after 'is'
    const tpl_tok *at = peek(p);
    int neg = skip_name(p, "not");
    const tpl_tok *t = peek(p);
    if (t->kind != T_NAME) expected(p, "a test name");
    p->i++;
    tpl_node *n = node(p, N_TEST, at);
    n->name = name_of(p, t);
    n->op = neg;
    n->a = input;
    nodes args = {0};
    if (skip_op(p, "(")) parse_args(p, &args);
    else if (starts_test_arg(peek(p))) push(p, &args, parse_postfix(p, parse_primary(p)));
    n->kids = args.v; n->n = args.n;
    return n;
}

static tpl_node *parse_filter_expr(parser *p, tpl_node *n) {
    for (;;) {
        if (skip_op(p, "|")) n = parse_filter(p, n);
        else if (skip_name(p, "is")) n = parse_test(p, n);
        else if (is_op(peek(p), "(")) n = parse_postfix(p, n);
        else return n;
    }
}

static tpl_node *parse_unary(parser *p, int with_filter) {
    const tpl_tok *t = peek(p);
    tpl_node *n;
    enter(p);
    if (skip_op(p, "-")) { n = node(p, N_NEG, t); n->a = parse_unary(p, 0); }
    else if (skip_op(p, "+")) { n = node(p, N_POS, t); n->a = parse_unary(p, 0); }
    else n = parse_primary(p);
    n = parse_postfix(p, n);
    if (with_filter) n = parse_filter_expr(p, n);
    p->depth--;
    return n;
}

static tpl_node *binary(parser *p, const tpl_tok *at, int kind, int op, tpl_node *a, tpl_node *b) {
    tpl_node *n = node(p, kind, at);
    n->op = op;
    n->a = a;
    n->b = b;
    return n;
}

static tpl_node *parse_pow(parser *p) {
    tpl_node *n = parse_unary(p, 1);
    while (is_op(peek(p), "**")) { const tpl_tok *t = next(p); n = binary(p, t, N_BIN, OP_POW, n, parse_unary(p, 1)); }
    return n;
}

static tpl_node *parse_math2(parser *p) {
    tpl_node *n = parse_pow(p);
    for (;;) {
        const tpl_tok *t = peek(p);
        int op = is_op(t, "*") ? OP_MUL : is_op(t, "/") ? OP_DIV : is_op(t, "//") ? OP_FLOORDIV : is_op(t, "%") ? OP_MOD : 0;
        if (!op) return n;
        p->i++;
        n = binary(p, t, N_BIN, op, n, parse_pow(p));
    }
}

static tpl_node *parse_concat(parser *p) {
    tpl_node *n = parse_math2(p);
    while (is_op(peek(p), "~")) { const tpl_tok *t = next(p); n = binary(p, t, N_CONCAT, 0, n, parse_math2(p)); }
    return n;
}

static tpl_node *parse_math1(parser *p) {
    tpl_node *n = parse_concat(p);
    for (;;) {
        const tpl_tok *t = peek(p);
        int op = is_op(t, "+") ? OP_ADD : is_op(t, "-") ? OP_SUB : 0;
        if (!op) return n;
        p->i++;
        n = binary(p, t, N_BIN, op, n, parse_concat(p));
    }
}

static int compare_op(parser *p) {
    const tpl_tok *t = peek(p);
    static const struct { const char *s; int op; } ops[] = {{"==", OP_EQ}, {"!=", OP_NE}, {"<", OP_LT}, {"<=", OP_LE},
                                                             {">", OP_GT}, {">=", OP_GE}};
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
        if (is_op(t, ops[i].s)) { p->i++; return ops[i].op; }
    if (is_name(t, "in")) { p->i++; return OP_IN; }
    if (is_name(t, "not") && is_name(&p->t[p->i + 1], "in")) { p->i += 2; return OP_NOTIN; }
    return 0;
}

static tpl_node *parse_compare(parser *p) {
    const tpl_tok *at = peek(p);
    tpl_node *first = parse_math1(p);
    int op = compare_op(p);
    if (!op) return first;
    nodes operands = {0}, ops = {0};
    push(p, &operands, first);
    do {
        tpl_node *o = node(p, N_LIT, at);
        o->lit = tv_int(op);
        push(p, &ops, o);
        push(p, &operands, parse_math1(p));
    } while ((op = compare_op(p)));
    tpl_node *n = node(p, N_CMP, at);
    n->kids = operands.v; n->n = operands.n;
    n->kids2 = ops.v; n->n2 = ops.n;
    return n;
}

static tpl_node *parse_not(parser *p) {
    const tpl_tok *t = peek(p);
    if (skip_name(p, "not")) {
        enter(p);
        tpl_node *n = node(p, N_NOT, t);
        n->a = parse_not(p);
        p->depth--;
        return n;
    }
    return parse_compare(p);
}

static tpl_node *parse_and(parser *p) {
    tpl_node *n = parse_not(p);
    while (is_name(peek(p), "and")) { const tpl_tok *t = next(p); n = binary(p, t, N_AND, 0, n, parse_not(p)); }
    return n;
}

static tpl_node *parse_or(parser *p) {
    tpl_node *n = parse_and(p);
    while (is_name(peek(p), "or")) { const tpl_tok *t = next(p); n = binary(p, t, N_OR, 0, n, parse_and(p)); }
    return n;
}

static tpl_node *parse_expr(parser *p) {
    enter(p);
    tpl_node *n = parse_or(p);
    while (is_name(peek(p), "if")) {
        const tpl_tok *t = next(p);
        tpl_node *c = node(p, N_COND, t);
        c->b = parse_or(p);
        c->a = n;
        if (skip_name(p, "else")) c->c = parse_expr(p);
        n = c;
    }
    p->depth--;
    return n;
}

/* A bare tuple (for targets, set targets, `for x in a, b`): expr (',' expr)*. */
static tpl_node *parse_tuple(parser *p, int targets) {
    const tpl_tok *at = peek(p);
    tpl_node *first = targets ? parse_primary(p) : parse_expr(p);
    if (targets && first->kind == N_NAME && is_op(peek(p), ".")) first = parse_postfix(p, first);
    if (!is_op(peek(p), ",")) return first;
    nodes items = {0};
    push(p, &items, first);
    while (skip_op(p, ",")) {
        if (is_op(peek(p), "=") || is_name(peek(p), "in") || peek(p)->kind == T_BLOCK_END) break;
        push(p, &items, targets ? parse_primary(p) : parse_expr(p));
    }
    tpl_node *n = node(p, N_TUPLE, at);
    n->kids = items.v; n->n = items.n;
    return n;
}

/* ===== statements ===== */
static tpl_node *parse_body(parser *p, const char *const *ends, const tpl_tok **end_at);

static void want_block_end(parser *p) {
    if (peek(p)->kind != T_BLOCK_END) expected(p, "'%}'");
    p->i++;
}

static void set_body(tpl_node *n, tpl_node *body, int second) {
    if (second) { n->kids2 = body->kids; n->n2 = body->n; }
    else { n->kids = body->kids; n->n = body->n; }
}

static int end_is(const tpl_tok *t, const char *nm) { return t && is_name(t, nm); }

static tpl_node *parse_if(parser *p, const tpl_tok *at) {
    static const char *const ends[] = {"elif", "else", "endif", NULL};
    tpl_node *n = node(p, N_IF, at);
    n->a = parse_expr(p);
    want_block_end(p);
    const tpl_tok *end;
    set_body(n, parse_body(p, ends, &end), 0);
    if (end_is(end, "elif")) {
        tpl_node *elif = parse_if(p, end);
        n->kids2 = tpl_alloc(p->a, sizeof *n->kids2);
        n->kids2[0] = elif;
        n->n2 = 1;
        return n; // the nested if consumed the endif
    }
    if (end_is(end, "else")) {
        static const char *const endif[] = {"endif", NULL};
        want_block_end(p);
        set_body(n, parse_body(p, endif, &end), 1);
    }
    want_block_end(p);
    return n;
}

static tpl_node *parse_for(parser *p, const tpl_tok *at) {
    static const char *const ends[] = {"else", "endfor", NULL}, *const endfor[] = {"endfor", NULL};
    tpl_node *n = node(p, N_FOR, at);
    n->a = parse_tuple(p, 1);
    if (!skip_name(p, "in")) expected(p, "'in'");
    const tpl_tok *it = peek(p);
    tpl_node *first = parse_or(p);
    if (is_op(peek(p), ",")) { // for x in a, b
        nodes items = {0};
        push(p, &items, first);
        while (skip_op(p, ",")) push(p, &items, parse_or(p));
        first = node(p, N_TUPLE, it);
        first->kids = items.v; first->n = items.n;
    }
    n->b = first;
    if (skip_name(p, "if")) n->c = parse_expr(p);
    if (skip_name(p, "recursive")) n->op = 1;
    want_block_end(p);
    const tpl_tok *end;
    set_body(n, parse_body(p, ends, &end), 0);
    if (end_is(end, "else")) {
        want_block_end(p);
        set_body(n, parse_body(p, endfor, &end), 1);
    }
    want_block_end(p);
    return n;
}

static tpl_node *parse_filter_chain(parser *p, tpl_node *n) { // for {% filter %} and block set
    nodes fs = {0};
    do push(p, &fs, parse_filter(p, NULL));
    while (skip_op(p, "|"));
    n->kids2 = fs.v;
    n->n2 = fs.n;
    return n;
}

static tpl_node *parse_set(parser *p, const tpl_tok *at) {
    tpl_node *target = parse_tuple(p, 1);
    if (skip_op(p, "=")) {
        tpl_node *n = node(p, N_SET, at);
        n->a = target;
        n->b = parse_tuple(p, 0);
        want_block_end(p);
        return n;
    }
    static const char *const ends[] = {"endset", NULL};
    tpl_node *n = node(p, N_SETBLOCK, at);
    n->a = target;
    if (skip_op(p, "|")) parse_filter_chain(p, n);
    want_block_end(p);
    const tpl_tok *end;
    n->c = parse_body(p, ends, &end);
    want_block_end(p);
    return n;
}

static void parse_params(parser *p, tpl_node *n) { // (a, b=default, ...) into kids / kids2
    nodes names = {0}, dflts = {0};
    want_op(p, "(");
    while (!skip_op(p, ")")) {
        if (names.n) want_op(p, ",");
        const tpl_tok *t = peek(p);
        if (t->kind != T_NAME) expected(p, "a parameter name");
        p->i++;
        tpl_node *nm = node(p, N_NAME, t);
        nm->name = name_of(p, t);
        push(p, &names, nm);
        push(p, &dflts, skip_op(p, "=") ? parse_expr(p) : NULL);
    }
    n->kids = names.v; n->n = names.n;
    n->kids2 = dflts.v; n->n2 = dflts.n;
}

static tpl_node *parse_macro(parser *p, const tpl_tok *at) {
    static const char *const ends[] = {"endmacro", NULL};
    const tpl_tok *t = peek(p);
    if (t->kind != T_NAME) expected(p, "a macro name");
    p->i++;
    tpl_node *n = node(p, N_MACRO, at);
    n->name = name_of(p, t);
    parse_params(p, n);
    want_block_end(p);
    const tpl_tok *end;
    n->c = parse_body(p, ends, &end);
    want_block_end(p);
    return n;
}

static tpl_node *parse_callblock(parser *p, const tpl_tok *at) {
    static const char *const ends[] = {"endcall", NULL};
    tpl_node *n = node(p, N_CALLBLOCK, at);
    tpl_node params = {0};
    if (is_op(peek(p), "(")) parse_params(p, &params);
    n->b = tpl_alloc(p->a, sizeof *n->b); // the caller's signature
    *n->b = params;
    n->a = parse_expr(p);
    if (n->a->kind != N_CALL) tpl_fail(p->jb, at->line, at->col, "expected a call after 'call'");
    want_block_end(p);
    const tpl_tok *end;
    n->c = parse_body(p, ends, &end);
    n->b->c = n->c; // caller() renders the body with the call block's parameters
    want_block_end(p);
    return n;
}

static tpl_node *parse_simple_block(parser *p, const tpl_tok *at, int kind, const char *endname) {
    const char *ends[] = {endname, NULL};
    tpl_node *n = node(p, kind, at);
    if (kind == N_FILTERBLOCK) parse_filter_chain(p, n);
    if (kind == N_WITH) {
        nodes sets = {0};
        while (peek(p)->kind != T_BLOCK_END) {
            if (sets.n) want_op(p, ",");
            const tpl_tok *t = peek(p);
            tpl_node *s = node(p, N_SET, t);
            s->a = parse_primary(p);
            if (s->a->kind != N_NAME) tpl_fail(p->jb, t->line, t->col, "expected a name in 'with'");
            want_op(p, "=");
            s->b = parse_expr(p);
            push(p, &sets, s);
        }
        n->kids = sets.v; n->n = sets.n;
    }
    want_block_end(p);
    const tpl_tok *end;
    n->c = parse_body(p, ends, &end);
    want_block_end(p);
    return n;
}

static tpl_node *parse_statement(parser *p) {
    const tpl_tok *t = peek(p);
    if (t->kind != T_NAME) expected(p, "a tag name");
    p->i++;
    if (is_name(t, "if")) return parse_if(p, t);
    if (is_name(t, "for")) return parse_for(p, t);
    if (is_name(t, "set")) return parse_set(p, t);
    if (is_name(t, "macro")) return parse_macro(p, t);
    if (is_name(t, "call")) return parse_callblock(p, t);
    if (is_name(t, "filter")) return parse_simple_block(p, t, N_FILTERBLOCK, "endfilter");
    if (is_name(t, "with")) return parse_simple_block(p, t, N_WITH, "endwith");
    if (is_name(t, "generation")) { p->has_generation = 1; return parse_simple_block(p, t, N_GENERATION, "endgeneration"); }
    if (is_name(t, "break") || is_name(t, "continue")) {
        tpl_node *n = node(p, is_name(t, "break") ? N_BREAK : N_CONTINUE, t);
        want_block_end(p);
        return n;
    }
    char buf[64];
    tpl_fail(p->jb, t->line, t->col, "unknown tag %s", tok_desc(t, buf, sizeof buf));
}

/* Statements up to one of the `ends` tags (whose name is consumed, *end_at set to it) or the end
 * of the template (ends NULL). */
/* "'a', 'b' or 'c'" for the end tags a body may stop at. */
static const char *expected_ends(const char *const *ends, char *buf, size_t cap) {
    size_t n = 0, k = 0;
    while (ends[n]) n++;
    buf[0] = 0;
    for (size_t i = 0; i < n; i++)
        k += (size_t)snprintf(buf + k, k < cap ? cap - k : 0, "%s'%s'", i == 0 ? "" : i + 1 == n ? " or " : ", ", ends[i]);
    return buf;
}

static tpl_node *parse_body(parser *p, const char *const *ends, const tpl_tok **end_at) {
    char what[128];
    enter(p);
    tpl_node *body = node(p, N_BODY, peek(p));
    nodes items = {0};
    *end_at = NULL;
    for (;;) {
        const tpl_tok *t = next(p);
        if (t->kind == T_EOF) {
            if (!ends) break;
            p->i = p->n - 1;
            expected(p, expected_ends(ends, what, sizeof what));
        }
        if (t->kind == T_TEXT) {
            tpl_node *x = node(p, N_TEXT, t);
            x->lit = tv_str(t->p, t->n);
            push(p, &items, x);
        } else if (t->kind == T_VAR_BEGIN) {
            tpl_node *x = node(p, N_OUT, t);
            x->a = parse_expr(p);
            if (peek(p)->kind != T_VAR_END) expected(p, "'}}'");
            p->i++;
            push(p, &items, x);
        } else if (t->kind == T_BLOCK_BEGIN) {
            const tpl_tok *nm = peek(p);
            int found = 0;
            for (const char *const *e = ends; e && *e && !found; e++) found = is_name(nm, *e);
            if (found) { p->i++; *end_at = nm; break; }
            if (nm->kind == T_NAME && (!strncmp(nm->p, "end", 3) || is_name(nm, "elif") || is_name(nm, "else")))
                expected(p, ends ? expected_ends(ends, what, sizeof what) : "a tag that opens a block");
            push(p, &items, parse_statement(p));
        } else {
            p->i--;
            expected(p, "template text or a tag");
        }
    }
    body->kids = items.v;
    body->n = items.n;
    p->depth--;
    return body;
}

tpl_node *tpl_parse_tokens(tpl_arena *a, jmp_buf *jb, const tpl_toks *toks, int *has_generation) {
    parser p = {.a = a, .jb = jb, .t = toks->t, .n = toks->n};
    const tpl_tok *end;
    tpl_node *root = parse_body(&p, NULL, &end);
    *has_generation = p.has_generation;
    return root;
}
