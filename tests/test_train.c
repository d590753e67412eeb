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
#include "train_test_util.h"

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

TEST(train_resume_is_bitwise_identical) {
    char *dir = cr_temp_dir();
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
    CHECK(cr_files_equal(path_a, path_b));
    snprintf(path_a, sizeof path_a, "%s/checkpoints/step-00000008/optimizer.safetensors", out_a);
    snprintf(path_b, sizeof path_b, "%s/checkpoints/step-00000008/optimizer.safetensors", out_b);
    CHECK(cr_files_equal(path_a, path_b));
    /* and a different seed is a different run (the comparison can fail) */
    char out_c[256];
    snprintf(out_c, sizeof out_c, "%s/c", dir);
    run_options(&o, data, out_c, log);
    o.seed = 99;
    CHECK_EQ_INT(run(&o, &rb), 0);
    snprintf(path_a, sizeof path_a, "%s/adapter_model.safetensors", out_a);
    snprintf(path_b, sizeof path_b, "%s/adapter_model.safetensors", out_c);
    CHECK(!cr_files_equal(path_a, path_b));
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
    cr_remove_tree(dir);
    free(data);
    free(dir);
}

/* The old schedule put the last step at the floor, so a 1-step run trained at lr 0 and saved the
 * adapter it started from. Now step 0 of a run without warmup runs at the full lr (as in HF). */
TEST(train_one_step_run_changes_the_adapter) {
    char *dir = cr_temp_dir();
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
    cr_remove_tree(dir);
    free(data);
    free(dir);
}

/* An epoch used to wrap: a step that ran out of rows took the next epoch's first rows, so --epochs 2
 * trained more tokens than two passes hold. Now the last step of each epoch takes the rows that are
 * left (as the HF Trainer's last accumulation step does): each epoch trains every target token
 * exactly once, and the checkpoint at the end of epoch 1 has seen exactly one pass. */
TEST(train_epoch_trains_each_token_once) {
    char *dir = cr_temp_dir();
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
    cr_remove_tree(dir);
    free(data);
    free(dir);
}

TEST(train_nan_stops_and_keeps_last_good_checkpoint) {
    char *dir = cr_temp_dir();
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
    cr_remove_tree(dir);
    free(data);
    free(dir);
}

TEST(train_stories260k_shakespeare_eval_loss_falls) {
    const char *shared = fl_test_shared_dir();
    if (!shared) SKIP("../shared not found");
    char ckpt[512], tokbin[512], text_path[512];
    snprintf(ckpt, sizeof ckpt, "%s/data/stories260K/stories260K.bin", shared);
    snprintf(tokbin, sizeof tokbin, "%s/data/stories260K/tok512.bin", shared);
    snprintf(text_path, sizeof text_path, "%s/data/tinyshakespeare/input.txt", shared);
    if (!fl_file_exists(ckpt) || !fl_file_exists(text_path)) SKIP("stories260K or tinyshakespeare missing in ../shared");
    char *dir = cr_temp_dir();
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
    cr_remove_tree(dir);
    free(dir);
}

/* --adapter: training starts from a given PEFT adapter (its rank, alpha and targets). With lr 0 one step leaves it unchanged, so the saved adapter equals the input bit for bit. */
TEST(train_starts_from_given_adapter) {
    const char *bin = getenv("FASTLORA_BIN");
    if (!bin || access(bin, X_OK) != 0) SKIP("FASTLORA_BIN not set");
    char *dir = cr_temp_dir();
    char *data = write_token_data(dir, 10);
    char cmd[2048], path[512];
    snprintf(cmd, sizeof cmd, "%s train --model %s --data %s --out %s/run --adapter tests/fixtures/hf/llama_gqa/adapter "
             "--seq 16 --batch 2 --max-steps 1 --lr 0 --dtype f32 --device cpu --log-every 0 "
             "--eval-every 0 >/dev/null 2>&1", bin, CR_MODEL, data, dir);
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
    cr_remove_tree(dir);
}

/* --epochs large enough that the step count passes INT_MAX: the (int) conversion was undefined
 * and on x86 gave INT_MIN, clamped to 1 step; now a clean input error. */
TEST(train_bad_input_epochs_step_count_overflow) {
    char *dir = cr_temp_dir();
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
    cr_remove_tree(dir);
    free(data);
    free(dir);
}
