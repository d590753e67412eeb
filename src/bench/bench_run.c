/* bench_run.c — `fastlora bench` as a library (bench_run.h): picks the backend, predicts memory,
 * loads the model, finds MFU's denominator (the backend's description; a GPU's catalog peak), then
 * runs each setting (bench_point.h) and prints and records it (bench_report.h).
 * Not here: option parsing (cli/cmd_bench.c), the timing loop (bench_point.c). */
#include "bench/bench_run.h"

#include <jansson.h>
#include <limits.h>
#include <omp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/cpu/cpu_device.h"
#include "backend/cpu/cpu_isa.h"
#include "bench/bench_point.h"
#include "bench/bench_report.h"
#include "bench/host_info.h"
#include "bench/records.h"
#include "bench/reference.h"
#include "common/args.h"
#include "common/error.h"
#include "dist/dist.h"
#include "engine/model.h"
#include "plan/gpu_catalog.h"
#include "plan/plan.h"
#include "train/trainer.h"

/* The CPU backend's workspaces at B x T as `fastlora plan` counts them (docs/PLAN.md): one LM-head
 * chunk of f32 logits, the attention backward's partials and packs, the NF4 tile scratch. */
static double cpu_workspace_bytes(const fl_model_config *cfg, const fl_lora_config *lc, int B, int T, int nf4,
                                  int recompute) {
    unsigned mode = (nf4 ? FL_PLAN_NF4 : 0u) | (recompute ? FL_PLAN_RECOMPUTE : 0u);
    fl_plan_memory m = fl_plan_memory_compute(cfg, lc, B, T, FL_TARGET_CPU, mode);
    return m.logits + m.attn_ws + m.gemm_ws;
}

static void on_sigint(int sig) {
    (void)sig;
    fl_bench_interrupted = 1;
    static const char msg[] = "\nfastlora bench: interrupted; finishing the current step (Ctrl-C again to abort)\n";
    ssize_t ignored = write(2, msg, sizeof msg - 1);
    (void)ignored;
}

/* MFU's denominator: the card's dense bf16 peak from the GPU catalog, the backend's measured peak
 * (the CPU's sgemm) unless o->no_sgemm. dev: the backend's description (describe, not measured). */
static void find_peak(fl_bench_context *c, fl_device_info *dev) {
    if (c->is_cuda) {
        fl_gpu_catalog cat;
        if (fl_gpu_catalog_load_default(&cat) == 0) {
            const fl_gpu_spec *g = fl_gpu_catalog_find(&cat, c->device);
            if (g && fl_gpu_train_tflops(g) > 0) {
                c->peak_tflops = fl_gpu_train_tflops(g);
                snprintf(c->peak_source, sizeof c->peak_source, "of the dense bf16 peak %.0f TFLOP/s of %s (data/gpus.csv)",
                         c->peak_tflops, g->name);
            } else {
                snprintf(c->peak_source, sizeof c->peak_source, "'%s' is not in data/gpus.csv", c->device);
            }
            fl_gpu_catalog_free(&cat);
        } else {
            snprintf(c->peak_source, sizeof c->peak_source, "no GPU catalog: %s", fl_last_error());
        }
    } else if (!c->o->no_sgemm) {
        printf("measuring %s for MFU...\n", dev->peak_method);
        fflush(stdout);
        c->be->describe(dev, 1);
        c->peak_tflops = dev->peak_tflops;
        snprintf(c->peak_source, sizeof c->peak_source, "%s", dev->peak_source);
    } else {
        snprintf(c->peak_source, sizeof c->peak_source, "--no-sgemm: no measured CPU peak");
    }
}

/* Runs every setting of the sweep (one without a sweep); the status of the run so far. */
static int run_points(fl_bench_context *c, const fl_lora_config *lc, double fixed_bytes, double limit, int nf4) {
    const fl_bench_options *o = c->o;
    const fl_model_config *cfg = &c->m->cfg;
    const fl_backend *be = c->be;
    int status = 0;
    struct sigaction sa, old_sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sa.sa_flags = SA_RESETHAND; /* a second Ctrl-C kills as usual */
    sigemptyset(&sa.sa_mask);
    fl_bench_interrupted = 0;
    sigaction(SIGINT, &sa, &old_sa);

    int n_points = o->n_sweep_batch * o->n_sweep_seq;
    fl_bench_point *points = fl_calloc((size_t)n_points, sizeof *points);
    int n_run = 0;
    for (int si = 0; si < o->n_sweep_seq && !fl_bench_interrupted; si++)
        for (int bi = 0; bi < o->n_sweep_batch && !fl_bench_interrupted; bi++) {
            fl_bench_point *p = &points[n_run++];
            p->B = o->sweep_batch[bi] * (fl_bench_is_preference(o) ? 2 : 1); /* rows: a pair is two */
            p->T = o->sweep_seq[si];
            p->predicted_bytes = fixed_bytes + (double)fl_activations_bytes(cfg, lc->rank, p->B, p->T, be->act_size, o->recompute);
            if (!c->is_cuda) p->predicted_bytes += cpu_workspace_bytes(cfg, lc, p->B, p->T, nf4, o->recompute);
            p->fits = !(limit > 0 && p->predicted_bytes > limit);
            if (n_points > 1) printf("\n== %d x %d (%d of %d) ==\n", p->B, p->T, n_run, n_points);
            if (!p->fits) {
                if (n_points == 1) {
                    fprintf(stderr, "fastlora: bench: %d x %d does not fit: predicted %.2f GiB > limit %.2f GiB%s\n", p->B,
                            p->T, p->predicted_bytes / 1073741824.0, limit / 1073741824.0,
                            o->mem_limit ? " (--mem-limit)" : "");
                    status = 2;
                } else {
                    printf("  does not fit: predicted %.2f GiB > limit %.2f GiB; skipped\n", p->predicted_bytes / 1073741824.0,
                           limit / 1073741824.0);
                }
                continue;
            }
            printf("  %d x %d = %zu tokens/step, predicted memory %.2f GiB\n", p->B, p->T, (size_t)p->B * p->T,
                   p->predicted_bytes / 1073741824.0);
            fl_model_print_memory(c->m, p->B, p->T, stdout);
            if (fl_dist_world()->size > 1) fl_bench_run_point_ranks(c, p);
            else fl_bench_run_point(c, p);
            fl_bench_print_result(c, p);
            if (o->json_path && p->n_timed > 0 && !p->interrupted) {
                json_t *j = fl_bench_point_record(c, p);
                if (fl_bench_record_append(o->json_path, j)) {
                    fprintf(stderr, "fastlora: bench: %s\n", fl_last_error());
                    status = 2;
                } else {
                    printf("  record appended to %s\n", o->json_path);
                }
                json_decref(j);
            } else if (o->json_path && p->interrupted) {
                printf("  interrupted: no record written to %s (partial measurements are not results)\n", o->json_path);
            }
        }
    sigaction(SIGINT, &old_sa, NULL);

    if (n_points > 1) fl_bench_print_sweep(c, points, n_run, n_points);
    for (int k = 0; k < n_points; k++) free(points[k].step_s);
    free(points);
    return status;
}

int fl_bench_run(fl_bench_options *o) {
    const fl_backend *be;
    if (fl_backend_select_dtype(o->device, o->dtype, &be)) {
        fprintf(stderr, "fastlora: bench: %s\n", fl_last_error());
        return 2;
    }
    fl_dist_use_backend(be);
    fl_bench_context c = {.o = o, .be = be, .reference_tok_s = -1.0};
    c.is_cuda = strncmp(be->name, "cpu", 3) != 0;
    /* The definition's 4 x 2048 on a GPU; on a CPU that is minutes per step, so the default there is
     * 4 x 256 (about a minute for the whole run on smollm2-135m). --seq always wins. */
    if (o->seq == 0) o->seq = c.is_cuda ? 2048 : 256;
    if (!o->n_sweep_batch) { o->sweep_batch[0] = o->batch; o->n_sweep_batch = 1; }
    if (!o->n_sweep_seq) { o->sweep_seq[0] = o->seq; o->n_sweep_seq = 1; }
    for (int bi = 0; bi < o->n_sweep_batch; bi++)
        for (int si = 0; si < o->n_sweep_seq; si++)
            if ((int64_t)o->sweep_batch[bi] * o->sweep_seq[si] > FL_MAX_MICRO_TOKENS) {
                fprintf(stderr, "fastlora: bench: batch %d x seq %d is over %d positions per step\n", o->sweep_batch[bi],
                        o->sweep_seq[si], FL_MAX_MICRO_TOKENS);
                return 2;
            }
    if (o->threads > 0) fl_cpu_set_threads(o->threads);
    c.threads = o->threads > 0 ? o->threads : omp_get_max_threads();
    snprintf(c.dtype, sizeof c.dtype, "%s", be->weight_size == 2 ? "bfloat16" : "float32");
    snprintf(c.act_dtype, sizeof c.act_dtype, "%s", be->act_size == 2 ? "bfloat16" : "float32");
    fl_host_fastlora_version(c.version, sizeof c.version);
    if (o->weights) snprintf(c.weights, sizeof c.weights, "%s", o->weights);
    else fl_bench_weights_name(o->preset ? o->preset : o->model_dir, o->preset != NULL, c.weights, sizeof c.weights);

    fl_lora_config lc = fl_lora_config_default();
    lc.rank = o->rank;
    lc.alpha = o->alpha;
    lc.use_rslora = o->rslora;
    lc.dropout = o->dropout;
    lc.seed = o->seed;
    fl_quant quant = FL_QUANT_NONE;
    if (fl_lora_parse_targets(o->targets, &lc.target_mask) || fl_quant_parse(o->quant, &quant)) {
        fprintf(stderr, "fastlora: bench: %s\n", fl_last_error());
        return 2;
    }

    /* the device, and how much memory a setting may use */
    double limit = o->mem_limit_bytes;
    fl_device_info dev;
    be->describe(&dev, 0);
    snprintf(c.device, sizeof c.device, "%s", dev.name);
    if (!c.is_cuda) fl_cpu_identity(c.cpu_id, sizeof c.cpu_id);
    if (c.is_cuda) {
        if (!limit) limit = (double)dev.mem_free;
        /* driver version from the kernel module; the CUDA version the driver supports from nvidia-smi */
        fl_host_nvidia_driver_version(c.driver, sizeof c.driver);
        fl_host_cuda_driver_version(c.cuda_version, sizeof c.cuda_version);
    } else {
        if (!limit) limit = 0.9 * (double)fl_host_available_bytes();
    }

    /* predict the model's own memory before allocating it */
    fl_model_config pre;
    int status;
    if (o->preset) status = fl_config_preset(&pre, o->preset);
    else {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/config.json", o->model_dir);
        status = fl_config_load(&pre, path);
    }
    if (!status) status = fl_lora_check_targets(&pre, lc.target_mask);   /* Phi-3: whole fused modules */
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
                c.weights, fixed_bytes / 1073741824.0, limit / 1073741824.0, o->mem_limit ? " (--mem-limit)" : "");
        return 2;
    }

    fl_model m;
    double t_load = fl_bench_seconds();
    status = o->model_dir ? fl_model_init_dir_quant(&m, o->model_dir, be, &lc, quant)
                          : fl_model_init_preset_quant(&m, o->preset, o->seed, be, &lc, quant);
    m.recompute = o->recompute;
    if (status) {
        fprintf(stderr, "fastlora: bench: %s\n", fl_last_error());
        return status;
    }
    for (int si = 0; si < o->n_sweep_seq && !status; si++) status = fl_model_check_length(&m, o->sweep_seq[si], "--seq");
    if (status) {
        fprintf(stderr, "fastlora: bench: %s\n", fl_last_error());
        fl_model_free(&m);
        return status;
    }
    t_load = fl_bench_seconds() - t_load;
    c.m = &m;
    if (fl_dist_setup_done(0)) { /* another rank failed to start */
        fl_model_free(&m);
        return 2;
    }
    const fl_model_config *cfg = &m.cfg;
    fl_lora_targets_text(cfg, lc.target_mask, c.targets, sizeof c.targets);

    find_peak(&c, &dev);

    /* the published board's figure for these weights on this device */
    fl_reference_board ref;
    if (fl_reference_board_load(&ref, o->reference_path) == 0) {
        c.reference_tok_s = fl_reference_board_find(&ref, c.weights, c.device);
        snprintf(c.reference_file, sizeof c.reference_file, "%s", ref.path);
        fl_reference_board_free(&ref);
    } else if (o->reference_path) {
        fprintf(stderr, "fastlora: bench: %s\n", fl_last_error());
        fl_model_free(&m);
        return 2;
    }

    printf("fastlora bench %s: %s (%s, %s weights), %.1fM params, LoRA r=%d alpha=%g on %s (%.2fM trainable)\n",
           c.version, c.weights, fl_arch_name(cfg->arch), o->preset ? "random" : "loaded",
           fl_config_total_params(cfg) / 1e6, lc.rank, lc.alpha, c.targets, lora_params / 1e6);
    printf("  device: %s (%s backend, %s weights, %s activations", c.device, be->name, c.dtype, c.act_dtype);
    if (!c.is_cuda) printf(", %d threads, OMP_WAIT_POLICY %s, GEMM %s", c.threads,
                           getenv("OMP_WAIT_POLICY") ? getenv("OMP_WAIT_POLICY") : "(runtime default)",
                           fl_cpu_gemm_name(be));
    if (c.driver[0]) printf(", driver %s", c.driver);
    if (c.cuda_version[0]) printf(", CUDA %s", c.cuda_version);
    printf("); loaded in %.1f s; memory limit %.2f GiB%s\n", t_load, limit / 1073741824.0,
           o->mem_limit ? " (--mem-limit)" : c.is_cuda ? " (free device memory)" : " (90% of available RAM)");
    if (!c.is_cuda) /* what the model name may not say: the silicon, and the kernels it runs */
        printf("  cpu: %s; kernels %s (this CPU's best: %s)\n", c.cpu_id[0] ? c.cpu_id : "unknown",
               fl_cpu_isa_name(fl_cpu_isa_active()), fl_cpu_isa_name(fl_cpu_isa_detected()));
    if (!c.is_cuda && !o->dtype) { /* the default, and why */
        const char *why;
        fl_cpu_default_dtype(&why);
        printf("  %s\n", why);
    }
    fflush(stdout);

    status = run_points(&c, &lc, fixed_bytes, limit, quant == FL_QUANT_NF4);
    free(c.rank_tok_s);
    fl_model_free(&m);
    if (fl_bench_interrupted) {
        fprintf(stderr, "fastlora bench: interrupted\n");
        return 130;
    }
    return status;
}
