/* tpl_internal.h — the shared insides of the Jinja engine (src/template/): the arena, values,
 * tokens, the syntax tree and the render context. Not a public API: tokenizer/chat.c uses
 * template.h only.
 *
 * Memory: a parsed template and each render own one arena (tpl_arena); every value, string and
 * node lives there and is freed at once, so a render that fails part-way leaks nothing. Errors
 * unwind by longjmp to the parse or render entry point (tpl_fail), which records the one error
 * line and frees the arena.
 */
#ifndef FL_TPL_INTERNAL_H
#define FL_TPL_INTERNAL_H

#include "template/template.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>

/* ===== arena ===== */
typedef struct tpl_chunk tpl_chunk;
typedef struct {
    tpl_chunk *head;
    size_t used, limit; // bytes handed out, limit (0: none)
    jmp_buf *on_fail;   // where an exhausted arena unwinds to
} tpl_arena;
void *tpl_alloc(tpl_arena *a, size_t n);   // zeroed, 16-byte aligned; unwinds when over the limit
char *tpl_strdup(tpl_arena *a, const char *s, size_t n); // n bytes + NUL
void tpl_arena_free(tpl_arena *a);

/* Records "chat template: MSG" (or the line/column form) and longjmps to `jb`. */
_Noreturn void tpl_fail(jmp_buf *jb, int line, int col, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* ===== values ===== */
typedef enum {
    V_UNDEF, V_NONE, V_BOOL, V_INT, V_FLOAT, V_STR, V_LIST, V_DICT, V_NS, V_LOOP, V_FUNC, V_MACRO, V_METHOD
} tpl_kind;

typedef struct tpl_list tpl_list;
typedef struct tpl_dict tpl_dict;
typedef struct tpl_loop tpl_loop;
typedef struct tpl_macro tpl_macro;
typedef struct tpl_bound tpl_bound;

typedef struct {
    uint8_t kind;
    uint8_t tuple; // V_LIST: a tuple (prints as "(a, b)")
    uint8_t markup; // V_STR: a jinja2 Markup (from |safe or |escape): `+` escapes the other operand
    union {
        int64_t i;   // V_BOOL, V_INT, V_FUNC (builtin id)
        double f;
        struct { const char *p; size_t n; } s; // V_STR; V_UNDEF: the name (hint for errors)
        tpl_list *l;
        tpl_dict *d; // V_DICT, V_NS
        tpl_loop *loop;
        tpl_macro *m;
        tpl_bound *meth;
    };
} tv;

struct tpl_list { tv *v; size_t n, cap; };
struct tpl_dict { tv *k, *v; size_t n, cap; };
struct tpl_bound { tv self; const char *name; };

static inline tv tv_undef(const char *name) { tv v = {.kind = V_UNDEF}; v.s.p = name; v.s.n = name ? strlen(name) : 0; return v; }
static inline tv tv_none(void) { return (tv){.kind = V_NONE}; }
static inline tv tv_bool(int b) { return (tv){.kind = V_BOOL, .i = !!b}; }
static inline tv tv_int(int64_t i) { return (tv){.kind = V_INT, .i = i}; }
static inline tv tv_float(double f) { return (tv){.kind = V_FLOAT, .f = f}; }
static inline tv tv_str(const char *p, size_t n) { tv v = {.kind = V_STR}; v.s.p = p; v.s.n = n; return v; }

tpl_list *tpl_list_new(tpl_arena *a, size_t cap);
void tpl_list_push(tpl_arena *a, tpl_list *l, tv v);
tv tv_list(tpl_list *l);
tpl_dict *tpl_dict_new(tpl_arena *a, size_t cap);
void tpl_dict_set(tpl_arena *a, tpl_dict *d, tv k, tv v);  // replaces an equal key in place
tv *tpl_dict_find(const tpl_dict *d, tv k);                  // NULL when absent
tv *tpl_dict_find_str(const tpl_dict *d, const char *k, size_t n);
tv tv_dict(tpl_dict *d);

int tv_truthy(tv v);
int tv_equal(tv a, tv b);
int tv_is_number(tv v); // int, float or bool (Python bool is an int)
double tv_num(tv v);
const char *tv_type_name(tv v);
tv tv_from_json(tpl_arena *a, json_t *j);

/* ===== text builder ===== */
typedef struct { char *p; size_t n, cap; tpl_arena *a; size_t limit; jmp_buf *on_fail; } tpl_buf;
void tpl_buf_init(tpl_buf *b, tpl_arena *a, size_t limit, jmp_buf *on_fail);
void tpl_buf_put(tpl_buf *b, const char *s, size_t n);
static inline void tpl_buf_puts(tpl_buf *b, const char *s) { tpl_buf_put(b, s, strlen(s)); }
void tpl_buf_printf(tpl_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
tv tpl_buf_value(tpl_buf *b); // the text as a string value (arena memory)

/* Python str() and repr() of a value, appended. */
void tv_write_str(tpl_buf *b, tv v);
void tv_write_repr(tpl_buf *b, tv v);
void tpl_write_float(tpl_buf *b, double f); // Python repr(float)
/* json.dumps(v, ensure_ascii, indent, separators, sort_keys) as transformers' tojson. indent < 0:
 * None; `item_sep`/`key_sep` NULL: Python's defaults for that indent. Unserializable: unwinds. */
typedef struct { int ensure_ascii; int indent; const char *indent_str; const char *item_sep, *key_sep; int sort_keys; } tpl_json_opts;
void tpl_write_json(tpl_buf *b, tv v, const tpl_json_opts *o, int line, int col);

/* ===== Python string helpers (pystr.c) ===== */
size_t tpl_u8_count(const char *s, size_t n);                        // code points
size_t tpl_u8_offset(const char *s, size_t n, size_t index);        // byte offset of code point `index` (n if past)
uint32_t tpl_u8_get(const char *s, size_t n, size_t *pos);            // decode at *pos, advance
int tpl_py_space(uint32_t c);                                         // str.isspace()
int tpl_py_is(const char *s, size_t n, int kind); // str.isupper/islower/istitle/isalpha/isdigit/isdecimal/isnumeric/isalnum/isspace (pystr.c)
void tpl_strip(const char *s, size_t n, const char *chars, size_t nchars, int left, int right, size_t *a, size_t *e);
tv tpl_case(tpl_arena *a, tv s, int mode); // 'u' upper, 'l' lower, 't' title (str.title), 'c' capitalize, 'j' jinja title
int tpl_is_linebreak(const char *s, size_t n, size_t pos, size_t *len); // str.splitlines() separators

/* ===== tokens (lexer.c) ===== */
typedef enum {
    T_TEXT, T_VAR_BEGIN, T_VAR_END, T_BLOCK_BEGIN, T_BLOCK_END, T_NAME, T_STRING, T_INT, T_FLOAT, T_OP, T_EOF
} tpl_tok_kind;
typedef struct {
    uint8_t kind;
    const char *p; size_t n; // text (T_TEXT, T_NAME, T_OP) or decoded string (T_STRING)
    int64_t i; double f;
    int line, col;
} tpl_tok;
typedef struct { tpl_tok *t; size_t n, cap; } tpl_toks;
/* Tokenizes the whole (newline-normalized) source with trim_blocks, lstrip_blocks, `-`/`+`
 * whitespace control, comments and raw blocks applied. */
void tpl_lex(tpl_arena *a, jmp_buf *jb, const char *src, size_t len, tpl_toks *out);

/* ===== syntax tree (parser.c) ===== */
typedef enum {
    // expressions
    N_LIT, N_NAME, N_LIST, N_TUPLE, N_DICT, N_ATTR, N_INDEX, N_SLICE, N_CALL, N_KWARG, N_FILTER, N_TEST,
    N_NOT, N_NEG, N_POS, N_BIN, N_AND, N_OR, N_COND, N_CMP, N_CONCAT,
    // statements
    N_BODY, N_TEXT, N_OUT, N_IF, N_FOR, N_SET, N_SETBLOCK, N_MACRO, N_CALLBLOCK, N_FILTERBLOCK, N_GENERATION,
    N_BREAK, N_CONTINUE, N_WITH
} tpl_node_kind;

typedef struct tpl_node tpl_node;
struct tpl_node {
    uint8_t kind;
    int op;              // N_BIN/N_CMP operator (a tpl_op), N_TEST: negated, N_FOR: recursive
    int line, col;
    tv lit;              // N_LIT, N_TEXT (string)
    const char *name;    // N_NAME, N_ATTR, N_KWARG, N_FILTER, N_TEST, N_MACRO (NUL-terminated, arena)
    tpl_node *a, *b, *c; // children (see parser.c for each kind's layout)
    tpl_node **kids; size_t n;   // list items / args / body / params
    tpl_node **kids2; size_t n2; // second list (N_DICT values, N_IF else, N_FOR else, defaults, ...)
};

enum tpl_op { OP_ADD = 1, OP_SUB, OP_MUL, OP_DIV, OP_FLOORDIV, OP_MOD, OP_POW,
              OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE, OP_IN, OP_NOTIN };

struct fl_tpl {
    tpl_arena arena;
    tpl_node *root; // N_BODY
    int has_generation;
};
tpl_node *tpl_parse_tokens(tpl_arena *a, jmp_buf *jb, const tpl_toks *toks, int *has_generation);

/* ===== rendering (exec.c, eval.c) ===== */
typedef struct tpl_frame tpl_frame;
struct tpl_frame { tpl_frame *parent; tpl_dict *vars; };

struct tpl_macro { const tpl_node *def; tpl_frame *closure; const tpl_node *caller_body; tpl_frame *caller_frame; };

struct tpl_loop {
    tpl_list *items; size_t index; int64_t depth0;
    tpl_loop *parent; int has_parent;
};

typedef struct {
    tpl_arena arena;
    jmp_buf jb;
    tpl_dict *globals;
    tpl_buf out;            // the top-level output
    tpl_buf *cur;           // where text goes now (out, or a capture)
    fl_tpl_span *gen; size_t n_gen, cap_gen;
    uint64_t steps, max_steps;
    int depth;              // call/recursion depth
    int64_t now;
    size_t max_output;
    int brk;                // 1 break, 2 continue pending
} tpl_ctx;

_Noreturn void tpl_error(tpl_ctx *c, const tpl_node *n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void tpl_step(tpl_ctx *c, const tpl_node *n);
/* raise_exception(msg): "chat template raised: MSG (line L column C)". */
_Noreturn void fl_tpl_raise(tpl_ctx *c, const tpl_node *n, const char *msg, size_t len);
tv tpl_eval(tpl_ctx *c, tpl_frame *f, const tpl_node *n);
/* Evaluates the N_CALL `n`, with one more keyword argument when extra_kw is not NULL (call blocks' caller). */
tv tpl_eval_call(tpl_ctx *c, tpl_frame *f, const tpl_node *n, const char *extra_kw, tv extra_val);
void tpl_exec_body(tpl_ctx *c, tpl_frame *f, const tpl_node *body);
tv tpl_lookup(tpl_ctx *c, tpl_frame *f, const char *name);
void tpl_frame_set(tpl_ctx *c, tpl_frame *f, const char *name, tv v);
tpl_frame *tpl_frame_new(tpl_ctx *c, tpl_frame *parent);
tv tpl_getattr(tpl_ctx *c, const tpl_node *n, tv obj, const char *name, size_t len);
tv tpl_getitem(tpl_ctx *c, const tpl_node *n, tv obj, tv key);
tv tpl_to_str(tpl_ctx *c, tv v); // str(v) as a string value
tv tpl_html_escape(tpl_ctx *c, tv s); // markupsafe.escape of a string: & < > " ' as entities, a Markup
tpl_list *tpl_iterate(tpl_ctx *c, const tpl_node *n, tv v); // list(v) for `for` and filters
tv tpl_call_macro(tpl_ctx *c, const tpl_node *n, tpl_macro *m, tv *args, size_t nargs, const char **kwn, tv *kwv, size_t nkw);

/* Call arguments, evaluated. */
typedef struct { tv *pos; size_t npos; const char **kwn; tv *kwv; size_t nkw; } tpl_args;
tv tpl_arg(const tpl_args *a, size_t i, const char *name, tv dflt); // positional i or keyword `name`

/* filters.c, tests.c, methods.c: `name` applied to `v`. */
tv tpl_filter(tpl_ctx *c, tpl_frame *f, const tpl_node *n, const char *name, tv v, const tpl_args *args);
int tpl_test(tpl_ctx *c, const tpl_node *n, const char *name, tv v, const tpl_args *args);
tv tpl_method(tpl_ctx *c, const tpl_node *n, tv self, const char *name, const tpl_args *args);
int tpl_has_method(tv self, const char *name);
tv tpl_call_builtin(tpl_ctx *c, const tpl_node *n, int64_t id, const tpl_args *args);
int tpl_builtin_id(const char *name); // 0: none
int tpl_compare(tpl_ctx *c, const tpl_node *n, tv a, tv b); // Python <, as -1/0/1; unorderable: unwinds

#endif
