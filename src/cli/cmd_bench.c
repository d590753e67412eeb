/* cmd_bench.c — `fastlora bench`: LoRA training throughput on a fixed batch.
 *
 * The definition (docs/BENCHMARKS.md): batch B x T of token ids drawn from a seeded RNG over the
 * vocabulary, every token trained (targets are the next ids of the same random stream), LoRA rank
 * R on the chosen projections, AdamW on the LoRA parameters; `warmup` steps untimed, then the
 * median of `steps` timed steps, each forward + backward + optimizer step with the device
 * synchronized. Prints train tok/s, ms/step, FLOPs and achieved TFLOP/s, and peak memory.
 * Not the trainer: no data, no checkpoints. */
#include <jansson.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <time.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "common/error.h"
#include "common/rng.h"
#include "engine/model.h"

void openblas_set_num_threads(int num_threads);

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static size_t peak_rss_bytes(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (size_t)ru.ru_maxrss * 1024;
}

static void cpu_name(char *out, size_t cap) {
    snprintf(out, cap, "cpu");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) != 0) continue;
        char *colon = strchr(line, ':');
        if (!colon) break;
        colon += 2;
        colon[strcspn(colon, "\n")] = 0;
        snprintf(out, cap, "%s", colon);
        break;
    }
    fclose(f);
}

typedef struct {
    const char *model_dir, *preset, *targets, *json_path, *device;
    int batch, seq, rank, steps, warmup, threads, seed, rslora;
    float alpha, dropout;
} bench_options;

static int append_json_record(const char *path, json_t *record) {
    char *line = json_dumps(record, JSON_COMPACT | JSON_PRESERVE_ORDER);
    FILE *f = fopen(path, "a");
    if (!f) {
        free(line);
        return fl_input_error("%s: cannot open for appending", path);
    }
    fprintf(f, "%s\n", line);
    int bad = fclose(f) != 0;
    free(line);
    return bad ? fl_input_error("%s: write failed", path) : 0;
}

int cmd_bench(int argc, char **argv) {
    bench_options o = {.preset = NULL, .targets = "q,k,v,o,gate,up,down", .device = "auto", .batch = 4, .seq = 256,
                       .rank = 16, .steps = 5, .warmup = 2, .threads = 0, .seed = 1234, .alpha = 32.0f};
    const fl_option options[] = {
        {"model", FL_OPT_STRING, &o.model_dir, "Hugging Face model folder (config.json + safetensors)"},
        {"preset", FL_OPT_STRING, &o.preset, "built-in config with seeded random weights (default smollm2-135m)"},
        {"batch", FL_OPT_INT, &o.batch, "batch size B (default 4)"},
        {"seq", FL_OPT_INT, &o.seq, "sequence length T (default 256)"},
        {"rank", FL_OPT_INT, &o.rank, "LoRA rank R (default 16)"},
        {"alpha", FL_OPT_FLOAT, &o.alpha, "LoRA alpha (default 32)"},
        {"rslora", FL_OPT_FLAG, &o.rslora, "scale by alpha/sqrt(R) instead of alpha/R"},
        {"dropout", FL_OPT_FLOAT, &o.dropout, "LoRA dropout (default 0)"},
        {"targets", FL_OPT_STRING, &o.targets, "adapted projections (default q,k,v,o,gate,up,down)"},
        {"steps", FL_OPT_INT, &o.steps, "timed steps (default 5)"},
        {"warmup", FL_OPT_INT, &o.warmup, "untimed warm-up steps (default 2)"},
        {"threads", FL_OPT_INT, &o.threads, "CPU threads (default: all cores)"},
        {"seed", FL_OPT_INT, &o.seed, "seed for weights, LoRA init and token ids (default 1234)"},
        {"device", FL_OPT_STRING, &o.device, "cpu, cuda or auto (default: CUDA when a GPU is present)"},
        {"json", FL_OPT_STRING, &o.json_path, "append the result as one JSON line to this file"},
    };
    int rc = fl_args_parse(argc, argv, options, (int)(sizeof options / sizeof options[0]),
                           "usage: fastlora bench [--model DIR | --preset NAME] [--batch B --seq T --rank R ...]");
    if (rc) return rc < 0 ? 0 : rc;
    if (o.model_dir && o.preset) { fprintf(stderr, "fastlora: bench: give --model or --preset, not both\n"); return 2; }
    if (!o.model_dir && !o.preset) o.preset = "smollm2-135m";
    if (o.batch < 1 || o.seq < 2 || o.rank < 1 || o.steps < 1 || o.warmup < 0 || o.threads < 0 || !(o.alpha > 0) ||
        o.dropout < 0 || o.dropout >= 1) {
        fprintf(stderr, "fastlora: bench: need --batch >= 1, --seq >= 2, --rank >= 1, --steps >= 1, --warmup >= 0, "
                        "--alpha > 0, 0 <= --dropout < 1\n");
        return 2;
    }
    const fl_backend *be;
    if (fl_backend_select(o.device, &be)) {
        fprintf(stderr, "fastlora: bench: %s\n", fl_last_error());
        return 2;
    }
    if (o.threads > 0) {
        omp_set_num_threads(o.threads);
        openblas_set_num_threads(o.threads);
    }
    int threads = o.threads > 0 ? o.threads : omp_get_max_threads();

    fl_lora_config lc = fl_lora_config_default();
    lc.rank = o.rank;
    lc.alpha = o.alpha;
    lc.use_rslora = o.rslora;
    lc.dropout = o.dropout;
    lc.seed = (uint64_t)o.seed;
    if (fl_lora_parse_targets(o.targets, &lc.target_mask)) {
        fprintf(stderr, "fastlora: %s\n", fl_last_error());
        return 2;
    }
    fl_model m;
    double t_load = now_seconds();
    int status = o.model_dir ? fl_model_init_dir(&m, o.model_dir, be, &lc)
                             : fl_model_init_preset(&m, o.preset, (uint64_t)o.seed, be, &lc);
    if (status) {
        fprintf(stderr, "fastlora: %s\n", fl_last_error());
        return status;
    }
    t_load = now_seconds() - t_load;
    const fl_model_config *cfg = &m.cfg;
    int B = o.batch, T = o.seq;
    size_t N = (size_t)B * T;

    /* the fixed batch: T+1 ids per row from one seeded stream; every position is trained */
    int32_t *ids = fl_malloc(sizeof(int32_t) * N), *targets = fl_malloc(sizeof(int32_t) * N);
    uint64_t stream = fl_rng_stream((uint64_t)o.seed, 0xba7c, 0, 0);
    for (int b = 0; b < B; b++)
        for (int t = 0; t <= T; t++) {
            int32_t id = (int32_t)(fl_hash64(stream ^ ((uint64_t)b * (T + 1) + t)) % (uint64_t)cfg->vocab_size);
            if (t < T) ids[b * T + t] = id;
            if (t > 0) targets[b * T + t - 1] = id;
        }
    fl_batch batch = {.B = B, .T = T, .ids = ids, .targets = targets};
    fl_adamw_config opt = fl_adamw_config_default();
    double flops = fl_model_flops_per_step(cfg, &lc, B, T);
    size_t lora_params = fl_lora_param_count(cfg, &lc);
    size_t planned = m.base.bytes + lora_params * 4 * sizeof(float) +
                     fl_activations_bytes(cfg, lc.rank, B, T, be->act_size);
    char device[256];
    cpu_name(device, sizeof device);

    printf("fastlora bench: %s (%s), %.1fM params, LoRA r=%d alpha=%g on %s (%.2fM trainable)\n", cfg->name,
           cfg->arch == FL_ARCH_QWEN2 ? "Qwen2" : "Llama", fl_config_total_params(cfg) / 1e6, lc.rank, lc.alpha,
           o.targets, lora_params / 1e6);
    printf("  batch %d x %d = %zu tokens/step, f32 on %s, %d threads; loaded in %.1f s\n", B, T, N, device, threads,
           t_load);
    fflush(stdout);

    int total = o.warmup + o.steps;
    double *times = fl_malloc(sizeof(double) * (size_t)total);
    double last_loss = 0;
    for (int s = 0; s < total; s++) {
        be->synchronize();
        double t0 = now_seconds();
        fl_step_stats st = fl_model_forward(&m, &batch, 0.0f);
        fl_model_backward(&m);
        fl_model_optimizer_step(&m, &opt);
        be->synchronize();
        times[s] = now_seconds() - t0;
        last_loss = st.loss;
        printf("  %s %d/%d: %.0f ms, loss %.4f\n", s < o.warmup ? "warm-up" : "step", s < o.warmup ? s + 1 : s - o.warmup + 1,
               s < o.warmup ? o.warmup : o.steps, times[s] * 1e3, st.loss);
        fflush(stdout);
    }
    double *timed = times + o.warmup;
    qsort(timed, (size_t)o.steps, sizeof(double), cmp_double);
    double median = o.steps % 2 ? timed[o.steps / 2] : 0.5 * (timed[o.steps / 2 - 1] + timed[o.steps / 2]);
    double tok_s = N / median, tok_s_min = N / timed[o.steps - 1], tok_s_max = N / timed[0];
    size_t peak = peak_rss_bytes();
    printf("\nresult: %.1f train tok/s (min %.1f, max %.1f), %.1f ms/step\n", tok_s, tok_s_min, tok_s_max, median * 1e3);
    printf("  FLOPs/step %.4g (4 x %.1fM matmul params x %zu tokens + attention + LoRA) -> %.3f TFLOP/s achieved\n",
           flops, fl_config_matmul_params(cfg) / 1e6, N, flops / median / 1e12);
    printf("  peak memory: %.1f MiB resident (planned allocations %.1f MiB)\n", peak / 1048576.0, planned / 1048576.0);

    if (o.json_path) {
        char date[32];
        time_t now = time(NULL);
        strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
        json_t *r = json_object();
        json_object_set_new(r, "tool", json_string("fastlora"));
        json_object_set_new(r, "model", json_string(cfg->name));
        json_object_set_new(r, "preset", o.preset ? json_string(o.preset) : json_null());
        json_object_set_new(r, "device", json_string(device));
        json_object_set_new(r, "backend", json_string(be->name));
        json_object_set_new(r, "dtype", json_string("float32"));
        json_object_set_new(r, "batch", json_integer(B));
        json_object_set_new(r, "seq", json_integer(T));
        json_object_set_new(r, "rank", json_integer(lc.rank));
        json_object_set_new(r, "alpha", json_real(lc.alpha));
        json_object_set_new(r, "targets", json_string(o.targets));
        json_object_set_new(r, "threads", json_integer(threads));
        json_object_set_new(r, "steps", json_integer(o.steps));
        json_object_set_new(r, "warmup", json_integer(o.warmup));
        json_object_set_new(r, "train_tok_s", json_real(tok_s));
        json_object_set_new(r, "train_tok_s_min", json_real(tok_s_min));
        json_object_set_new(r, "train_tok_s_max", json_real(tok_s_max));
        json_object_set_new(r, "ms_per_step", json_real(median * 1e3));
        json_object_set_new(r, "flops_per_step", json_real(flops));
        json_object_set_new(r, "peak_mem_bytes", json_integer((json_int_t)peak));
        json_object_set_new(r, "final_loss", json_real(last_loss));
        json_object_set_new(r, "date", json_string(date));
        status = append_json_record(o.json_path, r);
        json_decref(r);
        if (status) fprintf(stderr, "fastlora: %s\n", fl_last_error());
    }
    free(times);
    free(ids);
    free(targets);
    fl_model_free(&m);
    return status;
}
