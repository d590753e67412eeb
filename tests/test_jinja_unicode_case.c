/* test_jinja_unicode_case.c — Python's case mappings and str tests in the Jinja engine against
 * Python itself: tests/fixtures/chat/case_cases.json (tools/make_template_case_fixtures.py) renders
 * one template applying the upper/lower/title/capitalize filters, the str methods of the same names,
 * the is* methods and the lower/upper tests to 177 strings (full mappings, titlecase digraphs, the
 * final sigma in every context, scripts beyond Latin, digits and numerics, random cased text); the
 * engine must give the same bytes for each. */
#include "test.h"

#include "common/error.h"
#include "template/template.h"

#include <jansson.h>
#include <string.h>

TEST(jinja_unicode_case_as_python) {
    json_error_t err;
    json_t *root = json_load_file("tests/fixtures/chat/case_cases.json", 0, &err);
    CHECK_MSG(root != NULL, "case_cases.json: %s", err.text);
    if (!root) return;
    const char *src = json_string_value(json_object_get(root, "template"));
    fl_tpl *t = NULL;
    CHECK_MSG(fl_tpl_parse(src, strlen(src), &t) == 0, "%s", fl_last_error());
    json_t *cases = json_object_get(root, "cases");
    size_t n = json_array_size(cases), same = 0;
    for (size_t i = 0; t && i < n; i++) {
        json_t *c = json_array_get(cases, i);
        const char *want = json_string_value(json_object_get(c, "text"));
        json_t *vars = json_pack("{s:O}", "s", json_object_get(c, "s"));
        fl_tpl_output out;
        int rc = fl_tpl_render(t, vars, NULL, &out);
        int ok = rc == 0 && out.len == strlen(want) && !memcmp(out.text, want, out.len);
        CHECK_MSG(ok, "case %zu (%s): got \"%s\", Python: \"%s\"", i, json_string_value(json_object_get(c, "s")),
                  rc ? fl_last_error() : out.text, want);
        same += ok;
        if (!rc) fl_tpl_output_free(&out);
        json_decref(vars);
    }
    CHECK_MSG(n >= 170, "only %zu cases in the fixture", n);
    printf("    %zu strings, %zu identical to Python's\n", n, same);
    fl_tpl_free(t);
    json_decref(root);
}
