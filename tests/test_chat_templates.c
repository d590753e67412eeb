/* test_chat_templates.c — real chat templates against transformers: every case of
 * tests/fixtures/chat/cases.jsonl (written by tools/make_chat_template_fixtures.py: the templates
 * of public model repositories and TRL's training templates × conversations with systems, multi-turn,
 * Unicode, empty and whitespace contents, tools and tool calls, content parts, reasoning,
 * generation prompt on and off) must render byte for byte as transformers did, give the same
 * {% generation %} spans, and be refused where transformers refused.
 */
#include "test.h"

#include "common/error.h"
#include "chat_fixture.h"
#include "tokenizer/chat_template.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int same_spans(const fl_tpl_output *o, json_t *want) {
    if (o->n_gen != json_array_size(want)) return 0;
    for (size_t i = 0; i < o->n_gen; i++) {
        json_t *s = json_array_get(want, i);
        if ((json_int_t)o->gen[i].start != json_integer_value(json_array_get(s, 0)) ||
            (json_int_t)o->gen[i].end != json_integer_value(json_array_get(s, 1)))
            return 0;
    }
    return 1;
}

TEST(chat_templates_render_as_transformers) {
    json_t *index = chat_fixture_index();
    if (!index) return;
    json_t *convs = json_object_get(index, "conversations");
    int64_t now = json_integer_value(json_object_get(index, "now"));
    FILE *f = fopen("tests/fixtures/chat/cases.jsonl", "r");
    CHECK(f != NULL);
    char *line = NULL, current[256] = "";
    size_t cap = 0;
    int n = 0, same = 0, refused = 0, with_gen = 0;
    fl_chat_template *ct = NULL;
    clock_t t0 = clock();
    while (f && getline(&line, &cap, f) > 0) {
        json_t *row = json_loads(line, 0, NULL);
        const char *name = json_string_value(json_object_get(row, "template"));
        if (strcmp(name, current)) {
            fl_chat_template_free(ct);
            ct = chat_fixture_template(index, name);
            snprintf(current, sizeof current, "%s", name);
        }
        json_t *conv = json_array_get(convs, (size_t)json_integer_value(json_object_get(row, "conversation")));
        fl_chat_input in = {.messages = json_object_get(conv, "messages"), .tools = json_object_get(conv, "tools"),
                            .kwargs = json_object_get(conv, "chat_template_kwargs"),
                            .add_generation_prompt = json_is_true(json_object_get(conv, "add_generation_prompt")), .now = now};
        fl_tpl_output out = {0};
        int rc = ct ? fl_chat_template_render(ct, &in, &out) : -1;
        json_t *want = json_object_get(row, "text"), *gen = json_object_get(row, "generation");
        n++;
        if (!want) {
            CHECK_MSG(rc != 0, "%s conversation %lld: transformers refused (%s), we rendered:\n%s", name,
                      json_integer_value(json_object_get(row, "conversation")), json_string_value(json_object_get(row, "error")), out.text);
            refused += rc != 0;
        } else if (rc) {
            fl_test_fail(__FILE__, __LINE__, "%s conversation %lld: %s", name, json_integer_value(json_object_get(row, "conversation")),
                         fl_last_error());
        } else {
            int ok = out.len == json_string_length(want) && !memcmp(out.text, json_string_value(want), out.len);
            CHECK_MSG(ok, "%s conversation %lld: rendered\n[%s]\nwant\n[%s]", name, json_integer_value(json_object_get(row, "conversation")),
                      out.text, json_string_value(want));
            if (gen) {
                with_gen++;
                CHECK_MSG(same_spans(&out, gen), "%s conversation %lld: generation spans differ", name,
                          json_integer_value(json_object_get(row, "conversation")));
                ok = ok && same_spans(&out, gen);
            }
            same += ok;
        }
        fl_tpl_output_free(&out);
        json_decref(row);
    }
    double ms = 1e3 * (double)(clock() - t0) / CLOCKS_PER_SEC;
    printf("    %d cases: %d byte-identical, %d refused as transformers refused, %d with generation spans; %.1f ms\n", n, same,
           refused, with_gen, ms);
    fl_chat_template_free(ct);
    free(line);
    if (f) fclose(f);
    json_decref(index);
}
