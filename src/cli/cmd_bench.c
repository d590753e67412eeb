/* cmd_bench.c — `fastlora bench`: LoRA training throughput on a fixed batch.
 *
 * The definition (docs/BENCHMARKS.md, first section; printed with every result): batch B x T of
 * token ids drawn from a seeded RNG over the vocabulary, every token trained (targets are the next
 * ids of the same random stream), LoRA rank R / alpha on the chosen projections (default all
 * seven), frozen base weights in the backend's weight type (bf16 on CUDA; bf16 or f32 on the CPU,
 * --dtype), AdamW on the LoRA
 * parameters; `warmup` steps untimed, then the median of `steps` timed steps, each forward +
 * backward + optimizer step with the device synchronized; train tok/s = B·T / median step time.
 *
 * Prints train tok/s (median, min–max), ms/step, the FLOP count and MFU (GPU: of the card's dense
 * bf16 peak from data/gpus.csv; CPU: of a measured sgemm rate, labelled as such), peak memory, the
 * device as the driver reports it, and the published board's figure and our ratio where it has
 * this weights x device. --sweep tries batch sizes / sequence lengths, skipping those whose
 * predicted memory does not fit, and names the fastest. --json appends one record per run
 * (bench/records.h). Ctrl-C stops after the current step and prints what was measured.
 * Under mpirun/srun (dist/dist.h): rank 0 first runs alone while the others wait (the rate of one
 * process here), then every rank runs the same steps with the LoRA gradients all-reduced each step,
 * as training does; rank 0 prints each rank's tok/s and all-reduce time, the aggregate (their sum)
 * and the scaling efficiency = aggregate / (ranks x the rate alone).
 * Not the trainer: no data, no checkpoints. */
#include <cblas.h>
#include <jansson.h>
#include <limits.h>
#include <omp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "backend/cpu/gemm_bf16.h"
#include "bench/records.h"
#include "bench/reference.h"
#include "cli/commands.h"
#include "common/args.h"
#include "common/error.h"
#include "common/rng.h"
#include "dist/dist.h"
#include "engine/flops.h"
#include "engine/model.h"
#include "plan/gpu_catalog.h"
#include "plan/plan.h"
#include "train/trainer.h"
#ifdef FL_HAVE_CUDA
#include "backend/cuda/cuda_info.h"
#endif

void openblas_set_num_threads(int num_threads);

#define DEFINITION_VERSION "fastlora-bench-1"

/* ---- small system helpers -------------------------------------------------------------------- */

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A "Key:   value kB" line of a /proc file, in bytes; 0 when absent. */
static size_t proc_kb_field(const char *path, const char *key) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char line[256];
    size_t bytes = 0, klen = strlen(key);
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, key, klen) && line[klen] == ':') {
            bytes = (size_t)strtoull(line + klen + 1, NULL, 10) * 1024;
            break;
        }
    fclose(f);
    return bytes;
}

/* Peak resident memory since the last reset_peak_rss() (VmHWM; getrusage when /proc lacks it). */
static size_t peak_rss_bytes(void) {
    size_t hwm = proc_kb_field("/proc/self/status", "VmHWM");
    if (hwm) return hwm;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (size_t)ru.ru_maxrss * 1024;
}

/* Linux resets VmHWM to the current RSS when "5" is written to clear_refs. */
static void reset_peak_rss(void) {
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f) return;
    fputs("5", f);
    fclose(f);
}

static void first_line_after_colon(const char *path, const char *key, char *out, size_t cap) {
    FILE *f = fopen(path, "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, key, strlen(key)) != 0) continue;
        char *colon = strchr(line, ':');
        if (!colon) break;
        colon++;
        while (*colon == ' ' || *colon == '\t') colon++;
        colon[strcspn(colon, "\n")] = 0;
        snprintf(out, cap, "%s", colon);
        break;
    }
    fclose(f);
}

/* First line of a command's standard output, trailing newline removed; "" on failure. */
static void command_output(const char *cmd, char *out, size_t cap) {
    out[0] = 0;
    FILE *p = popen(cmd, "r");
    if (!p) return;
    if (!fgets(out, (int)cap, p)) out[0] = 0;
    out[strcspn(out, "\n")] = 0;
    if (pclose(p) != 0) out[0] = 0;
}

/* fastlora's version: $FASTLORA_VERSION when set (scripts that run a copy of the binary, e.g.
 * scripts/cpu-peer-bench, name the commit it was built from), else `git describe` of the checkout
 * this binary was built in (<repo>/build/fastlora), else the FL_VERSION the build baked in, else
 * "unknown". */
static void fastlora_version(char *out, size_t cap) {
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    out[0] = 0;
    const char *given = getenv("FASTLORA_VERSION");
    if (given && given[0]) {
        snprintf(out, cap, "%s", given);
        return;
    }
    if (n > 0) {
        exe[n] = 0;
        for (int up = 0; up < 2; up++) {
            char *slash = strrchr(exe, '/');
            if (slash) *slash = 0;
        }
        if (!strchr(exe, '\'')) {
            char cmd[PATH_MAX + 128];
            snprintf(cmd, sizeof cmd, "git -C '%s' describe --always --dirty --tags 2>/dev/null", exe);
            command_output(cmd, out, cap);
        }
    }
#ifdef FL_VERSION
    if (!out[0]) snprintf(out, cap, "%s", FL_VERSION);
#endif
    if (!out[0]) snprintf(out, cap, "unknown");
}

/* The CPU backend's workspaces at B x T as `fastlora plan` counts them (docs/PLAN.md): one LM-head
 * chunk of f32 logits, the attention backward's partials and packs, the NF4 tile scratch. */
static double cpu_workspace_bytes(const fl_model_config *cfg, const fl_lora_config *lc, int B, int T, int nf4,
                                  int recompute) {
    unsigned mode = (nf4 ? FL_PLAN_NF4 : 0u) | (recompute ? FL_PLAN_RECOMPUTE : 0u);
    fl_plan_memory m = fl_plan_memory_compute(cfg, lc, B, T, FL_TARGET_CPU, mode);
    return m.logits + m.attn_ws + m.gemm_ws;
}

/* "12G", "800M", "1.5G", or a plain number of MiB -> bytes; 0 on a bad value. */
static double parse_mem(const char *s) {
    const char *end;
    double v;
    if (fl_parse_double(s, &v, &end) || !(v > 0) || v > 1e9) return 0;
    double unit = 1048576.0;
    if (*end == 'G' || *end == 'g') unit = 1073741824.0, end++;
    else if (*end == 'M' || *end == 'm') unit = 1048576.0, end++;
    else if (*end == 'T' || *end == 't') unit = 1099511627776.0, end++;
    if (*end == 'i' || *end == 'I') end++;
    if (*end == 'B' || *end == 'b') end++;
    return *end ? 0 : v * unit;
}

/* ---- the CPU's reference rate: a measured sgemm ---------------------------------------------- */

/* Best of 3 timed OpenBLAS sgemm (n x n x n) after one warm-up, in TFLOP/s, on the current thread
 * count: the CPU has no vendor "dense peak" we could quote, so MFU on the CPU is measured against this. */
static double measure_sgemm_tflops(int n) {
    float *a = fl_malloc(sizeof(float) * (size_t)n * n), *b = fl_malloc(sizeof(float) * (size_t)n * n),
          *c = fl_malloc(sizeof(float) * (size_t)n * n);
    for (size_t i = 0; i < (size_t)n * n; i++) {
        a[i] = (float)((i * 7 % 13) - 6) * 0.01f;
        b[i] = (float)((i * 5 % 11) - 5) * 0.01f;
    }
    double best = 1e30;
    for (int rep = 0; rep < 4; rep++) {
        double t0 = now_seconds();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
        double dt = now_seconds() - t0;
        if (rep > 0 && dt < best) best = dt;
    }
    free(a);
    free(b);
    free(c);
    return 2.0 * n * (double)n * n / best / 1e12;
}

/* ---- Ctrl-C ---------------------------------------------------------------------------------- */

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig) {
    (void)sig;
    interrupted = 1;
    static const char msg[] = "\nfastlora bench: interrupted; finishing the current step (Ctrl-C again to abort)\n";
    ssize_t ignored = write(2, msg, sizeof msg - 1);
    (void)ignored;
}

/* ---- options and the sweep -------------------------------------------------------------------- */

typedef struct {
    const char *model_dir, *preset, *targets, *json_path, *device, *dtype, *mem_limit, *weights, *reference_path, *quant;
    int batch, seq, rank, steps, warmup, threads, rslora, no_sgemm, recompute;
    uint64_t seed;
    float alpha, dropout;
    char sweep_spec[512];
    int sweep_batch[32], n_sweep_batch, sweep_seq[32], n_sweep_seq;
} bench_options;

/* Parses "1,2,4" into values (each in min..max); returns the count, -1 on a bad list. */
static int parse_int_list(const char *s, int *values, int cap, int min, int max) {
    for (int n = 0;;) {
        const char *comma = strchr(s, ',');
        size_t len = comma ? (size_t)(comma - s) : strlen(s);
        char item[32];
        int64_t v;
        if (len == 0 || len >= sizeof item || n == cap) return -1;
        memcpy(item, s, len);
        item[len] = 0;
        if (fl_parse_int64(item, min, max, &v)) return -1;
        values[n++] = (int)v;
        if (!comma) return n;
        s = comma + 1;
    }
}

/* "batch=1,2,4 seq=256,512" (words may also come separately) into the option's lists. */
static int parse_sweep_word(bench_options *o, const char *word) {
    if (!strncmp(word, "batch=", 6)) {
        o->n_sweep_batch = parse_int_list(word + 6, o->sweep_batch, 32, 1, FL_MAX_BATCH);
        return o->n_sweep_batch < 0;
    }
    if (!strncmp(word, "seq=", 4)) {
        o->n_sweep_seq = parse_int_list(word + 4, o->sweep_seq, 32, 2, FL_MAX_SEQ);
        return o->n_sweep_seq < 0;
    }
    return 1;
}

/* ---- one measured point ----------------------------------------------------------------------- */

typedef struct {
    int B, T;
    int fits;               /* predicted memory within the limit */
    double predicted_bytes; /* model + LoRA state + activations (+ the CPU workspaces) */
    int n_timed;            /* timed steps measured */
    int interrupted;
    double median, fastest, slowest; /* seconds */
    double *step_s;         /* (n_timed) in the order measured */
    double tok_s, tok_s_min, tok_s_max;
    double peak_bytes, final_loss, flops;
    double allreduce_median;  /* seconds of the gradient all-reduce per step (several ranks) */
    double launches;          /* CUDA: operations (kernels, GEMMs, copies) one step enqueues op by op; 0 elsewhere */
    int replayed;             /* timed steps replayed from a recorded CUDA graph */
} bench_point;

typedef struct {
    bench_options *o;
    fl_model *m;
    const fl_backend *be;
    int is_cuda, threads;
    char device[192], dtype[16], act_dtype[16], version[96], weights[128], driver[64], cuda_version[32];
    double peak_tflops;       /* MFU denominator; 0 when unknown */
    char peak_source[256];    /* what the denominator is */
    double reference_tok_s;   /* published figure for weights x device, < 0 none */
    char reference_file[512];
    int allreduce;            /* several ranks: all-reduce the LoRA gradients every step */
    double alone_tok_s, aggregate_tok_s, *rank_tok_s; /* several ranks: the summary for the record */
} bench_context;

static void print_definition(const bench_context *c, int B, int T, int n_timed) {
    const bench_options *o = c->o;
    printf("  definition (%s, docs/BENCHMARKS.md): LoRA on a fixed batch of %d x %d token ids drawn from a seeded RNG\n"
           "    over the vocabulary, every token trained; rank %d, alpha %g, on %s; frozen base weights in %s%s\n"
           "    (activations %s%s); AdamW on the LoRA parameters; %d warm-up step%s excluded, median of %d timed step%s\n"
           "    (device synchronized); train tok/s = %d x %d / median step time.\n",
           DEFINITION_VERSION, B, T, c->m->lora_cfg.rank, c->m->lora_cfg.alpha, o->targets, c->dtype,
           c->m->base.quant == FL_QUANT_NF4 ? " (projections NF4, dequantized per tile)" : "", c->act_dtype,
           c->m->recompute ? ", recomputed per layer in the backward" : "", o->warmup, o->warmup == 1 ? "" : "s", n_timed,
           n_timed == 1 ? "" : "s", B, T);
}

/* Runs warm-up + timed steps at (B, T). Stops early (n_timed < steps) on Ctrl-C. */
static void run_point(bench_context *c, bench_point *p) {
    const bench_options *o = c->o;
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
    p->flops = fl_model_flops_per_step(&m->cfg, &m->lora_cfg, B, T);
    p->step_s = fl_calloc((size_t)o->steps, sizeof(double));
    double *allreduce_s = fl_calloc((size_t)o->steps, sizeof(double));
    reset_peak_rss();
#ifdef FL_HAVE_CUDA
    if (c->is_cuda) fl_cuda_reset_peak();
#endif
    if (o->warmup) printf("  warming up (%d untimed step%s)...\n", o->warmup, o->warmup == 1 ? "" : "s");
    fflush(stdout);
    int total = o->warmup + o->steps;
    int replayed_before = fl_model_replayed_steps(m);
    for (int s = 0; s < total && !interrupted; s++) {
        be->synchronize();
#ifdef FL_HAVE_CUDA
        unsigned long long ops0 = c->is_cuda ? fl_cuda_ops_enqueued() : 0;
#endif
        double t0 = now_seconds(), t_reduce = 0, norm;
        fl_step_stats st;
        if (c->allreduce) { /* the gradients summed over the ranks between backward and AdamW */
            st = fl_train_accumulate(m, &batch, 1);
            t_reduce = now_seconds();
            fl_dist_allreduce_sum_f32(m->grads.data, m->grads.n, "the LoRA gradients of a bench step");
            t_reduce = now_seconds() - t_reduce;
            fl_model_optimizer_step(m, &opt);
        } else { /* one step on the device, read back once (a CUDA graph from the second step on) */
            st = fl_model_train_step(m, &batch, 1, &opt, &norm);
        }
        be->synchronize();
        double dt = now_seconds() - t0;
#ifdef FL_HAVE_CUDA
        /* the first step runs op by op (its recording is not counted: nothing runs while recording) */
        if (c->is_cuda && s == 0) p->launches = (double)(fl_cuda_ops_enqueued() - ops0);
#endif
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
        double *sorted = fl_malloc(sizeof(double) * (size_t)p->n_timed);
        memcpy(sorted, p->step_s, sizeof(double) * (size_t)p->n_timed);
        qsort(sorted, (size_t)p->n_timed, sizeof(double), cmp_double);
        int n = p->n_timed;
        p->median = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
        p->fastest = sorted[0];
        p->slowest = sorted[n - 1];
        p->tok_s = N / p->median;
        p->tok_s_min = N / p->slowest;
        p->tok_s_max = N / p->fastest;
        qsort(allreduce_s, (size_t)n, sizeof(double), cmp_double);
        p->allreduce_median = n % 2 ? allreduce_s[n / 2] : 0.5 * (allreduce_s[n / 2 - 1] + allreduce_s[n / 2]);
        free(sorted);
    }
    free(allreduce_s);
    p->peak_bytes = (double)peak_rss_bytes();
#ifdef FL_HAVE_CUDA
    if (c->is_cuda) p->peak_bytes = (double)fl_cuda_peak_bytes();
#endif
    free(ids);
    free(targets);
}

/* ---- several ranks (mpirun/srun) -------------------------------------------------------------- */

typedef struct {
    double tok_s, ms, allreduce_ms;
    char host[64], device[192];
} rank_result;

/* Rank 0 alone first (the others wait without spinning): the rate of one process on this machine.
 * Then all ranks together, the gradients all-reduced every step; p gets this rank's figures, and
 * rank 0 prints every rank's, the aggregate and the scaling efficiency. */
static void run_point_ranks(bench_context *c, bench_point *p) {
    const fl_dist *d = fl_dist_world();
    bench_point alone = *p;
    if (d->rank == 0) {
        printf("  rank 0 alone (the other %d rank%s wait):\n", d->size - 1, d->size == 2 ? "" : "s");
        run_point(c, &alone);
        free(alone.step_s);
    }
    fl_dist_barrier("rank 0's steps alone");
    printf("  all %d ranks together, the LoRA gradients all-reduced every step (%s):\n", d->size,
           d->transport == FL_DIST_NCCL ? "NCCL" : "MPI");
    c->allreduce = 1;
    run_point(c, p);
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

static void print_result(const bench_context *c, const bench_point *p) {
    const fl_model_config *cfg = &c->m->cfg;
    size_t N = (size_t)p->B * p->T;
    if (p->n_timed == 0) {
        printf("\nresult: interrupted before any timed step; nothing measured at %d x %d\n", p->B, p->T);
        return;
    }
    printf("\nresult%s: %s, %d x %d on %s\n", p->interrupted ? " (INTERRUPTED, partial)" : "", c->weights, p->B, p->T,
           c->device);
    printf("  train tok/s %.1f (median of %d timed step%s; min %.1f, max %.1f), %.1f ms/step\n", p->tok_s, p->n_timed,
           p->n_timed == 1 ? "" : "s", p->tok_s_min, p->tok_s_max, p->median * 1e3);
    fl_flop_terms f = fl_model_flop_terms(cfg, &c->m->lora_cfg, p->B, p->T);
    double achieved = p->flops / p->median / 1e12;
    printf("  FLOPs/step %.4g = 4 x %.2fM matmul params x %zu tokens (%.4g) + causal attention 6·T·NH·HS·L per token "
           "(%.4g) + LoRA 6·R·(IC+OC) per adapted projection per token (%.4g)\n",
           p->flops, fl_config_matmul_params(cfg) / 1e6, N, f.dense, f.attention, f.lora);
    if (c->peak_tflops > 0)
        printf("  achieved %.3f TFLOP/s; MFU %.1f%% %s\n", achieved, 100.0 * achieved / c->peak_tflops, c->peak_source);
    else
        printf("  achieved %.3f TFLOP/s; MFU unknown (%s)\n", achieved, c->peak_source);
    if (p->launches > 0)
        printf("  launches per step: %.0f op by op (kernels, GEMMs, copies); CUDA graph: %s\n", p->launches,
               p->replayed ? "recorded once, every later step replayed as one launch" : "not used");
    printf("  peak memory: %.1f MiB %s (predicted %.1f MiB)\n", p->peak_bytes / 1048576.0,
           c->is_cuda ? "allocated on the device" : "resident (VmHWM)", p->predicted_bytes / 1048576.0);
    if (c->reference_tok_s > 0)
        printf("  reference board: %.1f tok/s for %s on %s; ours / published = %.2fx (%s)\n", c->reference_tok_s,
               c->weights, c->device, p->tok_s / c->reference_tok_s, c->reference_file);
    else
        printf("  reference board: no published figure for %s on %s\n", c->weights, c->device);
    print_definition(c, p->B, p->T, p->n_timed);
    fflush(stdout);
}

static json_t *point_record(const bench_context *c, const bench_point *p) {
    const bench_options *o = c->o;
    const fl_model *m = c->m;
    fl_bench_record r;
    fl_bench_record_clear(&r);
    snprintf(r.tool, sizeof r.tool, "fastlora");
    snprintf(r.version, sizeof r.version, "%s", c->version);
    snprintf(r.weights, sizeof r.weights, "%s", c->weights);
    snprintf(r.device, sizeof r.device, "%s", c->device);
    snprintf(r.device_kind, sizeof r.device_kind, "%s", c->is_cuda ? "cuda" : "cpu");
    snprintf(r.dtype, sizeof r.dtype, "%s", c->dtype);
    time_t now = time(NULL);
    strftime(r.date, sizeof r.date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    r.batch = p->B;
    r.seq = p->T;
    r.rank = m->lora_cfg.rank;
    r.threads = c->is_cuda ? 0 : c->threads;
    r.steps = p->n_timed;
    r.warmup = o->warmup;
    r.train_tok_s = p->tok_s;
    r.train_tok_s_min = p->tok_s_min;
    r.train_tok_s_max = p->tok_s_max;
    r.ms_per_step = p->median * 1e3;
    r.peak_mem_bytes = p->peak_bytes;
    double achieved = p->flops / p->median / 1e12;
    if (c->peak_tflops > 0) r.mfu = achieved / c->peak_tflops;
    r.interrupted = p->interrupted;
    json_t *j = fl_bench_record_to_json(&r);
    /* extras: enough to rerun it and to check the figures */
    json_object_set_new(j, "definition", json_string(DEFINITION_VERSION));
    json_object_set_new(j, "model", json_string(o->preset ? o->preset : o->model_dir));
    json_object_set_new(j, "init", json_string(o->preset ? "random" : "loaded"));
    json_object_set_new(j, "backend", json_string(c->be->name));
    json_object_set_new(j, "act_dtype", json_string(c->act_dtype));
    json_object_set_new(j, "quant", json_string(m->base.quant == FL_QUANT_NF4 ? "nf4" : "none"));
    json_object_set_new(j, "recompute", json_boolean(m->recompute));
    json_object_set_new(j, "alpha", json_real(m->lora_cfg.alpha));
    json_t *targets = json_array();
    for (int k = 0; k < FL_N_PROJ; k++)
        if (m->lora_cfg.target_mask & (1u << k)) json_array_append_new(targets, json_string(fl_proj_names[k]));
    json_object_set_new(j, "targets", targets);
    /* a JSON integer is signed 64-bit: a larger seed is written as its decimal string */
    json_object_set_new(j, "seed", o->seed <= INT64_MAX ? json_integer((json_int_t)o->seed)
                                                         : json_sprintf("%llu", (unsigned long long)o->seed));
    json_object_set_new(j, "flops_per_step", json_real(p->flops));
    json_object_set_new(j, "achieved_tflops", json_real(achieved));
    json_object_set_new(j, "mfu_peak_tflops", c->peak_tflops > 0 ? json_real(c->peak_tflops) : json_null());
    json_object_set_new(j, "mfu_peak", json_string(c->peak_source));
    json_object_set_new(j, "predicted_mem_bytes", json_integer((json_int_t)p->predicted_bytes));
    json_object_set_new(j, "final_loss", json_real(p->final_loss));
    if (c->is_cuda) {
        json_object_set_new(j, "launches_per_step", json_integer((json_int_t)p->launches));
        json_object_set_new(j, "cuda_graph", json_boolean(p->replayed > 0));
    }
    json_t *steps = json_array();
    for (int k = 0; k < p->n_timed; k++) json_array_append_new(steps, json_real(p->step_s[k] * 1e3));
    json_object_set_new(j, "step_ms", steps);
    json_object_set_new(j, "reference_tok_s", c->reference_tok_s > 0 ? json_real(c->reference_tok_s) : json_null());
    json_object_set_new(j, "reference_ratio",
                        c->reference_tok_s > 0 ? json_real(p->tok_s / c->reference_tok_s) : json_null());
    if (o->sweep_spec[0]) json_object_set_new(j, "sweep", json_string(o->sweep_spec));
    const fl_dist *d = fl_dist_world();
    if (d->size > 1) { /* train_tok_s stays rank 0's: the figure of one device */
        json_object_set_new(j, "ranks", json_integer(d->size));
        json_t *ranks = json_array();
        for (int r = 0; r < d->size; r++) json_array_append_new(ranks, json_real(c->rank_tok_s[r]));
        json_object_set_new(j, "rank_tok_s", ranks);
        json_object_set_new(j, "aggregate_tok_s", json_real(c->aggregate_tok_s));
        json_object_set_new(j, "alone_tok_s", json_real(c->alone_tok_s));
        json_object_set_new(j, "scaling_efficiency",
                            c->alone_tok_s > 0 ? json_real(c->aggregate_tok_s / (d->size * c->alone_tok_s)) : json_null());
    }
    json_t *versions = json_object();
    json_object_set_new(versions, "fastlora", json_string(c->version));
    if (c->driver[0]) json_object_set_new(versions, "nvidia_driver", json_string(c->driver));
    if (c->cuda_version[0]) json_object_set_new(versions, "cuda", json_string(c->cuda_version));
    json_object_set_new(j, "versions", versions);
    struct utsname u;
    if (uname(&u) == 0) json_object_set_new(j, "os", json_sprintf("%s %s %s", u.sysname, u.release, u.machine));
    return j;
}

/* ---- the command ------------------------------------------------------------------------------ */

static int bench_main(int argc, char **argv);

int cmd_bench(int argc, char **argv) {
    /* under mpirun/srun: join the job; rank 0 alone prints (stdout), every rank reports errors */
    if (fl_dist_join() || fl_dist_pick_gpu()) {
        fprintf(stderr, "fastlora: bench: %s\n", fl_last_error());
        return 2;
    }
    if (fl_dist_world()->rank != 0 && !freopen("/dev/null", "w", stdout)) return 1;
    int rc = bench_main(argc, argv);
    if (rc) fl_dist_setup_done(rc); /* a rank that failed before the agreement in bench_main */
    return rc;
}

static int bench_main(int argc, char **argv) {
    bench_options o = {.preset = NULL, .targets = "q,k,v,o,gate,up,down", .device = "auto", .batch = 4, .seq = 0,
                       .rank = 16, .steps = 5, .warmup = 2, .threads = 0, .seed = 1234, .alpha = 32.0f};
    const char *sweep_words = NULL; /* help only: the words after --sweep are taken out before parsing */
    const fl_option options[] = {
        {"model", FL_OPT_STRING, &o.model_dir, "Hugging Face model folder (config.json + safetensors)", FL_NO_RANGE},
        {"preset", FL_OPT_STRING, &o.preset, "built-in config with seeded random weights (default smollm2-135m)", FL_NO_RANGE},
        {"weights", FL_OPT_STRING, &o.weights, "name of the weights for the board (default: from preset/folder)", FL_NO_RANGE},
        {"batch", FL_OPT_INT, &o.batch, "batch size B (default 4)", FL_RANGE(1, FL_MAX_BATCH)},
        {"seq", FL_OPT_INT, &o.seq, "sequence length T (default 2048 on a GPU, 256 on the CPU)", FL_RANGE(2, FL_MAX_SEQ)},
        {"rank", FL_OPT_INT, &o.rank, "LoRA rank R (default 16)", FL_RANGE(1, FL_MAX_RANK)},
        {"alpha", FL_OPT_FLOAT, &o.alpha, "LoRA alpha (default 32)", FL_ABOVE(0)},
        {"rslora", FL_OPT_FLAG, &o.rslora, "scale by alpha/sqrt(R) instead of alpha/R", FL_NO_RANGE},
        {"dropout", FL_OPT_FLOAT, &o.dropout, "LoRA dropout (default 0)", FL_MIN | FL_MAX_OPEN, 0, 1},
        {"targets", FL_OPT_STRING, &o.targets, "adapted projections (default q,k,v,o,gate,up,down)", FL_NO_RANGE},
        {"steps", FL_OPT_INT, &o.steps, "timed steps (default 5)", FL_RANGE(1, 1000000)},
        {"warmup", FL_OPT_INT, &o.warmup, "untimed warm-up steps (default 2)", FL_RANGE(0, 1000000)},
        {"threads", FL_OPT_INT, &o.threads, "CPU threads (default 0: all cores)", FL_RANGE(0, 4096)},
        {"seed", FL_OPT_U64, &o.seed, "seed for weights, LoRA init and token ids (default 1234)", FL_NO_RANGE},
        {"device", FL_OPT_STRING, &o.device, "cpu, cuda or auto (default: CUDA when a GPU is present)", FL_NO_RANGE},
        {"dtype", FL_OPT_STRING, &o.dtype, "base weights: bf16 or f32 (CPU only; default: the faster on this CPU, said when it runs)", FL_NO_RANGE},
        {"quant", FL_OPT_STRING, &o.quant, "nf4: the frozen projections in 4-bit NormalFloat (QLoRA)", FL_NO_RANGE},
        {"recompute", FL_OPT_FLAG, &o.recompute, "activation recompute: keep each layer's input, rerun it in the backward", FL_NO_RANGE},
        {"sweep", FL_OPT_STRING, &sweep_words, "batch=1,2,4,8 seq=256,512: try each setting that fits, name the fastest", FL_NO_RANGE},
        {"mem-limit", FL_OPT_STRING, &o.mem_limit, "memory a setting may use, e.g. 8G (default: available RAM / device memory)", FL_NO_RANGE},
        {"no-sgemm", FL_OPT_FLAG, &o.no_sgemm, "CPU: skip measuring the sgemm rate (no MFU)", FL_NO_RANGE},
        {"reference-file", FL_OPT_STRING, &o.reference_path, "published board CSV (default data/reference-board.csv)", FL_NO_RANGE},
        {"json", FL_OPT_STRING, &o.json_path, "append each result as one JSON line to this file", FL_NO_RANGE},
    };
    const int n_options = (int)(sizeof options / sizeof options[0]);
    /* `--sweep batch=1,2 seq=256,512`: the words after --sweep that look like key=list belong to it */
    char **args = fl_malloc(sizeof(char *) * (size_t)(argc + 1));
    int n_args = 0, sweep_given = 0, bad_sweep = 0;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--sweep") != 0) {
            args[n_args++] = argv[i];
            continue;
        }
        sweep_given = 1;
        int words = 0;
        while (i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0) {
            const char *w = argv[++i];
            /* one argument may hold several words: "batch=1,2 seq=256" */
            char buf[256];
            snprintf(buf, sizeof buf, "%s", w);
            for (char *save = NULL, *tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
                bad_sweep |= parse_sweep_word(&o, tok);
                size_t len = strlen(o.sweep_spec);
                snprintf(o.sweep_spec + len, sizeof o.sweep_spec - len, "%s%s", len ? " " : "", tok);
                words++;
            }
        }
        if (!words) bad_sweep = 1;
    }
    int rc = fl_args_parse("bench", n_args, args, options, n_options,
                           "usage: fastlora bench [--model DIR | --preset NAME] [--batch B --seq T --rank R ...]\n"
                           "       fastlora bench --preset NAME --sweep batch=1,2,4,8 seq=256,512 [--json FILE]");
    free(args);
    if (rc) return rc < 0 ? 0 : rc;
    if (bad_sweep) {
        fprintf(stderr, "fastlora: bench: --sweep expects words like batch=1,2,4,8 and seq=256,512 (batch 1..%d, "
                        "seq 2..%d, at most 32 values each)\n", FL_MAX_BATCH, FL_MAX_SEQ);
        return 2;
    }
    if (o.model_dir && o.preset) { fprintf(stderr, "fastlora: bench: give --model or --preset, not both\n"); return 2; }
    if (!o.model_dir && !o.preset) o.preset = "smollm2-135m";
    double mem_limit = 0;
    if (o.mem_limit && !(mem_limit = parse_mem(o.mem_limit))) {
        fprintf(stderr, "fastlora: bench: --mem-limit expects a size > 0 like 8G, 512M or a number of MiB, got '%s'\n",
                o.mem_limit);
        return 2;
    }
    if (!sweep_given) o.sweep_spec[0] = 0;
    if (o.json_path && fl_bench_record_check_target(o.json_path)) {   /* before minutes of measuring */
        fprintf(stderr, "fastlora: bench: --json: %s\n", fl_last_error());
        return 2;
    }
    if (sweep_given && fl_dist_world()->size > 1) {
        fprintf(stderr, "fastlora: bench: --sweep runs in one process; under mpirun give one --batch and --seq\n");
        return 2;
    }

    const fl_backend *be;
    if (fl_backend_select_dtype(o.device, o.dtype, &be)) {
        fprintf(stderr, "fastlora: bench: %s\n", fl_last_error());
        return 2;
    }
    fl_dist_use_backend(be);
    bench_context c = {.o = &o, .be = be, .reference_tok_s = -1.0};
    c.is_cuda = strncmp(be->name, "cpu", 3) != 0;
    /* The definition's 4 x 2048 on a GPU; on a CPU that is minutes per step, so the default there is
     * 4 x 256 (about a minute for the whole run on smollm2-135m). --seq always wins. */
    if (o.seq == 0) o.seq = c.is_cuda ? 2048 : 256;
    if (!o.n_sweep_batch) { o.sweep_batch[0] = o.batch; o.n_sweep_batch = 1; }
    if (!o.n_sweep_seq) { o.sweep_seq[0] = o.seq; o.n_sweep_seq = 1; }
    for (int bi = 0; bi < o.n_sweep_batch; bi++)
        for (int si = 0; si < o.n_sweep_seq; si++)
            if ((int64_t)o.sweep_batch[bi] * o.sweep_seq[si] > FL_MAX_MICRO_TOKENS) {
                fprintf(stderr, "fastlora: bench: batch %d x seq %d is over %d positions per step\n", o.sweep_batch[bi],
                        o.sweep_seq[si], FL_MAX_MICRO_TOKENS);
                return 2;
            }
    if (o.threads > 0) {
        omp_set_num_threads(o.threads);
        openblas_set_num_threads(o.threads);
    }
    c.threads = o.threads > 0 ? o.threads : omp_get_max_threads();
    snprintf(c.dtype, sizeof c.dtype, "%s", be->weight_size == 2 ? "bfloat16" : "float32");
    snprintf(c.act_dtype, sizeof c.act_dtype, "%s", be->act_size == 2 ? "bfloat16" : "float32");
    fastlora_version(c.version, sizeof c.version);
    if (o.weights) snprintf(c.weights, sizeof c.weights, "%s", o.weights);
    else fl_bench_weights_name(o.preset ? o.preset : o.model_dir, o.preset != NULL, c.weights, sizeof c.weights);

    fl_lora_config lc = fl_lora_config_default();
    lc.rank = o.rank;
    lc.alpha = o.alpha;
    lc.use_rslora = o.rslora;
    lc.dropout = o.dropout;
    lc.seed = o.seed;
    fl_quant quant = FL_QUANT_NONE;
    if (fl_lora_parse_targets(o.targets, &lc.target_mask) || fl_quant_parse(o.quant, &quant)) {
        fprintf(stderr, "fastlora: bench: %s\n", fl_last_error());
        return 2;
    }

    /* the device, and how much memory a setting may use */
    double limit = mem_limit;
    if (c.is_cuda) {
#ifdef FL_HAVE_CUDA
        snprintf(c.device, sizeof c.device, "%s", fl_cuda_device_name());
        size_t free_b = 0, total_b = 0;
        fl_cuda_mem_info(&free_b, &total_b);
        if (!limit) limit = (double)free_b;
#endif
        /* driver version from the kernel module; the CUDA version the driver supports from nvidia-smi */
        char line[256] = "";
        first_line_after_colon("/proc/driver/nvidia/version", "NVRM version", line, sizeof line);
        char *kmod = strstr(line, "Kernel Module");
        if (kmod) sscanf(kmod + strlen("Kernel Module"), " %63s", c.driver);
        command_output("nvidia-smi 2>/dev/null | grep -o 'CUDA Version: *[0-9.]*' | grep -o '[0-9.]*$'", c.cuda_version,
                       sizeof c.cuda_version);
    } else {
        snprintf(c.device, sizeof c.device, "cpu");
        first_line_after_colon("/proc/cpuinfo", "model name", c.device, sizeof c.device);
        if (!limit) limit = 0.9 * (double)(proc_kb_field("/proc/meminfo", "MemAvailable") +
                                           proc_kb_field("/proc/self/status", "VmRSS"));
    }

    /* predict the model's own memory before allocating it */
    fl_model_config pre;
    int status;
    if (o.preset) status = fl_config_preset(&pre, o.preset);
    else {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/config.json", o.model_dir);
        status = fl_config_load(&pre, path);
    }
    if (status) {
        fprintf(stderr, "fastlora: bench: %s\n", fl_last_error());
        return status;
    }
    size_t lora_params = fl_lora_param_count(&pre, &lc);
    /* the base as the engine lays it out (model/weights.h: NF4 or the weight type, the fused
     * matrices' reserved columns), LoRA masters + gradients + two AdamW moments in f32, and its
     * weight-typed compute copy */
    double fixed_bytes = (double)fl_weights_bytes(&pre, be->weight_size, be->act_size, fl_model_weights_reserve(&lc), quant) +
                         (double)lora_params * (4 * sizeof(float) + (be->weight_size == sizeof(float) ? 0 : be->weight_size));
    if (limit > 0 && fixed_bytes > limit) {
        fprintf(stderr, "fastlora: bench: %s does not fit: weights + LoRA state need %.2f GiB, limit %.2f GiB%s\n",
                c.weights, fixed_bytes / 1073741824.0, limit / 1073741824.0, o.mem_limit ? " (--mem-limit)" : "");
        return 2;
    }

    fl_model m;
    double t_load = now_seconds();
    status = o.model_dir ? fl_model_init_dir_quant(&m, o.model_dir, be, &lc, quant)
                         : fl_model_init_preset_quant(&m, o.preset, o.seed, be, &lc, quant);
    m.recompute = o.recompute;
    if (status) {
        fprintf(stderr, "fastlora: bench: %s\n", fl_last_error());
        return status;
    }
    t_load = now_seconds() - t_load;
    c.m = &m;
    if (fl_dist_setup_done(0)) { /* another rank failed to start */
        fl_model_free(&m);
        return 2;
    }
    const fl_model_config *cfg = &m.cfg;

    /* MFU's denominator: the card's dense bf16 peak (GPU), a measured sgemm (CPU) */
    if (c.is_cuda) {
        fl_gpu_catalog cat;
        if (fl_gpu_catalog_load_default(&cat) == 0) {
            const fl_gpu_spec *g = fl_gpu_catalog_find(&cat, c.device);
            if (g && fl_gpu_train_tflops(g) > 0) {
                c.peak_tflops = fl_gpu_train_tflops(g);
                snprintf(c.peak_source, sizeof c.peak_source, "of the dense bf16 peak %.0f TFLOP/s of %s (data/gpus.csv)",
                         c.peak_tflops, g->name);
            } else {
                snprintf(c.peak_source, sizeof c.peak_source, "'%s' is not in data/gpus.csv", c.device);
            }
            fl_gpu_catalog_free(&cat);
        } else {
            snprintf(c.peak_source, sizeof c.peak_source, "no GPU catalog: %s", fl_last_error());
        }
    } else if (!o.no_sgemm) {
        printf("measuring the CPU's sgemm rate (OpenBLAS, 1536^3, %d threads) for MFU...\n", c.threads);
        fflush(stdout);
        c.peak_tflops = measure_sgemm_tflops(1536);
        snprintf(c.peak_source, sizeof c.peak_source,
                 "vs measured sgemm peak %.3f TFLOP/s (OpenBLAS f32 sgemm 1536^3, %d threads; not a vendor figure%s)",
                 c.peak_tflops, c.threads,
                 be->weight_size == 2 ? "; bf16-weight kernels are not bounded by an f32 sgemm, so > 100% is possible" : "");
    } else {
        snprintf(c.peak_source, sizeof c.peak_source, "--no-sgemm: no measured CPU peak");
    }

    /* the published board's figure for these weights on this device */
    fl_reference_board ref;
    if (fl_reference_board_load(&ref, o.reference_path) == 0) {
        c.reference_tok_s = fl_reference_board_find(&ref, c.weights, c.device);
        snprintf(c.reference_file, sizeof c.reference_file, "%s", ref.path);
        fl_reference_board_free(&ref);
    } else if (o.reference_path) {
        fprintf(stderr, "fastlora: bench: %s\n", fl_last_error());
        fl_model_free(&m);
        return 2;
    }

    printf("fastlora bench %s: %s (%s, %s weights), %.1fM params, LoRA r=%d alpha=%g on %s (%.2fM trainable)\n",
           c.version, c.weights, cfg->arch == FL_ARCH_QWEN2 ? "Qwen2" : "Llama", o.preset ? "random" : "loaded",
           fl_config_total_params(cfg) / 1e6, lc.rank, lc.alpha, o.targets, lora_params / 1e6);
    printf("  device: %s (%s backend, %s weights, %s activations", c.device, be->name, c.dtype, c.act_dtype);
    if (!c.is_cuda) printf(", %d threads, OMP_WAIT_POLICY %s, GEMM %s", c.threads,
                           getenv("OMP_WAIT_POLICY") ? getenv("OMP_WAIT_POLICY") : "(runtime default)", fl_gemm_bf16_path());
    if (c.driver[0]) printf(", driver %s", c.driver);
    if (c.cuda_version[0]) printf(", CUDA %s", c.cuda_version);
    printf("); loaded in %.1f s; memory limit %.2f GiB%s\n", t_load, limit / 1073741824.0,
           o.mem_limit ? " (--mem-limit)" : c.is_cuda ? " (free device memory)" : " (90% of available RAM)");
    if (!c.is_cuda && !o.dtype) { /* the default, and why */
        const char *why;
        fl_cpu_default_dtype(&why);
        printf("  %s\n", why);
    }
    fflush(stdout);

    struct sigaction sa, old_sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sa.sa_flags = SA_RESETHAND; /* a second Ctrl-C kills as usual */
    sigemptyset(&sa.sa_mask);
    interrupted = 0;
    sigaction(SIGINT, &sa, &old_sa);

    int n_points = o.n_sweep_batch * o.n_sweep_seq;
    bench_point *points = fl_calloc((size_t)n_points, sizeof *points);
    int n_run = 0;
    for (int si = 0; si < o.n_sweep_seq && !interrupted; si++)
        for (int bi = 0; bi < o.n_sweep_batch && !interrupted; bi++) {
            bench_point *p = &points[n_run++];
            p->B = o.sweep_batch[bi];
            p->T = o.sweep_seq[si];
            p->predicted_bytes = fixed_bytes + (double)fl_activations_bytes(cfg, lc.rank, p->B, p->T, be->act_size, o.recompute);
            if (!c.is_cuda) p->predicted_bytes += cpu_workspace_bytes(cfg, &lc, p->B, p->T, quant == FL_QUANT_NF4, o.recompute);
            p->fits = !(limit > 0 && p->predicted_bytes > limit);
            if (n_points > 1) printf("\n== %d x %d (%d of %d) ==\n", p->B, p->T, n_run, n_points);
            if (!p->fits) {
                if (n_points == 1) {
                    fprintf(stderr, "fastlora: bench: %d x %d does not fit: predicted %.2f GiB > limit %.2f GiB%s\n", p->B,
                            p->T, p->predicted_bytes / 1073741824.0, limit / 1073741824.0,
                            o.mem_limit ? " (--mem-limit)" : "");
                    status = 2;
                } else {
                    printf("  does not fit: predicted %.2f GiB > limit %.2f GiB; skipped\n", p->predicted_bytes / 1073741824.0,
                           limit / 1073741824.0);
                }
                continue;
            }
            printf("  %d x %d = %zu tokens/step, predicted memory %.2f GiB\n", p->B, p->T, (size_t)p->B * p->T,
                   p->predicted_bytes / 1073741824.0);
            fl_model_print_memory(c.m, p->B, p->T, stdout);
            if (fl_dist_world()->size > 1) run_point_ranks(&c, p);
            else run_point(&c, p);
            print_result(&c, p);
            if (o.json_path && p->n_timed > 0 && !p->interrupted) {
                json_t *j = point_record(&c, p);
                if (fl_bench_record_append(o.json_path, j)) {
                    fprintf(stderr, "fastlora: bench: %s\n", fl_last_error());
                    status = 2;
                } else {
                    printf("  record appended to %s\n", o.json_path);
                }
                json_decref(j);
            } else if (o.json_path && p->interrupted) {
                printf("  interrupted: no record written to %s (partial measurements are not results)\n", o.json_path);
            }
        }
    sigaction(SIGINT, &old_sa, NULL);

    if (n_points > 1) {
        printf("\nsweep: %s, %s on %s\n| batch | seq | train tok/s | ms/step | peak MiB | |\n|---|---|---|---|---|---|\n",
               o.sweep_spec, c.weights, c.device);
        int best = -1;
        for (int k = 0; k < n_run; k++) {
            bench_point *p = &points[k];
            if (!p->fits) {
                printf("| %d | %d | — | — | %.0f (predicted) | does not fit |\n", p->B, p->T, p->predicted_bytes / 1048576.0);
                continue;
            }
            if (!p->n_timed) {
                printf("| %d | %d | — | — | — | interrupted |\n", p->B, p->T);
                continue;
            }
            printf("| %d | %d | %.1f | %.1f | %.0f | %s |\n", p->B, p->T, p->tok_s, p->median * 1e3, p->peak_bytes / 1048576.0,
                   p->interrupted ? "partial" : "");
            if (!p->interrupted && (best < 0 || p->tok_s > points[best].tok_s)) best = k;
        }
        if (n_run < n_points) printf("(%d setting%s not tried: interrupted)\n", n_points - n_run, n_points - n_run == 1 ? "" : "s");
        if (best >= 0)
            printf("fastest that fits: batch %d x seq %d, %.1f train tok/s\n", points[best].B, points[best].T,
                   points[best].tok_s);
        else
            printf("no setting was measured completely\n");
    }
    for (int k = 0; k < n_points; k++) free(points[k].step_s);
    free(points);
    free(c.rank_tok_s);
    fl_model_free(&m);
    if (interrupted) {
        fprintf(stderr, "fastlora bench: interrupted\n");
        return 130;
    }
    return status;
}
