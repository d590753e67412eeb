/* file_util.h — small file helpers: atomic writes (temp file + fsync + rename) so that no output
 * is ever half-written, path joining, and the one way input files are opened and read.
 *
 * Every input file goes through fl_file_open_read (or a wrapper below): it opens with O_NONBLOCK
 * and fstat()s before reading, so a FIFO, a device (/dev/zero) or a directory is refused with one
 * line and never blocks or streams forever, and it refuses a file over the size limit of its kind.
 * Not a general I/O layer: outputs still use stdio through fl_atomic_file. */
#ifndef FL_FILE_UTIL_H
#define FL_FILE_UTIL_H

#include <stdint.h>
#include <stdio.h>

typedef struct {
    FILE *fp;
    char *final_path;
    char *temp_path;
} fl_atomic_file;

/* Opens `<path>.tmp.<pid>` for writing (created afresh: a leftover of that name is removed first,
 * and so are `<path>.tmp.<pid>` files of processes no longer running, each with a note on stderr).
 * The path must not name something that is not a regular file (fl_output_file_check). A symbolic
 * link at path is never written through: the commit's rename replaces the link itself, so the
 * file it named (perhaps an input: a model's weights) is left as it was. */
int fl_atomic_file_open(fl_atomic_file *f, const char *path);
/* Whether path may be written as an output: absent, or a regular file (through links), in a folder
 * this process may write. A FIFO, a device or a directory is refused with one line, "cannot write
 * PATH: a FIFO, not a regular file": the rename that ends an atomic write would replace it (a device
 * node, /dev/stdout's link) or fail after all the work (a directory); a read-only folder is "cannot
 * write PATH: Permission denied". Commands check their output paths with it before they start. */
int fl_output_file_check(const char *path);
/* Flushes, fsyncs, closes and renames onto the final path; on a write error removes the temp file. */
int fl_atomic_file_commit(fl_atomic_file *f);
/* Closes and removes the temp file (the final path is untouched). */
void fl_atomic_file_abort(fl_atomic_file *f);

/* Writes `len` bytes atomically to path. */
int fl_write_file_atomic(const char *path, const void *data, size_t len);

/* Returns a malloc'd "dir/name". */
char *fl_path_join(const char *dir, const char *name);
int fl_file_exists(const char *path);
/* Creates a directory (and its parents); ok when it exists as a directory, an error naming the path
 * when something else is there. */
int fl_mkdir_p(const char *path);

/* ---- reading input files -------------------------------------------------------------------- */

/* Reads one line (without its "\n") into *buf, grown as needed and NUL-terminated; NUL bytes inside
 * are kept (*len counts them). Returns 1, 0 at the end of input, or -1 when the line passes max bytes
 * (the rest of it is left unread): a stream without newlines (stdin from /dev/zero) never grows the
 * buffer past max. */
int fl_read_line(FILE *f, char **buf, size_t *cap, size_t *len, size_t max);

/* What an input file is; each kind has a size limit (docs/ARCHITECTURE.md, "Input files"):
 *   FL_FILE_CONFIG     16 MiB   config.json, adapter_config.json, trainer_state.json, *.index.json,
 *                               option files, chat message files
 *   FL_FILE_TOKENIZER 256 MiB   tokenizer.json, tokenizer_config.json, vocab.json, merges.txt, *.tiktoken
 *   FL_FILE_TABLE      16 MiB   the GPU catalog (CSV), bench records (JSONL), the published board
 *   FL_FILE_TEXT        1 GiB   text given to `tokenize --file`
 *   FL_FILE_DATASET    64 GiB   training data (JSONL, JSON array, tokens file); JSONL is streamed
 *   FL_FILE_WEIGHTS   no limit  safetensors (mmapped) and llama2.c checkpoints: only the regular-file check */
typedef enum {
    FL_FILE_CONFIG,
    FL_FILE_TOKENIZER,
    FL_FILE_TABLE,
    FL_FILE_TEXT,
    FL_FILE_DATASET,
    FL_FILE_WEIGHTS,
} fl_file_kind;

/* The size limit of a kind in bytes (UINT64_MAX: none). */
uint64_t fl_file_limit(fl_file_kind kind);

/* Opens `path` read-only. Refuses, with one line naming the file and a nonzero status, anything that
 * is not a regular file ("cannot read PATH: a FIFO, not a regular file"), an unreadable file
 * ("cannot read PATH: Permission denied") and a file larger than the kind's limit. The FIFO check
 * happens before any blocking read. On success *fd is a blocking descriptor and *size its size.
 *     int fd; uint64_t size;
 *     FL_TRY(fl_file_open_read(path, FL_FILE_CONFIG, &fd, &size));  ...  close(fd); */
int fl_file_open_read(const char *path, fl_file_kind kind, int *fd, uint64_t *size);

/* Only the checks of fl_file_open_read (opens and closes): for a caller that hands the path on to
 * readers of its own. */
int fl_file_check_read(const char *path, fl_file_kind kind);

/* The same as a stdio stream ("rb"), for readers that stream lines. */
int fl_file_fopen_read(const char *path, fl_file_kind kind, FILE **out);

/* Reads a whole file into a malloc'd, NUL-terminated buffer (*len excludes the NUL). A file that
 * grows past the limit while it is read is refused too. */
int fl_file_read_all(const char *path, fl_file_kind kind, char **data, size_t *len);

/* Reads a whole JSON file through fl_file_read_all and parses it with json_loadb(flags), so the
 * errors name the file: "cannot read PATH: ..." or "PATH:LINE:COLUMN: invalid JSON: ...".
 * A leading UTF-8 byte-order mark is skipped. */
struct json_t;
int fl_file_load_json(const char *path, fl_file_kind kind, size_t flags, struct json_t **out);

#endif
