/* fuzz_template.c — fuzzes the Jinja engine (src/template/): template source of any bytes, parsed,
 * then rendered with a variables object. The input is the template, FZ_SEP, and optionally a JSON
 * object of top-level variables (messages, tools, add_generation_prompt, ...; when absent or not an
 * object, a two-turn conversation). Limits are set low (1 MiB of output, 64 MiB of arena, 1 M steps)
 * so that every input finishes in milliseconds; the engine must enforce them, not the fuzzer.
 *
 * Checks: parse and render succeed or fail with an input error (one line); the output is within
 * the output limit, its generation spans lie inside it with starts in order; and a second
 * render of the same parsed template gives the same bytes and spans (strftime_now pinned). */
/* fuzz-dict: chat json template */
#include "fuzz.h"

#include <jansson.h>

#include "template/template.h"

#define FZ_MAX_OUTPUT ((size_t)1 << 20)

static json_t *default_vars(void) {
    return json_pack("{s:[{s:s,s:s},{s:s,s:s}],s:b,s:s,s:s}", "messages", "role", "user", "content", "hi", "role",
                     "assistant", "content", "hello", "add_generation_prompt", 1, "bos_token", "<s>", "eos_token", "</s>");
}

static void check_output(const fl_tpl_output *o) {
    if (o->len > FZ_MAX_OUTPUT) { fprintf(stderr, "fuzz: %zu bytes past the output limit\n", o->len); abort(); }
    size_t last = 0; // spans may overlap (a block inside a macro, template.h) but starts never decrease
    for (size_t i = 0; i < o->n_gen; i++) {
        if (o->gen[i].start < last || o->gen[i].end < o->gen[i].start || o->gen[i].end > o->len) {
            fprintf(stderr, "fuzz: generation span %zu [%zu, %zu): start before %zu or end past %zu\n", i, o->gen[i].start,
                    o->gen[i].end, last, o->len);
            abort();
        }
        last = o->gen[i].start;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_part p[2];
    int n = fz_split(data, size, p, 2);
    fl_tpl *t = NULL;
    fl_clear_error();
    int status = fl_tpl_parse((const char *)p[0].data, p[0].size, &t);
    fz_check(status, "fl_tpl_parse");
    if (status) return 0;
    json_t *vars = NULL;
    if (n > 1) vars = json_loadb((const char *)p[1].data, p[1].size, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    if (!json_is_object(vars)) {
        json_decref(vars);
        vars = default_vars();
    }
    fl_tpl_limits lim = {.now = 1700000000, .max_output = FZ_MAX_OUTPUT, .max_memory = (size_t)64 << 20,
                         .max_steps = 1000000};
    fl_tpl_output a = {0}, b = {0};
    fl_clear_error();
    status = fl_tpl_render(t, vars, &lim, &a);
    fz_check(status, "fl_tpl_render");
    if (!status) {
        check_output(&a);
        if (fl_tpl_render(t, vars, &lim, &b) || a.len != b.len || memcmp(a.text, b.text, a.len) || a.n_gen != b.n_gen ||
            (a.n_gen && memcmp(a.gen, b.gen, a.n_gen * sizeof *a.gen))) {
            fprintf(stderr, "fuzz: a second render differs\n");
            abort();
        }
    }
    fl_tpl_output_free(&a);
    fl_tpl_output_free(&b);
    json_decref(vars);
    fl_tpl_free(t);
    return 0;
}
