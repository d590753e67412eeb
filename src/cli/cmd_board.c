/* cmd_board.c — `fastlora board FILE.jsonl...`: leaderboards from benchmark result records.
 *
 * Reads JSON Lines result files (fastlora bench --json, tools/peer_bench.py --json), checks every
 * record (a bad one is a "file:line: field: expected ..." error and nothing is rendered), and
 * prints Markdown in the published board's shape (bench/board.h); --html writes a self-contained
 * page with inline SVG bar charts; --reference adds the published figure and our ratio.
 * Not the benchmark (cmd_bench.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/board.h"
#include "bench/records.h"
#include "bench/reference.h"
#include "cli/commands.h"
#include "common/args.h"
#include "common/error.h"
#include "io/file_util.h"

typedef struct {
    const char *html_path, *out_path, *reference_path;
    int reference, spaced, batch, seq;
} board_options;

/* Writes the Markdown (or HTML) of set to path atomically. */
static int write_atomic(const char *path, const fl_board_set *set, int html, const char *note, int spaced) {
    fl_atomic_file f;
    if (fl_atomic_file_open(&f, path)) return FL_ERR_INPUT;
    if (html) fl_board_write_html(f.fp, set, note);
    else fl_board_write_markdown(f.fp, set, spaced);
    return fl_atomic_file_commit(&f);
}

int cmd_board(int argc, char **argv) {
    board_options o = {0};
    const fl_option options[] = {
        {"reference", FL_OPT_FLAG, &o.reference, "add the published board's figure and our ratio to it", FL_NO_RANGE},
        {"reference-file", FL_OPT_STRING, &o.reference_path, "the published board (default data/reference-board.csv)", FL_NO_RANGE},
        {"html", FL_OPT_STRING, &o.html_path, "also write a self-contained HTML page (inline SVG chart) here", FL_NO_RANGE},
        {"out", FL_OPT_STRING, &o.out_path, "write the Markdown here instead of standard output", FL_NO_RANGE},
        {"spaced", FL_OPT_FLAG, &o.spaced, "blank lines between blocks (for Markdown renderers)", FL_NO_RANGE},
        {"batch", FL_OPT_INT, &o.batch, "only records with this batch size", FL_AT_LEAST(1)},
        {"seq", FL_OPT_INT, &o.seq, "only records with this sequence length", FL_AT_LEAST(1)},
    };
    const int n_options = (int)(sizeof options / sizeof options[0]);
    /* positional arguments are result files; the rest go to the option parser */
    char **opt_argv = fl_malloc(sizeof(char *) * (size_t)(argc + 1));
    const char **files = fl_malloc(sizeof(char *) * (size_t)(argc + 1));
    int n_opt = 0, n_files = 0;
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], "--", 2) != 0 && strcmp(argv[i], "-h") != 0) {
            files[n_files++] = argv[i];
            continue;
        }
        opt_argv[n_opt++] = argv[i];
        for (int k = 0; k < n_options; k++)
            if (!strcmp(argv[i] + 2, options[k].name) && options[k].kind != FL_OPT_FLAG && i + 1 < argc) {
                opt_argv[n_opt++] = argv[++i];
                break;   /* argv[i] is the value now: matching it again read past a short one */
            }
    }
    int rc = fl_args_parse("board", n_opt, opt_argv, options, n_options,
                           "usage: fastlora board [--reference] [--html FILE] [--out FILE] RESULTS.jsonl...\n\n"
                           "Renders train tok/s leaderboards (per weights, fastest first) from result records.");
    free(opt_argv);
    if (rc) {
        free(files);
        return rc < 0 ? 0 : rc;
    }
    if (!n_files) {
        fprintf(stderr, "fastlora: board: give one or more result files (JSON Lines from `fastlora bench --json`)\n");
        free(files);
        return 2;
    }

    const char *outputs[] = {o.out_path, o.html_path};
    for (int i = 0; i < 2; i++)   /* both before either is written */
        if (outputs[i] && fl_output_file_check(outputs[i])) {
            fprintf(stderr, "fastlora: board: %s\n", fl_last_error());
            free(files);
            return 2;
        }
    fl_bench_record_list list = {0};
    char bad_files[1024] = "";
    int n_bad = 0;
    for (int i = 0; i < n_files; i++) {
        char *lines = NULL;   /* the bad record lines of this file, one each */
        size_t lines_len = 0;
        FILE *mem = open_memstream(&lines, &lines_len);
        int rc = fl_bench_records_read(files[i], &list, mem);
        fclose(mem);
        if (rc && !lines_len) {   /* the file as a whole (unreadable, not text, empty): one line */
            fprintf(stderr, "fastlora: board: %s\n", fl_last_error());
            free(lines);
            fl_bench_record_list_free(&list);
            free(files);
            return 2;
        }
        fputs(lines, stderr);
        free(lines);
        if (rc)
            snprintf(bad_files + strlen(bad_files), sizeof bad_files - strlen(bad_files), "%s%s", n_bad++ ? ", " : "",
                     files[i]);
    }
    if (n_bad) {
        fprintf(stderr, "fastlora: board: bad result records in %s (above); nothing rendered\n", bad_files);
        fl_bench_record_list_free(&list);
        free(files);
        return 2;
    }
    fl_reference_board ref;
    int have_ref = 0;
    if (o.reference || o.reference_path) {
        if (fl_reference_board_load(&ref, o.reference_path)) {
            fprintf(stderr, "fastlora: board: %s\n", fl_last_error());
            fl_bench_record_list_free(&list);
            free(files);
            return 2;
        }
        have_ref = 1;
    }
    fl_board_set set;
    fl_board_build(&set, &list, have_ref ? &ref : NULL, o.batch, o.seq);
    if (set.n_records_skipped)
        fprintf(stderr, "fastlora: board: %zu record%s left out (interrupted, or not --batch/--seq)\n",
                set.n_records_skipped, set.n_records_skipped == 1 ? "" : "s");

    int status = 0;
    if (o.out_path) status = write_atomic(o.out_path, &set, 0, NULL, o.spaced);
    else fl_board_write_markdown(stdout, &set, o.spaced);
    if (!status && o.html_path) {
        char note[512], date[32];
        time_t now = time(NULL);
        strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&now));
        snprintf(note, sizeof note, "Generated by fastlora board from %zu record%s (%d file%s) on %s.",
                 set.n_records_used, set.n_records_used == 1 ? "" : "s", n_files, n_files == 1 ? "" : "s", date);
        status = write_atomic(o.html_path, &set, 1, note, 0);
    }
    if (status) fprintf(stderr, "fastlora: board: %s\n", fl_last_error());
    fl_board_set_free(&set);
    if (have_ref) fl_reference_board_free(&ref);
    fl_bench_record_list_free(&list);
    free(files);
    return status;
}
