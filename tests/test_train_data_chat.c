/* test_train_data_chat.c — `messages` records through the trainer's data reader
 * (fl_data_parse_line / fl_dataset_load → train/data_chat.c): the token ids are those of the text
 * transformers renders, and the loss mask is
 *   - with {% generation %} blocks: transformers' return_assistant_tokens_mask — every case of
 *     tests/fixtures/chat/cases.jsonl with generation spans (TRL's *_training templates);
 *   - without: turn by turn, checked on real templates (Llama 3.1/3.2, Qwen2.5, SmolLM2) against
 *     spans found here independently in transformers' rendered text: from the end of each
 *     assistant header to the end of the end-of-turn marker that follows it.
 * Tools, tool calls and chat_template_kwargs per row render as transformers renders them; errors
 * (raise_exception, no assistant message, mistyped fields, a template that does not parse) are
 * one line naming the data row. The tokenizer is the tiny byte-level BPE of tests/fixtures/train/tok
 * (the masks' rule is on bytes, so any tokenizer that covers the bytes checks it).
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "chat_fixture.h"
#include "common/error.h"
#include "test.h"
#include "train/data.h"

#define TOK_DIR "tests/fixtures/train/tok"

/* The record a dataset would hold for a fixture conversation. */
static char *row_of(json_t *conv) {
    json_t *row = json_object();
    static const char *const keys[] = {"messages", "tools", "chat_template_kwargs", "add_generation_prompt"};
    for (size_t k = 0; k < 4; k++)
        if (json_object_get(conv, keys[k])) json_object_set(row, keys[k], json_object_get(conv, keys[k]));
    char *line = json_dumps(row, JSON_COMPACT);
    json_decref(row);
    return line;
}

/* text tokenized as fl_chat_encode does (no post-processor), mask = tokens overlapping a byte span */
static int expected_doc(fl_tokenizer *tok, const char *text, size_t len, const size_t (*spans)[2], size_t n_spans, fl_doc *d) {
    fl_token_ids ids = {0};
    ids.want_offsets = 1;
    if (fl_tokenizer_encode(tok, text, len, 0, &ids)) return -1;
    d->n = (int)ids.n;
    d->ids = malloc(sizeof(int32_t) * (ids.n + 1));
    d->mask = calloc(ids.n + 1, 1);
    int targets = 0;
    for (size_t t = 0; t < ids.n; t++) {
        d->ids[t] = ids.ids[t];
        for (size_t s = 0; s < n_spans; s++)
            if (ids.offsets[2 * t] < spans[s][1] && ids.offsets[2 * t + 1] > spans[s][0]) d->mask[t] = 1;
        targets += t > 0 && d->mask[t];
    }
    fl_token_ids_free(&ids);
    return targets;
}

/* 1 when the data reader's document equals the expected one (ids and every mask bit). */
static int same_doc(const fl_doc *got, const fl_doc *want, const char *what) {
    if (got->n != want->n) { printf("    %s: %d tokens, want %d\n", what, got->n, want->n); return 0; }
    for (int t = 0; t < got->n; t++)
        if (got->ids[t] != want->ids[t] || got->mask[t] != want->mask[t]) {
            printf("    %s: token %d: id %d mask %d, want id %d mask %d\n", what, t, got->ids[t], got->mask[t], want->ids[t], want->mask[t]);
            return 0;
        }
    return 1;
}

static void doc_free(fl_doc *d) { free(d->ids); free(d->mask); memset(d, 0, sizeof *d); }

/* Runs one case through the data reader and compares with (text, spans). Returns 1 when checked. */
static int check_case(fl_tokenizer *tok, const fl_chat_template *ct, int64_t now, json_t *conv, const char *text, size_t len,
                      const size_t (*spans)[2], size_t n_spans, const char *what) {
    fl_data_options o = fl_data_options_default();
    o.chat_template = ct;
    o.chat_now = now;
    o.eos_id = 2;
    char *line = row_of(conv);
    fl_doc got, want = {0};
    int rc = fl_data_parse_line(line, strlen(line), tok, &o, &got);
    int targets = expected_doc(tok, text, len, spans, n_spans, &want);
    if (targets == 0) CHECK_MSG(rc != 0, "%s: no assistant tokens, yet the reader made a document", what);
    else if (rc) fl_test_fail(__FILE__, __LINE__, "%s: %s", what, fl_last_error());
    else CHECK_MSG(same_doc(&got, &want, what), "%s: ids or mask differ", what);
    if (!rc) doc_free(&got);
    doc_free(&want);
    free(line);
    return targets > 0;
}

TEST(train_data_chat_generation_masks_as_transformers) {
    fl_tokenizer *tok = NULL;
    CHECK_MSG(fl_tokenizer_load(&tok, TOK_DIR) == 0, "%s", fl_last_error());
    json_t *index = chat_fixture_index(), *cases = chat_fixture_cases();
    if (!tok || !index || !cases) { fl_tokenizer_free(tok); json_decref(index); json_decref(cases); return; }
    int64_t now = json_integer_value(json_object_get(index, "now"));
    fl_chat_template *ct = NULL;
    const char *current = "";
    int n = 0, trained = 0;
    for (size_t i = 0; i < json_array_size(cases); i++) {
        json_t *c = json_array_get(cases, i), *gen = json_object_get(c, "generation"), *text = json_object_get(c, "text");
        if (!gen || !text) continue;
        const char *name = json_string_value(json_object_get(c, "template"));
        if (strcmp(name, current)) { fl_chat_template_free(ct); ct = chat_fixture_template(index, name); current = name; }
        if (!ct) continue;
        size_t n_spans = json_array_size(gen), (*spans)[2] = calloc(n_spans + 1, sizeof *spans);
        for (size_t s = 0; s < n_spans; s++)
            for (int k = 0; k < 2; k++) spans[s][k] = (size_t)json_integer_value(json_array_get(json_array_get(gen, s), (size_t)k));
        char what[256];
        snprintf(what, sizeof what, "%s conversation %lld", name, json_integer_value(json_object_get(c, "conversation")));
        trained += check_case(tok, ct, now, chat_fixture_conversation(index, c), json_string_value(text), json_string_length(text),
                              (const size_t(*)[2])spans, n_spans, what);
        n++;
        free(spans);
    }
    printf("    %d cases with {%% generation %%} blocks (%d with assistant tokens, the rest refused as records)\n", n, trained);
    CHECK(n >= 90 && trained >= 60);
    fl_chat_template_free(ct);
    json_decref(cases);
    json_decref(index);
    fl_tokenizer_free(tok);
}

/* The assistant spans of a rendered text found without the engine: from the end of each `header` to
 * the end of the first end-of-turn marker after it (a header with none after it is a generation
 * prompt: no span). */
static size_t spans_after_headers(const char *text, const char *header, const char *const *markers, size_t (*spans)[2], size_t cap) {
    size_t n = 0;
    for (const char *h = strstr(text, header); h && n < cap; h = strstr(h + 1, header)) {
        const char *start = h + strlen(header), *end = NULL;
        for (const char *const *m = markers; *m; m++) {
            const char *e = strstr(start, *m);
            if (e && (!end || e + strlen(*m) < end)) end = e + strlen(*m);
        }
        if (end) { spans[n][0] = (size_t)(start - text); spans[n][1] = (size_t)(end - text); n++; }
    }
    return n;
}

static size_t count_assistant(json_t *conv) {
    json_t *msgs = json_object_get(conv, "messages");
    size_t n = 0;
    for (size_t i = 0; i < json_array_size(msgs); i++)
        n += !strcmp(json_string_value(json_object_get(json_array_get(msgs, i), "role")), "assistant");
    return n;
}

TEST(train_data_chat_turn_by_turn_masks_real_templates) {
    static const char *const llama_end[] = {"<|eot_id|>", "<|eom_id|>", NULL}, *const chatml_end[] = {"<|im_end|>", NULL};
    static const struct { const char *name, *header; const char *const *markers; } tpls[] = {
        {"meta-llama-Llama-3.1-8B-Instruct", "<|start_header_id|>assistant<|end_header_id|>\n\n", llama_end},
        {"meta-llama-Llama-3.2-3B-Instruct", "<|start_header_id|>assistant<|end_header_id|>\n\n", llama_end},
        {"Qwen-Qwen2.5-7B-Instruct", "<|im_start|>assistant\n", chatml_end},
        {"shared-Qwen2.5-0.5B-Instruct", "<|im_start|>assistant\n", chatml_end},
        {"shared-SmolLM2-135M-Instruct", "<|im_start|>assistant\n", chatml_end},
    };
    fl_tokenizer *tok = NULL;
    CHECK_MSG(fl_tokenizer_load(&tok, TOK_DIR) == 0, "%s", fl_last_error());
    json_t *index = chat_fixture_index(), *cases = chat_fixture_cases();
    if (!tok || !index || !cases) { fl_tokenizer_free(tok); json_decref(index); json_decref(cases); return; }
    int64_t now = json_integer_value(json_object_get(index, "now"));
    int n = 0, with_tools = 0;
    for (size_t k = 0; k < sizeof tpls / sizeof tpls[0]; k++) {
        fl_chat_template *ct = chat_fixture_template(index, tpls[k].name);
        CHECK(ct && !fl_chat_template_has_generation(ct));
        for (size_t i = 0; ct && i < json_array_size(cases); i++) {
            json_t *c = json_array_get(cases, i), *text = json_object_get(c, "text");
            if (strcmp(json_string_value(json_object_get(c, "template")), tpls[k].name) || !text) continue;
            json_t *conv = chat_fixture_conversation(index, c);
            size_t spans[16][2], n_spans = spans_after_headers(json_string_value(text), tpls[k].header, tpls[k].markers, spans, 16);
            CHECK_EQ_INT(n_spans, count_assistant(conv));
            char what[256];
            snprintf(what, sizeof what, "%s conversation %lld", tpls[k].name, json_integer_value(json_object_get(c, "conversation")));
            n += check_case(tok, ct, now, conv, json_string_value(text), json_string_length(text), (const size_t(*)[2])spans, n_spans, what);
            with_tools += json_object_get(conv, "tools") != NULL && n_spans > 0;
        }
        fl_chat_template_free(ct);
    }
    printf("    %d conversations with assistant turns on 5 templates (%d with tools and tool calls)\n", n, with_tools);
    CHECK(n >= 30 && with_tools >= 5);
    json_decref(cases);
    json_decref(index);
    fl_tokenizer_free(tok);
}

static char *temp_file(const char *content) {
    char *path = strdup("/tmp/fastlora-chatdata-XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0 || write(fd, content, strlen(content)) != (ssize_t)strlen(content)) { free(path); return NULL; }
    close(fd);
    return path;
}

/* Each bad record is one line naming file:line and why; a template that does not parse is one line
 * naming the file, line and column. */
TEST(train_data_chat_bad_records_one_line_each) {
    fl_tokenizer *tok = NULL;
    CHECK_MSG(fl_tokenizer_load(&tok, TOK_DIR) == 0, "%s", fl_last_error());
    if (!tok) return;
    char *tpl = temp_file("{% for m in messages %}{% if m.role not in ['system', 'user', 'assistant'] %}"
                          "{{ raise_exception('unknown role ' + m.role) }}{% endif %}<|im_start|>{{ m.role }}\n"
                          "{{ m.content }}<|im_end|>\n{% endfor %}");
    char *bad_tpl = temp_file("{% for m in messages %}{{ m.content }}{% endif %}");
    char *data = temp_file("{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}, {\"role\": \"assistant\", \"content\": \"the one\"}]}\n"
                           "{\"messages\": [{\"role\": \"robot\", \"content\": \"x\"}, {\"role\": \"assistant\", \"content\": \"y\"}]}\n"
                           "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}]}\n"
                           "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}, {\"role\": \"assistant\", \"content\": \"y\"}], \"tools\": 5}\n"
                           "{\"messages\": [{\"content\": \"x\"}]}\n");
    fl_chat_template *ct = NULL;
    CHECK_EQ_INT(fl_data_chat_template(tok, tpl, &ct), 0);
    fl_data_options o = fl_data_options_default();
    o.chat_template = ct;
    char *log = NULL;
    size_t log_len = 0;
    o.log = open_memstream(&log, &log_len);
    fl_dataset ds = {0};
    CHECK_EQ_INT(fl_dataset_load(&ds, data, tok, &o), 0);
    fclose(o.log);
    CHECK_EQ_INT(ds.n_docs, 1);
    CHECK_EQ_INT(ds.n_bad, 4);
    const char *want[] = {":2: skipped: chat template raised: unknown role robot", ":3: skipped: field 'messages': no assistant message",
                          ":4: skipped: field 'tools': expected a list", ":5: skipped: field 'messages[0].role': expected a string"};
    for (size_t i = 0; i < 4; i++) {
        char line[512];
        snprintf(line, sizeof line, "%s%s", data, want[i]);
        CHECK_STR_CONTAINS(log, line);
    }
    int lines = 0;
    for (const char *p = log; p && *p; p++) lines += *p == '\n';
    CHECK_MSG(lines == 4, "expected 4 lines, got:\n%s", log);
    free(log);
    fl_dataset_free(&ds);
    fl_chat_template_free(ct);
    CHECK_EQ_INT(fl_data_chat_template(tok, bad_tpl, &ct), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), bad_tpl);
    CHECK_STR_CONTAINS(fl_last_error(), "line 1 column");
    CHECK(!strchr(fl_last_error(), '\n'));
    unlink(tpl);
    unlink(bad_tpl);
    unlink(data);
    free(tpl);
    free(bad_tpl);
    free(data);
    fl_tokenizer_free(tok);
}

/* `train --chat-template FILE --chat-date S` on a folder without a template: the run renders its messages data with the file and
 * records both in train_config.json; a template that does not parse is one line with line:column. */
TEST(train_data_chat_cli_template_and_date_recorded) {
    const char *bin = fl_test_bin();
    if (!bin) SKIP("FASTLORA_BIN not set");
    if (!fl_test_shared_dir()) SKIP("../shared not found");
    char dir[] = "/tmp/fastlora-chatcli-XXXXXX", path[600], model[512], *out = malloc(1 << 16);
    if (!mkdtemp(dir)) { CHECK(0); free(out); return; }
    int rc = chat_fixture_stories260k(dir, model, sizeof model); /* a real model whose tokenizer has no template */
    char *tpl = temp_file("{{ strftime_now('%Y-%m-%d') }}\n{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}"
                          "<|im_end|>\n{% endfor %}");
    char *bad = temp_file("{% for m in messages %}\n{{ m.content }{% endfor %}");
    char *data = temp_file("{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}, {\"role\": \"assistant\", \"content\": \"hello there\"}]}\n"
                           "{\"messages\": [{\"role\": \"user\", \"content\": \"2+2?\"}, {\"role\": \"assistant\", \"content\": \"4\"}]}\n");
    const char *common = "--seq 32 --batch 1 --max-steps 1 --device cpu --log-every 0 --eval-every 0 --save-every 0";
    /* the folder has no template: each messages record says so, then the file has no usable one */
    rc = fl_test_run_cli(out, 1 << 16, "train --model %s --data %s --out %s/none %s", model, data, dir, common);
    CHECK_EQ_INT(rc, 2);
    CHECK_STR_CONTAINS(out, "chat_template: none");
    CHECK_STR_CONTAINS(out, "pass --chat-template FILE");
    rc = fl_test_run_cli(out, 1 << 16, "train --model %s --data %s --out %s/run --chat-template %s --chat-date 1700000000 %s",
                             model, data, dir, tpl, common);
    CHECK_MSG(rc == 0, "train: %s", out);
    snprintf(path, sizeof path, "%s/run/train_config.json", dir);
    json_t *cfg = json_load_file(path, 0, NULL);
    CHECK_MSG(cfg && !strcmp(json_string_value(json_object_get(cfg, "chat-template")) ? json_string_value(json_object_get(cfg, "chat-template")) : "", tpl),
              "train_config.json: chat-template");
    CHECK_EQ_INT(json_integer_value(json_object_get(cfg, "chat-date")), 1700000000);
    json_decref(cfg);
    rc = fl_test_run_cli(out, 1 << 16, "train --model %s --data %s --out %s/bad --chat-template %s %s", model, data, dir, bad, common);
    CHECK_EQ_INT(rc, 2);
    char want[700];
    snprintf(want, sizeof want, "%s: chat template: line 2 column", bad);
    CHECK_STR_CONTAINS(out, want);
    /* without --chat-date the run's start time is recorded, so --config OUT/train_config.json renders the same */
    rc = fl_test_run_cli(out, 1 << 16, "train --model %s --data %s --out %s/now --chat-template %s %s", model, data, dir, tpl, common);
    CHECK_MSG(rc == 0, "train: %s", out);
    snprintf(path, sizeof path, "%s/now/train_config.json", dir);
    cfg = json_load_file(path, 0, NULL);
    CHECK(json_integer_value(json_object_get(cfg, "chat-date")) > 1700000000);
    json_decref(cfg);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
    unlink(tpl);
    unlink(bad);
    unlink(data);
    free(tpl);
    free(bad);
    free(data);
    free(out);
}
