/* bench_point.h — one measured point of `fastlora bench` (bench_run.h): the fixed batch at B x T,
 * warm-up and timed steps with the device synchronized, the median and range, the peak memory.
 * Under mpirun/srun rank 0 first runs alone while the others wait (the rate of one process here),
 * then every rank runs the same steps with the LoRA gradients all-reduced each step, as training
 * does; rank 0 prints each rank's tok/s and all-reduce time, the aggregate (their sum) and the
 * scaling efficiency = aggregate / (ranks x the rate alone).
 * Not here: setting up the run (bench_run.c), printing a result (bench_report.h). */
#ifndef FL_BENCH_POINT_H
#define FL_BENCH_POINT_H

#include <signal.h>

#include "bench/bench_run.h"
#include "engine/flops.h"
#include "engine/model.h"

/* Set by the run's Ctrl-C handler: the point stops after the current step. */
extern volatile sig_atomic_t fl_bench_interrupted;

typedef struct {
    int B, T;
    int fits;               /* predicted memory within the limit */
    double predicted_bytes; /* model + LoRA state + activations (+ the CPU workspaces) */
    int n_timed;            /* timed steps measured */
    int interrupted;
    double median, fastest, slowest; /* seconds */
    double *step_s;         /* (n_timed) in the order measured */
    double tok_s, tok_s_min, tok_s_max;
    double peak_bytes, final_loss;
    fl_flop_terms flops;    /* of one step (engine/flops.h) */
    double allreduce_median;  /* seconds of the gradient all-reduce per step (several ranks) */
    double launches;          /* CUDA: operations (kernels, GEMMs, copies) one step enqueues op by op; 0 elsewhere */
    int replayed;             /* timed steps replayed from a recorded CUDA graph */
} fl_bench_point;

/* What every point of a run shares: the model, the device and the figures results are read against. */
typedef struct {
    const fl_bench_options *o;
    fl_model *m;
    const fl_backend *be;
    int is_cuda, threads;
    char device[192], dtype[16], act_dtype[16], version[96], weights[128], driver[64], cuda_version[32];
    char cpu_id[160];         /* on the CPU: fl_cpu_identity ("" when unknown, or on a GPU) */
    char targets[128];        /* the adapted checkpoint modules (fl_lora_targets_text) */
    double peak_tflops;       /* MFU denominator; 0 when unknown */
    char peak_source[256];    /* what the denominator is */
    double reference_tok_s;   /* published figure for weights x device, < 0 none */
    char reference_file[512];
    int allreduce;            /* several ranks: all-reduce the LoRA gradients every step */
    double alone_tok_s, aggregate_tok_s, *rank_tok_s; /* several ranks: the summary for the record */
} fl_bench_context;

/* Whether the run measures a preference objective (o->objective dpo, ipo, orpo or simpo). */
int fl_bench_is_preference(const fl_bench_options *o);

/* Seconds on the monotonic clock: what steps are timed with. */
double fl_bench_seconds(void);

/* Runs warm-up + timed steps at (p->B, p->T), filling p (p->step_s allocated: the caller frees it).
 * Stops early (n_timed < steps) on Ctrl-C. */
void fl_bench_run_point(fl_bench_context *c, fl_bench_point *p);

/* The same under several ranks: rank 0 alone, then all together (the header comment). */
void fl_bench_run_point_ranks(fl_bench_context *c, fl_bench_point *p);

#endif
