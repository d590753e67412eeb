/* test_preference_train.c — `fastlora train --objective dpo|ipo|orpo|simpo` against TRL 1.16's own
 * trainers, and the preference run's guarantees, on the CPU reference backend (f32):
 *   parity: tests/fixtures/pref_train (tools/make_preference_train_fixtures.py: DPOTrainer,
 *     ORPOTrainer, CPOTrainer on a tiny random Llama with a byte-level BPE, standard and
 *     conversational rows, grad accumulation with an epoch's partial last step, a reference
 *     adapter, no reference adapter, a prompt whose last token merges into its completion, a pair
 *     cut at --seq): every logged number of every step, and the adapter after 3 steps;
 *   accumulation: --batch 4 and --batch 2 --grad-accum 2 give the same step (DPO: the mean of equal
 *     micro-batch means is the mean over the pairs); packed rows == one sequence per row;
 *   resume: interrupted + --resume == one run, byte for byte;
 *   bad input: bad rows skipped and counted, a prompt filling --seq dropped and said, a file of
 *     nothing usable one line, options that do not belong to the objective one line.
 * Tolerances. The model runs in f32 on both sides, with different summation orders: per-token
 * log-probs agree to ~1e-6 relative, so sums over a few dozen tokens and the losses built from them
 * agree to ~1e-5 of their size; metrics.jsonl prints the loss with 6 decimals and the rest with 9
 * digits. Checked: |got - want| <= 1e-4 x max(1, |want|). The adapter after three AdamW steps:
 * 1e-4 absolute (the SFT fixtures' bound, tests/test_hf_fixtures.c) — except ORPO, where TRL
 * computes the log-odds in float32 (log1mexp near 0 loses ~1e-7 absolute, i.e. up to ~1e-4 of the
 * odds gradient) and AdamW's normalization turns that into an update error of up to ~5% of one
 * step's lr on the few parameters whose gradient is smallest: 5e-4 there (lr 1e-2). */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli_run.h"
#include "common/rng.h"
#include "io/file_util.h"
#include "io/safetensors.h"
#include "test.h"

#define FIXTURE "tests/fixtures/pref_train"
#define PREF_MODEL FIXTURE "/model"

static json_t *load_cases(void) {
    json_error_t err;
    json_t *cases = json_load_file(FIXTURE "/cases.json", 0, &err);
    CHECK_MSG(cases != NULL, "%s/cases.json: %s", FIXTURE, err.text);
    return cases;
}

static json_t *find_case(json_t *cases, const char *name) {
    size_t i;
    json_t *c;
    json_array_foreach(cases, i, c) if (!strcmp(json_string_value(json_object_get(c, "name")), name)) return c;
    return NULL;
}

/* The metrics.jsonl lines of training steps (those with "loss"), in order. */
static json_t *train_lines(const char *out_dir) {
    char path[512];
    snprintf(path, sizeof path, "%s/metrics.jsonl", out_dir);
    json_t *lines = json_array();
    FILE *f = fopen(path, "r");
    CHECK_MSG(f != NULL, "%s missing", path);
    char buf[4096];
    while (f && fgets(buf, sizeof buf, f)) {
        json_t *o = json_loads(buf, 0, NULL);
        if (o && json_object_get(o, "loss")) json_array_append(lines, o);
        json_decref(o);
    }
    if (f) fclose(f);
    return lines;
}

/* Every tensor of b in a within atol. */
static void compare_adapters(const char *got_path, const char *want_path, double atol, const char *name) {
    fl_safetensors a, b;
    int rc = fl_safetensors_open(&a, got_path);
    CHECK_MSG(rc == 0, "%s: %s", got_path, fl_last_error());
    rc |= fl_safetensors_open(&b, want_path);
    CHECK_MSG(rc == 0, "%s: %s", want_path, fl_last_error());
    for (int i = 0; !rc && i < b.n_tensors; i++) {
        const fl_st_tensor *w = &b.tensors[i], *g = fl_safetensors_find(&a, w->name);
        CHECK_MSG(g && g->numel == w->numel, "%s: tensor %s missing or of another size", name, w->name);
        if (!g || g->numel != w->numel) continue;
        const float *x = g->data, *y = w->data;
        double worst = 0;
        size_t at = 0;
        for (size_t k = 0; k < w->numel; k++)
            if (fabs(x[k] - y[k]) > worst) { worst = fabs(x[k] - y[k]); at = k; }
        CHECK_MSG(worst <= atol, "%s: %s[%zu] %.8g vs TRL %.8g (|diff| %.3g > %.3g)", name, w->name, at, x[at], y[at],
                  worst, atol);
    }
    fl_safetensors_close(&a);
    fl_safetensors_close(&b);
}

static void check_case(const char *name) {
    if (!fl_test_bin()) SKIP("no FASTLORA_BIN");
    json_t *cases = load_cases();
    json_t *c = cases ? find_case(cases, name) : NULL;
    CHECK_MSG(c != NULL, "case %s not in cases.json", name);
    if (!c) { json_decref(cases); return; }
    char *dir = cr_temp_dir(), args[2048], out[16384];
    int n = snprintf(args, sizeof args, "train --model " PREF_MODEL " --data " FIXTURE "/%s --out %s/run --device cpu "
                     "--dtype f32", json_string_value(json_object_get(c, "data")), dir);
    size_t i;
    json_t *a;
    json_array_foreach(json_object_get(c, "args"), i, a) n += snprintf(args + n, sizeof args - (size_t)n, " %s", json_string_value(a));
    int rc = cr_run(out, sizeof out, NULL, args);
    CHECK_MSG(rc == 0, "%s: exit %d: %s", name, rc, out);
    char run[512];
    snprintf(run, sizeof run, "%s/run", dir);
    json_t *got = rc ? json_array() : train_lines(run), *want = json_object_get(c, "steps");
    CHECK_EQ_INT(json_array_size(got), json_array_size(want));
    json_t *w;
    json_array_foreach(want, i, w) {
        json_t *g = json_array_get(got, i);
        if (!g) break;
        const char *key;
        json_t *v;
        int compared = 0;
        json_object_foreach(g, key, v) {
            json_t *wv = json_object_get(w, key);
            if (!wv || !json_is_number(wv) || !strcmp(key, "step") || !strcmp(key, "epoch")) continue;
            double x = json_number_value(v), y = json_number_value(wv);
            CHECK_MSG(fabs(x - y) <= 1e-4 * fmax(1.0, fabs(y)), "%s step %zu: %s %.9g vs TRL %.9g", name, i + 1, key, x, y);
            compared++;
        }
        CHECK_MSG(compared >= 8, "%s step %zu: only %d numbers compared", name, i + 1, compared);
    }
    char got_adapter[600], want_adapter[600];
    snprintf(got_adapter, sizeof got_adapter, "%s/adapter_model.safetensors", run);
    snprintf(want_adapter, sizeof want_adapter, FIXTURE "/%s", json_string_value(json_object_get(c, "adapter")));
    if (!rc) compare_adapters(got_adapter, want_adapter, strstr(name, "orpo") ? 5e-4 : 1e-4, name);
    json_decref(got);
    json_decref(cases);
    cr_remove_tree(dir);
    free(dir);
}

TEST(pref_train_dpo_standard_matches_trl) { check_case("dpo_standard"); }
TEST(pref_train_dpo_conversational_accumulation_matches_trl) { check_case("dpo_conv_accum"); }
TEST(pref_train_ipo_reference_adapter_matches_trl) { check_case("ipo_ref_adapter"); }
TEST(pref_train_dpo_no_reference_adapter_unclipped_matches_trl) { check_case("dpo_ref_none"); }
TEST(pref_train_orpo_standard_matches_trl) { check_case("orpo"); }
TEST(pref_train_orpo_conversational_accumulation_matches_trl) { check_case("orpo_conv"); }
TEST(pref_train_simpo_matches_trl) { check_case("simpo"); }
TEST(pref_train_cpo_simpo_with_nll_matches_trl) { check_case("simpo_alpha"); }

/* ---- the run's own guarantees ---- */

#define PREF_RUN "train --model " PREF_MODEL " --data " FIXTURE "/standard.jsonl --device cpu --dtype f32 --seq 48 " \
                 "--lr 0.01 --schedule constant --no-shuffle --save-every 0 --adapter " FIXTURE "/start"

static double first_number(const char *dir, const char *key) {
    json_t *lines = train_lines(dir);
    json_t *v = json_object_get(json_array_get(lines, 0), key);
    double x = v ? json_number_value(v) : NAN;
    json_decref(lines);
    return x;
}

TEST(pref_train_accumulation_equals_one_micro_batch) {
    if (!fl_test_bin()) SKIP("no FASTLORA_BIN");
    char *dir = cr_temp_dir(), args[1024], out[8192], a[512], b[512];
    snprintf(a, sizeof a, "%s/a", dir);
    snprintf(b, sizeof b, "%s/b", dir);
    snprintf(args, sizeof args, PREF_RUN " --objective dpo --max-steps 1 --batch 4 --out %s", a);
    CHECK_EQ_INT(cr_run(out, sizeof out, NULL, args), 0);
    snprintf(args, sizeof args, PREF_RUN " --objective dpo --max-steps 1 --batch 2 --grad-accum 2 --out %s", b);
    CHECK_EQ_INT(cr_run(out, sizeof out, NULL, args), 0);
    const char *keys[] = {"loss", "grad_norm", "rewards/margins", "logps/chosen", "logps/rejected"};
    for (int k = 0; k < 5; k++)
        CHECK_CLOSE(first_number(b, keys[k]), first_number(a, keys[k]), 1e-5, 1e-5);
    cr_remove_tree(dir);
    free(dir);
}

/* packing several sequences into a row (each attending within itself, from position 0) is exact:
 * the same numbers as one sequence per row, to f32 summation noise */
TEST(pref_train_packed_rows_equal_one_sequence_per_row) {
    if (!fl_test_bin()) SKIP("no FASTLORA_BIN");
    char *dir = cr_temp_dir(), args[1024], out[8192], a[256], b[256];
    const char *objectives[] = {"dpo", "orpo"};
    for (int o = 0; o < 2; o++) {
        snprintf(a, sizeof a, "%s/a%d", dir, o);
        snprintf(b, sizeof b, "%s/b%d", dir, o);
        snprintf(args, sizeof args, PREF_RUN " --objective %s --max-steps 2 --batch 4 --seq 96 --out %s", objectives[o], a);
        CHECK_EQ_INT(cr_run(out, sizeof out, NULL, args), 0);
        snprintf(args, sizeof args, PREF_RUN " --objective %s --max-steps 2 --batch 4 --seq 96 --no-packing --out %s",
                 objectives[o], b);
        CHECK_EQ_INT(cr_run(out, sizeof out, NULL, args), 0);
        const char *keys[] = {"loss", "grad_norm", "rewards/margins", "logps/chosen", "logps/rejected"};
        for (int k = 0; k < 5; k++) CHECK_CLOSE(first_number(b, keys[k]), first_number(a, keys[k]), 1e-5, 1e-5);
    }
    cr_remove_tree(dir);
    free(dir);
}

TEST(pref_train_resume_equals_one_run) {
    if (!fl_test_bin()) SKIP("no FASTLORA_BIN");
    char *dir = cr_temp_dir(), args[2048], out[8192], a[256], b[256];
    snprintf(a, sizeof a, "%s/a", dir);
    snprintf(b, sizeof b, "%s/b", dir);
    /* 10 pairs, 2 x 2 per step: an epoch boundary (a partial step) inside the run, the interruption after step 2 */
    const char *run = PREF_RUN " --objective dpo --max-steps 5 --batch 2 --grad-accum 2 --beta 0.3";
    snprintf(args, sizeof args, "%s --out %s", run, a);
    CHECK_EQ_INT(cr_run(out, sizeof out, NULL, args), 0);
    snprintf(args, sizeof args, "%s --out %s", run, b);
    CHECK_EQ_INT(cr_run(out, sizeof out, "FASTLORA_TEST_STOP_AT_STEP=2", args), 130);
    snprintf(args, sizeof args, "%s --out %s --resume %s", run, b, b);
    CHECK_EQ_INT(cr_run(out, sizeof out, NULL, args), 0);
    CHECK_STR_CONTAINS(out, "resuming from");
    char fa[600], fb[600];
    snprintf(fa, sizeof fa, "%s/adapter_model.safetensors", a);
    snprintf(fb, sizeof fb, "%s/adapter_model.safetensors", b);
    CHECK_MSG(cr_files_equal(fa, fb), "the resumed run's adapter differs from the one run's");
    /* --config OUT/train_config.json repeats the run exactly (every option recorded, none refused) */
    snprintf(args, sizeof args, "train --config %s/train_config.json --out %s/c", a, dir);
    CHECK_EQ_INT(cr_run(out, sizeof out, NULL, args), 0);
    snprintf(fb, sizeof fb, "%s/c/adapter_model.safetensors", dir);
    CHECK_MSG(cr_files_equal(fa, fb), "the --config rerun's adapter differs: %s", out);
    cr_remove_tree(dir);
    free(dir);
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

TEST(pref_train_bad_rows_skipped_and_dropped_pairs_said) {
    if (!fl_test_bin()) SKIP("no FASTLORA_BIN");
    char *dir = cr_temp_dir(), data[512], args[4096], out[16384];
    snprintf(data, sizeof data, "%s/p.jsonl", dir);
    char long_prompt[400];
    memset(long_prompt, 'x', 300);
    long_prompt[300] = 0;
    char text[2048];
    snprintf(text, sizeof text,
             "{\"prompt\": \"Say th\", \"chosen\": \"e end.\", \"rejected\": \"ank you.\"}\n"
             "{\"prompt\": \"a\", \"chosen\": \"b\"}\n"
             "{\"prompt\": \"a\", \"chosen\": \"same\", \"rejected\": \"same\"}\n"
             "{\"prompt\": \"%s\", \"chosen\": \"b\", \"rejected\": \"c\"}\n"
             "not json\n"
             "{\"prompt\": \"The cat\", \"chosen\": \" sat.\", \"rejected\": \" flew.\"}\n", long_prompt);
    write_text(data, text);
    snprintf(args, sizeof args, "train --model " PREF_MODEL " --data %s --out %s/run --device cpu --dtype f32 --seq 48 "
             "--objective dpo --max-steps 1 --batch 2", data, dir);
    CHECK_EQ_INT(cr_run(out, sizeof out, NULL, args), 0);
    CHECK_STR_CONTAINS(out, "p.jsonl:2: skipped: field 'rejected': missing");
    CHECK_STR_CONTAINS(out, "p.jsonl:3: skipped: field 'rejected': the same as 'chosen'");
    CHECK_STR_CONTAINS(out, "p.jsonl:5: skipped: invalid JSON");
    CHECK_STR_CONTAINS(out, "1 preference pair dropped: the prompt alone fills --seq 48");
    CHECK_STR_CONTAINS(out, "dpo: 2 preference pairs (3 bad rows skipped)");
    /* nothing usable: one line */
    write_text(data, "{\"prompt\": \"a\", \"chosen\": \"b\"}\n{\"chosen\": 3, \"rejected\": \"x\"}\n");
    snprintf(args, sizeof args, "train --model " PREF_MODEL " --data %s --out %s/run2 --device cpu --objective orpo", data, dir);
    CHECK_EQ_INT(cr_run(out, sizeof out, NULL, args), 2);
    CHECK_STR_CONTAINS(out, "p.jsonl: no usable documents (2 records, 2 bad): the first, line 1: field 'rejected': missing");
    CHECK_MSG(strchr(out, '\n') == out + strlen(out) - 1, "more than one line: %s", out);
    /* strict: the first bad row stops the run, naming it */
    write_text(data, "{\"prompt\": \"a\", \"chosen\": \"b\", \"rejected\": \"c\"}\n{\"prompt\": \"a\", \"chosen\": [1], \"rejected\": \"c\"}\n");
    snprintf(args, sizeof args, "train --model " PREF_MODEL " --data %s --out %s/run3 --device cpu --objective dpo --strict", data, dir);
    CHECK_EQ_INT(cr_run(out, sizeof out, NULL, args), 2);
    CHECK_STR_CONTAINS(out, "p.jsonl:2: field 'chosen'");
    cr_remove_tree(dir);
    free(dir);
}

TEST(pref_train_options_that_do_not_belong_are_one_line) {
    if (!fl_test_bin()) SKIP("no FASTLORA_BIN");
    char *dir = cr_temp_dir(), args[1024], out[8192];
    const char *cases[][2] = {
        {"--objective orpo --ref-adapter none", "--ref-adapter: orpo has no reference model (dpo and ipo have one)"},
        {"--beta 0.2", "--beta: a preference-tuning option; give --objective dpo, ipo, orpo or simpo with it"},
        {"--objective dpo --simpo-gamma 1", "--simpo-gamma: a simpo option (--objective is dpo)"},
        {"--objective kto", "--objective: 'kto' (expected sft, dpo, ipo, orpo or simpo)"},
        {"--objective dpo --beta 0", "--beta: expected a finite number > 0, got '0'"},
        {"--objective dpo --format text", "--format text: preference data has its own format"},
        {"--objective dpo --ref-adapter /nonexistent/adapter", "--ref-adapter /nonexistent/adapter: "},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(args, sizeof args, "train --model " PREF_MODEL " --data " FIXTURE "/standard.jsonl --out %s/r%zu "
                 "--device cpu --seq 48 --max-steps 1 %s", dir, i, cases[i][0]);
        CHECK_EQ_INT(cr_run(out, sizeof out, NULL, args), 2);
        CHECK_STR_CONTAINS(out, cases[i][1]);
        CHECK_MSG(strchr(out, '\n') == out + strlen(out) - 1, "case %zu: more than one line: %s", i, out);
    }
    cr_remove_tree(dir);
    free(dir);
}

TEST(pref_bench_measures_pairs_per_second) {
    if (!fl_test_bin()) SKIP("no FASTLORA_BIN");
    char out[16384];
    int rc = cr_run(out, sizeof out, NULL, "bench --model " PREF_MODEL " --objective dpo --batch 2 --seq 32 --steps 2 "
                    "--warmup 1 --device cpu --dtype f32 --no-sgemm");
    CHECK_EQ_INT(rc, 0);
    CHECK_STR_CONTAINS(out, "dpo: ");
    CHECK_STR_CONTAINS(out, "pairs/s (2 pairs per step");
    CHECK_STR_CONTAINS(out, "4 x 32 = 128 tokens/step");
    rc = cr_run(out, sizeof out, NULL, "bench --model " PREF_MODEL " --objective dpo --json /tmp/x.jsonl");
    CHECK_EQ_INT(rc, 2);
    CHECK_STR_CONTAINS(out, "--json records and boards hold next-token steps");
}

TEST(pref_plan_counts_pairs_and_rows) {
    if (!fl_test_bin()) SKIP("no FASTLORA_BIN");
    char out[16384];
    int rc = cr_run(out, sizeof out, NULL, "plan --model " PREF_MODEL " --objective dpo --data " FIXTURE "/standard.jsonl "
                    "--seq 48 --batch 2 --gpu \"NVIDIA H200\"");
    CHECK_EQ_INT(rc, 0);
    CHECK_STR_CONTAINS(out, "micro-batch 4 x seq 48");
    CHECK_STR_CONTAINS(out, "10 pairs, 294 tokens (chosen and rejected, --seq 48) as train --objective dpo reads them");
    CHECK_STR_CONTAINS(out, "dpo: each pair's reference forward once");
    rc = cr_run(out, sizeof out, NULL, "plan --model " PREF_MODEL " --objective orpo --data " FIXTURE "/standard.jsonl "
                "--seq 48 --batch 2 --gpu \"NVIDIA H200\"");
    CHECK_EQ_INT(rc, 0);
    CHECK_MSG(!strstr(out, "reference forward"), "orpo has no reference: %s", out);
    rc = cr_run(out, sizeof out, NULL, "plan --model " PREF_MODEL " --objective kto");
    CHECK_EQ_INT(rc, 2);
    CHECK_STR_CONTAINS(out, "--objective: 'kto' (expected sft, dpo, ipo, orpo or simpo)");
}

/* ---- end to end: stories260K learns which continuation is Shakespeare's (docs/TRAINING.md) ---- */

/* The end of the word boundary at or after `at` (the index of a space), or `at` when there is none. */
static size_t space_at_or_after(const char *text, size_t n, size_t at) {
    while (at < n && text[at] != ' ') at++;
    return at;
}

static size_t space_before(const char *text, size_t from, size_t limit) {
    size_t at = limit;
    while (at > from + 1 && text[at] != ' ') at--;
    return at;
}

/* tools/make_preference_pairs.py's rule with this file's own draws: a prompt of ~120 characters
 * ending at a space, the 60 that follow (chosen), 60 from at least 600 characters away (rejected). */
static int write_shakespeare_pairs(const char *text, size_t n, const char *path, int n_pairs) {
    FILE *f = fopen(path, "w");
    if (!f) return 1;
    size_t range = n - 1000;
    for (int i = 0; i < n_pairs; i++) {
        size_t ps = space_at_or_after(text, n, fl_hash64(0x5eed00 + (uint64_t)i) % range);
        size_t pe = space_before(text, ps, ps + 120), ce = space_before(text, pe, pe + 60);
        size_t other = fl_hash64(0xfa11 + (uint64_t)i) % range;
        if (other + 600 > pe && other < pe + 600) other = (pe + 600 + other) % range;
        size_t rs = space_at_or_after(text, n, other), re = space_before(text, rs, rs + 60);
        json_t *o = json_pack("{s:s%,s:s%,s:s%}", "prompt", text + ps + 1, pe - ps - 1, "chosen", text + pe, ce - pe,
                              "rejected", text + rs, re - rs);
        char *line = o ? json_dumps(o, 0) : NULL;
        if (line) fprintf(f, "%s\n", line);
        free(line);
        json_decref(o);
    }
    return fclose(f);
}

static json_t *last_eval_line(const char *dir) {
    char path[512], buf[4096];
    snprintf(path, sizeof path, "%s/metrics.jsonl", dir);
    FILE *f = fopen(path, "r");
    json_t *last = NULL;
    while (f && fgets(buf, sizeof buf, f)) {
        json_t *o = json_loads(buf, 0, NULL);
        if (o && json_object_get(o, "eval_loss")) { json_decref(last); last = o; }
        else json_decref(o);
    }
    if (f) fclose(f);
    return last;
}

TEST(pref_train_stories260k_dpo_prefers_the_real_continuation) {
    const char *shared = fl_test_shared_dir();
    if (!shared) SKIP("../shared not found");
    if (!fl_test_bin()) SKIP("no FASTLORA_BIN");
    char ckpt[512], tokbin[512], text_path[512];
    snprintf(ckpt, sizeof ckpt, "%s/data/stories260K/stories260K.bin", shared);
    snprintf(tokbin, sizeof tokbin, "%s/data/stories260K/tok512.bin", shared);
    snprintf(text_path, sizeof text_path, "%s/data/tinyshakespeare/input.txt", shared);
    char *text = NULL;
    size_t n = 0;
    if (fl_file_read_all(text_path, FL_FILE_DATASET, &text, &n) || n < 100000) {
        free(text);
        SKIP("tinyshakespeare missing in ../shared");
    }
    char *dir = cr_temp_dir(), args[2048], out[16384], model[300], data[300], run[300];
    snprintf(model, sizeof model, "%s/s260", dir);
    snprintf(data, sizeof data, "%s/pairs.jsonl", dir);
    snprintf(run, sizeof run, "%s/run", dir);
    snprintf(args, sizeof args, "convert-llama2c --checkpoint %s --tokenizer %s --out %s", ckpt, tokbin, model);
    CHECK_EQ_INT(cr_run(out, sizeof out, NULL, args), 0);
    CHECK_EQ_INT(write_shakespeare_pairs(text, n, data, 1000), 0);
    free(text);
    snprintf(args, sizeof args, "train --objective dpo --model %s --data %s --out %s --eval-frac 0.1 --seq 128 --batch 8 "
             "--max-steps 150 --lr 1e-3 --warmup 20 --rank 8 --alpha 16 --eval-every 150 --save-every 0 --dtype f32 "
             "--device cpu", model, data, run);
    /* its own time limit: ~20 s at this CPU's kernels, several times that at the portable ones */
    char cmd[2600];
    snprintf(cmd, sizeof cmd, "OMP_NUM_THREADS=1 timeout 400 %s %s </dev/null >%s/log 2>&1", fl_test_bin(), args, dir);
    CHECK_EQ_INT(system(cmd), 0);
    json_t *e = last_eval_line(run);
    double acc = json_number_value(json_object_get(e, "eval_rewards/accuracies"));
    double margin = json_number_value(json_object_get(e, "eval_rewards/margins"));
    double loss = json_number_value(json_object_get(e, "eval_loss"));
    /* at the start every reward is 0 (policy = reference): accuracy 0, margin 0, loss ln 2 */
    printf("    after 150 steps: eval accuracy %.3f, margin %.4f, loss %.4f\n", acc, margin, loss);
    CHECK_MSG(acc >= 0.55 && margin > 0.05 && loss < 0.69, "after 150 steps: eval accuracy %.3f, margin %.4f, loss %.4f",
              acc, margin, loss);
    json_decref(e);
    cr_remove_tree(dir);
    free(dir);
}
