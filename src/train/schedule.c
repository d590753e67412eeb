/* schedule.c — learning-rate schedules (see schedule.h). */
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

float fl_lr_at(const fl_lr_schedule *s, int step) {
    if (step < s->warmup) return s->lr * (float)(step + 1) / (float)s->warmup;
    if (s->kind == FL_SCHED_CONSTANT) return s->lr;
    int span = s->total_steps - 1 - s->warmup;
    double p = span > 0 ? (double)(step - s->warmup) / span : 1.0;
    if (p > 1) p = 1;
    double r = s->min_lr_ratio;
    double f = s->kind == FL_SCHED_COSINE ? 0.5 * (1.0 + cos(M_PI * p)) : 1.0 - p;
    return (float)(s->lr * (r + (1.0 - r) * f));
}
