/* board.h — leaderboards from benchmark records: per weights, one row per device (and per peer
 * tool), fastest first, in the published board's exact shape (docs/BENCHMARKS.md):
 *
 *   Training throughput in tokens per second: LoRA on a fixed batch, ...
 *   Weights: Qwen/Qwen2.5-1.5B
 *   Measured in train tok/s. Longer is faster.
 *   | # | GPU | train tok/s |
 *   |---|---|---|
 *   | 1 | NVIDIA H200 | 14931.7 |
 *   Every number is a first-party run on our own bench. ...
 *
 * Rows come only from records (first-party measurements). A row's GPU cell is the device as the
 * driver reports it; CPU rows add the thread count and dtype, peer rows the tool and dtype:
 * "NVIDIA H200 (pytorch+peft, bfloat16)". When several records land in one row, the fastest wins
 * (a sweep's best setting). Equal figures (at the printed 0.1 tok/s) share a rank (1, 2, 2, 4) and
 * are ordered by name. Boards appear in the order their weights first appear in the records.
 * With a reference board, two more columns: the published figure and ours / published ("—" when
 * the published board has no such weights x GPU). Interrupted records are left out.
 * Not the record reader (bench/records.h).
 */
#ifndef FL_BENCH_BOARD_H
#define FL_BENCH_BOARD_H

#include <stdio.h>

#include "bench/records.h"
#include "bench/reference.h"

typedef struct {
    fl_bench_record rec;  /* the fastest record of this row */
    char label[320];      /* the GPU cell */
    double reference;     /* published train tok/s, < 0 when none */
    int rank;             /* 1-based; ties share */
} fl_board_row;

typedef struct {
    char weights[128];
    fl_board_row *rows;   /* fastest first */
    size_t n;
} fl_board;

typedef struct {
    fl_board *boards;
    size_t n;
    int with_reference;
    char reference_path[512];
    size_t n_records_used, n_records_skipped;  /* skipped: interrupted or filtered out */
} fl_board_set;

/* Groups and ranks records. ref may be NULL (no reference columns). batch/seq > 0 keep only
 * records with that batch size / sequence length. */
void fl_board_build(fl_board_set *set, const fl_bench_record_list *records, const fl_reference_board *ref, int batch,
                    int seq);
void fl_board_set_free(fl_board_set *set);

/* The row label for a record (see above). */
void fl_board_row_label(const fl_bench_record *r, char *out, size_t cap);

/* Markdown in the published shape. spaced: a blank line between blocks, so that Markdown
 * renderers end each table (the published text has none). */
void fl_board_write_markdown(FILE *out, const fl_board_set *set, int spaced);
/* A self-contained HTML page (inline CSS and SVG bar charts, no external assets). */
void fl_board_write_html(FILE *out, const fl_board_set *set, const char *generated_note);

#endif
