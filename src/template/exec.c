/* exec.c — statements and the render entry points: output, if, for (jinja2's loop object, the
 * `if` filter, else, break/continue, a new scope per iteration as jinja2 has), set (names,
 * namespace attributes, tuple unpacking, block set with filters), macros and call blocks, filter
 * blocks, with, and transformers' {% generation %} (its span as transformers' AssistantTracker
 * records it: template.h). Every statement, iteration and call counts one
 * step against the render's limit, and calls nest at most MAX_CALL_DEPTH deep.
 * Not here: expressions (eval.c), the parser.
 */
#include "template/tpl_internal.h"

#include "common/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { MAX_CALL_DEPTH = 200 };

_Noreturn void tpl_fail(jmp_buf *jb, int line, int col, const char *fmt, ...) {
    char msg[640];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (line > 0) fl_input_error("chat template: line %d column %d: %s", line, col, msg);
    else fl_input_error("chat template: %s", msg);
    longjmp(*jb, FL_ERR_INPUT);
}

_Noreturn void tpl_error(tpl_ctx *c, const tpl_node *n, const char *fmt, ...) {
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    tpl_fail(&c->jb, n ? n->line : 0, n ? n->col : 0, "%s", msg);
}

_Noreturn void fl_tpl_raise(tpl_ctx *c, const tpl_node *n, const char *msg, size_t len) {
    fl_input_error("chat template raised: %.*s (template line %d column %d)", (int)(len > 400 ? 400 : len), msg, n->line, n->col);
    longjmp(c->jb, FL_ERR_INPUT);
}

void tpl_step(tpl_ctx *c, const tpl_node *n) {
    if (++c->steps > c->max_steps) tpl_error(c, n, "more than %llu steps (limit: a loop that does not end?)", (unsigned long long)c->max_steps);
}

/* ===== scopes ===== */
tpl_frame *tpl_frame_new(tpl_ctx *c, tpl_frame *parent) {
    tpl_frame *f = tpl_alloc(&c->arena, sizeof *f);
    f->parent = parent;
    f->vars = tpl_dict_new(&c->arena, 4);
    return f;
}

void tpl_frame_set(tpl_ctx *c, tpl_frame *f, const char *name, tv v) {
    tpl_dict_set(&c->arena, f->vars, tv_str(name, strlen(name)), v);
}

tv tpl_lookup(tpl_ctx *c, tpl_frame *f, const char *name) {
    size_t n = strlen(name);
    for (; f; f = f->parent) {
        tv *v = tpl_dict_find_str(f->vars, name, n);
        if (v) return *v;
    }
    tv *g = tpl_dict_find_str(c->globals, name, n);
    if (g) return *g;
    int id = tpl_builtin_id(name);
    if (id) return (tv){.kind = V_FUNC, .i = id};
    return tv_undef(name);
}

/* ===== output capture ===== */
static tv capture(tpl_ctx *c, tpl_frame *f, const tpl_node *body) {
    tpl_buf b, *saved = c->cur;
    tpl_buf_init(&b, &c->arena, c->max_output, &c->jb);
    c->cur = &b;
    tpl_exec_body(c, f, body);
    c->cur = saved;
    return tpl_buf_value(&b);
}

static tv apply_filters(tpl_ctx *c, tpl_frame *f, tpl_node **filters, size_t n, tv v) {
    for (size_t i = 0; i < n; i++) {
        tpl_args args = {0};
        tv *pos = tpl_alloc(&c->arena, (filters[i]->n + 1) * sizeof *pos);
        const char **kwn = tpl_alloc(&c->arena, (filters[i]->n + 1) * sizeof *kwn);
        tv *kwv = tpl_alloc(&c->arena, (filters[i]->n + 1) * sizeof *kwv);
        args.pos = pos; args.kwn = kwn; args.kwv = kwv;
        for (size_t k = 0; k < filters[i]->n; k++) {
            const tpl_node *a = filters[i]->kids[k];
            if (a->kind == N_KWARG) { kwn[args.nkw] = a->name; kwv[args.nkw++] = tpl_eval(c, f, a->a); }
            else pos[args.npos++] = tpl_eval(c, f, a);
        }
        v = tpl_filter(c, f, filters[i], filters[i]->name, v, &args);
    }
    return v;
}

/* ===== assignment ===== */
static void assign(tpl_ctx *c, tpl_frame *f, const tpl_node *target, tv v) {
    if (target->kind == N_NAME) { tpl_frame_set(c, f, target->name, v); return; }
    if (target->kind == N_ATTR) {
        tv ns = tpl_eval(c, f, target->a);
        if (ns.kind != V_NS) tpl_error(c, target, "cannot assign attribute on non-namespace object");
        if (target->name[0] == '_') tpl_error(c, target, "chat templates cannot store underscore-prefixed attributes on a namespace");
        tpl_dict_set(&c->arena, ns.d, tv_str(target->name, strlen(target->name)), v);
        return;
    }
    if (target->kind == N_TUPLE) {
        tpl_list *items = tpl_iterate(c, target, v);
        if (items->n != target->n)
            tpl_error(c, target, "%s values to unpack (expected %zu, got %zu)", items->n > target->n ? "too many" : "not enough",
                      target->n, items->n);
        for (size_t i = 0; i < target->n; i++) assign(c, f, target->kids[i], items->v[i]);
        return;
    }
    tpl_error(c, target, "cannot assign to this expression");
}

/* ===== for ===== */
static void exec_for(tpl_ctx *c, tpl_frame *f, const tpl_node *n) {
    tpl_list *all = tpl_iterate(c, n->b, tpl_eval(c, f, n->b)), *items = all;
    if (n->c) { // the loop filter sees the target bound
        items = tpl_list_new(&c->arena, all->n);
        for (size_t i = 0; i < all->n; i++) {
            tpl_step(c, n);
            tpl_frame *g = tpl_frame_new(c, f);
            assign(c, g, n->a, all->v[i]);
            if (tv_truthy(tpl_eval(c, g, n->c))) tpl_list_push(&c->arena, items, all->v[i]);
        }
    }
    tpl_loop *loop = tpl_alloc(&c->arena, sizeof *loop);
    loop->items = items;
    tv lv = {.kind = V_LOOP};
    lv.loop = loop;
    for (size_t i = 0; i < items->n; i++) {
        tpl_step(c, n);
        loop->index = i;
        tpl_frame *g = tpl_frame_new(c, f);
        tpl_frame_set(c, g, "loop", lv);
        assign(c, g, n->a, items->v[i]);
        tpl_node body = {.kind = N_BODY, .kids = n->kids, .n = n->n};
        tpl_exec_body(c, g, &body);
        if (c->brk == 1) { c->brk = 0; break; }
        c->brk = 0;
    }
    if (!items->n && n->n2) {
        tpl_node body = {.kind = N_BODY, .kids = n->kids2, .n = n->n2};
        tpl_exec_body(c, f, &body);
    }
}

/* ===== macros ===== */
static tv define_macro(tpl_ctx *c, tpl_frame *f, const tpl_node *def) {
    tpl_macro *m = tpl_alloc(&c->arena, sizeof *m);
    m->def = def;
    m->closure = f;
    tv v = {.kind = V_MACRO};
    v.m = m;
    return v;
}

tv tpl_call_macro(tpl_ctx *c, const tpl_node *n, tpl_macro *m, tv *args, size_t nargs, const char **kwn, tv *kwv, size_t nkw) {
    const tpl_node *def = m->def;
    if (++c->depth > MAX_CALL_DEPTH) tpl_error(c, n, "macro calls nested deeper than %d (limit)", MAX_CALL_DEPTH);
    tpl_frame *g = tpl_frame_new(c, m->closure);
    tpl_dict *kwargs = tpl_dict_new(&c->arena, 4);
    char *used = tpl_alloc(&c->arena, nkw + 1);
    for (size_t i = 0; i < def->n; i++) {
        const char *pname = def->kids[i]->name;
        tv v = tv_undef(pname);
        int have = 0;
        if (i < nargs) { v = args[i]; have = 1; }
        for (size_t k = 0; k < nkw; k++)
            if (!strcmp(kwn[k], pname)) { v = kwv[k]; have = 1; used[k] = 1; }
        if (!have && def->kids2[i]) v = tpl_eval(c, g, def->kids2[i]);
        tpl_frame_set(c, g, pname, v);
    }
    tpl_list *varargs = tpl_list_new(&c->arena, 4);
    for (size_t i = def->n; i < nargs; i++) tpl_list_push(&c->arena, varargs, args[i]);
    for (size_t k = 0; k < nkw; k++) {
        if (used[k]) continue;
        if (!strcmp(kwn[k], "caller")) tpl_frame_set(c, g, "caller", kwv[k]);
        else tpl_dict_set(&c->arena, kwargs, tv_str(kwn[k], strlen(kwn[k])), kwv[k]);
    }
    tv va = tv_list(varargs);
    va.tuple = 1; // a tuple in jinja2
    tpl_frame_set(c, g, "varargs", va);
    tpl_frame_set(c, g, "kwargs", tv_dict(kwargs));
    int saved_brk = c->brk;
    tv out = capture(c, g, def->c);
    c->brk = saved_brk;
    c->depth--;
    return out;
}

/* ===== statements ===== */
static void exec_generation(tpl_ctx *c, tpl_frame *f, const tpl_node *n) {
    tv text = capture(c, f, n->c);
    if (c->n_gen == c->cap_gen) {
        size_t cap = c->cap_gen ? 2 * c->cap_gen : 8;
        fl_tpl_span *g = tpl_alloc(&c->arena, cap * sizeof *g);
        if (c->n_gen) memcpy(g, c->gen, c->n_gen * sizeof *g);
        c->gen = g;
        c->cap_gen = cap;
    }
    size_t chars = 0; // Python's len(): code points (bytes that do not continue a UTF-8 sequence)
    for (size_t i = 0; i < text.s.n; i++) chars += ((unsigned char)text.s.p[i] & 0xC0) != 0x80;
    c->gen[c->n_gen++] = (fl_tpl_span){c->out.n, chars}; // end: a count of characters until the render ends
    tpl_buf_put(c->cur, text.s.p, text.s.n);
}

/* The characters counted in each span's end to a byte offset of the final text (template.h). */
static void resolve_generation_ends(tpl_ctx *c) {
    const unsigned char *s = (const unsigned char *)c->out.p;
    for (size_t g = 0; g < c->n_gen; g++) {
        size_t at = c->gen[g].start, chars = c->gen[g].end;
        while (chars && at < c->out.n) {
            at++;
            while (at < c->out.n && (s[at] & 0xC0) == 0x80) at++;
            chars--;
        }
        c->gen[g].end = at;
    }
}

static void exec_stmt(tpl_ctx *c, tpl_frame *f, const tpl_node *n) {
    tpl_step(c, n);
    switch (n->kind) {
    case N_TEXT: tpl_buf_put(c->cur, n->lit.s.p, n->lit.s.n); return;
    case N_OUT: tv_write_str(c->cur, tpl_eval(c, f, n->a)); return;
    case N_IF: {
        int yes = tv_truthy(tpl_eval(c, f, n->a));
        tpl_node body = {.kind = N_BODY, .kids = yes ? n->kids : n->kids2, .n = yes ? n->n : n->n2};
        tpl_exec_body(c, f, &body);
        return;
    }
    case N_FOR: exec_for(c, f, n); return;
    case N_SET: assign(c, f, n->a, tpl_eval(c, f, n->b)); return;
    case N_SETBLOCK: assign(c, f, n->a, apply_filters(c, f, n->kids2, n->n2, capture(c, f, n->c))); return;
    case N_MACRO: tpl_frame_set(c, f, n->name, define_macro(c, f, n)); return;
    case N_CALLBLOCK: {
        tv caller = define_macro(c, f, n->b);
        tv_write_str(c->cur, tpl_eval_call(c, f, n->a, "caller", caller));
        return;
    }
    case N_FILTERBLOCK: {
        tv v = apply_filters(c, f, n->kids2, n->n2, capture(c, f, n->c));
        tv_write_str(c->cur, v);
        return;
    }
    case N_WITH: {
        tpl_frame *g = tpl_frame_new(c, f);
        for (size_t i = 0; i < n->n; i++) assign(c, g, n->kids[i]->a, tpl_eval(c, f, n->kids[i]->b));
        tpl_exec_body(c, g, n->c);
        return;
    }
    case N_GENERATION: exec_generation(c, f, n); return;
    case N_BREAK: c->brk = 1; return;
    case N_CONTINUE: c->brk = 2; return;
    default: tpl_error(c, n, "not a statement");
    }
}

void tpl_exec_body(tpl_ctx *c, tpl_frame *f, const tpl_node *body) {
    for (size_t i = 0; i < body->n && !c->brk; i++) exec_stmt(c, f, body->kids[i]);
}

/* ===== entry points ===== */
int fl_tpl_parse(const char *src, size_t len, fl_tpl **out) {
    *out = NULL;
    fl_tpl *t = calloc(1, sizeof *t);
    if (!t) fl_die("out of memory");
    jmp_buf jb;
    t->arena.on_fail = &jb;
    t->arena.limit = (size_t)1 << 30;
    int rc = setjmp(jb);
    if (rc) { tpl_arena_free(&t->arena); free(t); return rc; }
    char *s = tpl_alloc(&t->arena, len + 1); // CR and CRLF become LF, as jinja2's lexer does
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        if (src[i] == '\r') { s[n++] = '\n'; if (i + 1 < len && src[i + 1] == '\n') i++; }
        else s[n++] = src[i];
    }
    tpl_toks toks = {0};
    tpl_lex(&t->arena, &jb, s, n, &toks);
    t->root = tpl_parse_tokens(&t->arena, &jb, &toks, &t->has_generation);
    t->arena.on_fail = NULL;
    *out = t;
    return 0;
}

void fl_tpl_free(fl_tpl *t) {
    if (!t) return;
    tpl_arena_free(&t->arena);
    free(t);
}

int fl_tpl_has_generation(const fl_tpl *t) { return t->has_generation; }

int fl_tpl_render(const fl_tpl *t, json_t *vars, const fl_tpl_limits *limits, fl_tpl_output *out) {
    memset(out, 0, sizeof *out);
    tpl_ctx *c = calloc(1, sizeof *c);
    if (!c) fl_die("out of memory");
    fl_tpl_limits lim = limits ? *limits : (fl_tpl_limits){0};
    c->max_output = lim.max_output ? lim.max_output : (size_t)64 << 20;
    c->max_steps = lim.max_steps ? lim.max_steps : 50000000ull;
    c->now = lim.now ? lim.now : (int64_t)time(NULL);
    c->arena.limit = lim.max_memory ? lim.max_memory : (size_t)512 << 20;
    c->arena.on_fail = &c->jb;
    int rc = setjmp(c->jb);
    if (!rc) {
        tv g = json_is_object(vars) ? tv_from_json(&c->arena, vars) : tv_dict(tpl_dict_new(&c->arena, 1));
        c->globals = g.d;
        tpl_buf_init(&c->out, &c->arena, c->max_output, &c->jb);
        c->cur = &c->out;
        tpl_exec_body(c, tpl_frame_new(c, NULL), t->root);
        resolve_generation_ends(c);
        out->text = malloc(c->out.n + 1);
        out->gen = malloc((c->n_gen ? c->n_gen : 1) * sizeof *out->gen);
        if (!out->text || !out->gen) fl_die("out of memory");
        if (c->out.n) memcpy(out->text, c->out.p, c->out.n);
        out->text[c->out.n] = 0;
        out->len = c->out.n;
        if (c->n_gen) memcpy(out->gen, c->gen, c->n_gen * sizeof *out->gen);
        out->n_gen = c->n_gen;
    }
    tpl_arena_free(&c->arena);
    free(c);
    return rc;
}

void fl_tpl_output_free(fl_tpl_output *out) {
    free(out->text);
    free(out->gen);
    memset(out, 0, sizeof *out);
}
