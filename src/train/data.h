/* data.h — training documents: JSONL datasets in the four shapes people use, and fastlora's
 * pre-tokenized binary format, turned into token ids plus a loss mask per document.
 *
 * Shapes (one JSON object per line; --format auto picks by the keys present):
 *   {"text": "..."}                         loss on every token; BOS (when the tokenizer adds one)
 *                                           first, EOS appended
 *   {"prompt": "...", "completion": "..."}  prompt + completion encoded as ONE string (so the
 *                                           tokenizer sees the real boundary); loss on the tokens
 *                                           that overlap the completion's bytes, and on the EOS
 *   {"instruction", "input"?, "output"}     Alpaca: the Stanford Alpaca prompt template around
 *                                           instruction/input, output as the completion
 *   {"messages": [{"role", "content"}...]}  rendered with the model's chat template (or
 *    "tools"?, "documents"?,                --chat-template's) by the Jinja engine as transformers
 *    "chat_template_kwargs"?}               renders it (data_chat.c); loss on the assistant spans:
 *                                           {% generation %} blocks, else turn by turn (content +
 *                                           end-of-turn marker); no extra EOS, the template's
 *                                           end-of-turn is what the model learns
 * Plain text (--format text-file, text-paragraphs, text-lines; or --format auto and a name ending
 * in .txt; data_text.c): the whole file is ONE document (text-file), or one per block of lines
 * between blank lines (text-paragraphs: the block's lines joined by "\n"), or one per non-blank line
 * (text-lines). Each document is encoded exactly as a {"text"} record: BOS when the tokenizer adds
 * one, EOS appended, every token a target; long ones are split by the batcher as any document.
 * Line ends "\r\n" and a lone "\r" read as "\n"; a leading UTF-8 BOM is dropped; NUL bytes or
 * invalid UTF-8 refuse the file (one line: file:line and the byte). A .txt file whose first
 * non-blank line is a JSON object is read as JSONL (with a note; --format text-file forces text).
 * Binary tokens file (FL_TOKENS_MAGIC, little-endian; see docs/TRAINING.md):
 *   bytes 0..8   "FLTOKv1\0"
 *   u64          n_docs
 *   u64          n_tokens
 *   u64          doc_end[n_docs]   cumulative token counts, non-decreasing, doc_end[n_docs-1] == n_tokens
 *   u32          ids[n_tokens]
 *   Every token is a target (mask 1); ids are used as they are (include BOS/EOS when writing).
 *
 * Bad lines (invalid JSON, missing or mistyped fields, empty text, no target tokens, lines longer
 * than max_line_bytes) are reported as `file:line: what` and skipped (counted), or stop the load
 * when `strict`. A file with no usable record at all is ONE error line instead (the count and the
 * first bad record's reason, with what would work: --fields, --format text-file), and so is an
 * empty file; JSONL reading stops after FL_DATA_GIVE_UP bad records with no good one. Never a
 * crash. Not the batching (train/batch.h).
 */
#ifndef FL_TRAIN_DATA_H
#define FL_TRAIN_DATA_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

typedef enum {
    FL_DATA_AUTO = 0, FL_DATA_TEXT, FL_DATA_PROMPT, FL_DATA_MESSAGES, FL_DATA_ALPACA, FL_DATA_TOKENS,
    FL_DATA_TEXT_FILE, FL_DATA_TEXT_PARAGRAPHS, FL_DATA_TEXT_LINES, /* plain text: per file, block, line */
    FL_DATA_N_FORMATS
} fl_data_format;

/* "auto", "text", "prompt", "messages", "alpaca", "tokens", "text-file", "text-paragraphs", "text-lines" */
int fl_data_format_parse(const char *name, fl_data_format *out);
const char *fl_data_format_name(fl_data_format f);

typedef struct {
    int32_t *ids;     /* (n) */
    uint8_t *mask;    /* (n) 1: token i is a target (predicted from tokens 0..i-1); mask[0] unused */
    int n;
} fl_doc;

typedef struct {
    fl_doc *docs;
    size_t n_docs, cap;
    size_t n_tokens;     /* Σ n */
    size_t n_targets;    /* Σ targets (mask[i] for i >= 1) */
    size_t n_bad;        /* records (lines, array elements, text blocks) skipped */
    size_t n_lines;      /* records read: non-blank JSONL lines, array elements, text documents */
} fl_dataset;

#define FL_DATA_MAX_FIELD_MAP 8

typedef struct {
    fl_data_format format;
    /* field renames applied to every record before its shape is read, e.g. question -> prompt,
     * answer -> completion (`--fields prompt=question,completion=answer`) */
    int n_field_map;
    char field_from[FL_DATA_MAX_FIELD_MAP][64], field_to[FL_DATA_MAX_FIELD_MAP][64];
    int strict;             /* first bad line is fatal */
    size_t max_line_bytes;  /* longer lines are bad lines (default 64 MiB) */
    int32_t eos_id;         /* appended to text / completion documents; -1: none */
    int32_t vocab_size;     /* ids must be below (0: unchecked) */
    int max_reported;       /* bad lines printed one by one before only counting (default 10) */
    FILE *log;              /* where bad lines are reported (NULL: stderr) */
    const fl_chat_template *chat_template; /* messages records: the run's template, compiled once (borrowed);
                                              NULL: the tokenizer folder's (fl_dataset_load compiles it once) */
    int64_t chat_now;       /* strftime_now's time for templates (seconds since the epoch); 0: the clock */
} fl_data_options;

fl_data_options fl_data_options_default(void);

/* Parses "prompt=question,completion=answer" (our field = the file's field) into opt. */
int fl_data_parse_field_map(const char *spec, fl_data_options *opt);

/* JSONL reading gives up after this many bad records when none was good: not a dataset of ours. */
#define FL_DATA_GIVE_UP 1000

/* Loads `path`: JSONL (one record per line), a JSON array of records (a file whose first
 * non-blank character is '[', like Alpaca's alpaca_data.json), plain text (the text-* formats, or a
 * .txt name), or the binary tokens format when format is TOKENS or the file starts with the magic.
 * tok may be NULL only for the tokens format. Appends to *ds (zero-initialize first). */
int fl_dataset_load(fl_dataset *ds, const char *path, fl_tokenizer *tok, const fl_data_options *opt);

/* ---- what --data names (data_files.c) ---- */
/* Whether spec names several files: a folder, or a glob pattern that is no existing file. */
int fl_data_is_many(const char *spec);
/* The files spec names, in the order they are read (byte order of their names): a file itself, a
 * folder's *.jsonl and *.json files, a pattern's matches (folders left out). An error when there
 * are none. The caller frees with fl_data_paths_free. */
int fl_data_paths(const char *spec, char ***paths, size_t *n);
void fl_data_paths_free(char **paths, size_t n);
/* fl_file_check_read (dataset limits) for every file spec names. */
int fl_data_check_read(const char *spec);
/* The format `path` is read in under `asked` (AUTO: the tokens magic, else a .txt name whose first
 * non-blank line is not a JSON object is TEXT_FILE, else AUTO: JSONL or a JSON array by content).
 * A file that cannot be read gives `asked` (the loader then says why). */
fl_data_format fl_data_detect_format(const char *path, fl_data_format asked);
void fl_dataset_free(fl_dataset *ds);
/* Appends a copy of (ids, mask) as a document. mask may be NULL (all targets). */
void fl_dataset_add(fl_dataset *ds, const int32_t *ids, const uint8_t *mask, int n);

/* One JSON line to a document (exposed for tests). Returns 0 and fills *doc (caller frees ids/mask),
 * or FL_ERR_INPUT with the reason in fl_last_error() (no file:line; the loader adds it). */
int fl_data_parse_line(const char *line, size_t len, fl_tokenizer *tok, const fl_data_options *opt, fl_doc *doc);

/* One plain text to a document exactly as a {"text"} record is (BOS when the tokenizer adds one,
 * EOS appended, every token a target), checked as records are (ids in the vocabulary, >= 1 target).
 * Returns 0 and fills *doc (caller frees ids/mask), or FL_ERR_INPUT with the reason. */
int fl_data_text_doc(const char *text, size_t len, fl_tokenizer *tok, const fl_data_options *opt, fl_doc *doc);

/* Whether `path` is read as a tokens file under --format `format` ("tokens", or "auto" and the file
 * starts with the magic): such data needs no tokenizer. */
int fl_data_is_tokens_file(const char *path, const char *format);

/* The chat template that messages records are rendered with, compiled once for a run: the file
 * `path` (`--chat-template`; an error naming it when it cannot be read or does not parse), else
 * the tokenizer folder's. *out is NULL (and 0 returned) when tok is NULL, the folder has none, or
 * the folder's does not parse: then each messages record gives the reason. */
int fl_data_chat_template(fl_tokenizer *tok, const char *path, fl_chat_template **out);

/* Writes the documents (ids only) in the binary tokens format, atomically. */
int fl_tokens_file_write(const char *path, const fl_dataset *ds);

#define FL_TOKENS_MAGIC "FLTOKv1"

#endif
