/* metrics.h — what a run records: one JSON line per step in OUT/metrics.jsonl
 *   {"step": 12, "epoch": 0.25, "loss": 2.31, "lr": 0.0002, "grad_norm": 0.83, "tokens": 4096, "tok_per_s": 51234.5}
 *   {"step": 50, "eval_loss": 2.12, "eval_tokens": 20480}
 * and the loss curve (train and eval against step) as a self-contained SVG that any browser shows.
 * On --resume the file is cut back to the checkpoint's step so a resumed run reads as one run.
 * With --report-to tensorboard the same numbers also go to OUT/runs/events.out.tfevents.* (tfevents.h):
 * train/loss, train/learning_rate, train/grad_norm, train/tok_per_s, train/epoch, eval/loss, each the
 * float of the decimal metrics.jsonl holds, so the two agree exactly.
 * Not the progress line (train/trainer.c). */
#ifndef FL_TRAIN_METRICS_H
#define FL_TRAIN_METRICS_H

#include <stddef.h>
#include <stdio.h>

#include "train/tfevents.h"

typedef struct { int step; double value; } fl_point;

typedef struct {
    fl_point *train, *eval;
    size_t n_train, n_eval, cap_train, cap_eval;
    FILE *fp;
    fl_tfevents tb; /* tb.fp NULL: no TensorBoard file */
} fl_metrics;

/* Opens OUT/metrics.jsonl: truncated when keep_upto_step < 0, else the lines of steps <= keep_upto_step
 * are kept (and loaded into the curves). */
int fl_metrics_open(fl_metrics *mt, const char *out_dir, int keep_upto_step);
/* Also writes a TensorBoard event file (after fl_metrics_open; resume_step as keep_upto_step), with
 * the run's options (JSON text) as its first text summary. */
int fl_metrics_open_tensorboard(fl_metrics *mt, const char *out_dir, int resume_step, const char *options_json);
/* More numbers of a line, by name (preference tuning: "rewards/chosen", ...); written after the
 * fixed ones with 9 significant digits (eval lines prefix "eval_"), TensorBoard tags train/NAME
 * and eval/NAME. */
#define FL_METRIC_EXTRA_MAX 12
typedef struct {
    int n;
    const char *name[FL_METRIC_EXTRA_MAX];
    double value[FL_METRIC_EXTRA_MAX];
} fl_metric_extra;

/* epoch: epochs done after this step, fractional (1.0 at the end of the first); extra may be NULL */
void fl_metrics_train(fl_metrics *mt, int step, double epoch, double loss, double lr, double grad_norm, size_t tokens,
                      double tok_per_s, const fl_metric_extra *extra);
void fl_metrics_eval(fl_metrics *mt, int step, double loss, size_t tokens, const fl_metric_extra *extra);
void fl_metrics_close(fl_metrics *mt);

/* Writes the curves as an SVG (atomically). */
int fl_metrics_write_svg(const fl_metrics *mt, const char *path, const char *title);

#endif
