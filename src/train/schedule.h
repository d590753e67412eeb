/* schedule.h — the learning-rate schedule: linear warmup, then cosine, linear or constant.
 *
 * For the update of step s (0-based) out of S steps, W warmup steps, floor r = min_lr_ratio:
 *   s <  W:  lr · (s+1)/W                       (the first update is not wasted at lr 0)
 *   s >= W:  p = (s-W) / max(1, S-1-W)  in [0, 1]
 *            cosine:   lr · (r + (1-r) · ½(1 + cos πp))
 *            linear:   lr · (r + (1-r) · (1-p))
 *            constant: lr
 * so the last step runs at exactly lr·r. Not the optimizer (engine/model.h). */
#ifndef FL_TRAIN_SCHEDULE_H
#define FL_TRAIN_SCHEDULE_H

typedef enum { FL_SCHED_COSINE = 0, FL_SCHED_LINEAR, FL_SCHED_CONSTANT } fl_sched_kind;

typedef struct {
    fl_sched_kind kind;
    float lr, min_lr_ratio;
    int warmup, total_steps;
} fl_lr_schedule;

/* "cosine", "linear", "constant" */
int fl_sched_parse(const char *name, fl_sched_kind *out);
float fl_lr_at(const fl_lr_schedule *s, int step);

#endif
