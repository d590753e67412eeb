/* schedule.h — the learning-rate schedule: linear warmup, then cosine, linear or constant, exactly
 * as Hugging Face transformers computes it (get_cosine_schedule_with_warmup,
 * get_cosine_with_min_lr_schedule_with_warmup, get_linear_schedule_with_warmup,
 * get_constant_schedule_with_warmup), so a run here and a run with the HF Trainer use the same lr at
 * every step.
 *
 * The update of step s (0-based) out of S steps, W warmup steps, floor r = min_lr_ratio, uses lr·λ(s):
 *   s <  W:  λ = s / max(1, W)                  (the first warmup step runs at lr 0, as in HF)
 *   s >= W:  p = (s-W) / max(1, S-W)             in [0, 1): the last step is NOT at the floor
 *            cosine:   λ = ½(1 + cos πp)·(1-r) + r   (r = 0: get_cosine_schedule_with_warmup)
 *            linear:   λ = (S-s)/max(1, S-W)·(1-r) + r (r = 0: get_linear_schedule_with_warmup; the
 *                                                      floor is ours, transformers has none)
 *            constant: λ = 1
 * So a 1-step run without warmup trains at the full lr. fl_sched_warmup_steps turns a warmup ratio
 * into steps the way transformers' TrainingArguments.get_warmup_steps does: ceil(S·ratio).
 * tests/fixtures/train/lr_schedules.json (tools/make_lr_schedule_fixture.py) holds transformers'
 * values. Not the optimizer (engine/model.h). */
#ifndef FL_TRAIN_SCHEDULE_H
#define FL_TRAIN_SCHEDULE_H

typedef enum { FL_SCHED_COSINE = 0, FL_SCHED_LINEAR, FL_SCHED_CONSTANT } fl_sched_kind;

typedef struct {
    fl_sched_kind kind;
    double lr, min_lr_ratio;
    int warmup, total_steps;
} fl_lr_schedule;

/* "cosine", "linear", "constant" */
int fl_sched_parse(const char *name, fl_sched_kind *out);
/* The lr of optimizer step `step` (0-based). */
double fl_lr_at(const fl_lr_schedule *s, int step);
/* Warmup steps: `warmup` when > 0, else ceil(total_steps · warmup_ratio). */
int fl_sched_warmup_steps(int warmup, double warmup_ratio, int total_steps);

#endif
