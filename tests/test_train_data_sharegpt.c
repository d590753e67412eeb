/* test_train_data_sharegpt.c — data as users have it: ShareGPT rows (conversations of from/value,
 * human/gpt roles, and role/content under other keys through --fields) give the same document as
 * the same conversation in `messages`; a folder or a glob as --data reads its files in byte order
 * of their names, the same documents as one file holding them in that order.
 * Not the chat rendering itself (test_train_data_chat.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "chat_fixture.h"
#include "cli_run.h"
#include "common/error.h"
#include "io/file_util.h"
#include "test.h"
#include "train/data.h"

#define TOK_DIR "tests/fixtures/train/tok"

static fl_data_options opts(const char *fields) {
    fl_data_options o = fl_data_options_default();
    o.eos_id = 2;
    o.vocab_size = 262;
    if (fields) fl_data_parse_field_map(fields, &o);
    return o;
}

static int same(const fl_doc *a, const fl_doc *b) {
    return a->n == b->n && !memcmp(a->ids, b->ids, sizeof(int32_t) * (size_t)a->n) && !memcmp(a->mask, b->mask, (size_t)a->n);
}

static void doc_free(fl_doc *d) { free(d->ids); free(d->mask); }

static const char messages_row[] =
    "{\"messages\": [{\"role\": \"system\", \"content\": \"be brief\"}, {\"role\": \"user\", \"content\": \"hi\"},"
    "{\"role\": \"assistant\", \"content\": \"the one\"}, {\"role\": \"user\", \"content\": \"again\"},"
    "{\"role\": \"assistant\", \"content\": \"the two\"}]}";

TEST(train_data_sharegpt_rows_equal_messages) {
    fl_tokenizer *tok = NULL;
    if (fl_tokenizer_load(&tok, TOK_DIR)) { CHECK_MSG(0, "tokenizer: %s", fl_last_error()); return; }
    fl_data_options o = opts(NULL);
    fl_doc want, got;
    CHECK_EQ_INT(fl_data_parse_line(messages_row, strlen(messages_row), tok, &o, &want), 0);
    const char *sharegpt =
        "{\"conversations\": [{\"from\": \"system\", \"value\": \"be brief\"}, {\"from\": \"human\", \"value\": \"hi\"},"
        "{\"from\": \"gpt\", \"value\": \"the one\"}, {\"from\": \"human\", \"value\": \"again\"},"
        "{\"from\": \"gpt\", \"value\": \"the two\"}], \"id\": \"x1\"}";
    CHECK_EQ_INT(fl_data_parse_line(sharegpt, strlen(sharegpt), tok, &o, &got), 0);
    CHECK(same(&got, &want));
    doc_free(&got);
    /* role/content under other keys, the list under another name: --fields (Axolotl's
     * field_messages + message_property_mappings map to this) */
    fl_data_options f = opts("messages=dialog,role=speaker,content=text");
    const char *other = "{\"dialog\": [{\"speaker\": \"system\", \"text\": \"be brief\"}, {\"speaker\": \"user\", \"text\": \"hi\"},"
                        "{\"speaker\": \"assistant\", \"text\": \"the one\"}, {\"speaker\": \"human\", \"text\": \"again\"},"
                        "{\"speaker\": \"gpt\", \"text\": \"the two\"}]}";
    CHECK_EQ_INT(fl_data_parse_line(other, strlen(other), tok, &f, &got), 0);
    CHECK(same(&got, &want));
    doc_free(&got);
    /* a ShareGPT row without an assistant turn: the messages error, one line */
    const char *none = "{\"conversations\": [{\"from\": \"human\", \"value\": \"hi\"}]}";
    CHECK_EQ_INT(fl_data_parse_line(none, strlen(none), tok, &o, &got), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "no assistant message");
    const char *bad_role = "{\"conversations\": [{\"from\": 3, \"value\": \"hi\"}, {\"from\": \"gpt\", \"value\": \"x\"}]}";
    CHECK_EQ_INT(fl_data_parse_line(bad_role, strlen(bad_role), tok, &o, &got), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "messages[0].role");
    doc_free(&want);
    fl_tokenizer_free(tok);
}

static void write_file(const char *dir, const char *name, const char *text) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

static int load(const char *spec, fl_tokenizer *tok, fl_dataset *ds) {
    fl_data_options o = opts(NULL);
    memset(ds, 0, sizeof *ds);
    return fl_dataset_load(ds, spec, tok, &o);
}

static int same_dataset(const fl_dataset *a, const fl_dataset *b) {
    if (a->n_docs != b->n_docs) return 0;
    for (size_t i = 0; i < a->n_docs; i++)
        if (!same(&a->docs[i], &b->docs[i])) return 0;
    return 1;
}

TEST(train_data_folder_and_glob_in_name_order) {
    fl_tokenizer *tok = NULL;
    if (fl_tokenizer_load(&tok, TOK_DIR)) { CHECK_MSG(0, "tokenizer: %s", fl_last_error()); return; }
    char *dir = cr_temp_dir(), sub[600], spec[700];
    snprintf(sub, sizeof sub, "%s/data", dir);
    mkdir(sub, 0755);
    /* b.jsonl, a10.json (an array), a9.jsonl: byte order is a10.json, a9.jsonl, b.jsonl */
    write_file(sub, "b.jsonl", "{\"text\": \"third\"}\n");
    write_file(sub, "a9.jsonl", "{\"text\": \"second\"}\n{\"prompt\": \"p\", \"completion\": \"c\"}\n");
    write_file(sub, "a10.json", "[{\"text\": \"first\"}]");
    write_file(sub, "notes.txt", "not data\n");  /* a folder reads .jsonl and .json only */
    write_file(sub, ".hidden.jsonl", "{\"text\": \"never\"}\n");
    mkdir(strcat(strcpy(spec, sub), "/nested.jsonl"), 0755); /* a folder named like data: not read */
    write_file(dir, "one.jsonl", "{\"text\": \"first\"}\n{\"text\": \"second\"}\n{\"prompt\": \"p\", \"completion\": \"c\"}\n"
                                 "{\"text\": \"third\"}\n");
    fl_dataset ref, got;
    snprintf(spec, sizeof spec, "%s/one.jsonl", dir);
    CHECK_EQ_INT(load(spec, tok, &ref), 0);
    CHECK_EQ_INT(ref.n_docs, 4);
    CHECK_EQ_INT(load(sub, tok, &got), 0);
    CHECK(same_dataset(&got, &ref));
    fl_dataset_free(&got);
    snprintf(spec, sizeof spec, "%s/*.json*", sub);
    CHECK_EQ_INT(load(spec, tok, &got), 0);
    CHECK(same_dataset(&got, &ref));
    fl_dataset_free(&got);
    fl_dataset_free(&ref);
    /* bad: no match, a folder without data files, a bad file named with its line */
    snprintf(spec, sizeof spec, "%s/*.parquet", sub);
    CHECK_EQ_INT(load(spec, tok, &got), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "no file matches this pattern");
    fl_dataset_free(&got);
    snprintf(spec, sizeof spec, "%s/data/nested.jsonl", dir);
    CHECK_EQ_INT(load(spec, tok, &got), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "a folder without .jsonl or .json files");
    fl_dataset_free(&got);
    write_file(sub, "c.jsonl", "{\"nope\": 1}\n");
    CHECK_EQ_INT(load(sub, tok, &got), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "c.jsonl");
    fl_dataset_free(&got);
    cr_remove_tree(dir);
    free(dir);
    fl_tokenizer_free(tok);
}

/* Through the CLI on stories260K (../shared): ShareGPT rows in a folder as --data, a glob as
 * --eval-data, with an Axolotl YAML naming them. */
TEST(train_data_folder_glob_sharegpt_cli) {
    if (!fl_test_bin()) SKIP("FASTLORA_BIN not set");
    if (!fl_test_shared_dir()) SKIP("../shared not found");
    char *dir = cr_temp_dir(), sub[600], model[512], yaml[4096], out[16384];
    if (chat_fixture_stories260k(dir, model, sizeof model)) { CHECK_MSG(0, "stories260K fixture"); cr_remove_tree(dir); free(dir); return; }
    snprintf(sub, sizeof sub, "%s/train", dir);
    mkdir(sub, 0755);
    write_file(sub, "a.jsonl", "{\"conversations\": [{\"from\": \"human\", \"value\": \"hi\"}, {\"from\": \"gpt\", \"value\": \"hello there\"}]}\n"
                               "{\"conversations\": [{\"from\": \"human\", \"value\": \"2+2?\"}, {\"from\": \"gpt\", \"value\": \"4\"}]}\n");
    write_file(sub, "b.json", "[{\"conversations\": [{\"from\": \"system\", \"value\": \"terse\"}, {\"from\": \"human\", \"value\": \"a?\"}, "
                              "{\"from\": \"gpt\", \"value\": \"b\"}]}]");
    write_file(dir, "e1.jsonl", "{\"conversations\": [{\"from\": \"human\", \"value\": \"x\"}, {\"from\": \"gpt\", \"value\": \"y\"}]}\n");
    write_file(dir, "tpl.jinja", "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}");
    snprintf(yaml, sizeof yaml, "base_model: %s\ndatasets:\n  - path: %s\n    type: sharegpt\ntest_datasets:\n"
             "  - path: %s/e*.jsonl\n    type: sharegpt\nsequence_len: 32\nmax_steps: 2\nlora_r: 4\nlora_alpha: 8\n"
             "learning_rate: 0.001\noutput_dir: %s/run\nuse_tensorboard: true\n", model, sub, dir, dir);
    write_file(dir, "run.yaml", yaml);
    char args[1024];
    snprintf(args, sizeof args, "train --config %s/run.yaml --chat-template %s/tpl.jinja --device cpu --log-every 0", dir, dir);
    int rc = cr_run(out, sizeof out, NULL, args);
    CHECK_MSG(rc == 0, "train: %s", out);
    CHECK_STR_CONTAINS(out, "done: 2 steps");
    snprintf(args, sizeof args, "%s/run/train_config.json", dir);
    CHECK(fl_file_exists(args));
    cr_remove_tree(dir);
    free(dir);
}
