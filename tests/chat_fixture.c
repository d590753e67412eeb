/* chat_fixture.c — the readers of chat_fixture.h. Not a test file: no TEST here. */
#include "chat_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "io/file_util.h"
#include "test.h"

static json_t *load_json(const char *path) {
    json_t *v = NULL;
    if (fl_file_load_json(path, FL_FILE_TOKENIZER, 0, &v)) fl_test_fail(__FILE__, __LINE__, "%s", fl_last_error());
    return v;
}

json_t *chat_fixture_index(void) { return load_json(CHAT_FIXTURE_DIR "/index.json"); }

fl_chat_template *chat_fixture_template(json_t *index, const char *name) {
    json_t *tpls = json_object_get(index, "templates");
    for (size_t i = 0; i < json_array_size(tpls); i++) {
        json_t *t = json_array_get(tpls, i);
        if (strcmp(json_string_value(json_object_get(t, "name")), name)) continue;
        char path[512], *text = NULL;
        size_t len;
        snprintf(path, sizeof path, CHAT_FIXTURE_DIR "/templates/%s.jinja", name);
        if (fl_file_read_all(path, FL_FILE_TOKENIZER, &text, &len)) { fl_test_fail(__FILE__, __LINE__, "%s", fl_last_error()); return NULL; }
        fl_chat_template *ct = NULL;
        if (fl_chat_template_new(&ct, text, len, json_object_get(t, "special")))
            fl_test_fail(__FILE__, __LINE__, "%s: %s", name, fl_last_error());
        free(text);
        return ct;
    }
    fl_test_fail(__FILE__, __LINE__, "template %s: not in index.json", name);
    return NULL;
}

json_t *chat_fixture_cases(void) {
    FILE *f = fopen(CHAT_FIXTURE_DIR "/cases.jsonl", "r");
    if (!f) { fl_test_fail(__FILE__, __LINE__, "cannot read " CHAT_FIXTURE_DIR "/cases.jsonl"); return NULL; }
    json_t *all = json_array();
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0) {
        json_t *row = json_loads(line, 0, NULL);
        if (row) json_array_append_new(all, row);
    }
    free(line);
    fclose(f);
    return all;
}

int chat_fixture_stories260k(const char *dir, char *model, size_t cap) {
    char out[4096];
    const char *sh = fl_test_shared_dir();
    snprintf(model, cap, "%s/s260", dir);
    int rc = fl_test_run_cli(out, sizeof out, "convert-llama2c --checkpoint %s/data/stories260K/stories260K.bin --tokenizer "
                             "%s/data/stories260K/tok512.bin --out %s", sh, sh, model);
    if (rc) fl_test_fail(__FILE__, __LINE__, "convert-llama2c: %s", out);
    return rc;
}

json_t *chat_fixture_conversation(json_t *index, json_t *c) {
    return json_array_get(json_object_get(index, "conversations"), (size_t)json_integer_value(json_object_get(c, "conversation")));
}
