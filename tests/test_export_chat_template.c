/* test_export_chat_template.c — `export --gguf` and the chat template: the GGUF's
 * tokenizer.chat_template is the folder's template text unchanged, or with `--chat-template FILE`
 * that file's bytes verbatim (CRLF and the final newline kept: llama.cpp renders the text itself),
 * read back with the validating GGUF reader; a file that does not parse is refused in one line
 * with its line and column before anything is written. On stories260K converted from ../shared
 * (skipped when absent): a real model whose tokenizer has no template of its own.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chat_fixture.h"
#include "export/gguf_reader.h"
#include "test.h"

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    if (f) { fputs(text, f); fclose(f); }
}

/* The GGUF's tokenizer.chat_template equals want (NULL: the key is absent). */
static void check_gguf_template(const char *gguf, const char *want) {
    fl_gguf_file g;
    int rc = fl_gguf_open(&g, gguf);
    CHECK_MSG(rc == 0, "%s: cannot open", gguf);
    if (rc) return;
    if (!want) CHECK(fl_gguf_find_kv(&g, "tokenizer.chat_template") == NULL);
    const char *s;
    size_t len;
    if (want) CHECK_MSG(fl_gguf_get_str(&g, "tokenizer.chat_template", &s, &len) == 0 && len == strlen(want) && !memcmp(s, want, len),
                        "%s: tokenizer.chat_template differs", gguf);
    fl_gguf_close(&g);
}

TEST(export_gguf_chat_template_folder_or_file_verbatim) {
    if (!fl_test_bin()) SKIP("FASTLORA_BIN not set");
    if (!fl_test_shared_dir()) SKIP("../shared not found");
    char dir[] = "/tmp/fastlora-exportchat-XXXXXX", model[600], path[700], tpl[700], bad[700], out[1 << 14];
    if (!mkdtemp(dir)) { CHECK(0); return; }
    int rc = chat_fixture_stories260k(dir, model, sizeof model);
    const char *file_text = "{% for m in messages %}{{ m.role }}: {{ m.content }}\r\n{% endfor %}\r\n";
    const char *folder_text = "{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}\n";
    snprintf(tpl, sizeof tpl, "%s/chat.jinja", dir);
    snprintf(bad, sizeof bad, "%s/bad.jinja", dir);
    write_file(tpl, file_text);
    write_file(bad, "{% if x %}\n{{ x }}\n");
    snprintf(path, sizeof path, "%s/a.gguf", dir);
    CHECK_EQ_INT(fl_test_run_cli(out, sizeof out, "export --model %s --gguf %s --type f32", model, path), 0);
    check_gguf_template(path, NULL); /* the folder has none */
    snprintf(path, sizeof path, "%s/b.gguf", dir);
    rc = fl_test_run_cli(out, sizeof out, "export --model %s --gguf %s --type f32 --chat-template %s", model, path, tpl);
    CHECK_MSG(rc == 0, "%s", out);
    check_gguf_template(path, file_text);
    char jinja[700];
    snprintf(jinja, sizeof jinja, "%s/chat_template.jinja", model);
    write_file(jinja, folder_text);
    snprintf(path, sizeof path, "%s/c.gguf", dir);
    CHECK_EQ_INT(fl_test_run_cli(out, sizeof out, "export --model %s --gguf %s --type f32", model, path), 0);
    check_gguf_template(path, folder_text);
    CHECK_EQ_INT(fl_test_run_cli(out, sizeof out, "export --model %s --gguf %s --type f32 --force --chat-template %s", model, path, tpl), 0);
    check_gguf_template(path, file_text);
    snprintf(path, sizeof path, "%s/d.gguf", dir);
    CHECK_EQ_INT(fl_test_run_cli(out, sizeof out, "export --model %s --gguf %s --chat-template %s", model, path, bad), 2);
    char want[800];
    snprintf(want, sizeof want, "fastlora export: %s: chat template: line ", bad);
    CHECK_STR_CONTAINS(out, want);
    CHECK_STR_CONTAINS(out, " column ");
    CHECK_MSG(strchr(out, '\n') == out + strlen(out) - 1, "one line: %s", out);
    CHECK(access(path, F_OK) != 0);
    CHECK_EQ_INT(fl_test_run_cli(out, sizeof out, "export --model %s --gguf %s --no-tokenizer --chat-template %s", model, path, tpl), 2);
    CHECK_STR_CONTAINS(out, "--chat-template: a GGUF written with --no-tokenizer has no tokenizer metadata");
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
}
