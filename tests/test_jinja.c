/* test_jinja.c — the Jinja engine (src/template/) one feature at a time: the cases of
 * tests/fixtures/chat/engine_cases.json (rendered by transformers' jinja2 environment in
 * tools/make_chat_template_fixtures.py) must come out byte for byte; then what a hostile or broken
 * template gets: parse errors naming line and column and what was expected, raise_exception's
 * message, undefined-value errors, and the limits on steps, recursion, output and memory (each
 * must stop the render quickly with one error line).
 */
#include "test.h"

#include "common/error.h"
#include "template/template.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const int64_t NOW = 1785067200; // the fixture's pinned strftime_now time

TEST(jinja_engine_cases_as_jinja2) {
    json_error_t err;
    json_t *cases = json_load_file("tests/fixtures/chat/engine_cases.json", 0, &err);
    CHECK_MSG(cases != NULL, "tests/fixtures/chat/engine_cases.json: %s", err.text);
    for (size_t i = 0; i < json_array_size(cases); i++) {
        json_t *c = json_array_get(cases, i);
        const char *src = json_string_value(json_object_get(c, "template"));
        json_t *want = json_object_get(c, "text");
        fl_tpl *t;
        int rc = fl_tpl_parse(src, strlen(src), &t);
        CHECK_MSG(rc == 0, "case %zu: parse: %s", i, fl_last_error());
        if (rc) continue;
        fl_tpl_output out;
        fl_tpl_limits lim = {.now = NOW};
        rc = fl_tpl_render(t, json_object_get(c, "vars"), &lim, &out);
        if (json_is_null(want)) CHECK_MSG(rc != 0, "case %zu: jinja2 refused, we rendered [%s]", i, out.text);
        else if (rc) fl_test_fail(__FILE__, __LINE__, "case %zu: %s\n%s", i, fl_last_error(), src);
        else CHECK_MSG(out.len == json_string_length(want) && !memcmp(out.text, json_string_value(want), out.len),
                       "case %zu: %s\n got [%s]\nwant [%s]", i, src, out.text, json_string_value(want));
        if (!rc) fl_tpl_output_free(&out);
        fl_tpl_free(t);
    }
    json_decref(cases);
}

/* Parses (must succeed) and renders `src` with `vars_json`; returns the status, *text the output. */
static int render(const char *src, const char *vars_json, const fl_tpl_limits *lim, char **text) {
    fl_tpl *t;
    *text = NULL;
    int rc = fl_tpl_parse(src, strlen(src), &t);
    if (rc) return rc;
    json_t *vars = json_loads(vars_json ? vars_json : "{}", 0, NULL);
    fl_tpl_output out;
    rc = fl_tpl_render(t, vars, lim, &out);
    if (!rc) { *text = out.text; free(out.gen); }
    json_decref(vars);
    fl_tpl_free(t);
    return rc;
}

static void expect_parse_error(const char *src, const char *where, const char *what) {
    fl_tpl *t = NULL;
    int rc = fl_tpl_parse(src, strlen(src), &t);
    CHECK_MSG(rc == FL_ERR_INPUT, "parsed: %s", src);
    if (!rc) { fl_tpl_free(t); return; }
    CHECK_STR_CONTAINS(fl_last_error(), where);
    CHECK_STR_CONTAINS(fl_last_error(), what);
    CHECK(strchr(fl_last_error(), '\n') == NULL); // one line
}

TEST(jinja_parse_errors_name_line_and_column) {
    expect_parse_error("{% if x %}\nhello", "line 2 column 6", "expected 'elif', 'else' or 'endif', got end of template");
    expect_parse_error("ok\n  {{ a + }}", "line 2 column 10", "expected an expression, got '}}'");
    expect_parse_error("{% for x in y %}{% endif %}", "line 1 column 20", "expected 'else' or 'endfor', got 'endif'");
    expect_parse_error("{% frobnicate %}", "line 1 column 4", "unknown tag 'frobnicate'");
    expect_parse_error("{{ 'abc }}", "line 1 column 4", "unterminated string literal");
    expect_parse_error("{# no end", "line 1 column 1", "expected '#}'");
    expect_parse_error("{{ x[1:2:3:4] }}", "line 1", "expected ']'");
    expect_parse_error("{% set x = %}", "line 1 column 12", "expected an expression");
    expect_parse_error("a\r\nb\r\n{{ ) }}", "line 3 column 4", "expected an expression"); // CRLF counted as one line
    char deep[4100] = "{{ ";
    memset(deep + 3, '(', 2000);
    deep[2003] = '1';
    memset(deep + 2004, ')', 2000);
    memcpy(deep + 4004, " }}", 4);
    expect_parse_error(deep, "line 1", "nested deeper than 256 levels");
}

TEST(jinja_runtime_errors) {
    char *out;
    CHECK_EQ_INT(render("{{ raise_exception('Only user and assistant roles are supported!') }}", NULL, NULL, &out), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "chat template raised: Only user and assistant roles are supported! (template line 1 column");
    CHECK_EQ_INT(render("{{ x + 1 }}", NULL, NULL, &out), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "line 1 column 6: 'x' is undefined");
    CHECK_EQ_INT(render("{{ m.a.b }}", "{\"m\": {}}", NULL, &out), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "'dict object' has no attribute 'a'");
    CHECK_EQ_INT(render("{{ 'a' + 1 }}", NULL, NULL, &out), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "unsupported operand type(s) for +: 'str' and 'int'");
    CHECK_EQ_INT(render("{% if false %}{{ x | nosuchfilter }}{% endif %}ok", NULL, NULL, &out), 0); // only when it runs
    CHECK(out && !strcmp(out, "ok"));
    free(out);
    CHECK_EQ_INT(render("{{ x | nosuchfilter }}", NULL, NULL, &out), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "no filter named 'nosuchfilter'");
    CHECK_EQ_INT(render("{{ messages.append(1) }}", "{\"messages\": []}", NULL, &out), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "unsafe");
    CHECK_EQ_INT(render("{{ x | tojson }}", NULL, NULL, &out), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "not JSON serializable");
    CHECK_EQ_INT(render("{% set ns = namespace(_x=1) %}", NULL, NULL, &out), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "underscore");
    // x[] indexes by the empty tuple, as in Jinja2: undefined, an error once used (a fuzz_tokenizer_json
    // finding: the index was left NULL and the render dereferenced it)
    CHECK_EQ_INT(render("[{{ m[] }}{{ 'abc'[] }}{{ l[] }}]", "{\"m\": {}, \"l\": [1]}", NULL, &out), 0);
    CHECK(out && !strcmp(out, "[]"));
    free(out);
    CHECK_EQ_INT(render("{{ m[]['e'] }}", "{\"m\": {}}", NULL, &out), FL_ERR_INPUT);
}

/* A template cannot hang or exhaust memory: every limit stops it fast with one line. */
TEST(jinja_limits_stop_hostile_templates) {
    char *out;
    clock_t t0 = clock();
    fl_tpl_limits small = {.max_steps = 100000};
    CHECK_EQ_INT(render("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", NULL, &small, &out),
                 FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "steps (limit");
    CHECK_EQ_INT(render("{% for i in range(100000000) %}{% endfor %}", NULL, NULL, &out), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "range of 100000000 items");
    CHECK_EQ_INT(render("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", NULL, NULL, &out), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "nested deeper than 200");
    fl_tpl_limits out_lim = {.max_output = 1 << 20};
    CHECK_EQ_INT(render("{% for i in range(100000) %}{{ 'x' * 100 }}{% endfor %}", NULL, &out_lim, &out), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "output longer than 1048576 bytes");
    CHECK_EQ_INT(render("{{ 'x' * 100000000000 }}", NULL, NULL, &out), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "limit");
    fl_tpl_limits mem = {.max_memory = 8 << 20};
    CHECK_EQ_INT(render("{% set ns = namespace(s='x') %}{% for i in range(100) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}", NULL, &mem, &out),
                 FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "memory (limit)");
    double s = (double)(clock() - t0) / CLOCKS_PER_SEC;
    CHECK_MSG(s < 5.0, "the limits took %.1f s", s);
}

/* {% generation %} spans are byte offsets of the block's output in the whole text. */
TEST(jinja_generation_spans) {
    const char *src = "{% for m in messages %}<{{ m.role }}>{% if m.role == 'assistant' %}{% generation %}{{ m.content }}!"
                      "{% endgeneration %}{% else %}{{ m.content }}{% endif %}\n{% endfor %}";
    fl_tpl *t;
    CHECK_EQ_INT(fl_tpl_parse(src, strlen(src), &t), 0);
    CHECK(fl_tpl_has_generation(t));
    json_t *vars = json_loads("{\"messages\": [{\"role\": \"user\", \"content\": \"héllo\"}, {\"role\": \"assistant\", \"content\": \"ça\"},"
                              "{\"role\": \"assistant\", \"content\": \"\"}]}", 0, NULL);
    fl_tpl_output out;
    CHECK_EQ_INT(fl_tpl_render(t, vars, NULL, &out), 0);
    CHECK_MSG(!strcmp(out.text, "<user>héllo<assistant>ça!<assistant>!"), "[%s]", out.text); // trim_blocks ate each "\n"
    CHECK_EQ_INT(out.n_gen, 2);
    if (out.n_gen == 2) {
        CHECK(!memcmp(out.text + out.gen[0].start, "ça!", out.gen[0].end - out.gen[0].start));
        CHECK_EQ_INT(out.gen[1].end - out.gen[1].start, 1);
    }
    fl_tpl_output_free(&out);
    json_decref(vars);
    fl_tpl_free(t);
}
