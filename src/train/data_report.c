/* data_report.c — the bad records of one dataset file, reported without flooding (see
 * data_internal.h): the first max_reported printed as `path:WHERE: skipped: why` once the file has
 * shown one good record, then a count; a file with no good record is one error line. Not the
 * readers (data.c, data_text.c).
 */
#include "train/data_internal.h"

#include <stdlib.h>
#include <string.h>

#include "common/error.h"

void fl_data_report_init(fl_data_report *r, const char *path, const fl_data_options *opt, const char *unit) {
    memset(r, 0, sizeof *r);
    r->path = path;
    r->opt = opt;
    r->unit = unit;
    r->log = opt->log ? opt->log : stderr;
    r->max_reported = opt->max_reported < 0 ? 0 : opt->max_reported > FL_DATA_HELD_MAX ? FL_DATA_HELD_MAX : opt->max_reported;
}

static void print_held(fl_data_report *r) {
    for (int i = 0; i < r->n_held; i++) {
        fputs(r->held[i], r->log);
        free(r->held[i]);
    }
    r->n_held = 0;
}

int fl_data_report_bad(fl_data_report *r, const char *where, const char *why) {
    char reason[640];
    snprintf(reason, sizeof reason, "%s", why); /* why may be fl_last_error(), which fl_input_error rewrites */
    int is_line = where[0] != '[';
    if (r->opt->strict)
        return fl_input_error("%s:%s: %s (--strict: stopping at the first bad %s)", r->path, where, reason, r->unit);
    if (!r->n_bad)
        snprintf(r->first, sizeof r->first, "%s%.32s: %.600s", is_line ? "line " : "", where, reason);
    r->n_bad++;
    if (r->n_bad > (size_t)r->max_reported) return 0;
    size_t cap = strlen(r->path) + strlen(where) + strlen(reason) + 16;
    char *msg = fl_malloc(cap);
    snprintf(msg, cap, "%s:%s: skipped: %s\n", r->path, where, reason);
    if (r->n_good) {
        fputs(msg, r->log);
        free(msg);
    } else {
        r->held[r->n_held++] = msg;
    }
    return 0;
}

void fl_data_report_good(fl_data_report *r) {
    if (!r->n_good++) print_held(r);
}

void fl_data_report_free(fl_data_report *r) {
    for (int i = 0; i < r->n_held; i++) free(r->held[i]);
    r->n_held = 0;
}

int fl_data_report_finish(fl_data_report *r, int gave_up, const char *none) {
    fl_data_report_free(r);
    if (!r->n_records) return fl_input_error("%s: %s: no records to train on", r->path, none);
    if (!r->n_good) {
        char counted[96];
        if (gave_up) snprintf(counted, sizeof counted, "in the first %zu %ss (stopped reading)", r->n_bad, r->unit);
        else snprintf(counted, sizeof counted, "(%zu records, %zu bad)", r->n_records, r->n_bad);
        return fl_input_error("%s: no usable documents %s: the first, %s%s%s", r->path, counted, r->first,
                              r->hint[0] ? "; " : "", r->hint);
    }
    if (r->n_bad > (size_t)r->max_reported)
        fprintf(r->log, "%s: %zu more bad %ss skipped (%zu in all)\n", r->path, r->n_bad - (size_t)r->max_reported,
                r->unit, r->n_bad);
    return 0;
}
