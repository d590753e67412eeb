/* plan.c — memory, throughput, calibration and the per-GPU plan (see plan.h).
 *
 * Sections: memory (from the engine's tables) · step time (roofline of the engine's kernels) ·
 * bench records (calibration) · one plan · words. Glossary as in model/config.h; N = B*T. */
#include "plan/plan.h"

#include <ctype.h>
#include <jansson.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "backend/cpu/gemm_nf4.h"
#include "backend/cpu/cpu_plan.h"
#include "backend/cuda/cuda_plan.h"
#include "bench/records.h"
#include "common/error.h"
#include "engine/activations.h"
#include "engine/flops.h"
#include "engine/model.h"
#include "io/file_util.h"

/* ---- memory ---------------------------------------------------------------------------------- */

/* CPU LM head (cpu_loss.c): one chunk of f32 logits, rows as backend/cpu/cpu_plan.h sizes them. */
static double cpu_logits_bytes(size_t N, int V) { return (double)fl_cpu_lm_head_chunk_rows(N, V) * V * sizeof(float); }

/* The NF4 tile scratch: one tile of the projection whose tile is largest, as `tile_bytes` sizes a
 * (rows, cols) weight's tile. */
static size_t largest_nf4_tile(const fl_model_config *cfg, size_t (*tile_bytes)(int64_t rows, int64_t cols)) {
    size_t most = 0;
    for (int p = 0; p < FL_N_PROJ; p++) {
        int in, out;
        fl_proj_dims(cfg, (fl_proj)p, &in, &out);
        size_t b = tile_bytes(out, in);
        most = b > most ? b : most;
    }
    return most;
}

/* the CPU NF4 GEMMs' tile (gemm_nf4.c), f32 on the reference backend */
static size_t cpu_nf4_tile(int64_t rows, int64_t cols) { return fl_gemm_nf4_scratch_bytes(rows, cols, 1); }
/* the CUDA NF4 matmuls' bf16 tile (cuda_nf4.cu, cuda_plan.h's tile rows) */
static size_t cuda_nf4_tile(int64_t rows, int64_t cols) { return (size_t)fl_cuda_nf4_tile_rows(rows, cols) * (size_t)cols * 2; }

fl_plan_memory fl_plan_memory_compute(const fl_model_config *cfg, const fl_lora_config *lc, int B, int T,
                                      fl_plan_target target, unsigned mode) {
    fl_plan_memory m;
    memset(&m, 0, sizeof m);
    int cuda = target == FL_TARGET_CUDA, nf4 = (mode & FL_PLAN_NF4) != 0;
    size_t act = cuda ? 2 : 4;
    double P = (double)fl_lora_param_count(cfg, lc), N = (double)B * T;
    /* the engine's own tables: the base as weights.c lays it out, activations.h */
    m.weights = (double)fl_weights_bytes(cfg, act, act, fl_model_weights_reserve(lc), nf4 ? FL_QUANT_NF4 : FL_QUANT_NONE);
    m.lora_params = P * sizeof(float) + (cuda ? P * act : 0);            /* engine/model_init.c: the compute copy aliases on CPU */
    m.lora_grads = P * sizeof(float);
    m.adamw = 2 * P * sizeof(float);
    m.activations_full = (double)fl_activations_bytes(cfg, lc->rank, B, T, act, 0);
    m.activations_recompute = (double)fl_activations_bytes(cfg, lc->rank, B, T, act, 1);
    m.activations = (mode & FL_PLAN_RECOMPUTE) ? m.activations_recompute : m.activations_full;
    if (cuda) {
        /* backend/cuda/cuda_plan.h: bf16 logits chunk + per-row losses; attention backward keeps
         * D = rowsum(dout * out) (B, NH, T) f32; cuBLASLt workspace, f32 staging, 1 MiB reductions */
        m.logits = (double)fl_cuda_lm_head_scratch_bytes((size_t)N, cfg->vocab_size, FL_CUDA_LM_HEAD_BUDGET);
        m.attn_ws = (double)B * cfg->n_heads * T * sizeof(float);
        m.gemm_ws = (double)FL_CUDA_WORKSPACE_BYTES + (double)FL_CUDA_STAGING_FLOATS * sizeof(float) + 1048576.0 +
                    (nf4 ? (double)largest_nf4_tile(cfg, cuda_nf4_tile) : 0);
        m.context = FL_PLAN_CUDA_CONTEXT_BYTES;
    } else {
        m.logits = cpu_logits_bytes((size_t)N, cfg->vocab_size);
        m.attn_ws = (double)fl_cpu_attention_partial_bytes(B, T, cfg->n_heads, cfg->head_dim) +
                    (double)fl_cpu_attention_pack_bytes(B, T, cfg->n_kv_heads, cfg->head_dim, omp_get_max_threads());
        m.gemm_ws = nf4 ? (double)largest_nf4_tile(cfg, cpu_nf4_tile) : 0;   /* OpenBLAS buffers belong to the process baseline */
        m.context = 0;
    }
    m.total = 0;
#define X(field, label) m.total += m.field;
    FL_PLAN_MEM_CATEGORIES(X)
#undef X
    return m;
}

int fl_plan_max_batch(const fl_model_config *cfg, const fl_lora_config *lc, int T, fl_plan_target target,
                      unsigned mode, double bytes, int max_b) {
    if (fl_plan_memory_compute(cfg, lc, 1, T, target, mode).total > bytes) return 0;
    int lo = 1, hi = max_b;   /* memory grows with B: binary search the last B that fits */
    if (fl_plan_memory_compute(cfg, lc, hi, T, target, mode).total <= bytes) return hi;
    while (hi - lo > 1) {
        int mid = lo + (hi - lo) / 2;
        if (fl_plan_memory_compute(cfg, lc, mid, T, target, mode).total <= bytes) lo = mid;
        else hi = mid;
    }
    return lo;
}

/* ---- step time ------------------------------------------------------------------------------- */

typedef struct {
    const fl_plan_device *dev;
    fl_plan_step s;
} step_acc;

/* One GEMM (M x K) · (K x Nn): its time is the larger of compute and memory time. */
static void gemm(step_acc *a, double M, double K, double Nn, double bytes) {
    double flops = 2.0 * M * K * Nn;
    double tc = flops / (a->dev->peak_tflops * 1e12 * a->dev->compute_eff);
    double tm = bytes / (a->dev->mem_bw_gbs * 1e9 * a->dev->bw_eff);
    a->s.gemm_flops += flops;
    a->s.gemm_s += tc > tm ? tc : tm;
    if (tm > tc) a->s.gemm_membound_s += tm;
    a->s.kernels++;
}

fl_plan_step fl_plan_step_time(const fl_model_config *cfg, const fl_lora_config *lc, int B, int T, size_t act_size,
                               unsigned mode, const fl_plan_device *dev) {
    step_acc a;
    memset(&a, 0, sizeof a);
    a.dev = dev;
    double N = (double)B * T, e = (double)act_size, R = lc->rank;
    double C = cfg->hidden_size, QD = fl_config_q_dim(cfg), KVD = fl_config_kv_dim(cfg), FF = cfg->intermediate_size;
    double V = cfg->vocab_size, L = cfg->n_layers;
    int recompute = (mode & FL_PLAN_RECOMPUTE) != 0, nf4 = (mode & FL_PLAN_NF4) != 0;
    int n_adapted = 0;
    double dropout_bytes = 0, dequant_bytes = 0;
    for (int l = 0; l < cfg->n_layers; l++)
        for (int p = 0; p < FL_N_PROJ; p++) {
            int in, out;
            fl_proj_dims(cfg, (fl_proj)p, &in, &out);
            double IC = in, OC = out;
            int adapted = fl_lora_adapts(cfg, lc, (fl_proj)p);   /* Phi-3: one LoRA per fused module, */
            int m_in, m_out, m_off;                               /* its B over the group's rows (LOC) */
            fl_module_dims(cfg, (fl_proj)p, &m_in, &m_out, &m_off);
            double LOC = m_out;
            if (l == 0) n_adapted += adapted;
            /* recompute (engine/model.c): every layer but the last runs its forward again in the
             * backward, without the down projection's frozen product (its x·Aᵀ is rerun) */
            int passes = recompute && l < cfg->n_layers - 1 ? 2 : 1;
            for (int f = 0; f < passes; f++) {
                int rerun_down = f == 1 && p == FL_PROJ_DOWN;
                if (!rerun_down) gemm(&a, N, IC, OC, (N * IC + IC * OC + N * OC) * e);          /* x·Wᵀ */
                if (!rerun_down && nf4) dequant_bytes += IC * OC * (FL_NF4_BYTES_PER_WEIGHT + e);
                if (adapted) {
                    gemm(&a, N, IC, R, (N * IC + R * IC + N * R) * e);                 /* xa = x·Aᵀ */
                    if (!rerun_down) gemm(&a, N, R, LOC, (N * R + LOC * R + 2 * N * LOC) * e);   /* out += s·xa·Bᵀ */
                }
                if (adapted && lc->dropout > 0) dropout_bytes += 2 * N * IC * e;
            }
            gemm(&a, N, OC, IC, (N * OC + OC * IC + N * IC) * e);                      /* dinp = dout·W */
            if (nf4) dequant_bytes += IC * OC * (FL_NF4_BYTES_PER_WEIGHT + e);
            if (adapted) {
                gemm(&a, LOC, N, R, (N * LOC + N * R) * e + 2 * LOC * R * 4);        /* dlora_b += doutᵀ·xa */
                gemm(&a, N, LOC, R, (N * LOC + LOC * R + N * R) * e);                 /* dxa = dout·B */
                gemm(&a, R, N, IC, (N * R + N * IC) * e + 2 * R * IC * 4);            /* dlora_a += dxaᵀ·x */
                gemm(&a, N, R, IC, (N * R + R * IC + 2 * N * IC) * e);                 /* dinp += dxa·A */
                if (lc->dropout > 0) dropout_bytes += 2 * N * IC * e;
            }
        }
    double passes = recompute ? 1.0 + (L - 1) / L : 1.0;   /* forward passes over the layers, on average */
    /* LM head, chunked: logits (f32 on the CPU, bf16 on CUDA), softmax in place, then dinp */
    double le = act_size == 4 ? 4 : 2;
    gemm(&a, N, C, V, (N * C + V * C) * e + N * V * le);
    gemm(&a, N, V, C, N * V * le + V * C * e + N * C * e);
    /* attention: the FLOPs of fl_model_flops_per_step (causal, sliding windows included; the forward a
     * third of them), its forward again in every recomputed layer */
    double keys = 0.0;
    for (int l = 0; l < cfg->n_layers; l++) keys += fl_attention_mean_keys(T, fl_config_layer_window(cfg, l));
    a.s.attn_flops = 12.0 * keys * (double)cfg->n_heads * cfg->head_dim * N * (1.0 + (passes - 1.0) / 3.0);
    a.s.attn_s = a.s.attn_flops / (dev->peak_tflops * 1e12 * dev->compute_eff * FL_PLAN_ATTN_EFF_RATIO);
    /* memory-bound kernels, elements per token per layer: forward 2 RMSNorms (2C each), RoPE on
     * q,k (2(QD+KVD)), 2 residual adds (3C each), SwiGLU (3FF); backward 2 RMSNorm backward (4C
     * each), 2 residual-gradient adds (3C), RoPE backward (2(QD+KVD)), SwiGLU backward (5FF) */
    double fwd = 10 * C + 2 * (QD + KVD) + 3 * FF, bwd = 14 * C + 2 * (QD + KVD) + 5 * FF;
    if (cfg->qk_norm) { /* Qwen3's q/k norms (engine/model.c): forward copy out, norm, copy back (2 + 2 +
                           2 per element); backward copy out, zero, norm backward (4), copy back */
        fwd += 6 * (QD + KVD);
        bwd += 9 * (QD + KVD);
    }
    if (cfg->sandwich_norms) { /* Gemma's post-attention and post-feedforward norms (engine/model.c): forward
                                  2 norms (2C) + 1 copy (2C) each; backward zero (C) + norm backward (4C) each */
        fwd += 8 * C;
        bwd += 10 * C;
    }
    if (fl_config_residual_scaled(cfg)) { /* Granite's residual_multiplier (engine/model.c): forward each branch
                                             written apart and scaled (2C + 2C); backward copied and scaled (4C) */
        fwd += 8 * C;
        bwd += 8 * C;
    }
    if (cfg->no_pre_norms) { /* OLMo 2: each pre-norm a copy (2C, as the norm it replaces); its backward a
                                copy (2C) + add (3C) instead of the norm backward (4C) */
        bwd += 2 * C;
    }
    if (fl_model_q_scale(cfg) != 1.0f) { /* query_pre_attn_scalar != HS (Granite: attention_multiplier): q, dq scaled (2QD each) */
        fwd += 2 * QD;
        bwd += 2 * QD;
    }
    /* NF4: each frozen product first dequantizes its weight (reads 4.13 bits, writes the tile) */
    double bytes = L * N * (fwd * passes + bwd) * e + dropout_bytes + dequant_bytes;
    bytes += 2 * N * C * e + 6 * N * C * e;        /* embedding, final RMSNorm forward + backward */
    if (cfg->embed_scale > 0 || cfg->embedding_multiplier > 0) bytes += 2 * N * C * e;   /* Gemma's, Granite's embedding scale */
    if (cfg->logits_scaling > 0) bytes += 4 * N * C * e;   /* Granite: the LM head's input and its gradient scaled */
    bytes += 2 * N * V * le;                        /* softmax over the logits chunk, in place */
    double P = (double)fl_lora_param_count(cfg, lc);
    bytes += P * 4 * 11;                            /* AdamW (7 f32 streams), grad norm, zeroing, compute copy */
    a.s.elementwise_bytes = bytes;
    a.s.elementwise_s = bytes / (dev->mem_bw_gbs * 1e9 * dev->bw_eff);
    /* launches: per layer forward ~15 + 2 per adapted projection, backward ~15 + 4 per adapted */
    size_t chunk = act_size == 4 ? fl_cpu_lm_head_chunk_rows((size_t)N, (int)V) : fl_cuda_lm_head_chunk_rows((size_t)N, (int)V, FL_CUDA_LM_HEAD_BUDGET);
    if (chunk < 16) chunk = 16;
    double chunks = ceil(N / (double)chunk);
    double per_layer = (15 + 2 * n_adapted) * passes + 15 + 4 * n_adapted + (nf4 ? FL_N_PROJ * (passes + 1) : 0);
    double kernels = L * per_layer + 3 * chunks + 8;   /* past INT_MAX for absurd B x T */
    a.s.kernels = kernels < 2147483647.0 ? (int)kernels : 2147483647;
    a.s.overhead_s = kernels * dev->launch_us * 1e-6 + dev->step_overhead_ms * 1e-3;
    a.s.step_s = a.s.gemm_s + a.s.attn_s + a.s.elementwise_s + a.s.overhead_s;
    a.s.tok_s = N / a.s.step_s;
    return a.s;
}

double fl_plan_solve_efficiency(const fl_model_config *cfg, const fl_lora_config *lc, int B, int T, size_t act_size,
                                unsigned mode, const fl_plan_device *dev, double measured_s, int *clamped) {
    fl_plan_device d = *dev;
    double lo = 0.01, hi = 1.0;
    *clamped = 0;
    d.compute_eff = hi;
    if (fl_plan_step_time(cfg, lc, B, T, act_size, mode, &d).step_s >= measured_s) { *clamped = 1; return hi; }
    d.compute_eff = lo;
    if (fl_plan_step_time(cfg, lc, B, T, act_size, mode, &d).step_s <= measured_s) { *clamped = 1; return lo; }
    for (int it = 0; it < 60; it++) {   /* step time falls as efficiency rises */
        d.compute_eff = 0.5 * (lo + hi);
        if (fl_plan_step_time(cfg, lc, B, T, act_size, mode, &d).step_s > measured_s) lo = d.compute_eff;
        else hi = d.compute_eff;
    }
    return 0.5 * (lo + hi);
}

/* ---- bench records --------------------------------------------------------------------------- */

int fl_plan_resolve_model(fl_model_config *cfg, const char *model) {
    if (!fl_config_preset(cfg, model)) return 0;
    char *path = fl_path_join(model, "config.json");
    int loaded = fl_file_exists(path) && !fl_config_load(cfg, path);
    free(path);
    if (loaded) return 0;
    const char *base = strrchr(model, '/');
    base = base ? base + 1 : model;
    char names[1024];
    snprintf(names, sizeof names, "%s", fl_config_preset_names());
    char best[96] = "";
    for (char *tok = strtok(names, ", "); tok; tok = strtok(NULL, ", "))
        if (!strncasecmp(base, tok, strlen(tok)) && strlen(tok) > strlen(best)) snprintf(best, sizeof best, "%s", tok);
    if (best[0] && !fl_config_preset(cfg, best)) return 0;
    fl_clear_error();
    return -1;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static fl_plan_device base_device(const fl_gpu_spec *g, fl_plan_target target) {
    fl_plan_device d;
    d.mem_bw_gbs = g->mem_bw_gbs;
    d.bw_eff = FL_PLAN_DEFAULT_BW_EFF;
    d.compute_eff = FL_PLAN_DEFAULT_COMPUTE_EFF;
    if (target == FL_TARGET_CUDA) {
        d.peak_tflops = fl_gpu_train_tflops(g);
        d.launch_us = FL_PLAN_CUDA_LAUNCH_US;
        d.step_overhead_ms = FL_PLAN_CUDA_STEP_OVERHEAD_MS;
    } else {   /* a CPU row of a user catalog: f32 FMA peak, OpenMP fork/join per op */
        d.peak_tflops = g->fp32_tflops > 0 ? g->fp32_tflops : fl_gpu_train_tflops(g);
        d.launch_us = 1.0;
        d.step_overhead_ms = 0.0;
    }
    return d;
}

static int record_is_cuda(const fl_plan_record *r) { return strcasecmp(r->backend, "cpu") != 0; }

int fl_plan_calibration_load(fl_plan_calibration *cal, const char *path, const fl_gpu_catalog *cat) {
    memset(cal, 0, sizeof *cal);
    cal->cuda_eff = cal->cpu_eff = FL_PLAN_DEFAULT_COMPUTE_EFF;
    if (!path) return 0;
    /* the board's reader and checks: a record the board rejects is an error here too */
    fl_bench_record_list list = {0};
    int status = fl_bench_records_read(path, &list, NULL);
    if (status) {
        fl_bench_record_list_free(&list);
        return status;
    }
    cal->recs = fl_calloc(list.n + 1, sizeof *cal->recs);
    for (size_t i = 0; i < list.n; i++) {
        const fl_bench_record *b = &list.items[i];
        fl_plan_record r;
        memset(&r, 0, sizeof r);
        r.line = b->line;
        r.batch = b->batch;
        r.seq = b->seq;
        r.rank = b->rank;
        r.train_tok_s = b->train_tok_s;
        r.ms_per_step = b->ms_per_step;
        r.peak_mem_bytes = b->peak_mem_bytes;
        const char *why = NULL;
        r.mode = (b->recompute ? FL_PLAN_RECOMPUTE : 0) | (!strcmp(b->quant, "nf4") ? FL_PLAN_NF4 : 0);
        if (strcmp(b->tool, "fastlora")) why = "another tool's record";
        else if (b->quant[0] && strcmp(b->quant, "none") && strcmp(b->quant, "nf4")) why = "unknown quant";
        else if (fl_plan_resolve_model(&r.cfg, b->model[0] ? b->model : b->weights)) why = "unknown model";
        if (!why) {
            r.lc = fl_lora_config_default();
            r.lc.rank = r.rank;
            if (b->targets[0] && fl_lora_parse_targets(b->targets, &r.lc.target_mask)) {
                fl_clear_error();
                why = "bad targets";
            }
        }
        if (why) {
            cal->n_skipped++;
            snprintf(cal->notes + strlen(cal->notes), sizeof cal->notes - strlen(cal->notes), "%sline %d: %s",
                     cal->notes[0] ? "; " : "", b->line, why);
            continue;
        }
        snprintf(r.device, sizeof r.device, "%s", b->device);
        /* no device_kind: a GPU record, as the board reads it */
        snprintf(r.backend, sizeof r.backend, "%s", b->device_kind[0] ? b->device_kind : "cuda");
        snprintf(r.dtype, sizeof r.dtype, "%s", b->dtype);
        snprintf(r.model, sizeof r.model, "%s", b->model[0] ? b->model : b->weights);
        snprintf(r.targets, sizeof r.targets, "%s", b->targets[0] ? b->targets : "all");
        r.gpu = fl_gpu_catalog_find(cat, r.device);
        if (r.gpu) {
            fl_plan_device d = base_device(r.gpu, record_is_cuda(&r) ? FL_TARGET_CUDA : FL_TARGET_CPU);
            int clamped;
            size_t act = strstr(r.dtype, "32") ? 4 : 2;
            double ms = r.ms_per_step > 0 ? r.ms_per_step : (double)r.batch * r.seq / r.train_tok_s * 1e3;
            r.efficiency = fl_plan_solve_efficiency(&r.cfg, &r.lc, r.batch, r.seq, act, r.mode, &d, ms * 1e-3, &clamped);
        }
        cal->recs[cal->n++] = r;
    }
    fl_bench_record_list_free(&list);
    /* global medians, then each record's leave-one-out prediction (efficiency from the others:
     * same device first, else same backend, else the default) */
    double *v = fl_calloc((size_t)cal->n + 1, sizeof(double));
    for (int cuda = 0; cuda < 2; cuda++) {
        int n = 0;
        for (int i = 0; i < cal->n; i++)
            if (cal->recs[i].efficiency > 0 && record_is_cuda(&cal->recs[i]) == cuda) v[n++] = cal->recs[i].efficiency;
        if (n && cuda) { cal->cuda_eff = median(v, n); cal->n_cuda = n; }
        if (n && !cuda) { cal->cpu_eff = median(v, n); cal->n_cpu = n; }
    }
    for (int i = 0; i < cal->n; i++) {
        fl_plan_record *r = &cal->recs[i];
        if (!r->gpu) continue;
        int n = 0;
        for (int k = 0; k < cal->n; k++)
            if (k != i && cal->recs[k].gpu == r->gpu && cal->recs[k].efficiency > 0 &&
                record_is_cuda(&cal->recs[k]) == record_is_cuda(r))
                v[n++] = cal->recs[k].efficiency;
        if (!n)
            for (int k = 0; k < cal->n; k++)
                if (k != i && cal->recs[k].efficiency > 0 && record_is_cuda(&cal->recs[k]) == record_is_cuda(r))
                    v[n++] = cal->recs[k].efficiency;
        fl_plan_device d = base_device(r->gpu, record_is_cuda(r) ? FL_TARGET_CUDA : FL_TARGET_CPU);
        if (n) d.compute_eff = median(v, n);
        size_t act = strstr(r->dtype, "32") ? 4 : 2;
        r->predicted_tok_s = fl_plan_step_time(&r->cfg, &r->lc, r->batch, r->seq, act, r->mode, &d).tok_s;
    }
    free(v);
    return 0;
}

void fl_plan_calibration_free(fl_plan_calibration *cal) {
    free(cal->recs);
    memset(cal, 0, sizeof *cal);
}

fl_plan_device fl_plan_device_for(const fl_gpu_spec *g, fl_plan_target target, const fl_plan_calibration *cal,
                                  char *how, size_t how_cap) {
    fl_plan_device d = base_device(g, target);
    int cuda = target == FL_TARGET_CUDA;
    double v[256];
    int n = 0;
    for (int i = 0; cal && i < cal->n && n < 256; i++) {
        const fl_plan_record *r = &cal->recs[i];
        if (r->gpu && !strcmp(r->gpu->name, g->name) && r->efficiency > 0 && record_is_cuda(r) == cuda)
            v[n++] = r->efficiency;
    }
    if (n) {
        d.compute_eff = median(v, n);
        snprintf(how, how_cap, "model, efficiency %.2f calibrated on %d record%s of this device", d.compute_eff, n,
                 n == 1 ? "" : "s");
    } else if (cal && (cuda ? cal->n_cuda : cal->n_cpu)) {
        d.compute_eff = cuda ? cal->cuda_eff : cal->cpu_eff;
        snprintf(how, how_cap, "model, efficiency %.2f calibrated on %d %s record%s", d.compute_eff,
                 cuda ? cal->n_cuda : cal->n_cpu, cuda ? "CUDA" : "CPU", (cuda ? cal->n_cuda : cal->n_cpu) == 1 ? "" : "s");
    } else {
        snprintf(how, how_cap, "model, default efficiency %.2f (no %s bench records)", d.compute_eff,
                 cuda ? "CUDA" : "CPU");
    }
    return d;
}

/* ---- one plan -------------------------------------------------------------------------------- */

fl_plan_request fl_plan_request_default(void) {
    fl_plan_request rq;
    memset(&rq, 0, sizeof rq);
    rq.lc = fl_lora_config_default();
    snprintf(rq.targets, sizeof rq.targets, "q,k,v,o,gate,up,down");
    rq.batch = 4;
    rq.seq = 1024;
    rq.epochs = 1;
    rq.recompute = FL_RECOMPUTE_AUTO;
    rq.target = FL_TARGET_CUDA;
    rq.gpus = 1;
    return rq;
}

static int same_model(const fl_plan_record *r, const fl_model_config *cfg) {
    const fl_model_config *a = &r->cfg;
    return a->hidden_size == cfg->hidden_size && a->n_layers == cfg->n_layers && a->vocab_size == cfg->vocab_size &&
           a->intermediate_size == cfg->intermediate_size && a->n_heads == cfg->n_heads &&
           a->n_kv_heads == cfg->n_kv_heads && a->tie_word_embeddings == cfg->tie_word_embeddings;
}

void fl_plan_gpu(const fl_plan_request *rq, const fl_gpu_spec *gpu, const fl_plan_calibration *cal,
                 fl_plan_result *out) {
    memset(out, 0, sizeof *out);
    out->gpu = gpu;
    const fl_model_config *cfg = &rq->cfg;
    const fl_lora_config *lc = &rq->lc;
    fl_plan_target tg = rq->target;
    size_t act = tg == FL_TARGET_CUDA ? 2 : 4;
    int T = rq->seq, B = rq->batch;
    out->usable_bytes = fl_gpu_usable_bytes(gpu);
    unsigned q = rq->quant == FL_QUANT_NF4 ? FL_PLAN_NF4 : 0;   /* the mode bits without recompute */
    out->mem_requested = fl_plan_memory_compute(cfg, lc, B, T, tg, q);
    out->fits_requested = out->mem_requested.total <= out->usable_bytes;
    int cap = B > 1024 ? B : 1024;
    out->max_batch = fl_plan_max_batch(cfg, lc, T, tg, q, out->usable_bytes, cap);
    out->max_batch_recompute = fl_plan_max_batch(cfg, lc, T, tg, q | FL_PLAN_RECOMPUTE, out->usable_bytes, cap);
    out->recompute_needed = out->max_batch == 0 && out->max_batch_recompute > 0;
    char how[160];
    fl_plan_device dev = fl_plan_device_for(gpu, tg, cal, how, sizeof how);
    /* candidates: without recompute at min(B, max), with recompute at min(B, max); the faster wins */
    int best_rc = -1, best_mb = 0;
    fl_plan_step best_step;
    memset(&best_step, 0, sizeof best_step);
    for (int rc = 0; rc < 2; rc++) {
        if (rq->recompute == FL_RECOMPUTE_ON && rc == 0) continue;
        if (rq->recompute == FL_RECOMPUTE_OFF && rc == 1) continue;
        int maxb = rc ? out->max_batch_recompute : out->max_batch;
        if (maxb < 1) continue;
        int mb = B < maxb ? B : maxb;
        fl_plan_step s = fl_plan_step_time(cfg, lc, mb, T, act, q | (rc ? FL_PLAN_RECOMPUTE : 0), &dev);
        /* AUTO prefers no recompute when the requested batch fits as is */
        if (best_rc < 0 || (s.tok_s > best_step.tok_s && !(rq->recompute == FL_RECOMPUTE_AUTO && out->fits_requested))) {
            best_rc = rc;
            best_mb = mb;
            best_step = s;
        }
    }
    out->time_s = -1;
    out->cost_usd = -1;
    if (best_rc < 0) {
        out->fits = 0;
        out->mem = out->mem_requested;
        snprintf(out->note, sizeof out->note, "does not fit even at micro-batch 1%s (needs %.1f GiB at B=1)",
                 rq->recompute == FL_RECOMPUTE_OFF ? " without recompute" : " with recompute",
                 fl_plan_memory_compute(cfg, lc, 1, T, tg, q | (rq->recompute != FL_RECOMPUTE_OFF ? FL_PLAN_RECOMPUTE : 0))
                         .total / 1073741824.0);
        snprintf(out->tok_s_source, sizeof out->tok_s_source, "-");
        return;
    }
    out->fits = 1;
    out->recompute = best_rc;
    out->micro_batch = best_mb;
    out->grad_accum = (B + best_mb - 1) / best_mb;
    out->mem = fl_plan_memory_compute(cfg, lc, best_mb, T, tg, q | (best_rc ? FL_PLAN_RECOMPUTE : 0));
    out->step = best_step;
    out->tok_s = best_step.tok_s;
    snprintf(out->tok_s_source, sizeof out->tok_s_source, "%s", how);
    /* a measured record of this device and this exact run (quant and recompute included) wins */
    for (int i = 0; cal && i < cal->n; i++) {
        const fl_plan_record *r = &cal->recs[i];
        if (!r->gpu || strcmp(r->gpu->name, gpu->name) || record_is_cuda(r) != (tg == FL_TARGET_CUDA)) continue;
        if (r->mode != (q | (best_rc ? FL_PLAN_RECOMPUTE : 0))) continue;
        if (r->batch != best_mb || r->seq != T || r->rank != lc->rank || r->lc.target_mask != lc->target_mask ||
            !same_model(r, cfg))
            continue;
        out->tok_s = r->train_tok_s;
        out->measured = 1;
        snprintf(out->tok_s_source, sizeof out->tok_s_source, "measured (bench record line %d)", r->line);
    }
    if (out->grad_accum > 1)
        snprintf(out->note, sizeof out->note, "micro-batch %d x %d accumulation steps%s", best_mb, out->grad_accum,
                 best_rc ? ", recompute" : "");
    else if (best_rc)
        snprintf(out->note, sizeof out->note, "with --recompute");
    int n = rq->gpus > 1 ? rq->gpus : 1;
    if (n > 1) {
        double step_tokens = (double)best_mb * out->grad_accum * T, one = step_tokens / out->tok_s;
        double bytes = 4.0 * (double)fl_lora_param_count(cfg, lc);
        out->allreduce_s = fl_plan_allreduce_seconds(gpu, n, bytes, out->link, sizeof out->link);
        out->tok_s_one = out->tok_s;
        out->tok_s = n * step_tokens / (one + out->allreduce_s);
        out->scaling = out->tok_s / (n * out->tok_s_one);
        size_t len = strlen(out->note);
        snprintf(out->note + len, sizeof out->note - len, "%s%d x %.0f tok/s, all-reduce %.2f ms/step over %s, scaling %.0f%%",
                 len ? "; " : "", n, out->tok_s_one, out->allreduce_s * 1e3, out->link, 100 * out->scaling);
    }
    if (rq->tokens > 0) {
        out->time_s = (rq->tokens * (rq->epochs > 0 ? rq->epochs : 1) + 0.5 * rq->ref_tokens) / out->tok_s;
        if (gpu->price_usd_hr >= 0) out->cost_usd = out->time_s / 3600.0 * gpu->price_usd_hr * n;
    }
}

double fl_plan_allreduce_seconds(const fl_gpu_spec *gpu, int gpus, double bytes, char *link, size_t link_cap) {
    if (gpus <= 1) { snprintf(link, link_cap, "-"); return 0; }
    double two_way;
    if (gpu->nvlink_gbs > 0 && gpus <= gpu->nvlink_gpus) {
        two_way = gpu->nvlink_gbs;
        snprintf(link, link_cap, "NVLink");
    } else if (gpu->pcie_gbs > 0) {
        two_way = gpu->pcie_gbs;
        snprintf(link, link_cap, "PCIe");
    } else {
        two_way = 64.0;
        snprintf(link, link_cap, "PCIe (assumed Gen4 x16)");
    }
    double per_direction = two_way / 2 * 1e9 * FL_PLAN_LINK_EFF;
    return 2.0 * (gpus - 1) / gpus * bytes / per_direction + 2.0 * (gpus - 1) * FL_PLAN_HOP_US * 1e-6;
}

/* ---- words ----------------------------------------------------------------------------------- */

void fl_plan_format_duration(double s, int with_scale, char *buf, size_t cap) {
    char num[64];
    if (!(s >= 0) || !isfinite(s)) { snprintf(buf, cap, "-"); return; }
    if (s < 59.5) snprintf(num, sizeof num, "%.0f s", s);
    else if (s < 3570) snprintf(num, sizeof num, "%.0f min", s / 60.0);
    else if (s < 86400 - 30) {
        long m = lround(s / 60.0);
        if (m % 60) snprintf(num, sizeof num, "%ld h %ld min", m / 60, m % 60);
        else snprintf(num, sizeof num, "%ld h", m / 60);
    } else if (s < 365.25 * 86400) snprintf(num, sizeof num, "%.1f days", s / 86400.0);
    else snprintf(num, sizeof num, "%.3g years", s / (365.25 * 86400));
    if (!with_scale) { snprintf(buf, cap, "%s", num); return; }
    const char *scale = s < 60 ? "a moment"
                        : s < 15 * 60 ? "a coffee break"
                        : s < 3600 ? "a lunch break"
                        : s < 5 * 3600 ? "an evening"
                        : s < 16 * 3600 ? "overnight"
                        : s < 3 * 86400 ? "a weekend"
                        : s < 8 * 86400 ? "a week"
                        : s < 32 * 86400 ? "a month"
                        : s < 365.25 * 86400 ? "a season"
                        : "longer than a year";
    snprintf(buf, cap, "%s — %s", num, scale);
}

void fl_plan_format_bytes(double b, char *buf, size_t cap) {
    if (b < 1024.0 * 1048576.0) snprintf(buf, cap, "%.1f MiB", b / 1048576.0);
    else snprintf(buf, cap, "%.2f GiB", b / 1073741824.0);
}
