/* plan_report.h — what `fastlora plan` prints: the terminal table, the JSON document, the HTML page
 * (self-contained, inline SVG charts), the rankings by time and cost and the recommendation.
 * Not the arithmetic (plan/plan.h). */
#ifndef FL_PLAN_REPORT_H
#define FL_PLAN_REPORT_H

#include <jansson.h>
#include <stdio.h>

#include "plan/plan.h"

typedef struct {
    fl_plan_request rq;
    fl_plan_result *res;        /* (n) one per GPU, catalog order */
    int n;
    const fl_plan_calibration *cal;
    char model_label[256];      /* "qwen2.5-1.5b (preset)" */
    char tokens_note[256];      /* how the token count was obtained ("counted with the tokenizer of ...") */
} fl_plan_report;

/* Indices of fitting GPUs sorted by time (ascending), and of those with a price sorted by cost;
 * return the counts. `idx` holds n. */
int fl_plan_rank_by_time(const fl_plan_report *r, int *idx);
int fl_plan_rank_by_cost(const fl_plan_report *r, int *idx);
/* A few sentences in the spirit of "Which to choose?". */
void fl_plan_recommend(const fl_plan_report *r, char *buf, size_t cap);

void fl_plan_report_table(const fl_plan_report *r, FILE *out);
json_t *fl_plan_report_json(const fl_plan_report *r);
/* Writes the HTML page atomically. */
int fl_plan_report_html(const fl_plan_report *r, const char *path);

#endif
