/* reference.h — the published reference board (data/reference-board.csv): train tok/s per
 * weights x GPU as someone else published it, for the "reference" column and our ratio to it.
 *
 * The file is CSV with the header `model,gpu,train_tok_s` (model = Hugging Face name of the
 * weights, gpu = the name the driver reports); data/reference-board.md names its source. Names are
 * matched case-insensitively with runs of spaces collapsed. Not measurements of ours: the board
 * never makes rows from it (bench/board.h).
 *
 * Usage:
 *   fl_reference_board ref;
 *   if (fl_reference_board_load(&ref, NULL) == 0) {            // NULL: find the shipped file
 *       double v = fl_reference_board_find(&ref, "Qwen/Qwen2.5-7B", "NVIDIA H200");  // < 0: none
 *       fl_reference_board_free(&ref);
 *   }
 */
#ifndef FL_BENCH_REFERENCE_H
#define FL_BENCH_REFERENCE_H

#include <stddef.h>

typedef struct {
    char weights[128];
    char gpu[192];
    double train_tok_s;
} fl_reference_entry;

typedef struct {
    fl_reference_entry *entries;
    size_t n;
    char path[512];  /* the file it was read from */
} fl_reference_board;

/* The shipped file: $FASTLORA_DATA/reference-board.csv, else data/reference-board.csv beside the
 * build folder of this executable, else ./data/reference-board.csv. Returns 0 and the path when
 * one exists, FL_ERR_INPUT (naming the places tried) otherwise. */
int fl_reference_board_default_path(char *out, size_t cap);
/* Loads path (NULL: the default path). Errors are "file:line: field: expected ...". */
int fl_reference_board_load(fl_reference_board *ref, const char *path);
/* The published figure for weights x gpu, or -1 when the board has none. */
double fl_reference_board_find(const fl_reference_board *ref, const char *weights, const char *gpu);
void fl_reference_board_free(fl_reference_board *ref);

/* 1 when two device or weights names are the same name (case and runs of spaces ignored). */
int fl_bench_same_name(const char *a, const char *b);

#endif
