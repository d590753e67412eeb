/* bench_report.h — what `fastlora bench` prints and records for its points (bench_point.h): the
 * result block with the FLOP terms and MFU, the definition, the JSON record (bench/records.h plus
 * the extras that let a reader rerun and check it) and a sweep's table.
 * Not here: measuring (bench_point.h). */
#ifndef FL_BENCH_REPORT_H
#define FL_BENCH_REPORT_H

#include <jansson.h>

#include "bench/bench_point.h"

/* The "result: ..." block of one point, definition included, on stdout. */
void fl_bench_print_result(const fl_bench_context *c, const fl_bench_point *p);

/* One point's record (a new reference; the caller appends and decrefs it). */
json_t *fl_bench_point_record(const fl_bench_context *c, const fl_bench_point *p);

/* The sweep's table over points[0 .. n_run) of n_points settings, and the fastest that fits. */
void fl_bench_print_sweep(const fl_bench_context *c, const fl_bench_point *points, int n_run, int n_points);

#endif
