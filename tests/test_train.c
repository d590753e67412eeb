/* test_train.c — the training loop's guarantees, on the CPU reference backend (f32):
 *   packing: a packed row gives the loss and gradients of its documents run one by one;
 *   accumulation: 1 micro-batch of 8 rows and 8 micro-batches of 1 row give the same gradient and
 *     update (loss normalized over all counted tokens of the step), unlike a per-micro-batch mean;
 *   resume: 2N steps in one run == N steps, Ctrl-C (checkpoint), --resume, N more: identical adapter
 *     bytes (with dropout, grad accumulation, shuffle and an epoch boundary in between);
 *   crash safety: a SIGKILL in the middle of a checkpoint write leaves the previous one intact and
 *     resumable (the CLI, FASTLORA_TEST_CRASH_IN_CHECKPOINT);
 *   NaN: stops with a clear message, no adapter past the last good checkpoint;
 *   schedule, options file, and the stories260K end-to-end fine-tune (when ../shared exists). */
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/error.h"
#include "common/rng.h"
#include "engine/model.h"
#include "io/file_util.h"
#include "io/safetensors.h"
#include "lora/adapter_io.h"
#include "test.h"
#include "train/checkpoint.h"
#include "train/llama2c.h"
#include "train/schedule.h"
#include "train/trainer.h"

static fl_model_config tiny_config(void) {
    fl_model_config c;
    memset(&c, 0, sizeof c);
    snprintf(c.name, sizeof c.name, "tiny");
    c.vocab_size = 64;
    c.hidden_size = 32;
    c.intermediate_size = 48;
    c.n_layers = 2;
    c.n_heads = 4;
    c.n_kv_heads = 2;
    c.head_dim = 8;
    c.max_position_embeddings = 128;
    c.rope_theta = 10000.0;
    c.rms_norm_eps = 1e-5f;
    c.bos_token_id = 1;
    c.eos_token_id = 2;
    return c;
}

/* A tiny random model whose LoRA B is non-zero, so every LoRA gradient is non-zero. */
static void tiny_model(fl_model *m, float dropout) {
    fl_model_config c = tiny_config();
    fl_lora_config lc = fl_lora_config_default();
    lc.rank = 4;
    lc.alpha = 8;
    lc.dropout = dropout;
    fl_model_init_random(m, &c, 5, fl_backend_cpu(), &lc);
    fl_rng_fill_uniform(m->lora.data, m->lora.n, fl_rng_stream(77, 1, 2, 3), -0.2f, 0.2f);
    fl_model_sync_lora(m);
}

static double max_abs_diff(const float *a, const float *b, size_t n, double *max_a) {
    double d = 0, ma = 0;
    for (size_t i = 0; i < n; i++) {
        d = fmax(d, fabs((double)a[i] - b[i]));
        ma = fmax(ma, fabs(a[i]));
    }
    if (max_a) *max_a = ma;
    return d;
}

TEST(train_packing_equals_documents_one_by_one) {
    fl_model m;
    tiny_model(&m, 0.0f);
    /* three documents (ids), with a prompt mask on the second */
    int lens[3] = {7, 5, 9};
    int32_t docs[3][9];
    uint8_t masks[3][9];
    for (int d = 0; d < 3; d++)
        for (int i = 0; i < lens[d]; i++) {
            docs[d][i] = (int32_t)((d * 17 + i * 7 + 3) % 64);
            masks[d][i] = !(d == 1 && i < 3);
        }
    /* packed: one row of T = 24 (6 + 4 + 8 positions, 6 padding) */
    enum { T = 24 };
    int32_t ids[T], tg[T], pos[T], seg[T];
    int o = 0, total = 0;
    for (int d = 0; d < 3; d++) {
        for (int i = 0; i + 1 < lens[d]; i++) {
            ids[o + i] = docs[d][i];
            tg[o + i] = masks[d][i + 1] ? docs[d][i + 1] : -100;
            total += tg[o + i] != -100;
            pos[o + i] = i;
            seg[o + i] = o;
        }
        o += lens[d] - 1;
    }
    for (int t = o; t < T; t++) { ids[t] = 5; tg[t] = -100; pos[t] = 0; seg[t] = t; }
    float scale = 1.0f / (float)total;
    fl_batch packed = {.B = 1, .T = T, .ids = ids, .targets = tg, .pos = pos, .seg_start = seg};
    fl_step_stats sp = fl_model_forward(&m, &packed, scale);
    fl_model_backward(&m);
    float *g_packed = malloc(sizeof(float) * m.grads.n);
    memcpy(g_packed, m.grads.data, sizeof(float) * m.grads.n);
    fl_model_zero_grads(&m);
    /* one by one, same normalization */
    double loss_sum = 0;
    for (int d = 0; d < 3; d++) {
        int n = lens[d] - 1;
        int32_t t1[8];
        for (int i = 0; i < n; i++) t1[i] = masks[d][i + 1] ? docs[d][i + 1] : -100;
        fl_batch one = {.B = 1, .T = n, .ids = docs[d], .targets = t1};
        loss_sum += fl_model_forward(&m, &one, scale).loss_sum;
        fl_model_backward(&m);
    }
    CHECK_EQ_INT(sp.n_counted, total);
    CHECK_CLOSE(sp.loss_sum, loss_sum, 1e-5, 1e-5);
    double ma, diff = max_abs_diff(m.grads.data, g_packed, m.grads.n, &ma);
    printf("    loss %.6f vs %.6f, max |grad diff| %.2e of max |grad| %.2e\n", sp.loss_sum, loss_sum, diff, ma);
    CHECK(ma > 1e-4);
    CHECK(diff <= 1e-5 * ma + 1e-9);
    /* and without the segment reset the documents WOULD see each other (the test can fail) */
    fl_model_zero_grads(&m);
    fl_batch leaky = {.B = 1, .T = T, .ids = ids, .targets = tg, .pos = pos, .seg_start = NULL};
    double leak = fl_model_forward(&m, &leaky, scale).loss_sum;
    fl_model_backward(&m);
    /* the random weights (std 0.02) mix positions weakly: the leak moves the summed loss (~66) by
     * ~6e-4, while f32 rounding of that sum is ~1e-5 */
    CHECK(fabs(leak - loss_sum) > 1e-4);
    free(g_packed);
    fl_model_free(&m);
}

TEST(train_accumulation_1x8_equals_8x1) {
    enum { R = 8, T = 12 };
    int32_t ids[R * T], tg[R * T];
    for (int r = 0; r < R; r++)
        for (int t = 0; t < T; t++) {
            ids[r * T + t] = (int32_t)((r * 31 + t * 11 + 1) % 64);
            /* very different counted tokens per row: row r keeps only its last r+1 targets */
            tg[r * T + t] = t >= T - (r + 1) ? (int32_t)((r * 13 + t * 5 + 2) % 64) : -100;
        }
    fl_model a, b;
    tiny_model(&a, 0.0f);
    tiny_model(&b, 0.0f);
    fl_batch one = {.B = R, .T = T, .ids = ids, .targets = tg};
    fl_batch micro[R];
    for (int r = 0; r < R; r++) micro[r] = (fl_batch){.B = 1, .T = T, .ids = ids + r * T, .targets = tg + r * T};
    fl_step_stats sa = fl_train_accumulate(&a, &one, 1);
    fl_step_stats sb = fl_train_accumulate(&b, micro, R);
    CHECK_EQ_INT(sa.n_counted, sb.n_counted);
    CHECK_CLOSE(sa.loss, sb.loss, 1e-6, 1e-6);
    double ma, diff = max_abs_diff(a.grads.data, b.grads.data, a.grads.n, &ma);
    printf("    1x8 vs 8x1: loss %.7f vs %.7f, max |grad diff| %.2e (max |grad| %.2e)\n", sa.loss, sb.loss, diff, ma);
    CHECK(diff <= 1e-5 * ma);
    /* the per-micro-batch mean (the bug) is far off */
    fl_model c;
    tiny_model(&c, 0.0f);
    for (int r = 0; r < R; r++) {
        fl_model_forward(&c, &micro[r], 0.0f); /* 0: this micro-batch's own mean */
        fl_model_backward(&c);
    }
    for (size_t i = 0; i < c.grads.n; i++) c.grads.data[i] /= R;
    double bug = max_abs_diff(c.grads.data, a.grads.data, a.grads.n, NULL);
    printf("    per-micro-batch mean would differ by %.2e\n", bug);
    CHECK(bug > 1e-2 * ma);
    /* the same update. AdamW's first step is lr·g/(|g|+eps): wherever |g| is itself at the f32
     * rounding level (~1e-8 here) its sign is noise, so compare where |g| > 1e-4·max|g| */
    float *g = malloc(sizeof(float) * a.grads.n);
    memcpy(g, a.grads.data, sizeof(float) * a.grads.n);
    fl_adamw_config opt = fl_adamw_config_default();
    opt.lr = 1e-2f;
    fl_model_optimizer_step(&a, &opt);
    fl_model_optimizer_step(&b, &opt);
    double worst = 0;
    size_t compared = 0;
    for (size_t i = 0; i < a.lora.n; i++)
        if (fabs(g[i]) > 1e-4 * ma) { worst = fmax(worst, fabs((double)a.lora.data[i] - b.lora.data[i])); compared++; }
    printf("    max |update diff| %.2e over %zu of %zu params (lr %.0e)\n", worst, compared, a.lora.n, opt.lr);
    CHECK(compared > a.lora.n / 2);
    CHECK(worst <= 1e-4 * opt.lr);
    free(g);
    fl_model_free(&a);
    fl_model_free(&b);
    fl_model_free(&c);
}

/* The lr of every step of 44 schedules (cosine, cosine with a floor, linear, constant; warmup 0, 1,
 * shorter and longer than the run) against transformers' own schedulers
 * (tests/fixtures/train/lr_schedules.json, tools/make_lr_schedule_fixture.py), and the warmup
 * steps of a warmup ratio against TrainingArguments.get_warmup_steps. The expressions are
 * transformers' in the same order, so on the same libm they agree to the bit; the tolerance, 2 ulp
 * (4.4e-16 relative), leaves room for another libm's cos. The old schedule ((s+1)/W warmup, the
 * last step at the floor) fails this at the first warmup step and at every last step. */
TEST(train_lr_schedule_matches_transformers) {
    json_error_t jerr;
    json_t *root = json_load_file("tests/fixtures/train/lr_schedules.json", 0, &jerr);
    CHECK_MSG(root != NULL, "lr_schedules.json: %s", jerr.text);
    if (!root) return;
    size_t i, steps = 0;
    json_t *c;
    json_array_foreach(json_object_get(root, "cases"), i, c) {
        fl_lr_schedule s = {.lr = json_real_value(json_object_get(c, "lr")),
                            .min_lr_ratio = json_number_value(json_object_get(c, "min_lr_ratio")),
                            .total_steps = (int)json_integer_value(json_object_get(c, "total")),
                            .warmup = (int)json_integer_value(json_object_get(c, "warmup"))};
        CHECK(fl_sched_parse(json_string_value(json_object_get(c, "schedule")), &s.kind) == 0);
        json_t *lrs = json_object_get(c, "lrs");
        CHECK_EQ_INT(json_array_size(lrs), s.total_steps);
        for (int k = 0; k < s.total_steps; k++, steps++) {
            double want = json_number_value(json_array_get(lrs, (size_t)k)), got = fl_lr_at(&s, k);
            CHECK_MSG(fabs(got - want) <= 4.4e-16 * fabs(want), "%s floor %g, %d steps, warmup %d: step %d lr %.17g, transformers %.17g",
                      json_string_value(json_object_get(c, "schedule")), s.min_lr_ratio, s.total_steps, s.warmup, k, got, want);
        }
    }
    printf("    %zu schedules, %zu steps equal to transformers'\n", json_array_size(json_object_get(root, "cases")), steps);
    CHECK(steps > 400);
    json_array_foreach(json_object_get(root, "warmup_from_ratio"), i, c) {
        int total = (int)json_integer_value(json_object_get(c, "total"));
        double ratio = json_real_value(json_object_get(c, "ratio"));
        CHECK_EQ_INT(fl_sched_warmup_steps(0, ratio, total), json_integer_value(json_object_get(c, "warmup")));
    }
    json_decref(root);
}

/* ---- whole runs ------------------------------------------------------------------------------ */

static char *temp_dir(void) {
    char *dir = strdup("/tmp/fastlora-train-XXXXXX");
    return mkdtemp(dir);
}

static void remove_tree(const char *dir) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

/* A tokens file of n_docs documents with varied lengths (ids < 64). */
static char *write_token_data(const char *dir, int n_docs) {
    fl_dataset ds = {0};
    for (int d = 0; d < n_docs; d++) {
        int32_t ids[40];
        int n = 3 + (d * 7) % 29;
        for (int i = 0; i < n; i++) ids[i] = (int32_t)((d * 5 + i * i + 3) % 61 + 3);
        fl_dataset_add(&ds, ids, NULL, n);
    }
    char *path = malloc(strlen(dir) + 32);
    sprintf(path, "%s/data.tokens", dir);
    if (fl_tokens_file_write(path, &ds)) printf("    %s\n", fl_last_error());
    fl_dataset_free(&ds);
    return path;
}

static char *read_text(const char *path);

static void run_options(fl_train_options *o, const char *data, const char *out, FILE *log) {
    fl_train_options_default(o);
    o->data = data;
    o->out = out;
    o->seq = 16;
    o->batch = 2;
    o->grad_accum = 2;
    o->max_steps = 8;
    o->lr = 1e-2;
    o->warmup = 2;
    o->save_every = 4;
    o->eval_every = 4;
    o->eval_frac = 0.1;
    o->rank = 4;
    o->alpha = 8;
    o->dropout = 0.1;
    o->log = log;
}

static int run(fl_train_options *o, fl_train_result *res) {
    fl_model m;
    tiny_model(&m, o->dropout);
    fl_rng_fill_uniform(m.lora.data, m.lora.n, fl_rng_stream(9, 9, 9, 9), -0.1f, 0.1f); /* same start every time */
    fl_model_sync_lora(&m);
    int rc = fl_train_run(o, &m, NULL, res);
    fl_model_free(&m);
    return rc;
}

static int files_equal(const char *a, const char *b) {
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    int eq = fa && fb;
    while (eq) {
        int ca = getc(fa), cb = getc(fb);
        if (ca != cb) eq = 0;
        if (ca == EOF || cb == EOF) break;
    }
    if (fa) fclose(fa);
    if (fb) fclose(fb);
    return eq;
}

TEST(train_resume_is_bitwise_identical) {
    char *dir = temp_dir();
    char *data = write_token_data(dir, 30); /* ~22 rows of 16 per epoch: 8 steps x 4 rows cross an epoch */
    char out_a[256], out_b[256], path_a[600], path_b[600];
    snprintf(out_a, sizeof out_a, "%s/a", dir);
    snprintf(out_b, sizeof out_b, "%s/b", dir);
    FILE *log = fopen("/dev/null", "w");
    fl_train_options o;
    fl_train_result ra, rb;
    run_options(&o, data, out_a, log);
    CHECK_EQ_INT(run(&o, &ra), 0);
    CHECK_EQ_INT(ra.steps, 8);
    /* run b: interrupted after step 4 (the Ctrl-C path), then resumed */
    run_options(&o, data, out_b, log);
    o.stop_at_step = 4;
    CHECK_EQ_INT(run(&o, &rb), 130);
    CHECK_EQ_INT(rb.steps, 4);
    run_options(&o, data, out_b, log);
    o.resume = out_b;
    CHECK_EQ_INT(run(&o, &rb), 0);
    CHECK_EQ_INT(rb.steps, 8);
    snprintf(path_a, sizeof path_a, "%s/adapter_model.safetensors", out_a);
    snprintf(path_b, sizeof path_b, "%s/adapter_model.safetensors", out_b);
    CHECK(files_equal(path_a, path_b));
    snprintf(path_a, sizeof path_a, "%s/checkpoints/step-00000008/optimizer.safetensors", out_a);
    snprintf(path_b, sizeof path_b, "%s/checkpoints/step-00000008/optimizer.safetensors", out_b);
    CHECK(files_equal(path_a, path_b));
    /* and a different seed is a different run (the comparison can fail) */
    char out_c[256];
    snprintf(out_c, sizeof out_c, "%s/c", dir);
    run_options(&o, data, out_c, log);
    o.seed = 99;
    CHECK_EQ_INT(run(&o, &rb), 0);
    snprintf(path_a, sizeof path_a, "%s/adapter_model.safetensors", out_a);
    snprintf(path_b, sizeof path_b, "%s/adapter_model.safetensors", out_c);
    CHECK(!files_equal(path_a, path_b));
    /* outputs: metrics, curve, config; keep = 3 checkpoints at most */
    snprintf(path_a, sizeof path_a, "%s/loss.svg", out_a);
    CHECK(fl_file_exists(path_a));
    snprintf(path_a, sizeof path_a, "%s/train_config.json", out_a);
    fl_train_options back;
    fl_train_options_default(&back);
    CHECK(fl_train_options_load_json(&back, path_a) == 0);
    CHECK(back.seq == 16 && back.grad_accum == 2 && back.lr == 0.01 && back.dropout == 0.1 && back.max_steps == 8);
    fl_train_options_free(&back);
    fclose(log);
    remove_tree(dir);
    free(data);
    free(dir);
}

/* The old schedule put the last step at the floor, so a 1-step run trained at lr 0 and saved the
 * adapter it started from. Now step 0 of a run without warmup runs at the full lr (as in HF). */
TEST(train_one_step_run_changes_the_adapter) {
    char *dir = temp_dir();
    char *data = write_token_data(dir, 10);
    char out[256];
    snprintf(out, sizeof out, "%s/run", dir);
    fl_train_options o;
    fl_train_result r;
    run_options(&o, data, out, fopen("/dev/null", "w"));
    o.max_steps = 1;
    o.warmup = 0;
    o.dropout = 0;
    fl_model m;
    tiny_model(&m, 0.0f);
    float *before = malloc(sizeof(float) * m.lora.n);
    memcpy(before, m.lora.data, sizeof(float) * m.lora.n);
    CHECK_EQ_INT(fl_train_run(&o, &m, NULL, &r), 0);
    CHECK_EQ_INT(r.steps, 1);
    double moved = max_abs_diff(m.lora.data, before, m.lora.n, NULL);
    printf("    1 step at lr %g: max |change| of the LoRA parameters %.2e\n", o.lr, moved);
    CHECK(moved > 0.5 * o.lr); /* Adam's first step moves every parameter with a gradient by ~lr */
    fclose(o.log);
    free(before);
    fl_model_free(&m);
    remove_tree(dir);
    free(data);
    free(dir);
}

/* An epoch used to wrap: a step that ran out of rows took the next epoch's first rows, so --epochs 2
 * trained more tokens than two passes hold. Now the last step of each epoch takes the rows that are
 * left (as the HF Trainer's last accumulation step does): each epoch trains every target token
 * exactly once, and the checkpoint at the end of epoch 1 has seen exactly one pass. */
TEST(train_epoch_trains_each_token_once) {
    char *dir = temp_dir();
    char *data = write_token_data(dir, 30);
    char out[256], path[600];
    snprintf(out, sizeof out, "%s/run", dir);
    fl_dataset ds = {0};
    fl_data_options dopt = fl_data_options_default();
    CHECK(fl_dataset_load(&ds, data, NULL, &dopt) == 0);
    /* the rows of epochs 0 and 1, packed as the trainer packs them (each epoch its own shuffle) */
    uint32_t *all = malloc(sizeof(uint32_t) * ds.n_docs);
    for (size_t i = 0; i < ds.n_docs; i++) all[i] = (uint32_t)i;
    fl_pack_options pack = {.T = 16, .packing = 1, .shuffle = 1, .seed = 1234};
    fl_rows r0, r1;
    fl_rows_build(&r0, &ds, all, ds.n_docs, &pack, 0);
    fl_rows_build(&r1, &ds, all, ds.n_docs, &pack, 1);
    size_t per_step = 2 * 5, steps0 = (r0.n_rows + per_step - 1) / per_step, steps1 = (r1.n_rows + per_step - 1) / per_step;
    printf("    %zu target tokens; rows %zu and %zu in epochs 0 and 1: %zu + %zu steps of %zu rows\n", ds.n_targets,
           r0.n_rows, r1.n_rows, steps0, steps1, per_step);
    CHECK(r0.n_rows % per_step != 0); /* so the last step of epoch 0 is partial */
    fl_train_options o;
    fl_train_result res;
    run_options(&o, data, out, fopen("/dev/null", "w"));
    o.max_steps = 0;
    o.epochs = 2;
    o.eval_frac = 0;
    o.grad_accum = 5;
    o.save_every = (int)steps0;
    o.keep = 5;
    CHECK_EQ_INT(run(&o, &res), 0);
    CHECK_EQ_INT(res.steps, steps0 + steps1);
    CHECK_EQ_INT(res.tokens, 2 * ds.n_targets);
    /* the checkpoint at the end of epoch 0: one pass exactly, at its last row */
    snprintf(path, sizeof path, "%s/checkpoints/step-%08zu/trainer_state.json", out, steps0);
    json_t *st = json_load_file(path, 0, NULL);
    CHECK_MSG(st != NULL, "%s missing", path);
    CHECK_EQ_INT(json_integer_value(json_object_get(st, "tokens")), ds.n_targets);
    CHECK_EQ_INT(json_integer_value(json_object_get(st, "epoch")), 0);
    CHECK_EQ_INT(json_integer_value(json_object_get(st, "row")), r0.n_rows);
    json_decref(st);
    fclose(o.log);
    fl_rows_free(&r0);
    fl_rows_free(&r1);
    free(all);
    fl_dataset_free(&ds);
    remove_tree(dir);
    free(data);
    free(dir);
}

TEST(train_nan_stops_and_keeps_last_good_checkpoint) {
    char *dir = temp_dir();
    char *data = write_token_data(dir, 20);
    char out[256], path[320];
    snprintf(out, sizeof out, "%s/run", dir);
    char *log_text = NULL;
    size_t log_len = 0;
    FILE *log = open_memstream(&log_text, &log_len);
    fl_train_options o;
    fl_train_result r;
    run_options(&o, data, out, log);
    o.inject_nan_step = 6;
    int rc = run(&o, &r);
    fclose(log);
    CHECK_EQ_INT(rc, 1);
    CHECK_EQ_INT(r.steps, 5);
    CHECK_STR_CONTAINS(log_text, "step 6: the loss is NaN; stopping. The last good checkpoint is in");
    snprintf(path, sizeof path, "%s/checkpoints/step-00000004/trainer_state.json", out);
    CHECK(fl_file_exists(path));
    snprintf(path, sizeof path, "%s/adapter_model.safetensors", out);
    CHECK(!fl_file_exists(path)); /* no final adapter from a diverged run */
    free(log_text);
    remove_tree(dir);
    free(data);
    free(dir);
}

TEST(train_bad_input_config_files) {
    char path[] = "/tmp/fastlora-config-XXXXXX";
    int fd = mkstemp(path);
    const char *cases[][2] = {
        {"{\"lr\": \"fast\"}", "lr: expected a number"},
        {"{\"learning_rate\": 1}", "'learning_rate' is not a training option"},
        {"{\"seq\": 1.5}", "seq: expected an integer"},
        {"{\"no_packing\": 1}", "no_packing: expected true or false"},
        {"[1]", "expected a JSON object"},
        {"{\"lr\": 1", "invalid JSON"},
        /* each number against its option's range (train/options.c), as on the command line */
        {"{\"lr\": -1}", "lr: expected a number >= 0 and < 10, got -1"},
        {"{\"seq\": 10000000000}", "seq: expected an integer in 2..1048576, got 10000000000"},
        {"{\"batch\": 0}", "batch: expected an integer in 1..65536, got 0"},
        {"{\"dropout\": 1}", "dropout: expected a number >= 0 and < 1, got 1"},
        {"{\"clip\": -1}", "clip: expected a finite number >= 0, got -1"},
        {"{\"epochs\": 0}", "epochs: expected a number > 0 and < 1000000, got 0"},
        {"{\"keep\": 0}", "keep: expected an integer >= 1, got 0"},
        {"{\"rank\": 99999}", "rank: expected an integer in 1..4096, got 99999"},
        {"{\"warmup_ratio\": 2}", "warmup_ratio: expected a number >= 0 and <= 1, got 2"},
        {"{\"seed\": -1}", "seed: expected an integer in 0..18446744073709551615"},
        {"{\"seed\": \"12a\"}", "seed: expected an integer in 0..18446744073709551615"},
        {"{\"seed\": 1.5}", "seed: expected an integer in 0..18446744073709551615"},
        {"{\"lr\": 1e400}", "invalid JSON"},   /* jansson refuses what a double cannot hold */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        FILE *f = fopen(path, "w");
        fputs(cases[i][0], f);
        fclose(f);
        fl_train_options o;
        fl_train_options_default(&o);
        CHECK_EQ_INT(fl_train_options_load_json(&o, path), FL_ERR_INPUT);
        CHECK_STR_CONTAINS(fl_last_error(), path);
        CHECK_STR_CONTAINS(fl_last_error(), cases[i][1]);
        fl_train_options_free(&o);
    }
    /* a good one: underscores and dashes both, strings owned */
    FILE *f = fopen(path, "w");
    fputs("{\"grad_accum\": 4, \"eval-frac\": 0.25, \"schedule\": \"linear\", \"no-packing\": true}", f);
    fclose(f);
    fl_train_options o;
    fl_train_options_default(&o);
    CHECK(fl_train_options_load_json(&o, path) == 0);
    CHECK(o.grad_accum == 4 && o.eval_frac == 0.25 && !strcmp(o.schedule, "linear") && o.no_packing == 1);
    fl_train_options_free(&o);
    close(fd);
    unlink(path);
}

/* ---- crash safety through the CLI --------------------------------------------------------------- */

/* Writes a tiny HF folder (the llama_gqa fixture model) path for CLI runs. */
#define FIXTURE_MODEL "tests/fixtures/hf/llama_gqa/model"

TEST(train_kill_during_checkpoint_write_keeps_previous) {
    const char *bin = getenv("FASTLORA_BIN");
    if (!bin || access(bin, X_OK) != 0) SKIP("FASTLORA_BIN not set");
    char *dir = temp_dir();
    char *data = write_token_data(dir, 30);
    char cmd[2048], path[512];
    const char *common = "--seq 16 --batch 2 --max-steps 6 --save-every 2 --rank 4 --alpha 8 --lr 0.01 --dtype f32 "
                         "--log-every 0 --eval-every 0";
    /* reference: uninterrupted */
    snprintf(cmd, sizeof cmd, "%s train --model %s --data %s --out %s/ref %s >/dev/null 2>&1", bin, FIXTURE_MODEL, data,
             dir, common);
    CHECK_EQ_INT(system(cmd), 0);
    /* killed (SIGKILL) in the middle of writing its 2nd checkpoint (step 4) */
    snprintf(cmd, sizeof cmd, "FASTLORA_TEST_CRASH_IN_CHECKPOINT=2 %s train --model %s --data %s --out %s/run %s "
             ">/dev/null 2>&1", bin, FIXTURE_MODEL, data, dir, common);
    int rc = system(cmd);
    CHECK_MSG(WIFEXITED(rc) && WEXITSTATUS(rc) == 128 + 9, "expected death by SIGKILL, got status %d", rc);
    snprintf(path, sizeof path, "%s/run/checkpoints/step-00000002/trainer_state.json", dir);
    CHECK(fl_file_exists(path));
    snprintf(path, sizeof path, "%s/run/checkpoints/step-00000004", dir);
    CHECK(!fl_file_exists(path));
    /* the previous checkpoint is intact: it loads */
    fl_lora_config lc;
    snprintf(path, sizeof path, "%s/run/checkpoints/step-00000002", dir);
    CHECK(fl_adapter_load_config(path, &lc) == 0);
    /* resuming from the folder picks step 2 and ends where the uninterrupted run ended, bit for bit */
    snprintf(cmd, sizeof cmd, "%s train --model %s --data %s --out %s/run %s --resume %s/run >/dev/null 2>&1", bin,
             FIXTURE_MODEL, data, dir, common, dir);
    CHECK_EQ_INT(system(cmd), 0);
    char a[512], b[512];
    snprintf(a, sizeof a, "%s/ref/adapter_model.safetensors", dir);
    snprintf(b, sizeof b, "%s/run/adapter_model.safetensors", dir);
    CHECK(files_equal(a, b));
    remove_tree(dir);
    free(data);
    free(dir);
}

/* A kill while a rotated-out checkpoint is being deleted: the folder was deleted file by file in
 * place, leaving a partial step-* folder. Now it is renamed to a hidden .old-step-* first; the kill
 * leaves that hidden leftover, which resume ignores and the next save removes, and the resumed run
 * ends bit for bit where an uninterrupted one does. */
TEST(train_kill_during_checkpoint_rotation_leaves_no_partial_checkpoint) {
    const char *bin = getenv("FASTLORA_BIN");
    if (!bin || access(bin, X_OK) != 0) SKIP("FASTLORA_BIN not set");
    char *dir = temp_dir();
    char *data = write_token_data(dir, 30);
    char cmd[2048], path[512];
    const char *common = "--seq 16 --batch 2 --max-steps 6 --save-every 2 --keep 1 --rank 4 --alpha 8 --lr 0.01 "
                         "--dtype f32 --log-every 0 --eval-every 0";
    snprintf(cmd, sizeof cmd, "%s train --model %s --data %s --out %s/ref %s >/dev/null 2>&1", bin, FIXTURE_MODEL, data,
             dir, common);
    CHECK_EQ_INT(system(cmd), 0);
    /* the 2nd save (step 4) rotates step 2 out and is killed after deleting its first file */
    snprintf(cmd, sizeof cmd, "FASTLORA_TEST_CRASH_IN_ROTATION=2 %s train --model %s --data %s --out %s/run %s "
             ">/dev/null 2>&1", bin, FIXTURE_MODEL, data, dir, common);
    int rc = system(cmd);
    CHECK_MSG(WIFEXITED(rc) && WEXITSTATUS(rc) == 128 + 9, "expected death by SIGKILL, got status %d", rc);
    snprintf(path, sizeof path, "%s/run/checkpoints/step-00000002", dir);
    CHECK_MSG(!fl_file_exists(path), "a partial %s is left", path);
    snprintf(path, sizeof path, "%s/run/checkpoints/.old-step-00000002", dir);
    CHECK(fl_file_exists(path)); /* the hidden leftover of the interrupted deletion */
    const char *files[] = {"adapter_config.json", "adapter_model.safetensors", "optimizer.safetensors", "trainer_state.json"};
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/run/checkpoints/step-00000004/%s", dir, files[i]);
        CHECK_MSG(fl_file_exists(path), "%s missing", path);
    }
    snprintf(cmd, sizeof cmd, "%s train --model %s --data %s --out %s/run %s --resume %s/run >/dev/null 2>&1", bin,
             FIXTURE_MODEL, data, dir, common, dir);
    CHECK_EQ_INT(system(cmd), 0);
    char a[512], b[512];
    snprintf(a, sizeof a, "%s/ref/adapter_model.safetensors", dir);
    snprintf(b, sizeof b, "%s/run/adapter_model.safetensors", dir);
    CHECK(files_equal(a, b));
    snprintf(path, sizeof path, "%s/run/checkpoints/.old-step-00000002", dir);
    CHECK(!fl_file_exists(path));
    remove_tree(dir);
    free(data);
    free(dir);
}

/* `train --out` on a folder that holds a run, without --resume, used to overwrite its adapter,
 * metrics and config, and then rotation deleted the NEW run's checkpoints (the old step folders
 * sort higher), so a later --resume picked the old run. Now refused (one line, nothing touched)
 * unless --overwrite, which deletes the earlier run's outputs first. */
TEST(train_out_holding_a_run_needs_resume_or_overwrite) {
    char *dir = temp_dir();
    char *data = write_token_data(dir, 30);
    char out[256], path[600];
    snprintf(out, sizeof out, "%s/run", dir);
    FILE *log = fopen("/dev/null", "w");
    fl_train_options o;
    fl_train_result r;
    run_options(&o, data, out, log);
    CHECK_EQ_INT(run(&o, &r), 0); /* 8 steps, checkpoints at 4 and 8 */
    const char *names[] = {"adapter_model.safetensors", "train_config.json", "metrics.jsonl",
                           "checkpoints/step-00000008/adapter_model.safetensors"};
    char *before[4];
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/%s", out, names[i]);
        before[i] = read_text(path);
    }
    run_options(&o, data, out, log);
    o.max_steps = 2;
    o.lr = 0.02;
    CHECK_EQ_INT(run(&o, &r), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "holds an earlier run");
    CHECK_STR_CONTAINS(fl_last_error(), "--overwrite");
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/%s", out, names[i]);
        char *now = read_text(path);
        CHECK_MSG(!strcmp(now, before[i]), "%s changed by a refused run", names[i]);
        free(now);
        free(before[i]);
    }
    o.resume = out;
    o.overwrite = 1;
    CHECK_EQ_INT(run(&o, &r), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "--resume and --overwrite");
    /* --overwrite: only the new run's checkpoints remain, even with --keep 1 */
    o.resume = NULL;
    o.save_every = 1;
    o.keep = 1;
    CHECK_EQ_INT(run(&o, &r), 0);
    snprintf(path, sizeof path, "%s/checkpoints", out);
    DIR *d = opendir(path);
    int n = 0, ok = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.') { n++; ok += !strcmp(e->d_name, "step-00000002"); }
    if (d) closedir(d);
    CHECK_EQ_INT(n, 1);
    CHECK_EQ_INT(ok, 1);
    snprintf(path, sizeof path, "%s/metrics.jsonl", out);
    char *metrics = read_text(path);
    CHECK(strstr(metrics, "\"step\": 2,") && !strstr(metrics, "\"step\": 8,"));
    free(metrics);
    /* an empty folder, or one with other files only, is not a run */
    snprintf(out, sizeof out, "%s/empty", dir);
    fl_mkdir_p(out);
    snprintf(path, sizeof path, "%s/notes.txt", out);
    FILE *f = fopen(path, "w");
    fputs("mine\n", f);
    fclose(f);
    run_options(&o, data, out, log);
    o.max_steps = 1;
    CHECK_EQ_INT(run(&o, &r), 0);
    CHECK(fl_file_exists(path));
    fclose(log);
    remove_tree(dir);
    free(data);
    free(dir);
}

/* Step folders are zero-padded to 8 digits but steps reach 10: step-100000000 is later than
 * step-99999999 (a string sort said otherwise), for --resume and for rotation. */
/* --resume rules (docs/TRAINING.md): a checkpoint continues in its own folder, or starts a new run in
 * an --out that holds none; it never writes into another run. Resuming an older step in place moves
 * the later checkpoints (the branch it replaces) aside to .abandoned-step-*, so they cannot outrank
 * the resumed run's checkpoints in rotation or in a later --resume. */
TEST(train_resume_rules_other_run_and_older_step) {
    char *dir = temp_dir();
    char *data = write_token_data(dir, 30);
    char a[256], b[256], c[256], step4[300], path[600], path2[600];
    snprintf(a, sizeof a, "%s/a", dir);
    snprintf(b, sizeof b, "%s/b", dir);
    snprintf(c, sizeof c, "%s/c", dir);
    snprintf(step4, sizeof step4, "%s/checkpoints/step-00000004", a);
    FILE *log = fopen("/dev/null", "w");
    fl_train_options o;
    fl_train_result r;
    run_options(&o, data, a, log);
    CHECK_EQ_INT(run(&o, &r), 0); /* checkpoints at 4 and 8 */
    run_options(&o, data, b, log);
    o.lr = 0.02;
    CHECK_EQ_INT(run(&o, &r), 0);
    char b_adapter[300];   /* a copy to compare with (safetensors hold NUL bytes: not text) */
    snprintf(b_adapter, sizeof b_adapter, "%s/b-adapter-before", dir);
    snprintf(path, sizeof path, "%s/adapter_model.safetensors", b);
    CHECK(link(path, b_adapter) == 0);   /* an atomic rewrite replaces the name, the link keeps the old bytes */
    snprintf(path, sizeof path, "%s/metrics.jsonl", b);
    char *b_metrics = read_text(path);
    /* a's checkpoint into b, which holds another run: refused, b untouched */
    run_options(&o, data, b, log);
    o.resume = step4;
    CHECK_EQ_INT(run(&o, &r), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "holds another run");
    CHECK_STR_CONTAINS(fl_last_error(), "/a");
    snprintf(path, sizeof path, "%s/adapter_model.safetensors", b);
    struct stat st_now, st_before;
    CHECK(stat(path, &st_now) == 0 && stat(b_adapter, &st_before) == 0 && st_now.st_ino == st_before.st_ino);
    snprintf(path, sizeof path, "%s/metrics.jsonl", b);
    char *now = read_text(path);
    CHECK(!strcmp(now, b_metrics));
    free(now);
    /* into an empty folder: a new run from that checkpoint, the same adapter as a's (resume is exact) */
    run_options(&o, data, c, log);
    o.resume = step4;
    CHECK_EQ_INT(run(&o, &r), 0);
    snprintf(path, sizeof path, "%s/adapter_model.safetensors", a);
    snprintf(path2, sizeof path2, "%s/adapter_model.safetensors", c);
    CHECK(files_equal(path, path2));
    /* in place from the older step 4 (a has 8): step-8 moves aside, the resumed run's 6 is the latest */
    run_options(&o, data, a, log);
    o.resume = step4;
    o.max_steps = 6;
    o.save_every = 2;
    CHECK_EQ_INT(run(&o, &r), 0);
    snprintf(path, sizeof path, "%s/checkpoints/.abandoned-step-00000008/trainer_state.json", a);
    CHECK_MSG(fl_file_exists(path), "the later checkpoint was not moved aside (nothing deleted)");
    snprintf(path, sizeof path, "%s/checkpoints/step-00000008", a);
    CHECK(!fl_file_exists(path));
    char *latest = NULL;
    CHECK_EQ_INT(fl_checkpoint_find(a, &latest), 0);
    CHECK_MSG(latest && strstr(latest, "step-00000006"), "--resume %s would continue %s", a, latest ? latest : "?");
    free(latest);
    /* --overwrite takes the abandoned branch with the rest of the run */
    run_options(&o, data, a, log);
    o.overwrite = 1;
    o.max_steps = 1;
    CHECK_EQ_INT(run(&o, &r), 0);
    snprintf(path, sizeof path, "%s/checkpoints/.abandoned-step-00000008", a);
    CHECK(!fl_file_exists(path));
    free(b_metrics);
    fclose(log);
    remove_tree(dir);
    free(data);
    free(dir);
}

/* --eval-data whose every document is unusable: an error, as for --data (it used to train without
 * any eval, saying only "no eval set" at the end). */
TEST(train_bad_input_eval_data_without_documents) {
    char *dir = temp_dir();
    char *data = write_token_data(dir, 30);
    char eval[300], out[300];
    snprintf(eval, sizeof eval, "%s/eval.tokens", dir);
    snprintf(out, sizeof out, "%s/run", dir);
    fl_dataset ds = {0};
    int32_t one = 5;
    fl_dataset_add(&ds, &one, NULL, 1);   /* a 1-token document has no target */
    CHECK_EQ_INT(fl_tokens_file_write(eval, &ds), 0);
    fl_dataset_free(&ds);
    FILE *log = fopen("/dev/null", "w");
    fl_train_options o;
    fl_train_result r;
    run_options(&o, data, out, log);
    o.eval_data = eval;
    CHECK_EQ_INT(run(&o, &r), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "eval.tokens: no usable evaluation documents (1 lines, 1 skipped) (--eval-data)");
    CHECK_EQ_INT(r.steps, 0);
    fclose(log);
    remove_tree(dir);
    free(data);
    free(dir);
}

TEST(train_checkpoint_order_is_by_step_past_8_digits) {
    char *dir = temp_dir();
    char path[600];
    const char *steps[] = {"step-99999999", "step-100000000", "step-00000005"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/checkpoints/%s", dir, steps[i]);
        fl_mkdir_p(path);
        snprintf(path, sizeof path, "%s/checkpoints/%s/trainer_state.json", dir, steps[i]);
        FILE *f = fopen(path, "w");
        fputs("{}", f);
        fclose(f);
    }
    char *found = NULL;
    CHECK(fl_checkpoint_find(dir, &found) == 0);
    CHECK_STR_CONTAINS(found, "/checkpoints/step-100000000");
    free(found);
    remove_tree(dir);
    free(dir);
}

/* ---- the end-to-end proof: stories260K fine-tuned on tiny shakespeare ----------------------------- */

TEST(train_stories260k_shakespeare_eval_loss_falls) {
    const char *shared = fl_test_shared_dir();
    if (!shared) SKIP("../shared not found");
    char ckpt[512], tokbin[512], text_path[512];
    snprintf(ckpt, sizeof ckpt, "%s/data/stories260K/stories260K.bin", shared);
    snprintf(tokbin, sizeof tokbin, "%s/data/stories260K/tok512.bin", shared);
    snprintf(text_path, sizeof text_path, "%s/data/tinyshakespeare/input.txt", shared);
    if (!fl_file_exists(ckpt) || !fl_file_exists(text_path)) SKIP("stories260K or tinyshakespeare missing in ../shared");
    char *dir = temp_dir();
    char model_dir[300], data[300], out[300];
    snprintf(model_dir, sizeof model_dir, "%s/stories260K", dir);
    snprintf(data, sizeof data, "%s/shakespeare.jsonl", dir);
    snprintf(out, sizeof out, "%s/run", dir);
    CHECK(fl_llama2c_convert(ckpt, tokbin, model_dir, 0) == 0);
    /* paragraphs of the first ~300 KB as {"text"} lines */
    FILE *in = fopen(text_path, "rb"), *jf = fopen(data, "w");
    char *para = malloc(1 << 16);
    size_t plen = 0, total = 0;
    char line[4096];
    while (fgets(line, sizeof line, in) && total < 300000) {
        size_t n = strlen(line);
        total += n;
        if (n <= 1 || plen + n >= (1 << 16) - 1) {
            if (plen) {
                para[plen] = 0;
                json_t *o = json_pack("{s:s}", "text", para);
                char *s = json_dumps(o, 0);
                fprintf(jf, "%s\n", s);
                free(s);
                json_decref(o);
            }
            plen = 0;
            if (n <= 1) continue;
        }
        memcpy(para + plen, line, n);
        plen += n;
    }
    free(para);
    fclose(in);
    fclose(jf);
    fl_tokenizer *tok = NULL;
    CHECK(fl_tokenizer_load(&tok, model_dir) == 0);
    fl_lora_config lc = fl_lora_config_default();
    lc.rank = 8;
    lc.alpha = 16;
    fl_model m;
    CHECK(fl_model_init_dir(&m, model_dir, fl_backend_cpu(), &lc) == 0);
    fl_train_options o;
    fl_train_options_default(&o);
    o.data = data;
    o.out = out;
    o.model = model_dir;
    o.eval_frac = 0.05;
    o.seq = 128;
    o.batch = 4;
    o.max_steps = 120;
    o.lr = 5e-3;
    o.warmup = 10;
    o.eval_every = 60;
    o.eval_max_rows = 24;
    o.save_every = 0;
    o.rank = 8;
    o.alpha = 16;
    FILE *log = fopen("/dev/null", "w");
    o.log = log;
    fl_train_result r;
    CHECK_EQ_INT(fl_train_run(&o, &m, tok, &r), 0);
    fclose(log);
    printf("    stories260K on shakespeare: eval loss %.4f (base) -> %.4f after %d steps\n", r.first_eval_loss,
           r.last_eval_loss, r.steps);
    CHECK(r.first_eval_loss > 4.0);
    CHECK(r.last_eval_loss < r.first_eval_loss - 1.0);
    fl_model_free(&m);
    fl_tokenizer_free(tok);
    remove_tree(dir);
    free(dir);
}

/* --adapter: training starts from a given PEFT adapter (its rank, alpha and targets). With lr 0 one step leaves it unchanged, so the saved adapter equals the input bit for bit. */
TEST(train_starts_from_given_adapter) {
    const char *bin = getenv("FASTLORA_BIN");
    if (!bin || access(bin, X_OK) != 0) SKIP("FASTLORA_BIN not set");
    char *dir = temp_dir();
    char *data = write_token_data(dir, 10);
    char cmd[2048], path[512];
    snprintf(cmd, sizeof cmd, "%s train --model %s --data %s --out %s/run --adapter tests/fixtures/hf/llama_gqa/adapter "
             "--seq 16 --batch 2 --max-steps 1 --lr 0 --dtype f32 --device cpu --log-every 0 "
             "--eval-every 0 >/dev/null 2>&1", bin, FIXTURE_MODEL, data, dir);
    CHECK_EQ_INT(system(cmd), 0);
    fl_lora_config got, want;
    snprintf(path, sizeof path, "%s/run", dir);
    CHECK(fl_adapter_load_config(path, &got) == 0);
    CHECK(fl_adapter_load_config("tests/fixtures/hf/llama_gqa/adapter", &want) == 0);
    CHECK_EQ_INT(got.rank, want.rank);
    CHECK(got.alpha == want.alpha);
    CHECK_EQ_INT(got.target_mask, want.target_mask);
    fl_safetensors a, b;
    snprintf(path, sizeof path, "%s/run/adapter_model.safetensors", dir);
    CHECK(fl_safetensors_open(&a, path) == 0);
    CHECK(fl_safetensors_open(&b, "tests/fixtures/hf/llama_gqa/adapter/adapter_model.safetensors") == 0);
    CHECK_EQ_INT(a.n_tensors, b.n_tensors);
    for (int i = 0; i < a.n_tensors; i++) {
        const fl_st_tensor *t = fl_safetensors_find(&b, a.tensors[i].name);
        CHECK_MSG(t && t->nbytes == a.tensors[i].nbytes && !memcmp(t->data, a.tensors[i].data, t->nbytes),
                  "%s differs from the starting adapter", a.tensors[i].name);
    }
    fl_safetensors_close(&a);
    fl_safetensors_close(&b);
    remove_tree(dir);
}

/* --epochs large enough that the step count passes INT_MAX: the (int) conversion was undefined
 * and on x86 gave INT_MIN, clamped to 1 step; now a clean input error. */
TEST(train_bad_input_epochs_step_count_overflow) {
    char *dir = temp_dir();
    char *data = write_token_data(dir, 3000);
    char out[256];
    snprintf(out, sizeof out, "%s/run", dir);
    fl_train_options o;
    fl_train_result r;
    run_options(&o, data, out, NULL);
    o.log = fopen("/dev/null", "w");
    o.max_steps = 0;
    o.epochs = 999999.0;
    o.batch = 1;
    o.grad_accum = 1;
    o.eval_frac = 0;
    o.no_packing = 1;
    CHECK_EQ_INT(run(&o, &r), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "steps; at most");
    CHECK_EQ_INT(r.steps, 0);
    o.max_steps = 2000000000;
    CHECK_EQ_INT(fl_train_options_validate(&o), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "--max-steps");
    fclose(o.log);
    remove_tree(dir);
    free(data);
    free(dir);
}

/* ---- the command line: what train_config.json records, contradicting flags, messages ------------- */

/* Runs `FASTLORA_BIN args` with stdout discarded; returns the exit status and stderr (malloc'd). */
static int run_cli(const char *args, char **err) {
    const char *bin = getenv("FASTLORA_BIN");
    char err_path[] = "/tmp/fastlora-stderr-XXXXXX";
    int fd = mkstemp(err_path);
    close(fd);
    size_t cap = strlen(args) + strlen(bin) + 128;
    char *cmd = malloc(cap);
    snprintf(cmd, cap, "%s %s >/dev/null 2>%s", bin, args, err_path);
    int rc = system(cmd);
    free(cmd);
    FILE *f = fopen(err_path, "rb");
    *err = calloc(1, 65536);
    if (f) { (void)!fread(*err, 1, 65535, f); fclose(f); }
    unlink(err_path);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
}

static char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return strdup("");
    char *text = calloc(1, 1 << 20);
    size_t n = fread(text, 1, (1 << 20) - 1, f);
    text[n] = 0;
    fclose(f);
    return text;
}

/* one line on stderr, containing `needle` */
static void check_one_line(const char *err, const char *needle) {
    CHECK_STR_CONTAINS(err, needle);
    const char *nl = strchr(err, '\n');
    CHECK_MSG(nl && nl[1] == 0, "expected one line on stderr, got: %s", err);
}

#define QWEN_FIXTURE "tests/fixtures/hf/qwen2_bias_tied"

/* train_config.json used to record the ignored command-line defaults (rank 16, alpha 32, all
 * targets) when --adapter gave r 8, alpha 16, q,v,down, rsLoRA; and --lr 0.01 as 0.00999999978
 * (an f32 round trip). Now it records what ran, numbers as typed. */
TEST(train_config_json_records_what_ran) {
    const char *bin = getenv("FASTLORA_BIN");
    if (!bin || access(bin, X_OK) != 0) SKIP("FASTLORA_BIN not set");
    char *dir = temp_dir();
    char *data = write_token_data(dir, 10);
    char args[2048], path[600], *err = NULL;
    const char *common = "--seq 16 --batch 2 --max-steps 1 --dtype f32 --device cpu --log-every 0 --eval-every 0";
    snprintf(args, sizeof args, "train --model %s/model --adapter %s/adapter --data %s --out %s/run --lr 0.01 "
             "--warmup-ratio 0.1 --beta2 0.95 %s", QWEN_FIXTURE, QWEN_FIXTURE, data, dir, common);
    CHECK_EQ_INT(run_cli(args, &err), 0);
    free(err);
    snprintf(path, sizeof path, "%s/run/train_config.json", dir);
    char *text = read_text(path);
    const char *want[] = {"\"lr\": 0.01,", "\"warmup-ratio\": 0.1,", "\"beta2\": 0.95,", "\"rank\": 8,",
                          "\"alpha\": 16,", "\"targets\": \"q,v,down\",", "\"rslora\": true,", "\"adam-eps\": 1e-08,"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) CHECK_STR_CONTAINS(text, want[i]);
    CHECK(!strstr(text, "\"resume\"") && !strstr(text, "\"overwrite\""));
    /* and it repeats the run: --config of it agrees with the adapter */
    snprintf(args, sizeof args, "train --config %s --model %s/model --out %s/again", path, QWEN_FIXTURE, dir);
    CHECK_EQ_INT(run_cli(args, &err), 0);
    CHECK_MSG(err[0] == 0 || !strstr(err, "contradicts"), "%s", err);
    free(err);
    free(text);
    remove_tree(dir);
    free(data);
    free(dir);
}

/* With --adapter, --rank/--alpha/--targets/--rslora that contradict it used to be ignored silently;
 * now refused in one line naming the flag, the file and the adapter's value. Equal values are fine. */
TEST(train_bad_input_flags_contradicting_adapter) {
    const char *bin = getenv("FASTLORA_BIN");
    if (!bin || access(bin, X_OK) != 0) SKIP("FASTLORA_BIN not set");
    char *dir = temp_dir();
    char *data = write_token_data(dir, 10);
    char args[2048], *err = NULL;
    const char *common = "--seq 16 --batch 2 --max-steps 1 --dtype f32 --device cpu --log-every 0 --eval-every 0";
    const char *cases[][2] = {
        {"--rank 16", "--rank 16 contradicts"},           /* the default value, but given */
        {"--alpha 32", "--alpha 32 contradicts"},
        {"--targets q,v", "--targets q,v contradicts"},
        {"--rank 8 --targets all", "(target_modules q,v,down)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(args, sizeof args, "train --model %s/model --adapter %s/adapter --data %s --out %s/run%zu %s %s",
                 QWEN_FIXTURE, QWEN_FIXTURE, data, dir, i, common, cases[i][0]);
        CHECK_EQ_INT(run_cli(args, &err), 2);
        check_one_line(err, cases[i][1]);
        CHECK_STR_CONTAINS(err, "adapter_config.json");
        free(err);
    }
    /* rsLoRA: the llama fixture's adapter has none */
    snprintf(args, sizeof args, "train --model tests/fixtures/hf/llama_gqa/model --adapter tests/fixtures/hf/llama_gqa/adapter "
             "--data %s --out %s/rs %s --rslora", data, dir, common);
    CHECK_EQ_INT(run_cli(args, &err), 2);
    check_one_line(err, "--rslora true contradicts");
    free(err);
    /* the adapter's own values are fine */
    snprintf(args, sizeof args, "train --model %s/model --adapter %s/adapter --data %s --out %s/same %s --rank 8 "
             "--alpha 16 --targets down,q,v --rslora", QWEN_FIXTURE, QWEN_FIXTURE, data, dir, common);
    CHECK_EQ_INT(run_cli(args, &err), 0);
    free(err);
    remove_tree(dir);
    free(data);
    free(dir);
}

/* A model folder without a tokenizer (the fixtures have none): with a tokens file there is nothing
 * to say (the note "no usable tokenizer ... only a tokens file can be read" was printed anyway);
 * with JSONL data it is one error line that says why. */
TEST(train_tokenizer_message_only_when_data_needs_it) {
    const char *bin = getenv("FASTLORA_BIN");
    if (!bin || access(bin, X_OK) != 0) SKIP("FASTLORA_BIN not set");
    char *dir = temp_dir();
    char *data = write_token_data(dir, 10);
    char args[2048], jsonl[600], *err = NULL;
    const char *common = "--seq 16 --batch 2 --max-steps 1 --dtype f32 --device cpu --log-every 0 --eval-every 0";
    snprintf(args, sizeof args, "train --model %s --data %s --out %s/run %s", FIXTURE_MODEL, data, dir, common);
    CHECK_EQ_INT(run_cli(args, &err), 0);
    CHECK_MSG(!strstr(err, "tokenizer"), "unexpected: %s", err);
    free(err);
    snprintf(jsonl, sizeof jsonl, "%s/data.jsonl", dir);
    FILE *f = fopen(jsonl, "w");
    fputs("{\"text\": \"hello\"}\n", f);
    fclose(f);
    snprintf(args, sizeof args, "train --model %s --data %s --out %s/text %s", FIXTURE_MODEL, jsonl, dir, common);
    CHECK_EQ_INT(run_cli(args, &err), 2);
    check_one_line(err, "needs the model's tokenizer");
    free(err);
    /* a tokens file for training but JSONL for eval still needs it */
    snprintf(args, sizeof args, "train --model %s --data %s --eval-data %s --out %s/eval %s", FIXTURE_MODEL, data, jsonl,
             dir, common);
    CHECK_EQ_INT(run_cli(args, &err), 2);
    check_one_line(err, "data.jsonl needs the model's tokenizer");
    free(err);
    /* data that cannot be read at all says so, not that a tokenizer is missing (a folder of no data
     * files as --data; a folder of JSONL files is data: test_train_data_sharegpt.c) */
    char empty[600];
    snprintf(empty, sizeof empty, "%s/empty", dir);
    mkdir(empty, 0755);
    snprintf(args, sizeof args, "train --model %s --data %s --out %s/dir %s", FIXTURE_MODEL, empty, dir, common);
    CHECK_EQ_INT(run_cli(args, &err), 2);
    check_one_line(err, "a folder without .jsonl or .json files");
    CHECK_MSG(!strstr(err, "tokenizer"), "blames the tokenizer: %s", err);
    free(err);
    remove_tree(dir);
    free(data);
    free(dir);
}

/* ---- --resume from a damaged checkpoint ------------------------------------------------------------ */

static void write_bytes(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    if (f) { fwrite(data, 1, len, f); fclose(f); }
}

/* The optimizer file with adam_v (or adam_m) replaced: `shape0` elements, entry k set to `value`;
 * named in this build's parameter order unless `unnamed` (as builds before it wrote the file). */
static void write_bad_moments(const char *path, const float *m, const float *v, size_t n, size_t shape0, size_t k,
                              float value, int poison_v, int unnamed) {
    float *a = calloc(shape0 + 1, sizeof(float)), *b = calloc(shape0 + 1, sizeof(float));
    memcpy(a, m, sizeof(float) * (shape0 < n ? shape0 : n));
    memcpy(b, v, sizeof(float) * (shape0 < n ? shape0 : n));
    if (k < shape0) (poison_v ? b : a)[k] = value;
    fl_st_write_tensor t[2] = {{.name = "adam_m", .dtype = FL_F32, .ndim = 1, .shape = {(int64_t)shape0}, .data = a},
                               {.name = "adam_v", .dtype = FL_F32, .ndim = 1, .shape = {(int64_t)shape0}, .data = b}};
    const char *order[2] = {"param_order", FL_LORA_PARAM_ORDER};
    fl_safetensors_write(path, t, 2, unnamed ? NULL : order, unnamed ? 0 : 1);
    free(a);
    free(b);
}

/* A damaged trainer_state.json or optimizer.safetensors in the checkpoint --resume picks: exit 2,
 * one line naming the file and the field or tensor, and nothing of the run rewritten (its adapter,
 * config, metrics and checkpoints are byte for byte as before). */
TEST(train_bad_input_resume_from_damaged_checkpoint) {
    const char *bin = getenv("FASTLORA_BIN");
    if (!bin || access(bin, X_OK) != 0) SKIP("FASTLORA_BIN not set");
    char *dir = temp_dir();
    char *data = write_token_data(dir, 30);
    char args[2048], path[600], ckpt[400], *err = NULL;
    const char *common = "--seq 16 --batch 2 --rank 4 --alpha 8 --lr 0.01 --save-every 2 --dtype f32 --device cpu "
                         "--log-every 0 --eval-every 0";
    /* a run stopped after step 4 of 6 (its final adapter from a first 4-step run stays beside) */
    snprintf(args, sizeof args, "train --model %s --data %s --out %s/run --max-steps 4 %s", FIXTURE_MODEL, data, dir, common);
    CHECK_EQ_INT(run_cli(args, &err), 0);
    free(err);
    snprintf(ckpt, sizeof ckpt, "%s/run/checkpoints/step-00000004", dir);
    const char *kept[] = {"adapter_model.safetensors", "train_config.json", "metrics.jsonl", "loss.svg",
                          "checkpoints/step-00000002/optimizer.safetensors"};
    char *before[5];
    for (int i = 0; i < 5; i++) {
        snprintf(path, sizeof path, "%s/run/%s", dir, kept[i]);
        before[i] = read_text(path);
    }
    char state_path[500], opt_path[500];
    snprintf(state_path, sizeof state_path, "%s/trainer_state.json", ckpt);
    snprintf(opt_path, sizeof opt_path, "%s/optimizer.safetensors", ckpt);
    char *state = read_text(state_path);
    fl_safetensors sf;
    CHECK(fl_safetensors_open(&sf, opt_path) == 0);
    const fl_st_tensor *tm = fl_safetensors_find(&sf, "adam_m"), *tv = fl_safetensors_find(&sf, "adam_v");
    size_t n = (size_t)tm->shape[0];
    float *mom = malloc(2 * n * sizeof(float));
    memcpy(mom, tm->data, n * sizeof(float));
    memcpy(mom + n, tv->data, n * sizeof(float));
    fl_safetensors_close(&sf);
    size_t opt_len = 0;
    FILE *f = fopen(opt_path, "rb");
    char *opt_bytes = malloc(1 << 20);
    opt_len = fread(opt_bytes, 1, 1 << 20, f);
    fclose(f);

    /* trainer_state.json: replace `from` by `to` in the good text (NULL: the whole text is `to`) */
    const char *state_cases[][3] = {
        {NULL, "{\"step\": 4, \"adam_st", "invalid JSON"},            /* truncated */
        {NULL, "\x7f\x45\x4c\x46 garbage", "invalid JSON"},
        {NULL, "[4, 4, 8]", "expected a JSON object"},
        {"\"adam_step\": 4,", "", "field 'adam_step' is missing"},
        {"\"step\": 4,", "\"step\": \"4\",", "field 'step' must be an integer"},
        {"\"step\": 4,", "\"step\": -1,", "field 'step' must be an integer"},
        {"\"step\": 4,", "\"step\": 4.5,", "field 'step' must be an integer"},
        {"\"adam_step\": 4,", "\"adam_step\": 99999999999,", "field 'adam_step' must be an integer in 0..1073741824"},
        {"\"row\": ", "\"row\": -7, \"x\": ", "field 'row' must be an integer"},
        {"\"n_params\": ", "\"n_params\": 1, \"x\": ", "differs from this run's"},
        {"\"row\": ", "\"row\": 100000, \"x\": ", "data position (row 100000)"},
    };
    for (size_t i = 0; i < sizeof state_cases / sizeof state_cases[0]; i++) {
        char text[2048];
        if (!state_cases[i][0]) {
            snprintf(text, sizeof text, "%s", state_cases[i][1]);
        } else {
            const char *at = strstr(state, state_cases[i][0]);
            CHECK_MSG(at != NULL, "trainer_state.json has no '%s'", state_cases[i][0]);
            if (!at) continue;
            snprintf(text, sizeof text, "%.*s%s%s", (int)(at - state), state, state_cases[i][1], at + strlen(state_cases[i][0]));
        }
        write_bytes(state_path, text, strlen(text));
        snprintf(args, sizeof args, "train --model %s --data %s --out %s/run --max-steps 6 %s --resume %s/run", FIXTURE_MODEL,
                 data, dir, common, dir);
        CHECK_EQ_INT(run_cli(args, &err), 2);
        check_one_line(err, state_cases[i][2]);
        if (!strstr(state_cases[i][2], "differs") && !strstr(state_cases[i][2], "data position"))
            CHECK_STR_CONTAINS(err, "trainer_state.json");
        free(err);
    }
    write_bytes(state_path, state, strlen(state));

    /* optimizer.safetensors */
    struct { int kind; const char *needle; } opt_cases[] = {
        {0, "optimizer.safetensors"},  /* truncated to its first 100 bytes */
        {1, "tensor 'adam_m' missing or not F32"},   /* one element short */
        {2, "tensor 'adam_v' has a non-finite value"},
        {3, "tensor 'adam_v' has a negative value"},
        {4, "tensor 'adam_m' has a non-finite value"},
        {5, "the AdamW moments are in parameter order '(unnamed, older)'"},
        {6, "optimizer.safetensors"},  /* missing */
    };
    for (size_t i = 0; i < sizeof opt_cases / sizeof opt_cases[0]; i++) {
        switch (opt_cases[i].kind) {
        case 0: write_bytes(opt_path, opt_bytes, 100); break;
        case 1: write_bad_moments(opt_path, mom, mom + n, n, n - 1, n, 0, 0, 0); break;
        case 2: write_bad_moments(opt_path, mom, mom + n, n, n, n / 2, NAN, 1, 0); break;
        case 3: write_bad_moments(opt_path, mom, mom + n, n, n, 3, -1e-6f, 1, 0); break;
        case 4: write_bad_moments(opt_path, mom, mom + n, n, n, 0, INFINITY, 0, 0); break;
        case 5: write_bad_moments(opt_path, mom, mom + n, n, n, n, 0, 0, 1); break; /* good values, no order */
        default: unlink(opt_path);
        }
        snprintf(args, sizeof args, "train --model %s --data %s --out %s/run --max-steps 6 %s --resume %s/run", FIXTURE_MODEL,
                 data, dir, common, dir);
        CHECK_EQ_INT(run_cli(args, &err), 2);
        check_one_line(err, opt_cases[i].needle);
        CHECK_STR_CONTAINS(err, "step-00000004/optimizer.safetensors");
        free(err);
    }
    /* nothing of the run was rewritten by the refused resumes */
    for (int i = 0; i < 5; i++) {
        snprintf(path, sizeof path, "%s/run/%s", dir, kept[i]);
        char *now = read_text(path);
        CHECK_MSG(!strcmp(now, before[i]), "%s changed by a refused resume", kept[i]);
        free(now);
        free(before[i]);
    }
    /* and with the files repaired the resume works */
    write_bytes(opt_path, opt_bytes, opt_len);
    snprintf(args, sizeof args, "train --model %s --data %s --out %s/run --max-steps 6 %s --resume %s/run", FIXTURE_MODEL,
             data, dir, common, dir);
    CHECK_EQ_INT(run_cli(args, &err), 0);
    free(err);
    free(opt_bytes);
    free(mom);
    free(state);
    remove_tree(dir);
    free(data);
    free(dir);
}
