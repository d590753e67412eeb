/* records.h — benchmark result records: one JSON object per line (JSON Lines), written by
 * `fastlora bench --json` and by tools/peer_bench.py, read by `fastlora board`.
 *
 * The record shape (docs/BENCHMARKS.md, "Result records") is shared by every tool; the `tool` key
 * says who measured ("fastlora", "pytorch+peft", "pytorch+peft+liger"). fl_bench_record holds the
 * keys the board needs; writers add more keys (versions, config, FLOPs, ...) and readers ignore
 * keys they do not know. Every record is a first-party measurement: nothing here is typed in.
 *
 * Usage:
 *   fl_bench_record_list list = {0};
 *   if (fl_bench_records_read("results/cpu.jsonl", &list, stderr)) ...   // prints file:line errors
 *   ... list.items[i].train_tok_s ...
 *   fl_bench_record_list_free(&list);
 * Not the board renderer (bench/board.h) and not the benchmark itself (cli/cmd_bench.c).
 */
#ifndef FL_BENCH_RECORDS_H
#define FL_BENCH_RECORDS_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

typedef struct {
    /* identity: who measured what, where */
    char tool[64];         /* "fastlora", "pytorch+peft", ... */
    char weights[128];     /* Hugging Face name of the weights: "HuggingFaceTB/SmolLM2-1.7B" */
    char device[192];      /* as the driver reports it: "NVIDIA H200", or the CPU model name */
    char device_kind[16];  /* "cpu" or "cuda"; "" when absent */
    char dtype[32];        /* base weights / activations: "float32", "bfloat16" */
    char date[40];         /* ISO 8601, UTC */
    char version[96];      /* the tool's version (fastlora: git describe); "" when absent */
    char model[512];       /* what ran: a preset name or a model folder (fastlora bench); "" when absent */
    char targets[160];     /* adapted projections, ','-joined ("q_proj,k_proj,..."); "" when absent */
    char quant[16];        /* frozen projections: "nf4" or "none"; "" when absent (a float base) */
    int recompute;         /* activation recompute was on; 0 when absent */
    /* the configuration */
    int batch, seq, rank;
    int threads;           /* CPU threads; 0 when absent */
    int steps, warmup;     /* 0 when absent */
    /* the figures */
    double train_tok_s;                    /* median */
    double train_tok_s_min, train_tok_s_max; /* 0 when absent */
    double ms_per_step;                    /* 0 when absent */
    double peak_mem_bytes;                 /* 0 when absent */
    double mfu;                            /* fraction of the peak; < 0 when absent */
    int interrupted;                       /* measured fewer steps than asked (Ctrl-C) */
    /* where it was read from (not written) */
    char file[256];
    int line;
} fl_bench_record;

typedef struct {
    fl_bench_record *items;
    size_t n, cap;
} fl_bench_record_list;

/* A record with every optional field marked absent. */
void fl_bench_record_clear(fl_bench_record *r);

/* The core keys of r as a new JSON object (insertion order = the documented order). Callers add
 * their own extra keys before writing. */
json_t *fl_bench_record_to_json(const fl_bench_record *r);

/* Validates one parsed record. On a bad field returns FL_ERR_INPUT with the message
 * "file:line: field: expected ..., got ..." (fl_last_error()). */
int fl_bench_record_from_json(fl_bench_record *r, const json_t *obj, const char *file, int line);

/* Parses one line (len bytes) of a results file; blank lines are not records: returns -1 and
 * leaves r alone. */
int fl_bench_record_parse_line(fl_bench_record *r, const char *text, size_t len, const char *file, int line);

/* Reads a whole results file (fl_file_read_all, FL_FILE_TABLE), appending its records to list.
 * Every bad line is reported on `errors` (one "file:line: field: expected ..." line each, may be
 * NULL; after FL_BENCH_MAX_REPORTED of them one line counts the rest). Returns FL_ERR_INPUT if any
 * line was bad (fl_last_error(): the first, and how many more), or when the file cannot be read or
 * holds no record at all (only fl_last_error(): nothing on `errors`); 0 otherwise. */
#define FL_BENCH_MAX_REPORTED 100
int fl_bench_records_read(const char *path, fl_bench_record_list *list, FILE *errors);
void fl_bench_record_list_push(fl_bench_record_list *list, const fl_bench_record *r);
void fl_bench_record_list_free(fl_bench_record_list *list);

/* Appends one record as a single compact line (creates the file). The file is rewritten whole through
 * an atomic temp + rename, so a crash or a full disk never leaves half a line; an existing file is
 * read with the records file's checks (a regular file within its size limit). */
int fl_bench_record_append(const char *path, const json_t *record);
/* Whether a record could be appended to path (fl_bench_record_append's checks, nothing written):
 * for bench to refuse a bad --json before it measures anything. */
int fl_bench_record_check_target(const char *path);

/* The Hugging Face name of a preset's weights ("smollm2-135m" -> "HuggingFaceTB/SmolLM2-135M"), or
 * for a model folder the name whose last component matches the folder's name (case-insensitive),
 * else the folder's name itself. Writes into out. */
void fl_bench_weights_name(const char *preset_or_dir, int is_preset, char *out, size_t cap);

/* A figure as the published board prints it: one decimal, ".0" dropped ("15322", "14931.7"). */
void fl_bench_format_tok_s(double v, char *out, size_t cap);

#endif
