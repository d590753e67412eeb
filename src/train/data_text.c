/* data_text.c — plain-text datasets (data.h): the whole file as ONE document (text-file), one per
 * block of lines between blank lines (text-paragraphs), or one per non-blank line (text-lines).
 * Each document is encoded as a {"text"} record is (fl_data_text_doc: BOS when the tokenizer adds
 * one, EOS appended), so a corpus trains the same as its JSONL form; documents longer than --seq
 * are split by the batcher like any other. Lines end at "\n", "\r\n" or a lone "\r" and are joined
 * with "\n"; a leading UTF-8 byte-order mark is dropped; a NUL byte or invalid UTF-8 refuses the
 * file with one line. Not JSON (data.c) and not the batching (batch.c).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/error.h"
#include "io/file_util.h"
#include "tokenizer/text_check.h"
#include "train/data_internal.h"

/* The document being gathered, and where it goes. */
typedef struct {
    fl_dataset *ds;
    fl_tokenizer *tok;
    const fl_data_options *opt;
    fl_data_report r;
    const char *what;      /* "document", "paragraph", "line": for the messages */
    char *text;            /* (len) the document so far, lines joined by "\n" */
    size_t len, cap, limit;
    size_t first_line;     /* the line it starts at (1-based; 0: nothing gathered) */
    int too_long;          /* it passed `limit`: a bad record when emitted */
} text_reader;

static void text_append(text_reader *t, const char *s, size_t n) {
    if (t->too_long || !n) return; /* s may be NULL for an empty line */
    if (n > t->limit - t->len) { t->too_long = 1; return; }
    if (t->len + n + 1 > t->cap) {
        size_t nc = t->cap ? t->cap : 4096;
        while (nc < t->len + n + 1) nc *= 2;
        char *nb = realloc(t->text, nc);
        if (!nb) fl_die("out of memory reading text (%zu bytes)", nc);
        t->text = nb;
        t->cap = nc;
    }
    memcpy(t->text + t->len, s, n);
    t->len += n;
}

/* Adds the gathered document (if any) to the dataset, or reports it as a bad record. */
static int text_emit(text_reader *t) {
    if (!t->first_line) return 0;
    t->ds->n_lines++;
    t->r.n_records++;
    fl_doc doc;
    int rc = t->too_long ? fl_input_error("%s longer than %zu bytes", t->what, t->limit)
                         : fl_data_text_doc(t->text, t->len, t->tok, t->opt, &doc);
    int status = 0;
    if (!rc) {
        fl_data_push(t->ds, doc);
        fl_data_report_good(&t->r);
    } else {
        char where[32];
        snprintf(where, sizeof where, "%zu", t->first_line);
        status = fl_data_report_bad(&t->r, where, fl_last_error());
        if (!status) t->ds->n_bad++;
    }
    t->len = 0;
    t->first_line = 0;
    t->too_long = 0;
    return status;
}

/* A line that is not UTF-8 text: one error for the whole file (a corpus has one encoding). */
static int check_line(const char *path, size_t lineno, const char *s, size_t len) {
    int nul;
    size_t bad = fl_text_check(s, len, &nul);
    if (bad == len) return 0;
    if (nul)
        return fl_input_error("%s:%zu: a NUL byte (byte %zu of the line): binary data, not UTF-8 text (plain-text "
                              "formats read UTF-8; pre-tokenized data goes in a fastlora tokens file)", path, lineno, bad + 1);
    return fl_input_error("%s:%zu: not UTF-8 text (byte 0x%02X, byte %zu of the line); save the file as UTF-8 "
                          "(e.g. iconv -f latin1 -t utf-8)", path, lineno, (unsigned char)s[bad], bad + 1);
}

static int is_blank_line(const char *s, size_t len) {
    for (size_t k = 0; k < len; k++)
        if (s[k] != ' ' && s[k] != '\t') return 0;
    return 1;
}

/* One line into the reader, by format: a document of its own, a paragraph's line or a blank line
 * ending one, or the next line of the one document. */
static int text_line(text_reader *t, fl_data_format f, size_t lineno, const char *s, size_t len, int too_long,
                     int ended) {
    int blank = !too_long && is_blank_line(s, len);
    if (f == FL_DATA_TEXT_FILE) {
        if (!t->first_line) t->first_line = lineno;
        text_append(t, s, len);
        if (ended) text_append(t, "\n", 1);
        t->too_long |= too_long;
        return 0;
    }
    if (blank) return f == FL_DATA_TEXT_PARAGRAPHS ? text_emit(t) : 0;
    if (t->first_line) text_append(t, "\n", 1);
    else t->first_line = lineno;
    text_append(t, s, len);
    t->too_long |= too_long;
    return f == FL_DATA_TEXT_LINES ? text_emit(t) : 0;
}

/* The whole file is one document: it must fit the text limit (1 GiB, as `tokenize --file`). */
static int check_document_size(FILE *fp, const char *path, size_t limit) {
    struct stat st;
    if (fstat(fileno(fp), &st) != 0) return fl_input_error("cannot read %s: cannot stat", path);
    if ((uint64_t)st.st_size <= limit) return 0;
    return fl_input_error("%s: %.1f GiB is too large to be one document (--format text-file: at most %.1f GiB); "
                          "--format text-paragraphs or text-lines reads it as many", path,
                          (double)st.st_size / (1 << 30), (double)limit / (1 << 30));
}

int fl_data_load_text(fl_dataset *ds, const char *path, fl_tokenizer *tok, const fl_data_options *opt, fl_data_format f) {
    FILE *fp;
    FL_TRY(fl_file_fopen_read(path, FL_FILE_DATASET, &fp));
    text_reader t = {.ds = ds, .tok = tok, .opt = opt};
    t.what = f == FL_DATA_TEXT_FILE ? "document" : f == FL_DATA_TEXT_PARAGRAPHS ? "paragraph" : "line";
    t.limit = f == FL_DATA_TEXT_FILE ? (size_t)fl_file_limit(FL_FILE_TEXT) : opt->max_line_bytes;
    int status = f == FL_DATA_TEXT_FILE ? check_document_size(fp, path, t.limit) : 0;
    if (!status) status = fl_data_skip_bom(fp, path);
    fl_data_report_init(&t.r, path, opt, t.what);
    char *buf = NULL;
    size_t cap = 0, len = 0, lineno = 0;
    int too_long = 0, ended = 0, any_text = 0;
    while (!status && fl_data_read_line(fp, &buf, &cap, &len, t.limit, &too_long, &ended)) {
        lineno++;
        if (!too_long) status = check_line(path, lineno, buf, len);
        any_text |= too_long || !is_blank_line(buf, len);
        if (!status) status = text_line(&t, f, lineno, buf, len, too_long, ended);
    }
    if (!status && ferror(fp)) status = fl_input_error("%s: read error", path);
    if (!status && any_text) status = text_emit(&t);   /* the last paragraph, or the one document */
    if (!status) status = fl_data_report_finish(&t.r, 0, lineno ? "only blank lines" : "empty file");
    else fl_data_report_free(&t.r);
    free(buf);
    free(t.text);
    fclose(fp);
    return status;
}
