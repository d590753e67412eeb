/* csv.c — the CSV reader (see csv.h). */
#include "plan/csv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "io/file_util.h"

typedef struct {
    char *buf;
    size_t len, cap;
} str_buf;

static void sb_put(str_buf *s, char ch) {
    if (s->len + 2 > s->cap) {
        s->cap = s->cap ? s->cap * 2 : 64;
        char *p = realloc(s->buf, s->cap);
        if (!p) fl_die("out of memory reading CSV");
        s->buf = p;
    }
    s->buf[s->len++] = ch;
    s->buf[s->len] = 0;
}

static char *sb_take(str_buf *s) {
    char *out = s->buf ? s->buf : strdup("");
    if (!out) fl_die("out of memory reading CSV");
    s->buf = NULL;
    s->len = s->cap = 0;
    return out;
}

static void row_push(fl_csv_row *r, char *field) {
    char **p = realloc(r->fields, sizeof(char *) * (size_t)(r->n + 1));
    if (!p) fl_die("out of memory reading CSV");
    r->fields = p;
    r->fields[r->n++] = field;
}

static void table_push(fl_csv_table *t, fl_csv_row *r) {
    fl_csv_row *p = realloc(t->rows, sizeof(fl_csv_row) * (size_t)(t->n_rows + 1));
    if (!p) fl_die("out of memory reading CSV");
    t->rows = p;
    t->rows[t->n_rows++] = *r;
    memset(r, 0, sizeof *r);
}

static void row_free(fl_csv_row *r) {
    for (int i = 0; i < r->n; i++) free(r->fields[i]);
    free(r->fields);
    memset(r, 0, sizeof *r);
}

int fl_csv_parse(fl_csv_table *t, const char *text, size_t len, const char *name) {
    memset(t, 0, sizeof *t);
    str_buf field = {0};
    fl_csv_row row = {0};
    int line = 1;
    size_t i = len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3) ? 3 : 0;   /* a UTF-8 byte-order mark */
    while (i < len) {
        /* start of a record: skip blank and comment lines */
        if (text[i] == '\n' || text[i] == '\r') {
            if (text[i] == '\n') line++;
            i++;
            continue;
        }
        if (text[i] == '#') {
            while (i < len && text[i] != '\n') i++;
            continue;
        }
        row.line = line;
        for (;;) { /* one field per iteration */
            if (i < len && text[i] == '"') {
                int quote_line = line;
                i++;
                for (;;) {
                    if (i >= len) {
                        free(field.buf);
                        row_free(&row);
                        fl_csv_free(t);
                        return fl_input_error("%s:%d: unterminated quoted field (field %d)", name, quote_line, row.n + 1);
                    }
                    if (text[i] == '"') {
                        if (i + 1 < len && text[i + 1] == '"') { sb_put(&field, '"'); i += 2; continue; }
                        i++;
                        break;
                    }
                    if (text[i] == '\n') line++;
                    sb_put(&field, text[i++]);
                }
                if (i < len && text[i] != ',' && text[i] != '\n' && text[i] != '\r') {
                    int n = row.n + 1;
                    free(field.buf);
                    row_free(&row);
                    fl_csv_free(t);
                    return fl_input_error("%s:%d: field %d: expected ',' or end of line after a closing quote, got '%c'",
                                          name, line, n, text[i]);
                }
            } else {
                while (i < len && text[i] != ',' && text[i] != '\n' && text[i] != '\r') {
                    if (text[i] == '"') {
                        int n = row.n + 1;
                        free(field.buf);
                        row_free(&row);
                        fl_csv_free(t);
                        return fl_input_error("%s:%d: field %d: stray '\"' inside an unquoted field (quote the whole "
                                              "field and double the quote)", name, line, n);
                    }
                    sb_put(&field, text[i++]);
                }
            }
            row_push(&row, sb_take(&field));
            if (i < len && text[i] == ',') { i++; continue; }
            /* end of record */
            if (i < len && text[i] == '\r') i++;
            if (i < len && text[i] == '\n') { i++; line++; }
            break;
        }
        table_push(t, &row);
    }
    return 0;
}

int fl_csv_read_file(fl_csv_table *t, const char *path) {
    memset(t, 0, sizeof *t);
    char *text;
    size_t len;
    FL_TRY(fl_file_read_all(path, FL_FILE_TABLE, &text, &len));
    if (memchr(text, 0, len)) { free(text); return fl_input_error("%s: not a text file (contains NUL bytes)", path); }
    int status = fl_csv_parse(t, text, len, path);
    free(text);
    return status;
}

void fl_csv_free(fl_csv_table *t) {
    for (int r = 0; r < t->n_rows; r++) row_free(&t->rows[r]);
    free(t->rows);
    memset(t, 0, sizeof *t);
}
