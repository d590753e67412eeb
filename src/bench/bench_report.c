/* bench_report.c — the bench's printed results and JSON records (bench_report.h). */
#include "bench/bench_report.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>

#include "backend/cpu/cpu_isa.h"
#include "bench/records.h"
#include "dist/dist.h"

static void print_definition(const fl_bench_context *c, int B, int T, int n_timed) {
    const fl_bench_options *o = c->o;
    printf("  definition (%s, docs/BENCHMARKS.md): LoRA on a fixed batch of %d x %d token ids drawn from a seeded RNG\n"
           "    over the vocabulary, every token trained; rank %d, alpha %g, on %s; frozen base weights in %s%s\n"
           "    (activations %s%s); AdamW on the LoRA parameters; %d warm-up step%s excluded, median of %d timed step%s\n"
           "    (device synchronized); train tok/s = %d x %d / median step time.\n",
           FL_BENCH_DEFINITION, B, T, c->m->lora_cfg.rank, c->m->lora_cfg.alpha, c->targets, c->dtype,
           c->m->base.quant == FL_QUANT_NF4 ? " (projections NF4, dequantized per tile)" : "", c->act_dtype,
           c->m->recompute ? ", recomputed per layer in the backward" : "", o->warmup, o->warmup == 1 ? "" : "s", n_timed,
           n_timed == 1 ? "" : "s", B, T);
}

void fl_bench_print_result(const fl_bench_context *c, const fl_bench_point *p) {
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
    if (fl_bench_is_preference(c->o))
        printf("  %s: %.1f pairs/s (%d pairs per step, chosen and rejected %d positions each; the first step also takes "
               "each pair's reference log-probs, once, as training does)\n", c->o->objective, p->B / 2 / p->median,
               p->B / 2, p->T);
    const fl_flop_terms *f = &p->flops;
    double achieved = f->total / p->median / 1e12;
    printf("  FLOPs/step %.4g = 4 x %.2fM matmul params x %zu tokens (%.4g) + causal attention 6·T·NH·HS·L per token "
           "(%.4g) + LoRA 6·R·(IC+OC) per adapted projection per token (%.4g)\n",
           f->total, fl_config_matmul_params(cfg) / 1e6, N, f->dense, f->attention, f->lora);
    if (c->peak_tflops > 0)
        printf("  achieved %.3f TFLOP/s; MFU %.1f%% %s\n", achieved, 100.0 * achieved / c->peak_tflops, c->peak_source);
    else
        printf("  achieved %.3f TFLOP/s; MFU unknown (%s)\n", achieved, c->peak_source);
    if (p->launches > 0)
        printf("  launches per step: %.0f op by op (kernels, GEMMs, copies); CUDA graph: %s\n", p->launches,
               p->replayed ? "recorded once, every later step replayed as one launch" : "not used");
    printf("  peak memory: %.1f MiB %s (predicted %.1f MiB)\n", p->peak_bytes / 1048576.0,
           c->is_cuda ? "allocated on the device" : "resident (VmHWM)", p->predicted_bytes / 1048576.0);
    if (fl_bench_is_preference(c->o))
        printf("  reference board: none for %s (the board measures next-token steps)\n", c->o->objective);
    else if (c->reference_tok_s > 0)
        printf("  reference board: %.1f tok/s for %s on %s; ours / published = %.2fx (%s)\n", c->reference_tok_s,
               c->weights, c->device, p->tok_s / c->reference_tok_s, c->reference_file);
    else
        printf("  reference board: no published figure for %s on %s\n", c->weights, c->device);
    print_definition(c, p->B, p->T, p->n_timed);
    fflush(stdout);
}

json_t *fl_bench_point_record(const fl_bench_context *c, const fl_bench_point *p) {
    const fl_bench_options *o = c->o;
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
    double achieved = p->flops.total / p->median / 1e12;
    if (c->peak_tflops > 0) r.mfu = achieved / c->peak_tflops;
    r.interrupted = p->interrupted;
    json_t *j = fl_bench_record_to_json(&r);
    /* extras: enough to rerun it and to check the figures */
    json_object_set_new(j, "definition", json_string(FL_BENCH_DEFINITION));
    json_object_set_new(j, "model", json_string(o->preset ? o->preset : o->model_dir));
    json_object_set_new(j, "init", json_string(o->preset ? "random" : "loaded"));
    json_object_set_new(j, "backend", json_string(c->be->name));
    if (c->cpu_id[0]) json_object_set_new(j, "cpu_id", json_string(c->cpu_id));
    if (!c->is_cuda) json_object_set_new(j, "cpu_kernels", json_string(fl_cpu_isa_name(fl_cpu_isa_active())));
    json_object_set_new(j, "act_dtype", json_string(c->act_dtype));
    json_object_set_new(j, "quant", json_string(m->base.quant == FL_QUANT_NF4 ? "nf4" : "none"));
    json_object_set_new(j, "recompute", json_boolean(m->recompute));
    json_object_set_new(j, "alpha", json_real(m->lora_cfg.alpha));
    json_t *targets = json_array();
    for (int k = 0; k < FL_N_PROJ; k++)   /* the modules adapted (Phi-3: qkv_proj, gate_up_proj) */
        if (fl_lora_adapts(&m->cfg, &m->lora_cfg, (fl_proj)k))
            json_array_append_new(targets, json_string(fl_module_name(&m->cfg, (fl_proj)k)));
    json_object_set_new(j, "targets", targets);
    /* a JSON integer is signed 64-bit: a larger seed is written as its decimal string */
    json_object_set_new(j, "seed", o->seed <= INT64_MAX ? json_integer((json_int_t)o->seed)
                                                         : json_sprintf("%llu", (unsigned long long)o->seed));
    json_object_set_new(j, "flops_per_step", json_real(p->flops.total));
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

void fl_bench_print_sweep(const fl_bench_context *c, const fl_bench_point *points, int n_run, int n_points) {
    printf("\nsweep: %s, %s on %s\n| batch | seq | train tok/s | ms/step | peak MiB | |\n|---|---|---|---|---|---|\n",
           c->o->sweep_spec, c->weights, c->device);
    int best = -1;
    for (int k = 0; k < n_run; k++) {
        const fl_bench_point *p = &points[k];
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
