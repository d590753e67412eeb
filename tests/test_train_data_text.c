/* test_train_data_text.c — plain-text datasets (train/data_text.c): a .txt file (or --format
 * text-file) is ONE document encoded exactly as the {"text"} row of the same text, text-paragraphs
 * one per blank-line-separated block, text-lines one per line; line ends, byte-order marks; a long
 * document is split by the batcher like a long {"text"} row; a .txt holding JSONL. Then the real
 * thing: `fastlora train --data tinyshakespeare/input.txt` on stories260K (from ../shared, skipped
 * without it). The tokenizer is the tiny byte-level BPE of tests/fixtures/train/tok (eos 2). Bad
 * text files are in test_bad_input_data.c. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"
#include "io/file_util.h"
#include "test.h"
#include "train/batch.h"
#include "train/data.h"
#include "train/llama2c.h"

#define TOK_DIR "tests/fixtures/train/tok"

static fl_tokenizer *load_tok(void) {
    fl_tokenizer *tok = NULL;
    if (fl_tokenizer_load(&tok, TOK_DIR)) printf("    tokenizer: %s\n", fl_last_error());
    return tok;
}

static fl_data_options opts(fl_data_format f) {
    fl_data_options o = fl_data_options_default();
    o.format = f;
    o.eos_id = 2;
    o.vocab_size = 262;
    return o;
}

/* Writes bytes to /tmp/fastlora-text-XXXXXX<suffix>; returns a static path. */
static const char *write_file(const char *suffix, const char *bytes, size_t len) {
    static char path[96];
    snprintf(path, sizeof path, "/tmp/fastlora-text-XXXXXX%s", suffix);
    int fd = mkstemps(path, (int)strlen(suffix));
    if (fd < 0) return NULL;
    if (write(fd, bytes, len) != (ssize_t)len) { close(fd); return NULL; }
    close(fd);
    return path;
}

/* Loads bytes written to a file named *suffix under format f; rc, documents in *ds, log in log. */
static int load_bytes(const char *suffix, const char *bytes, size_t len, fl_data_format f, fl_tokenizer *tok,
                      fl_dataset *ds, char *log, size_t log_cap) {
    const char *path = write_file(suffix, bytes, len);
    fl_data_options o = opts(f);
    log[0] = 0;
    o.log = fmemopen(log, log_cap, "w");
    memset(ds, 0, sizeof *ds);
    int rc = fl_dataset_load(ds, path, tok, &o);
    fclose(o.log);
    unlink(path);
    return rc;
}

/* The document {"text": text} gives. */
static fl_doc text_row(fl_tokenizer *tok, const char *text) {
    json_t *o = json_pack("{s:s}", "text", text);
    char *line = json_dumps(o, 0);
    json_decref(o);
    fl_data_options opt = opts(FL_DATA_AUTO);
    fl_doc d;
    if (fl_data_parse_line(line, strlen(line), tok, &opt, &d)) memset(&d, 0, sizeof d);
    free(line);
    return d;
}

static int same_doc(const fl_doc *a, const fl_doc *b) {
    return a->n == b->n && a->n > 0 && !memcmp(a->ids, b->ids, sizeof(int32_t) * (size_t)a->n) &&
           !memcmp(a->mask, b->mask, (size_t)a->n);
}

/* The documents of ds are the {"text"} rows of want[0..n). */
static void check_docs_are_rows(const char *what, fl_tokenizer *tok, const fl_dataset *ds, const char *const *want, size_t n) {
    CHECK_MSG(ds->n_docs == n, "%s: %zu documents, expected %zu", what, ds->n_docs, n);
    for (size_t i = 0; i < n && i < ds->n_docs; i++) {
        fl_doc row = text_row(tok, want[i]);
        CHECK_MSG(same_doc(&ds->docs[i], &row), "%s: document %zu is not the {\"text\"} row of '%s'", what, i, want[i]);
        free(row.ids);
        free(row.mask);
    }
}

/* A .txt file is one document: BOS/EOS as a {"text"} row of the whole text (trailing newline kept,
 * blank lines kept), with "\r\n" and a lone "\r" read as "\n" and a byte-order mark dropped. It used
 * to be read as JSONL: every line "invalid JSON", nothing to train on. */
TEST(train_data_text_file_is_one_document_like_a_text_row) {
    fl_tokenizer *tok = load_tok();
    if (!tok) { CHECK(0); return; }
    const char *want[] = {"the cat\n\nthe hat\n  \nend\n"};
    const char *spellings[][2] = {
        {"lf", "the cat\n\nthe hat\n  \nend\n"},
        {"crlf", "the cat\r\n\r\nthe hat\r\n  \r\nend\r\n"},
        {"lone cr", "the cat\r\rthe hat\r  \rend\r"},
        {"bom", "\xEF\xBB\xBFthe cat\n\nthe hat\n  \nend\n"},
    };
    char log[1024];
    for (size_t i = 0; i < sizeof spellings / sizeof spellings[0]; i++) {
        fl_dataset ds;
        const char *bytes = spellings[i][1];
        CHECK_EQ_INT(load_bytes(".txt", bytes, strlen(bytes), FL_DATA_AUTO, tok, &ds, log, sizeof log), 0);
        check_docs_are_rows(spellings[i][0], tok, &ds, want, 1);
        CHECK_EQ_INT(ds.n_lines, 1);
        fl_dataset_free(&ds);
        /* --format text-file: the same, whatever the name */
        CHECK_EQ_INT(load_bytes(".data", bytes, strlen(bytes), FL_DATA_TEXT_FILE, tok, &ds, log, sizeof log), 0);
        check_docs_are_rows(spellings[i][0], tok, &ds, want, 1);
        fl_dataset_free(&ds);
    }
    /* no final newline: none in the document */
    fl_dataset ds;
    const char *last[] = {"a\nb"};
    CHECK_EQ_INT(load_bytes(".TXT", "a\nb", 3, FL_DATA_AUTO, tok, &ds, log, sizeof log), 0);
    check_docs_are_rows("no final newline", tok, &ds, last, 1);
    fl_dataset_free(&ds);
    fl_tokenizer_free(tok);
}

/* text-paragraphs: one document per block of lines between blank lines (whitespace-only lines are
 * blank; the block's lines joined by "\n"); text-lines: one per non-blank line. */
TEST(train_data_text_paragraphs_and_lines) {
    fl_tokenizer *tok = load_tok();
    if (!tok) { CHECK(0); return; }
    const char *text = "\xEF\xBB\xBF\r\n\r\nthe cat\r\n  sat\r\n\r\n \t \r\n\r\nthe hat\r\nend";
    char log[1024];
    fl_dataset ds;
    CHECK_EQ_INT(load_bytes(".txt", text, strlen(text), FL_DATA_TEXT_PARAGRAPHS, tok, &ds, log, sizeof log), 0);
    const char *paragraphs[] = {"the cat\n  sat", "the hat\nend"};
    check_docs_are_rows("paragraphs", tok, &ds, paragraphs, 2);
    CHECK_EQ_INT(ds.n_lines, 2);
    CHECK_EQ_INT(ds.n_bad, 0);
    fl_dataset_free(&ds);
    CHECK_EQ_INT(load_bytes(".txt", text, strlen(text), FL_DATA_TEXT_LINES, tok, &ds, log, sizeof log), 0);
    const char *lines[] = {"the cat", "  sat", "the hat", "end"};
    check_docs_are_rows("lines", tok, &ds, lines, 4);
    fl_dataset_free(&ds);
    /* a paragraph over the line limit is a bad record, reported at its first line and skipped */
    fl_data_options o = opts(FL_DATA_TEXT_PARAGRAPHS);
    o.max_line_bytes = 12;
    const char *path = write_file(".txt", "a b\n\nthe longest\nparagraph\n\nc d\n", 30);
    o.log = fmemopen(log, sizeof log, "w");
    memset(&ds, 0, sizeof ds);
    CHECK_EQ_INT(fl_dataset_load(&ds, path, tok, &o), 0);
    fclose(o.log);
    CHECK_EQ_INT(ds.n_docs, 2);
    CHECK_EQ_INT(ds.n_bad, 1);
    CHECK_STR_CONTAINS(log, ":3: skipped: paragraph longer than 12 bytes");
    fl_dataset_free(&ds);
    unlink(path);
    fl_tokenizer_free(tok);
}

/* A document longer than --seq: the batcher splits it into pieces that share one token, as it
 * splits the {"text"} row of the same text; every target once. */
TEST(train_data_text_long_document_splits_like_a_text_row) {
    fl_tokenizer *tok = load_tok();
    if (!tok) { CHECK(0); return; }
    char text[2048] = "";
    for (int i = 0; i < 60; i++) strcat(text, i % 7 == 6 ? "the hat.\n" : "the cat ");
    char log[256];
    fl_dataset ds;
    CHECK_EQ_INT(load_bytes(".txt", text, strlen(text), FL_DATA_AUTO, tok, &ds, log, sizeof log), 0);
    const char *want[] = {text};
    check_docs_are_rows("long", tok, &ds, want, 1);
    if (ds.n_docs != 1) { fl_dataset_free(&ds); fl_tokenizer_free(tok); return; }
    uint32_t idx[] = {0};
    fl_pack_options po = {.T = 16, .packing = 1};
    fl_rows rows;
    fl_rows_build(&rows, &ds, idx, 1, &po, 0);
    int n = ds.docs[0].n, counted = 0;
    CHECK(n > 100);
    CHECK_EQ_INT(rows.n_rows, (size_t)(n - 1 + 15) / 16);
    for (size_t r = 0; r < rows.n_rows; r++) {
        int32_t ids[16], tg[16], pos[16], seg[16];
        counted += fl_rows_fill(&rows, &ds, r, ids, tg, pos, seg);
    }
    CHECK_EQ_INT(counted, n - 1);
    fl_rows_free(&rows);
    fl_dataset_free(&ds);
    fl_tokenizer_free(tok);
}

/* A .txt whose first line is a JSON object is JSONL under another name (with a note); the
 * detection is what `train` and its checks use. --format text-file reads it as text. */
TEST(train_data_txt_holding_jsonl_reads_as_jsonl) {
    fl_tokenizer *tok = load_tok();
    if (!tok) { CHECK(0); return; }
    const char *jsonl = "\n{\"text\": \"the cat\"}\n{\"text\": \"the hat\"}\n";
    char log[1024];
    fl_dataset ds;
    CHECK_EQ_INT(load_bytes(".txt", jsonl, strlen(jsonl), FL_DATA_AUTO, tok, &ds, log, sizeof log), 0);
    const char *rows[] = {"the cat", "the hat"};
    check_docs_are_rows("jsonl.txt", tok, &ds, rows, 2);
    CHECK_STR_CONTAINS(log, "read as JSONL: its first line is a JSON object (--format text-file reads it as plain text)");
    fl_dataset_free(&ds);
    CHECK_EQ_INT(load_bytes(".txt", jsonl, strlen(jsonl), FL_DATA_TEXT_FILE, tok, &ds, log, sizeof log), 0);
    const char *whole[] = {jsonl};
    check_docs_are_rows("jsonl.txt as text", tok, &ds, whole, 1);
    fl_dataset_free(&ds);
    /* "[Verse 1]" is text, not a JSON array */
    const char *lyrics = "[Verse 1]\nthe cat\n";
    const char *path = write_file(".txt", lyrics, strlen(lyrics));
    CHECK_EQ_INT(fl_data_detect_format(path, FL_DATA_AUTO), FL_DATA_TEXT_FILE);
    CHECK_EQ_INT(fl_data_detect_format(path, FL_DATA_PROMPT), FL_DATA_PROMPT);
    unlink(path);
    path = write_file(".jsonl", lyrics, strlen(lyrics));
    CHECK_EQ_INT(fl_data_detect_format(path, FL_DATA_AUTO), FL_DATA_AUTO);
    unlink(path);
    fl_tokenizer_free(tok);
}

/* ---- the shared data, as a user runs it ----------------------------------------------------- */

/* stories260K converted from ../shared into dir/s260; the path of tinyshakespeare in *text. */
static int shared_model(const char *dir, char *model, size_t cap, char *text, size_t text_cap) {
    const char *shared = fl_test_shared_dir();
    if (!shared) return 0;
    char ckpt[512], tok[512];
    snprintf(ckpt, sizeof ckpt, "%s/data/stories260K/stories260K.bin", shared);
    snprintf(tok, sizeof tok, "%s/data/stories260K/tok512.bin", shared);
    snprintf(text, text_cap, "%s/data/tinyshakespeare/input.txt", shared);
    snprintf(model, cap, "%s/s260", dir);
    return fl_file_exists(ckpt) && fl_file_exists(text) && fl_llama2c_convert(ckpt, tok, model, 0) == 0;
}

/* `fastlora train --data input.txt` used to print "invalid JSON" for its lines and stop: now one
 * document (split into rows), or 7,222 paragraphs (the count docs/TRAINING.md gives); --eval-frac
 * on one document is one line saying what would work. */
TEST(train_data_text_cli_tinyshakespeare) {
    if (!fl_test_bin()) SKIP("FASTLORA_BIN not set");
    char dir[] = "/tmp/fastlora-text-cli-XXXXXX";
    if (!mkdtemp(dir)) SKIP("mkdtemp failed");
    char model[128], text[512], out[16384];
    if (!shared_model(dir, model, sizeof model, text, sizeof text)) {
        rmdir(dir);
        SKIP("../shared (stories260K, tinyshakespeare) not found");
    }
    const char *common = "--max-steps 1 --seq 64 --batch 1 --save-every 0 --dtype f32";
    int rc = fl_test_run_cli(out, sizeof out, "train --model %s --data %s --out %s/r1 %s", model, text, dir, common);
    CHECK_EQ_INT(rc, 0);
    CHECK_STR_CONTAINS(out, "train: 1 documents (0 bad lines skipped)");
    CHECK(!strstr(out, "invalid JSON"));
    rc = fl_test_run_cli(out, sizeof out, "train --model %s --data %s --format text-paragraphs --out %s/r2 %s", model,
                         text, dir, common);
    CHECK_EQ_INT(rc, 0);
    CHECK_STR_CONTAINS(out, "train: 7222 documents");
    rc = fl_test_run_cli(out, sizeof out, "train --model %s --data %s --eval-frac 0.05 --out %s/r3 %s", model, text, dir,
                         common);
    CHECK_EQ_INT(rc, 2);
    CHECK_STR_CONTAINS(out, "is read as ONE document");
    CHECK_STR_CONTAINS(out, "give --eval-data FILE, or --format text-paragraphs");
    CHECK_MSG(strchr(out, '\n') == out + strlen(out) - 1, "expected one line: %s", out);
    /* --format text is the JSONL shape: one line naming the plain-text format */
    rc = fl_test_run_cli(out, sizeof out, "train --model %s --data %s --format text --out %s/r4 %s", model, text, dir,
                         common);
    CHECK_EQ_INT(rc, 2);
    CHECK_STR_CONTAINS(out, "plain text is --format text-file");
    CHECK_MSG(strchr(out, '\n') == out + strlen(out) - 1, "expected one line: %s", out);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK_EQ_INT(system(cmd), 0);
}
