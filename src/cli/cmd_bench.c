/* cmd_bench.c — `fastlora bench`: LoRA training throughput on a fixed batch (bench/bench_run.h
 * has the definition and what is printed). This file reads the options — the table, the words
 * after --sweep, --mem-limit's size — checks them, and calls fl_bench_run. Under mpirun/srun it
 * joins the job first; rank 0 alone prints (stdout), every rank reports errors.
 * Not the benchmark: measuring, records and printing results are bench/. */
#include "cli/commands.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_point.h"
#include "bench/bench_run.h"
#include "bench/records.h"
#include "common/args.h"
#include "common/error.h"
#include "dist/dist.h"
#include "train/preference_loss.h"

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
static int parse_sweep_word(fl_bench_options *o, const char *word) {
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
    fl_bench_options o = {.preset = NULL, .targets = "q,k,v,o,gate,up,down", .device = "auto", .batch = 4, .seq = 0,
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
        {"objective", FL_OPT_STRING, &o.objective, "sft (default), or a preference objective: dpo, ipo, orpo, simpo (--batch pairs, two rows each)", FL_NO_RANGE},
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
    if (o.mem_limit && !(o.mem_limit_bytes = parse_mem(o.mem_limit))) {
        fprintf(stderr, "fastlora: bench: --mem-limit expects a size > 0 like 8G, 512M or a number of MiB, got '%s'\n",
                o.mem_limit);
        return 2;
    }
    if (!sweep_given) o.sweep_spec[0] = 0;
    if (o.json_path && fl_bench_record_check_target(o.json_path)) {   /* before minutes of measuring */
        fprintf(stderr, "fastlora: bench: --json: %s\n", fl_last_error());
        return 2;
    }
    if (o.objective && strcmp(o.objective, "sft") && fl_pref_objective_from_name(o.objective) < 0) {
        fprintf(stderr, "fastlora: bench: --objective: '%s' (expected sft, dpo, ipo, orpo or simpo)\n", o.objective);
        return 2;
    }
    if (fl_bench_is_preference(&o) && (o.json_path || fl_dist_world()->size > 1)) {
        fprintf(stderr, "fastlora: bench: --objective %s: %s\n", o.objective,
                o.json_path ? "--json records and boards hold next-token steps; leave --json out"
                            : "preference steps run in one process");
        return 2;
    }
    if (sweep_given && fl_dist_world()->size > 1) {
        fprintf(stderr, "fastlora: bench: --sweep runs in one process; under mpirun give one --batch and --seq\n");
        return 2;
    }
    return fl_bench_run(&o);
}
