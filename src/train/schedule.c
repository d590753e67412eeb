/* schedule.c — learning-rate schedules (see schedule.h). The expressions keep transformers' order
 * of operations so that the values agree to the last bit on the same libm. */
#include "train/schedule.h"

#include <math.h>
#include <string.h>

#include "common/error.h"

int fl_sched_parse(const char *name, fl_sched_kind *out) {
    if (!strcmp(name, "cosine")) *out = FL_SCHED_COSINE;
    else if (!strcmp(name, "linear")) *out = FL_SCHED_LINEAR;
    else if (!strcmp(name, "constant")) *out = FL_SCHED_CONSTANT;
    else return fl_input_error("--schedule: '%s' (expected cosine, linear or constant)", name);
    return 0;
}

static double lr_lambda(const fl_lr_schedule *s, int step) {
    if (step < s->warmup) return (double)step / (double)(s->warmup > 1 ? s->warmup : 1);
    if (s->kind == FL_SCHED_CONSTANT) return 1.0;
    int span = s->total_steps - s->warmup > 1 ? s->total_steps - s->warmup : 1;
    double factor;
    if (s->kind == FL_SCHED_COSINE) {
        double progress = (double)(step - s->warmup) / (double)span;
        factor = 0.5 * (1.0 + cos(M_PI * 0.5 * 2.0 * progress));
    } else {
        factor = (double)(s->total_steps - step) / (double)span;
    }
    factor = factor * (1 - s->min_lr_ratio) + s->min_lr_ratio;
    return factor > 0 ? factor : 0.0;
}

double fl_lr_at(const fl_lr_schedule *s, int step) { return s->lr * lr_lambda(s, step); }

int fl_sched_warmup_steps(int warmup, double warmup_ratio, int total_steps) {
    if (warmup > 0) return warmup;
    return (int)ceil((double)total_steps * warmup_ratio);
}
