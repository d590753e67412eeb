/* plan.h — the training-run planner behind `fastlora plan`: for a model, a LoRA config and a
 * B x T, how much memory the engine allocates (per category), whether it fits a GPU, the largest
 * micro-batch that does, how fast a step runs (a roofline model of this engine, calibrated from
 * bench records), and how long and how much a run of N tokens takes.
 *
 *   fl_plan_request rq = fl_plan_request_default();
 *   fl_config_preset(&rq.cfg, "qwen2.5-1.5b");  rq.tokens = 50e6;
 *   fl_plan_result r;  fl_plan_gpu(&rq, gpu, &calib, &r);
 *   printf("%s: %.0f tok/s, %s\n", gpu->short_name, r.tok_s, r.fits ? "fits" : "does not fit");
 *
 * Memory is computed from the engine's own tables (engine/activations.h with and without recompute,
 * model/weights.h's layout of the base, float or NF4, the LoRA buffer layout of engine/model_init.c, the CPU
 * LM-head chunk of cpu_loss.c and NF4 tile of gemm_nf4.c, the CUDA backend's constants in
 * backend/cuda/cuda_plan.h) so it cannot drift from what the engine allocates. Recompute (train/bench
 * --recompute) keeps the residual stream of every layer plus one layer's activations and reruns the
 * forward of every layer but the last in the backward (without the down projection's frozen GEMM);
 * NF4 (--quant nf4) holds the projections in 4.13 bits and dequantizes a tile before each of their
 * GEMMs.
 * Not the bench (cli/cmd_bench.c measures) and not the catalog (plan/gpu_catalog.h).
 */
#ifndef FL_PLAN_H
#define FL_PLAN_H

#include <stddef.h>

#include "lora/lora.h"
#include "model/config.h"
#include "model/weights.h"
#include "plan/gpu_catalog.h"

/* ---- memory ---------------------------------------------------------------------------------- */

/* X(field, label): every category of the memory plan, in print order. */
#define FL_PLAN_MEM_CATEGORIES(X)                                        \
    X(weights, "frozen weights")                                         \
    X(lora_params, "LoRA params (f32 + compute copy)")                   \
    X(lora_grads, "LoRA grads (f32)")                                    \
    X(adamw, "AdamW m + v (f32)")                                        \
    X(activations, "activations")                                        \
    X(logits, "logits chunk")                                            \
    X(attn_ws, "attention workspace")                                    \
    X(gemm_ws, "GEMM workspace + staging")                               \
    X(context, "CUDA context")

typedef struct {
#define X(field, label) double field;
    FL_PLAN_MEM_CATEGORIES(X)
#undef X
    double activations_full;       /* activations without recompute (always filled) */
    double activations_recompute;  /* projection with recompute (always filled) */
    double total;
} fl_plan_memory;

typedef enum { FL_TARGET_CPU = 0, FL_TARGET_CUDA } fl_plan_target;

/* `mode` bits of the memory and step-time functions (0: every activation kept, a float base) */
#define FL_PLAN_RECOMPUTE 1u   /* activation recompute */
#define FL_PLAN_NF4 2u         /* NF4 frozen projections */

/* CUDA context bytes assumed per process (driver + cuBLAS + loaded kernels, lazy loading): stated
 * in docs/PLAN.md, not measured here. */
#define FL_PLAN_CUDA_CONTEXT_BYTES (500.0 * 1048576.0)

/* Bytes the engine allocates for one training run. CPU: the f32 engine (act_size 4), no context;
 * CUDA: act_size 2. mode: FL_PLAN_* bits. */
fl_plan_memory fl_plan_memory_compute(const fl_model_config *cfg, const fl_lora_config *lc, int B, int T,
                                      fl_plan_target target, unsigned mode);
/* Largest B (1..max_b) whose plan fits in `bytes`; 0 when B = 1 does not fit. */
int fl_plan_max_batch(const fl_model_config *cfg, const fl_lora_config *lc, int T, fl_plan_target target,
                      unsigned mode, double bytes, int max_b);

/* ---- throughput ------------------------------------------------------------------------------ */

typedef struct {
    double peak_tflops;     /* tensor rate of the engine's dtype */
    double mem_bw_gbs;
    double compute_eff;     /* fraction of peak GEMMs reach; attention gets FL_PLAN_ATTN_EFF_RATIO of it */
    double bw_eff;          /* fraction of peak bandwidth memory-bound kernels reach */
    double launch_us;       /* per kernel launch (not overlapped) */
    double step_overhead_ms;
} fl_plan_device;

#define FL_PLAN_DEFAULT_COMPUTE_EFF 0.50   /* used when no bench record calibrates it */
#define FL_PLAN_DEFAULT_BW_EFF 0.70
#define FL_PLAN_ATTN_EFF_RATIO 0.5         /* fused attention vs GEMM efficiency */
#define FL_PLAN_CUDA_LAUNCH_US 4.0
#define FL_PLAN_CUDA_STEP_OVERHEAD_MS 0.5

typedef struct {
    double gemm_flops, attn_flops;   /* per step */
    double gemm_s;                   /* GEMMs, each at max(compute, memory) time */
    double gemm_membound_s;          /* the part of gemm_s spent in memory-bound GEMMs (skinny LoRA ones) */
    double attn_s, elementwise_s, overhead_s;
    double elementwise_bytes;
    int kernels;
    double step_s, tok_s;
} fl_plan_step;

/* One step of B x T: GEMMs (frozen projections, LoRA, LM head) by roofline, attention at its
 * FLOPs, norms/RoPE/SwiGLU/adds/softmax/AdamW (and NF4 dequantization) at bandwidth, plus launches
 * and a fixed overhead. mode: FL_PLAN_* bits (recompute adds the rerun forwards). */
fl_plan_step fl_plan_step_time(const fl_model_config *cfg, const fl_lora_config *lc, int B, int T, size_t act_size,
                               unsigned mode, const fl_plan_device *dev);
/* The compute efficiency that makes the model's step time equal `measured_s` (clamped to
 * [0.01, 1]); *clamped set when it had to clamp. */
double fl_plan_solve_efficiency(const fl_model_config *cfg, const fl_lora_config *lc, int B, int T, size_t act_size,
                                unsigned mode, const fl_plan_device *dev, double measured_s, int *clamped);

/* ---- bench records (calibration and measurements) -------------------------------------------- */

typedef struct {
    char device[256], backend[32], dtype[32], model[512], targets[160];
    int batch, seq, rank;
    unsigned mode;             /* FL_PLAN_* bits of the run (its quant and recompute) */
    double train_tok_s, ms_per_step, peak_mem_bytes;
    int line;
    /* resolved */
    fl_model_config cfg;
    fl_lora_config lc;
    const fl_gpu_spec *gpu;    /* catalog row of `device`, NULL when none */
    double efficiency;         /* solved compute efficiency, 0 when not solvable */
    double predicted_tok_s;    /* model at the calibrated efficiency (filled by fl_plan_calibrate) */
} fl_plan_record;

typedef struct {
    fl_plan_record *recs;
    int n;
    int n_skipped;            /* lines not usable (unknown model, missing fields): listed in notes */
    char notes[1024];
    double cuda_eff;          /* median efficiency over CUDA records; default when none */
    int n_cuda;
    double cpu_eff;           /* median over CPU records (rows from a user catalog); default when none */
    int n_cpu;
} fl_plan_calibration;

/* The config a record or board row names: a preset name, a folder with config.json, or a Hugging
 * Face id whose basename starts with a preset name ("Qwen/Qwen2.5-1.5B-Instruct" -> qwen2.5-1.5b).
 * Returns 0, or -1 (error cleared) when nothing matches. */
int fl_plan_resolve_model(fl_model_config *cfg, const char *model);
/* Reads bench --json lines (NULL path: no records). Malformed JSON lines are "file:line" errors;
 * records whose model cannot be resolved are skipped and counted. Matches each record's device
 * to the catalog and solves its efficiency. */
int fl_plan_calibration_load(fl_plan_calibration *cal, const char *path, const fl_gpu_catalog *cat);
void fl_plan_calibration_free(fl_plan_calibration *cal);
/* The device model for a GPU: its catalog rates, the efficiency calibrated on that GPU (median of
 * its records) or else the global CUDA one. `*how` says which ("calibrated on 3 records of this
 * GPU", "calibrated on 5 CUDA records", "default efficiency 0.50 (no CUDA bench records)"). */
fl_plan_device fl_plan_device_for(const fl_gpu_spec *g, fl_plan_target target, const fl_plan_calibration *cal,
                                  char *how, size_t how_cap);

/* ---- one plan -------------------------------------------------------------------------------- */

typedef enum { FL_RECOMPUTE_AUTO = 0, FL_RECOMPUTE_ON, FL_RECOMPUTE_OFF } fl_recompute_mode;

typedef struct {
    fl_model_config cfg;
    fl_lora_config lc;
    char targets[128];
    int batch, seq;
    fl_recompute_mode recompute;
    fl_quant quant;      /* the frozen projections: float (the backend's type) or NF4 */
    double tokens;       /* tokens per epoch (0: no time/cost) */
    double epochs;
    double ref_tokens;   /* tokens also run through one forward alone (dpo, ipo: each pair's reference
                          * log-probs, once per run); each costs half a trained token (engine/flops.h:
                          * the forward's 2·P of the 4·P FLOPs per token); 0: none */
    fl_plan_target target;
    int gpus;            /* data parallel over this many GPUs (1: one); batch is per GPU */
} fl_plan_request;

fl_plan_request fl_plan_request_default(void);

typedef struct {
    const fl_gpu_spec *gpu;
    fl_plan_memory mem;          /* at the micro-batch and recompute choice below */
    fl_plan_memory mem_requested;/* at the requested batch without recompute */
    double usable_bytes;
    int fits;                    /* the plan below fits */
    int fits_requested;          /* requested batch, no recompute */
    int max_batch;               /* largest micro-batch without recompute (0: none) */
    int max_batch_recompute;     /* with recompute */
    int recompute;               /* the plan uses recompute */
    int recompute_needed;        /* nothing fits without it but something fits with it */
    int micro_batch, grad_accum; /* micro_batch * grad_accum >= requested batch */
    fl_plan_step step;
    double tok_s;
    int measured;                /* tok_s is a measured bench record of this GPU and run */
    char tok_s_source[160];
    double time_s;               /* tokens * epochs / tok_s; <0 when no tokens given or no fit */
    double cost_usd;             /* <0 unknown; with gpus > 1 the price of all of them */
    char note[256];
    /* gpus > 1: tok_s above is the aggregate over the GPUs, this the rate of one */
    double tok_s_one, allreduce_s, scaling; /* one GPU's tok/s; all-reduce seconds per step; tok_s / (gpus x tok_s_one) */
    char link[32];                          /* "NVLink", "PCIe" or "PCIe (assumed Gen4 x16)" */
} fl_plan_result;

/* Ring all-reduce of `bytes` (the f32 LoRA gradients) over `gpus` of this card, in seconds: each GPU
 * sends and receives 2(gpus-1)/gpus x bytes over its link at FL_PLAN_LINK_EFF of the link's rate in
 * one direction (half the catalog's two-way figure), plus 2(gpus-1) hops of FL_PLAN_HOP_US. The link
 * is NVLink when the card has it and gpus fits its NVLink domain (nvlink_gpus), else PCIe (Gen4 x16
 * when the catalog has no figure). One node: the network between nodes is not modelled. */
#define FL_PLAN_LINK_EFF 0.8 /* assumption: all-reduce bus bandwidth / link rate (not measured here) */
#define FL_PLAN_HOP_US 10.0  /* assumption: latency of one ring step */
double fl_plan_allreduce_seconds(const fl_gpu_spec *gpu, int gpus, double bytes, char *link, size_t link_cap);

/* Plans the request on one GPU (target CUDA) or, with gpu NULL and target CPU, on the host
 * (capacity ignored). With rq->gpus > 1 (CUDA): one optimizer step per GPU takes its one-GPU time
 * plus the all-reduce of the LoRA gradients (not overlapped: fastlora all-reduces once after the
 * accumulation), so tok_s = gpus x tokens per step / (step + all-reduce); time and cost follow. */
void fl_plan_gpu(const fl_plan_request *rq, const fl_gpu_spec *gpu, const fl_plan_calibration *cal,
                 fl_plan_result *out);

/* ---- words ----------------------------------------------------------------------------------- */

/* "45 s", "12 min", "2 h 10 min", "3.5 days"; then " — " and a human scale ("an evening", "a
 * week") when `with_scale`. */
void fl_plan_format_duration(double seconds, int with_scale, char *buf, size_t cap);
/* "512.0 MiB", "13.4 GiB" */
void fl_plan_format_bytes(double bytes, char *buf, size_t cap);

#endif
