/* csv.h — a small RFC 4180 CSV reader: quoted fields may hold commas, newlines and doubled
 * quotes ("" -> "); CRLF or LF line ends; blank lines and lines starting with '#' are skipped.
 * A leading UTF-8 byte-order mark is skipped. Each row remembers the line it starts on so callers
 * can report "file:line: ...". Not a writer and not streaming: the whole file is read (catalogs
 * are small; fl_file_read_all refuses more than FL_FILE_TABLE's limit). */
#ifndef FL_CSV_H
#define FL_CSV_H

#include <stddef.h>

typedef struct {
    char **fields;   /* (n) NUL-terminated, unquoted */
    int n;
    int line;        /* 1-based line the row starts on */
} fl_csv_row;

typedef struct {
    fl_csv_row *rows;   /* rows[0] is the header when the file has one */
    int n_rows;
} fl_csv_table;

/* Parses `len` bytes of text; `name` is used in error messages ("name:line: ..."). */
int fl_csv_parse(fl_csv_table *t, const char *text, size_t len, const char *name);
/* Reads (fl_file_read_all, FL_FILE_TABLE) and parses a file. */
int fl_csv_read_file(fl_csv_table *t, const char *path);
void fl_csv_free(fl_csv_table *t);

#endif
