/* sample.c — greedy / temperature / top-p sampling (see sample.h). */
#include "infer/sample.h"

#include <math.h>
#include <stdlib.h>

#include "common/rng.h"

static const float *sort_probs;
static int by_prob_desc(const void *a, const void *b) {
    float x = sort_probs[*(const int32_t *)a], y = sort_probs[*(const int32_t *)b];
    if (x != y) return x > y ? -1 : 1;
    return *(const int32_t *)a - *(const int32_t *)b; /* ties: lower id first, deterministic */
}

int32_t fl_sample(const float *logits, int V, const fl_sampler *s, uint64_t step, float *p, int32_t *idx) {
    int32_t best = 0;
    for (int i = 1; i < V; i++)
        if (logits[i] > logits[best]) best = i;
    if (!(s->temperature > 0)) return best;
    double sum = 0;
    for (int i = 0; i < V; i++) sum += (p[i] = expf((logits[i] - logits[best]) / s->temperature));
    for (int i = 0; i < V; i++) p[i] = (float)(p[i] / sum);
    float u = fl_rng_uniform(fl_rng_stream(s->seed, 0x5a3, step, 0), 0);
    int n = V;
    for (int i = 0; i < V; i++) idx[i] = i;
    if (s->top_p > 0 && s->top_p < 1) {
        sort_probs = p;
        qsort(idx, (size_t)V, sizeof *idx, by_prob_desc);
        double cum = 0;
        for (n = 0; n < V;) {
            cum += p[idx[n++]];
            if (cum >= s->top_p) break;
        }
        u *= (float)cum; /* draw within the kept mass */
    }
    double acc = 0;
    for (int k = 0; k < n; k++) {
        acc += p[idx[k]];
        if (u < acc) return idx[k];
    }
    return idx[n - 1];
}
