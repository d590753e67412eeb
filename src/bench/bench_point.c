/* bench_point.c — one measured point of the bench (bench_point.h): the fixed batch, the timed
 * steps, the median, and the several-rank run. */
#include "bench/bench_point.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/host_info.h"
#include "common/error.h"
#include "common/rng.h"
#include "dist/dist.h"
#include "train/preference_step.h"
#include "train/trainer.h"

volatile sig_atomic_t fl_bench_interrupted;

double fl_bench_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of v (n > 0); sorts v in place. */
static double median_sorting(double *v, int n) {
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int fl_bench_is_preference(const fl_bench_options *o) { return o->objective && strcmp(o->objective, "sft") != 0; }

/* A preference objective's fixed batch: p->B / 2 pairs, each a prompt of T/2 ids shared by both
 * sides and two completions of the rest, from the same seeded stream. */
static void preference_pairs(const fl_bench_options *o, int n_pairs, int T, int V, fl_pref_set *set) {
    memset(set, 0, sizeof *set);
    set->pairs = fl_calloc((size_t)n_pairs, sizeof *set->pairs);
    set->n = set->cap = (size_t)n_pairs;
    uint64_t stream = fl_rng_stream(o->seed, 0xd0b0, 0, 0);
    for (int j = 0; j < n_pairs; j++)
        for (int s = 0; s < 2; s++) {
            fl_pref_pair *p = &set->pairs[j];
            p->ids[s] = fl_malloc(sizeof(int32_t) * (size_t)T);
            p->n[s] = T;
            p->prompt_len[s] = T / 2;
            for (int t = 0; t < T; t++) {
                uint64_t k = t < T / 2 ? (uint64_t)j * 2 * T + t : ((uint64_t)j * 2 + s) * T + t;
                p->ids[s][t] = (int32_t)(fl_hash64(stream ^ k) % (uint64_t)V);
            }
        }
}

/* One step of the preference objective: forward + backward of the pairs, AdamW. */
typedef struct {
    fl_pref_trainer trainer;
    fl_pref_set set;
    fl_pref_ref_cache ref;
    uint32_t *idx;
} preference_bench;

static int preference_start(fl_bench_context *c, int B, int T, preference_bench *pb) {
    fl_pref_loss_config loss = {.objective = (fl_pref_objective)fl_pref_objective_from_name(c->o->objective),
                                .beta = 0.1, .simpo_gamma = 0.5};
    int pairs = B / 2;
    FL_TRY(fl_pref_trainer_init(&pb->trainer, c->m, &loss, 0.0, NULL, pairs, T, 0));
    preference_pairs(c->o, pairs, T, c->m->cfg.vocab_size, &pb->set);
    fl_pref_ref_cache_init(&pb->ref, (size_t)pairs);
    pb->idx = fl_malloc(sizeof(uint32_t) * (size_t)pairs);
    for (int j = 0; j < pairs; j++) pb->idx[j] = (uint32_t)j;
    return 0;
}

static void preference_end(preference_bench *pb) {
    fl_pref_trainer_free(&pb->trainer);
    fl_pref_set_free(&pb->set);
    fl_pref_ref_cache_free(&pb->ref);
    free(pb->idx);
}

void fl_bench_run_point(fl_bench_context *c, fl_bench_point *p) {
    const fl_bench_options *o = c->o;
    fl_model *m = c->m;
    const fl_backend *be = c->be;
    int B = p->B, T = p->T, V = m->cfg.vocab_size;
    size_t N = (size_t)B * T;
    /* the fixed batch: T+1 ids per row from one seeded stream; every position is trained */
    int32_t *ids = fl_malloc(sizeof(int32_t) * N), *targets = fl_malloc(sizeof(int32_t) * N);
    uint64_t stream = fl_rng_stream(o->seed, 0xba7c, 0, 0);
    for (int b = 0; b < B; b++)
        for (int t = 0; t <= T; t++) {
            int32_t id = (int32_t)(fl_hash64(stream ^ ((uint64_t)b * (T + 1) + t)) % (uint64_t)V);
            if (t < T) ids[(size_t)b * T + t] = id;
            if (t > 0) targets[(size_t)b * T + t - 1] = id;
        }
    fl_batch batch = {.B = B, .T = T, .ids = ids, .targets = targets};
    fl_adamw_config opt = fl_adamw_config_default();
    preference_bench pb;
    int preference = fl_bench_is_preference(o);
    if (preference && preference_start(c, B, T, &pb)) fl_die("bench: %s", fl_last_error());
    p->flops = fl_model_flop_terms(&m->cfg, &m->lora_cfg, B, T);
    p->step_s = fl_calloc((size_t)o->steps, sizeof(double));
    double *allreduce_s = fl_calloc((size_t)o->steps, sizeof(double));
    fl_device_counters counters;
    fl_host_reset_peak_rss();
    be->read_counters(&counters, 1); /* the device's peak restarts here */
    if (o->warmup) printf("  warming up (%d untimed step%s)...\n", o->warmup, o->warmup == 1 ? "" : "s");
    fflush(stdout);
    int total = o->warmup + o->steps;
    int replayed_before = fl_model_replayed_steps(m);
    for (int s = 0; s < total && !fl_bench_interrupted; s++) {
        be->synchronize();
        be->read_counters(&counters, 0);
        unsigned long long ops0 = counters.ops;
        double t0 = fl_bench_seconds(), t_reduce = 0, norm;
        fl_step_stats st;
        if (preference) { /* the reference log-probs of the pairs are computed in the first step (once per pair) */
            fl_pref_metrics pm;
            fl_pref_trainer_step(&pb.trainer, m, &pb.set, &pb.ref, pb.idx, (size_t)B / 2, &pm);
            fl_model_optimizer_step(m, &opt);
            st = (fl_step_stats){.loss = pm.loss, .n_counted = pm.n_tokens};
        } else if (c->allreduce) { /* the gradients summed over the ranks between backward and AdamW */
            st = fl_train_accumulate(m, &batch, 1);
            t_reduce = fl_bench_seconds();
            fl_dist_allreduce_sum_f32(m->grads.data, m->grads.n, "the LoRA gradients of a bench step");
            t_reduce = fl_bench_seconds() - t_reduce;
            fl_model_optimizer_step(m, &opt);
        } else { /* one step on the device, read back once (a CUDA graph from the second step on) */
            st = fl_model_train_step(m, &batch, 1, &opt, &norm);
        }
        be->synchronize();
        double dt = fl_bench_seconds() - t0;
        /* the first step runs op by op (its recording is not counted: nothing runs while recording) */
        if (s == 0) {
            be->read_counters(&counters, 0);
            p->launches = (double)(counters.ops - ops0);
        }
        p->final_loss = st.loss;
        int warm = s < o->warmup;
        if (!warm) allreduce_s[p->n_timed] = t_reduce;
        if (!warm) p->step_s[p->n_timed++] = dt;
        printf("  %s %d/%d: %.1f ms (%.1f tok/s), loss %.4f\n", warm ? "warm-up" : "step", warm ? s + 1 : s - o->warmup + 1,
               warm ? o->warmup : o->steps, dt * 1e3, N / dt, st.loss);
        fflush(stdout);
    }
    p->replayed = fl_model_replayed_steps(m) - replayed_before;
    p->interrupted = p->n_timed < o->steps;
    if (p->n_timed > 0) {
        int n = p->n_timed;
        double *sorted = fl_malloc(sizeof(double) * (size_t)n);
        memcpy(sorted, p->step_s, sizeof(double) * (size_t)n);
        p->median = median_sorting(sorted, n);
        p->fastest = sorted[0];
        p->slowest = sorted[n - 1];
        p->tok_s = N / p->median;
        p->tok_s_min = N / p->slowest;
        p->tok_s_max = N / p->fastest;
        p->allreduce_median = median_sorting(allreduce_s, n);
        free(sorted);
    }
    free(allreduce_s);
    p->peak_bytes = (double)fl_host_peak_rss_bytes();
    if (c->is_cuda) {
        be->read_counters(&counters, 0);
        p->peak_bytes = (double)counters.peak_bytes;
    }
    if (preference) preference_end(&pb);
    free(ids);
    free(targets);
}

/* ---- several ranks (mpirun/srun) -------------------------------------------------------------- */

typedef struct {
    double tok_s, ms, allreduce_ms;
    char host[64], device[192];
} rank_result;

void fl_bench_run_point_ranks(fl_bench_context *c, fl_bench_point *p) {
    const fl_dist *d = fl_dist_world();
    fl_bench_point alone = *p;
    if (d->rank == 0) {
        printf("  rank 0 alone (the other %d rank%s wait):\n", d->size - 1, d->size == 2 ? "" : "s");
        fl_bench_run_point(c, &alone);
        free(alone.step_s);
    }
    fl_dist_barrier("rank 0's steps alone");
    printf("  all %d ranks together, the LoRA gradients all-reduced every step (%s):\n", d->size,
           d->transport == FL_DIST_NCCL ? "NCCL" : "MPI");
    c->allreduce = 1;
    fl_bench_run_point(c, p);
    c->allreduce = 0;
    rank_result mine = {.tok_s = p->tok_s, .ms = p->median * 1e3, .allreduce_ms = p->allreduce_median * 1e3};
    if (gethostname(mine.host, sizeof mine.host - 1) != 0) snprintf(mine.host, sizeof mine.host, "?");
    snprintf(mine.device, sizeof mine.device, "%s", c->device);
    rank_result *all = d->rank == 0 ? fl_calloc((size_t)d->size, sizeof *all) : NULL;
    fl_dist_gather(&mine, sizeof mine, all, "the ranks' bench results");
    if (d->rank != 0) return;
    free(c->rank_tok_s);
    c->rank_tok_s = fl_calloc((size_t)d->size, sizeof(double));
    c->aggregate_tok_s = 0;
    printf("\n%d ranks (%s), %zu LoRA gradients (%.1f MiB f32) all-reduced per step:\n"
           "| rank | host | device | train tok/s | ms/step | all-reduce ms |\n|---|---|---|---|---|---|\n", d->size,
           d->launcher, c->m->grads.n, c->m->grads.n * 4.0 / 1048576.0);
    for (int r = 0; r < d->size; r++) {
        printf("| %d | %s | %s | %.1f | %.1f | %.2f |\n", r, all[r].host, all[r].device, all[r].tok_s, all[r].ms,
               all[r].allreduce_ms);
        c->rank_tok_s[r] = all[r].tok_s;
        c->aggregate_tok_s += all[r].tok_s;
    }
    c->alone_tok_s = alone.tok_s;
    printf("aggregate: %.1f train tok/s (the sum over ranks); rank 0 alone: %.1f tok/s; scaling efficiency %.1f%% = "
           "aggregate / (%d x alone)%s\n", c->aggregate_tok_s, alone.tok_s,
           alone.tok_s > 0 ? 100.0 * c->aggregate_tok_s / (d->size * alone.tok_s) : 0.0, d->size,
           p->interrupted || alone.interrupted ? " (INTERRUPTED, partial)" : "");
    free(all);
}
