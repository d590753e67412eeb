/* data_internal.h — what the dataset readers of src/train/ share: data.c (JSONL, JSON arrays,
 * tokens files), data_text.c (plain text) and data_report.c (bad records). The line reader, the
 * byte-order-mark check, adding a document, and the report of bad records. Not an API: nothing
 * outside src/train/data*.c includes it (the API is train/data.h).
 */
#ifndef FL_TRAIN_DATA_INTERNAL_H
#define FL_TRAIN_DATA_INTERNAL_H

#include <stddef.h>
#include <stdio.h>

#include "train/data.h"

#include <jansson.h>

/* Appends doc to ds, which takes ownership of its ids and mask. */
void fl_data_push(fl_dataset *ds, fl_doc doc);

/* Reads one line (without its end) into *buf, NUL-terminated; a line ends at "\n", "\r\n" or a lone
 * "\r". Lines over max bytes are consumed to their end and flagged (*too_long; the first max bytes
 * are kept). *ended: a line end was read (the last line of a file may have none). Returns 0 at EOF
 * with nothing read. Byte by byte, so NUL bytes inside a line are kept (*len counts them). */
int fl_data_read_line(FILE *f, char **buf, size_t *cap, size_t *len, size_t max, int *too_long, int *ended);

/* Skips UTF-8 byte-order marks at the start of f (Windows editors write one; Hugging Face datasets
 * accepts them). A UTF-16 or UTF-32 mark is an error: the data must be UTF-8. */
int fl_data_skip_bom(FILE *f, const char *path);

/* ---- bad records ------------------------------------------------------------------------------ */

#define FL_DATA_HELD_MAX 100 /* bad-record lines held back at most (opt->max_reported is capped here) */

/* The bad records of one file. Each is printed `path:WHERE: skipped: why` — but held back until the
 * file has given one good record, so a file with none prints nothing and becomes ONE error line
 * (fl_data_report_finish): the count and the first bad record, never thousands of lines. */
typedef struct {
    const char *path;
    const fl_data_options *opt;
    const char *unit;        /* "line" or "record": what a bad one is called in the messages */
    FILE *log;
    size_t n_records, n_bad, n_good;
    char *held[FL_DATA_HELD_MAX];
    int n_held, max_reported;
    char first[640];         /* "line 3: field 'text': missing" */
    char hint[256];          /* what would work, for the one-line error (set by the reader) */
} fl_data_report;

void fl_data_report_init(fl_data_report *r, const char *path, const fl_data_options *opt, const char *unit);
/* A bad record at `where` ("12" for a line, "[3]" for an array element), `why` the reason (it may be
 * fl_last_error()). Counted and reported; under --strict the one-line error (returned). */
int fl_data_report_bad(fl_data_report *r, const char *where, const char *why);
/* A good record: the held-back bad ones are printed now, later ones as they come. */
void fl_data_report_good(fl_data_report *r);
/* The end of the file (or of reading it, when gave_up): 0 when a record was usable, after a line
 * counting the bad ones not shown; else the one-line error:
 *   `PATH: NONE: no records to train on`    (no record at all; none: "empty file", "only blank lines")
 *   `PATH: no usable documents (N records, N bad): the first, line 1: WHY[; HINT]`
 *   `PATH: no usable documents in the first N lines (stopped reading): the first, ...`  (gave_up)
 * Frees what r holds. */
int fl_data_report_finish(fl_data_report *r, int gave_up, const char *none);
/* Frees what r holds, for a reader that stops with an error of its own. */
void fl_data_report_free(fl_data_report *r);

/* ---- chat records (data_chat.c) --------------------------------------------------------------- */

/* A {"messages", "tools"?, "documents"?, "chat_template_kwargs"?, "add_generation_prompt"?} record
 * (root borrowed) to a document: rendered with opt->chat_template (or, when NULL, the folder's
 * template compiled for this record), loss on the assistant spans. Errors without file:line. */
int fl_data_encode_messages(json_t *root, fl_tokenizer *tok, const fl_data_options *opt, fl_doc *doc);

/* ---- plain text (data_text.c) ----------------------------------------------------------------- */

/* Reads path as plain text in format f (FL_DATA_TEXT_FILE, _PARAGRAPHS or _LINES; see data.h). */
int fl_data_load_text(fl_dataset *ds, const char *path, fl_tokenizer *tok, const fl_data_options *opt, fl_data_format f);

#endif
