/* test_train_checkpoints.c — the trainer's runs as a user meets them: bad config files, a SIGKILL
 * during a checkpoint write or rotation (previous checkpoint intact, no partial one), an output
 * folder that holds a run (--resume or --overwrite), resume rules (another run, an older step),
 * eval data without documents, checkpoint order past 8 digits, what train_config.json records,
 * flags contradicting --adapter, the tokenizer message, a damaged checkpoint on --resume.
 * On the CPU reference backend; the CLI cases need FASTLORA_BIN. */
#include "train_test_util.h"

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

/* The reference run (uninterrupted, into DIR/ref), then the same run into DIR/run with `crash_env`
 * set, which must die by SIGKILL. */
static void run_ref_then_killed(const char *bin, const char *dir, const char *data, const char *common, const char *crash_env) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s train --model %s --data %s --out %s/ref %s >/dev/null 2>&1", bin, CR_MODEL, data,
             dir, common);
    CHECK_EQ_INT(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s %s train --model %s --data %s --out %s/run %s >/dev/null 2>&1", crash_env, bin,
             CR_MODEL, data, dir, common);
    int rc = system(cmd);
    CHECK_MSG(WIFEXITED(rc) && WEXITSTATUS(rc) == 128 + 9, "expected death by SIGKILL, got status %d", rc);
}

/* --resume DIR/run, which must end where the reference ended, bit for bit. */
static void resume_matches_ref(const char *bin, const char *dir, const char *data, const char *common) {
    char cmd[2048], a[512], b[512];
    snprintf(cmd, sizeof cmd, "%s train --model %s --data %s --out %s/run %s --resume %s/run >/dev/null 2>&1", bin,
             CR_MODEL, data, dir, common, dir);
    CHECK_EQ_INT(system(cmd), 0);
    snprintf(a, sizeof a, "%s/ref/adapter_model.safetensors", dir);
    snprintf(b, sizeof b, "%s/run/adapter_model.safetensors", dir);
    CHECK(cr_files_equal(a, b));
}

TEST(train_kill_during_checkpoint_write_keeps_previous) {
    const char *bin = getenv("FASTLORA_BIN");
    if (!bin || access(bin, X_OK) != 0) SKIP("FASTLORA_BIN not set");
    char *dir = cr_temp_dir();
    char *data = write_token_data(dir, 30);
    char path[512];
    const char *common = "--seq 16 --batch 2 --max-steps 6 --save-every 2 --rank 4 --alpha 8 --lr 0.01 --dtype f32 "
                         "--log-every 0 --eval-every 0";
    /* killed (SIGKILL) in the middle of writing its 2nd checkpoint (step 4) */
    run_ref_then_killed(bin, dir, data, common, "FASTLORA_TEST_CRASH_IN_CHECKPOINT=2");
    snprintf(path, sizeof path, "%s/run/checkpoints/step-00000002/trainer_state.json", dir);
    CHECK(fl_file_exists(path));
    snprintf(path, sizeof path, "%s/run/checkpoints/step-00000004", dir);
    CHECK(!fl_file_exists(path));
    /* the previous checkpoint is intact: it loads */
    fl_lora_config lc;
    snprintf(path, sizeof path, "%s/run/checkpoints/step-00000002", dir);
    CHECK(fl_adapter_load_config(path, &lc) == 0);
    /* resuming from the folder picks step 2 and ends where the uninterrupted run ended, bit for bit */
    resume_matches_ref(bin, dir, data, common);
    cr_remove_tree(dir);
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
    char *dir = cr_temp_dir();
    char *data = write_token_data(dir, 30);
    char path[512];
    const char *common = "--seq 16 --batch 2 --max-steps 6 --save-every 2 --keep 1 --rank 4 --alpha 8 --lr 0.01 "
                         "--dtype f32 --log-every 0 --eval-every 0";
    /* the 2nd save (step 4) rotates step 2 out and is killed after deleting its first file */
    run_ref_then_killed(bin, dir, data, common, "FASTLORA_TEST_CRASH_IN_ROTATION=2");
    snprintf(path, sizeof path, "%s/run/checkpoints/step-00000002", dir);
    CHECK_MSG(!fl_file_exists(path), "a partial %s is left", path);
    snprintf(path, sizeof path, "%s/run/checkpoints/.old-step-00000002", dir);
    CHECK(fl_file_exists(path)); /* the hidden leftover of the interrupted deletion */
    const char *files[] = {"adapter_config.json", "adapter_model.safetensors", "optimizer.safetensors", "trainer_state.json"};
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/run/checkpoints/step-00000004/%s", dir, files[i]);
        CHECK_MSG(fl_file_exists(path), "%s missing", path);
    }
    resume_matches_ref(bin, dir, data, common);
    snprintf(path, sizeof path, "%s/run/checkpoints/.old-step-00000002", dir);
    CHECK(!fl_file_exists(path));
    cr_remove_tree(dir);
    free(data);
    free(dir);
}

/* `train --out` on a folder that holds a run, without --resume, used to overwrite its adapter,
 * metrics and config, and then rotation deleted the NEW run's checkpoints (the old step folders
 * sort higher), so a later --resume picked the old run. Now refused (one line, nothing touched)
 * unless --overwrite, which deletes the earlier run's outputs first. */
TEST(train_out_holding_a_run_needs_resume_or_overwrite) {
    char *dir = cr_temp_dir();
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
    cr_remove_tree(dir);
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
    char *dir = cr_temp_dir();
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
    CHECK(cr_files_equal(path, path2));
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
    cr_remove_tree(dir);
    free(data);
    free(dir);
}

/* --eval-data whose every document is unusable: an error, as for --data (it used to train without
 * any eval, saying only "no eval set" at the end). */
TEST(train_bad_input_eval_data_without_documents) {
    char *dir = cr_temp_dir();
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
    cr_remove_tree(dir);
    free(data);
    free(dir);
}

TEST(train_checkpoint_order_is_by_step_past_8_digits) {
    char *dir = cr_temp_dir();
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
    cr_remove_tree(dir);
    free(dir);
}

/* ---- the end-to-end proof: stories260K fine-tuned on tiny shakespeare ----------------------------- */

/* ---- the command line: what train_config.json records, contradicting flags, messages ------------- */

#define QWEN_FIXTURE "tests/fixtures/hf/qwen2_bias_tied"

/* train_config.json used to record the ignored command-line defaults (rank 16, alpha 32, all
 * targets) when --adapter gave r 8, alpha 16, q,v,down, rsLoRA; and --lr 0.01 as 0.00999999978
 * (an f32 round trip). Now it records what ran, numbers as typed. */
TEST(train_config_json_records_what_ran) {
    const char *bin = getenv("FASTLORA_BIN");
    if (!bin || access(bin, X_OK) != 0) SKIP("FASTLORA_BIN not set");
    char *dir = cr_temp_dir();
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
    cr_remove_tree(dir);
    free(data);
    free(dir);
}

/* With --adapter, --rank/--alpha/--targets/--rslora that contradict it used to be ignored silently;
 * now refused in one line naming the flag, the file and the adapter's value. Equal values are fine. */
TEST(train_bad_input_flags_contradicting_adapter) {
    const char *bin = getenv("FASTLORA_BIN");
    if (!bin || access(bin, X_OK) != 0) SKIP("FASTLORA_BIN not set");
    char *dir = cr_temp_dir();
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
    cr_remove_tree(dir);
    free(data);
    free(dir);
}

/* A model folder without a tokenizer (the fixtures have none): with a tokens file there is nothing
 * to say (the note "no usable tokenizer ... only a tokens file can be read" was printed anyway);
 * with JSONL data it is one error line that says why. */
TEST(train_tokenizer_message_only_when_data_needs_it) {
    const char *bin = getenv("FASTLORA_BIN");
    if (!bin || access(bin, X_OK) != 0) SKIP("FASTLORA_BIN not set");
    char *dir = cr_temp_dir();
    char *data = write_token_data(dir, 10);
    char args[2048], jsonl[600], *err = NULL;
    const char *common = "--seq 16 --batch 2 --max-steps 1 --dtype f32 --device cpu --log-every 0 --eval-every 0";
    snprintf(args, sizeof args, "train --model %s --data %s --out %s/run %s", CR_MODEL, data, dir, common);
    CHECK_EQ_INT(run_cli(args, &err), 0);
    CHECK_MSG(!strstr(err, "tokenizer"), "unexpected: %s", err);
    free(err);
    snprintf(jsonl, sizeof jsonl, "%s/data.jsonl", dir);
    FILE *f = fopen(jsonl, "w");
    fputs("{\"text\": \"hello\"}\n", f);
    fclose(f);
    snprintf(args, sizeof args, "train --model %s --data %s --out %s/text %s", CR_MODEL, jsonl, dir, common);
    CHECK_EQ_INT(run_cli(args, &err), 2);
    check_one_line(err, "needs the model's tokenizer");
    free(err);
    /* a tokens file for training but JSONL for eval still needs it */
    snprintf(args, sizeof args, "train --model %s --data %s --eval-data %s --out %s/eval %s", CR_MODEL, data, jsonl,
             dir, common);
    CHECK_EQ_INT(run_cli(args, &err), 2);
    check_one_line(err, "data.jsonl needs the model's tokenizer");
    free(err);
    /* data that cannot be read at all says so, not that a tokenizer is missing (a folder of no data
     * files as --data; a folder of JSONL files is data: test_train_data_sharegpt.c) */
    char empty[600];
    snprintf(empty, sizeof empty, "%s/empty", dir);
    mkdir(empty, 0755);
    snprintf(args, sizeof args, "train --model %s --data %s --out %s/dir %s", CR_MODEL, empty, dir, common);
    CHECK_EQ_INT(run_cli(args, &err), 2);
    check_one_line(err, "a folder without .jsonl or .json files");
    CHECK_MSG(!strstr(err, "tokenizer"), "blames the tokenizer: %s", err);
    free(err);
    cr_remove_tree(dir);
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
    char *dir = cr_temp_dir();
    char *data = write_token_data(dir, 30);
    char args[2048], path[600], ckpt[400], *err = NULL;
    const char *common = "--seq 16 --batch 2 --rank 4 --alpha 8 --lr 0.01 --save-every 2 --dtype f32 --device cpu "
                         "--log-every 0 --eval-every 0";
    /* a run stopped after step 4 of 6 (its final adapter from a first 4-step run stays beside) */
    snprintf(args, sizeof args, "train --model %s --data %s --out %s/run --max-steps 4 %s", CR_MODEL, data, dir, common);
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
        snprintf(args, sizeof args, "train --model %s --data %s --out %s/run --max-steps 6 %s --resume %s/run", CR_MODEL,
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
        snprintf(args, sizeof args, "train --model %s --data %s --out %s/run --max-steps 6 %s --resume %s/run", CR_MODEL,
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
    snprintf(args, sizeof args, "train --model %s --data %s --out %s/run --max-steps 6 %s --resume %s/run", CR_MODEL,
             data, dir, common, dir);
    CHECK_EQ_INT(run_cli(args, &err), 0);
    free(err);
    free(opt_bytes);
    free(mom);
    free(state);
    cr_remove_tree(dir);
    free(data);
    free(dir);
}
