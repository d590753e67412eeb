/* test_resume_inputs.c — issue 28, items 3-7, through the CLI on the llama_gqa fixture:
 *   3 --resume after the data was cut, reordered or replaced, a base tensor zeroed, or a math
 *     option changed: refused naming what changed (--allow-changed lets an option through, noted);
 *   4 a run folder with no checkpoint yet (killed before its first one) restarts, plain or --resume;
 *   5 leftovers of killed merges, exports and adapter writes are removed by the next run, noted;
 *   6 a NaN in an adapter stops merge and export, one in the base stops generate and train, and so
 *     does a finite adapter that overflows when merged;
 *   7 a resume at the final step says nothing was trained; --max-steps below the checkpoint's step
 *     is refused. */
#include <dirent.h>

#include "cli_run.h"
#include "test.h"

static long dead_pid(void) {
    pid_t p = fork();
    if (p == 0) _exit(0);
    waitpid(p, NULL, 0);
    return (long)p;
}

/* A 4-step run with checkpoints at 2 and 4 in DIR/OUT. */
static void first_run(const char *dir, const char *model, const char *data, const char *extra) {
    char args[2048], out[8192];
    snprintf(args, sizeof args, "train --model %s --data %s --out %s/OUT %s %s", model, data, dir, CR_TRAIN, extra);
    CHECK_MSG(cr_run(out, sizeof out, NULL, args) == 0, "first run: %s", out);
}

static void expect_resume(const char *dir, const char *model, const char *data, const char *extra, int rc,
                          const char *needle) {
    char args[2048], out[8192];
    snprintf(args, sizeof args, "train --model %s --data %s --out %s/OUT --resume %s/OUT/checkpoints/step-00000002 %s %s",
             model, data, dir, dir, CR_TRAIN, extra);
    int got = cr_run(out, sizeof out, NULL, args);
    CHECK_MSG(got == rc, "%s: exit %d: %s", extra, got, out);
    if (needle) CHECK_STR_CONTAINS(out, needle);
}

/* Every f32 value of a safetensors file's data section times 1.5 (the fixture is f32 throughout). */
static void scale_weights(const char *path, float by) {
    FILE *f = fopen(path, "r+b");
    uint64_t header = 0;
    CHECK(f && fread(&header, 8, 1, f) == 1);
    if (!f) return;
    fseek(f, 0, SEEK_END);
    long end = ftell(f), at = (long)(8 + header);
    float *v = malloc((size_t)(end - at));
    fseek(f, at, SEEK_SET);
    size_t n = fread(v, sizeof(float), (size_t)(end - at) / sizeof(float), f);
    for (size_t i = 0; i < n; i++) v[i] *= by;
    fseek(f, at, SEEK_SET);
    CHECK(fwrite(v, sizeof(float), n, f) == n);
    fclose(f);
    free(v);
}

TEST(resume_inputs_changed_data_weights_or_options_are_named) {
    CR_NEED_BIN();
    char *dir = cr_temp_dir();
    char *data = cr_token_data(dir, "data.tokens", 30, 0), model[700], cmd[2048];
    snprintf(model, sizeof model, "%s/M", dir);
    snprintf(cmd, sizeof cmd, "cp -r " CR_MODEL " '%s'", model);
    CHECK_EQ_INT(system(cmd), 0);
    first_run(dir, model, data, "");
    /* options: refused naming each, then allowed and noted */
    expect_resume(dir, model, data, "--lr 0.02 --dropout 0.1", 2, "--lr '0.01' -> '0.02', --dropout '0' -> '0.1'");
    expect_resume(dir, model, data, "--seq 8", 2, "--seq '16' -> '8'");
    expect_resume(dir, model, data, "--eval-frac 0.1", 2, "--eval-frac");
    expect_resume(dir, model, data, "--lr 0.02 --allow-changed lr", 0, "--lr changed from '0.01' to '0.02'");
    /* the data replaced (other ids), cut (fewer documents) */
    char *other = cr_token_data(dir, "other.tokens", 30, 7), *cut = cr_token_data(dir, "cut.tokens", 29, 0);
    expect_resume(dir, model, other, "", 2, "other data");
    expect_resume(dir, model, cut, "", 2, "other data");
    /* the same documents in another order */
    char *shuffled = cr_token_data_ordered(dir, "shuffled.tokens", 30, 0, 1);
    expect_resume(dir, model, shuffled, "", 2, "other data");
    /* every weight x 1.5 */
    char w[800];
    snprintf(w, sizeof w, "%s/model.safetensors", model);
    scale_weights(w, 1.5f);
    expect_resume(dir, model, data, "", 2, "other base weights");
    snprintf(cmd, sizeof cmd, "cp " CR_MODEL "/model.safetensors '%s'", w);
    CHECK_EQ_INT(system(cmd), 0);
    /* a base tensor zeroed (the first 4 KiB of tensor data) */
    FILE *f = fopen(w, "r+b");
    uint64_t header = 0;
    CHECK(f && fread(&header, 8, 1, f) == 1);
    static const char zeros[4096];
    fseek(f, (long)(8 + header), SEEK_SET);
    fwrite(zeros, 1, sizeof zeros, f);
    fclose(f);
    expect_resume(dir, model, data, "", 2, "other base weights");
    /* the original weights back: the same resume goes on */
    CHECK_EQ_INT(system(cmd), 0);
    expect_resume(dir, model, data, "", 0, NULL);
    cr_remove_tree(dir);
    free(data);
    free(other);
    free(cut);
    free(shuffled);
    free(dir);
}

TEST(resume_inputs_final_step_and_max_steps_below_the_checkpoint) {
    CR_NEED_BIN();
    char *dir = cr_temp_dir();
    char *data = cr_token_data(dir, "data.tokens", 30, 0), args[2048], out[8192];
    first_run(dir, CR_MODEL, data, "");
    snprintf(args, sizeof args, "train --model %s --data %s --out %s/OUT --resume %s/OUT %s", CR_MODEL, data, dir, dir, CR_TRAIN);
    CHECK_EQ_INT(cr_run(out, sizeof out, NULL, args), 0);
    CHECK_STR_CONTAINS(out, "already at the final step 4; nothing trained");
    CHECK_MSG(!strstr(out, "last loss 0.0000"), "%s", out);
    snprintf(args, sizeof args, "train --model %s --data %s --out %s/OUT --resume %s/OUT %s --max-steps 3", CR_MODEL, data,
             dir, dir, CR_TRAIN);
    CHECK_EQ_INT(cr_run(out, sizeof out, NULL, args), 2);
    CHECK_STR_CONTAINS(out, "past this run's 3 steps");
    cr_remove_tree(dir);
    free(data);
    free(dir);
}

TEST(resume_inputs_run_without_a_checkpoint_restarts) {
    CR_NEED_BIN();
    char *dir = cr_temp_dir();
    char *data = cr_token_data(dir, "data.tokens", 30, 0), args[2048], out[8192], path[800];
    /* what a kill before the first checkpoint leaves: the config, a metrics row, a temp checkpoint */
    snprintf(path, sizeof path, "%s/OUT/checkpoints/.tmp-step-00000002-%ld", dir, dead_pid());
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s' && echo '{}' > '%s/OUT/train_config.json' && echo '{\"step\": 1}' > "
             "'%s/OUT/metrics.jsonl'", path, dir, dir);
    CHECK_EQ_INT(system(cmd), 0);
    snprintf(args, sizeof args, "train --model %s --data %s --out %s/OUT %s", CR_MODEL, data, dir, CR_TRAIN);
    CHECK_EQ_INT(cr_run(out, sizeof out, NULL, args), 0);
    CHECK_STR_CONTAINS(out, "stopped before its first checkpoint");
    CHECK(!cr_exists(path));
    /* --resume of such a folder starts it too */
    snprintf(cmd, sizeof cmd, "rm -rf '%s/OUT/checkpoints' '%s/OUT'/adapter_*", dir, dir);
    CHECK_EQ_INT(system(cmd), 0);
    snprintf(args, sizeof args, "train --model %s --data %s --out %s/OUT --resume %s/OUT %s", CR_MODEL, data, dir, dir, CR_TRAIN);
    CHECK_EQ_INT(cr_run(out, sizeof out, NULL, args), 0);
    snprintf(path, sizeof path, "%s/OUT/metrics.jsonl", dir);
    CHECK_EQ_INT(cr_count_lines(path, "\"loss\""), 4);
    cr_remove_tree(dir);
    free(data);
    free(dir);
}

TEST(leftovers_of_killed_merge_export_and_adapter_writes_are_removed) {
    CR_NEED_BIN();
    char *dir = cr_temp_dir();
    char *data = cr_token_data(dir, "data.tokens", 30, 0), args[2048], out[8192], stage[800], tmp[800], ad[800], cmd[4096];
    long pid = dead_pid();
    snprintf(stage, sizeof stage, "%s/.merged.fastlora-stage-%ld", dir, pid);
    snprintf(tmp, sizeof tmp, "%s/m.gguf.tmp.%ld", dir, pid);
    snprintf(ad, sizeof ad, "%s/OUT/adapter_model.safetensors.tmp.%ld", dir, pid);
    snprintf(cmd, sizeof cmd, "mkdir -p '%s' '%s/OUT' && echo x > '%s/model.safetensors' && echo x > '%s' && echo x > '%s'",
             stage, dir, stage, tmp, ad);
    CHECK_EQ_INT(system(cmd), 0);
    snprintf(args, sizeof args, "merge --model %s --adapter %s --out %s/merged", CR_MODEL, CR_ADAPTER, dir);
    CHECK_EQ_INT(cr_run(out, sizeof out, NULL, args), 0);
    CHECK_STR_CONTAINS(out, "no longer running");
    CHECK(!cr_exists(stage));
    snprintf(args, sizeof args, "export --gguf %s/m.gguf --model %s --adapter %s --lora-only", dir, CR_MODEL, CR_ADAPTER);
    CHECK_EQ_INT(cr_run(out, sizeof out, NULL, args), 0);
    CHECK(!cr_exists(tmp));
    snprintf(args, sizeof args, "train --model %s --data %s --out %s/OUT %s", CR_MODEL, data, dir, CR_TRAIN);
    CHECK_EQ_INT(cr_run(out, sizeof out, NULL, args), 0);
    CHECK(!cr_exists(ad));
    cr_remove_tree(dir);
    free(data);
    free(dir);
}

/* Copies src/FILE into dst (a folder made here) with float 0 of its data set to NaN. */
static void copy_with_nan(const char *src, const char *dst, const char *file) {
    char cmd[2048], path[800];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s' && cp '%s'/* '%s'/", dst, src, dst);
    CHECK_EQ_INT(system(cmd), 0);
    snprintf(path, sizeof path, "%s/%s", dst, file);
    FILE *f = fopen(path, "r+b");
    uint64_t header = 0;
    CHECK(f && fread(&header, 8, 1, f) == 1);
    float nan = NAN;
    fseek(f, (long)(8 + header), SEEK_SET);
    fwrite(&nan, 4, 1, f);
    fclose(f);
}

TEST(nonfinite_adapter_and_base_weights_are_refused_where_they_enter) {
    CR_NEED_BIN();
    char *dir = cr_temp_dir();
    char *data = cr_token_data(dir, "data.tokens", 30, 0), a[800], m[800], args[2048], out[8192];
    snprintf(a, sizeof a, "%s/A", dir);
    snprintf(m, sizeof m, "%s/M", dir);
    copy_with_nan(CR_ADAPTER, a, "adapter_model.safetensors");
    copy_with_nan(CR_MODEL, m, "model.safetensors");
    snprintf(args, sizeof args, "merge --model %s --adapter %s --out %s/merged", CR_MODEL, a, dir);
    CHECK_EQ_INT(cr_run(out, sizeof out, NULL, args), 2);
    CHECK_STR_CONTAINS(out, "holds a non-finite value (NaN at index 0");
    snprintf(args, sizeof args, "export --gguf %s/x.gguf --model %s --adapter %s --no-tokenizer", dir, CR_MODEL, a);
    CHECK_EQ_INT(cr_run(out, sizeof out, NULL, args), 2);
    CHECK_STR_CONTAINS(out, "non-finite");
    snprintf(args, sizeof args, "merge --model %s --adapter %s --out %s/merged2", m, CR_ADAPTER, dir);
    CHECK_EQ_INT(cr_run(out, sizeof out, NULL, args), 2);
    CHECK_STR_CONTAINS(out, "non-finite");
    snprintf(args, sizeof args, "generate --model %s --prompt-ids 1,5,7 --max-tokens 4 --dtype f32", m);
    CHECK_EQ_INT(cr_run(out, sizeof out, NULL, args), 2);
    CHECK_STR_CONTAINS(out, "non-finite");
    CHECK(!cr_exists(strcat(strcpy(args, dir), "/merged")) && !cr_exists(strcat(strcpy(out, dir), "/x.gguf")));
    cr_remove_tree(dir);
    free(data);
    free(dir);
}

/* A finite adapter whose s·B·A overflows f32 (every value 1e30): merge and export refuse it in one
 * line naming the tensor, and write nothing (a fuzzer finding: q8_0 export rounded the Inf). */
TEST(merge_and_export_refuse_an_adapter_that_overflows_when_merged) {
    CR_NEED_BIN();
    char *dir = cr_temp_dir();
    char a[800], args[2048], out[8192];
    snprintf(a, sizeof a, "%s/A", dir);
    snprintf(args, sizeof args, "mkdir -p '%s' && cp '%s'/* '%s'/", a, CR_ADAPTER, a);
    CHECK_EQ_INT(system(args), 0);
    snprintf(args, sizeof args, "%s/adapter_model.safetensors", a);
    FILE *f = fopen(args, "r+b");
    uint64_t header = 0;
    CHECK(f && fread(&header, 8, 1, f) == 1);
    fseek(f, 0, SEEK_END);
    long n = (ftell(f) - (long)(8 + header)) / 4;
    fseek(f, (long)(8 + header), SEEK_SET);
    const float big = 1e30f;
    for (long i = 0; i < n; i++) fwrite(&big, 4, 1, f);
    fclose(f);
    snprintf(args, sizeof args, "merge --model %s --adapter %s --out %s/merged", CR_MODEL, a, dir);
    CHECK_EQ_INT(cr_run(out, sizeof out, NULL, args), 2);
    CHECK_STR_CONTAINS(out, "plus the adapter's s·B·A is not finite");
    CHECK_MSG(strchr(out, '\n') == strrchr(out, '\n'), "more than one line: %s", out);
    for (int t = 0; t < 2; t++) {
        snprintf(args, sizeof args, "export --gguf %s/x.gguf --model %s --adapter %s --no-tokenizer --type %s", dir,
                 CR_MODEL, a, t ? "q8_0" : "f16");
        CHECK_EQ_INT(cr_run(out, sizeof out, NULL, args), 2);
        CHECK_STR_CONTAINS(out, "is not finite");
    }
    CHECK(!cr_exists(strcat(strcpy(args, dir), "/merged")) && !cr_exists(strcat(strcpy(out, dir), "/x.gguf")));
    cr_remove_tree(dir);
    free(dir);
}

/* Entries of folder dir whose name contains needle. */
static int count_entries(const char *dir, const char *needle) {
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) n += strstr(e->d_name, needle) != NULL;
    if (d) closedir(d);
    return n;
}

/* Real kills (SIGKILL between an output's temporary file and its rename): a merge's staging folder,
 * an export's PATH.tmp.PID and the final adapter's temporary file are removed by the next run of
 * the same kind, which says so and completes; the killed train's resume writes the adapter. */
TEST(leftovers_of_real_kills_are_removed_and_the_run_completes) {
    CR_NEED_BIN();
    char *dir = cr_temp_dir();
    char *data = cr_token_data(dir, "data.tokens", 30, 0), args[2048], out[8192], path[900];
    const char *kill_env = "FASTLORA_TEST_KILL_BEFORE_RENAME=";
    char env[256];
    /* merge, killed writing the merged weights in its staging folder */
    snprintf(env, sizeof env, "%smodel.safetensors", kill_env);
    snprintf(args, sizeof args, "merge --model %s --adapter %s --out %s/m", CR_MODEL, CR_ADAPTER, dir);
    CHECK_EQ_INT(cr_run(out, sizeof out, env, args), 128 + 9);
    CHECK_EQ_INT(count_entries(dir, ".m.fastlora-stage-"), 1);
    CHECK_EQ_INT(cr_run(out, sizeof out, NULL, args), 0);
    CHECK_STR_CONTAINS(out, "no longer running");
    CHECK_EQ_INT(count_entries(dir, ".m.fastlora-stage-"), 0);
    /* export, killed before its rename */
    snprintf(env, sizeof env, "%sx.gguf", kill_env);
    snprintf(args, sizeof args, "export --gguf %s/x.gguf --model %s --no-tokenizer", dir, CR_MODEL);
    CHECK_EQ_INT(cr_run(out, sizeof out, env, args), 128 + 9);
    CHECK_EQ_INT(count_entries(dir, "x.gguf.tmp."), 1);
    CHECK_EQ_INT(cr_run(out, sizeof out, NULL, args), 0);
    CHECK_EQ_INT(count_entries(dir, "x.gguf.tmp."), 0);
    snprintf(path, sizeof path, "%s/x.gguf", dir);
    CHECK(cr_exists(path));
    /* train, killed writing the final adapter (after its last checkpoint) */
    snprintf(env, sizeof env, "%s/run/adapter_model.safetensors", kill_env);
    snprintf(args, sizeof args, "train --model %s --data %s --out %s/run %s", CR_MODEL, data, dir, CR_TRAIN);
    CHECK_EQ_INT(cr_run(out, sizeof out, env, args), 128 + 9);
    snprintf(path, sizeof path, "%s/run", dir);
    CHECK_EQ_INT(count_entries(path, "adapter_model.safetensors.tmp."), 1);
    snprintf(args, sizeof args, "train --model %s --data %s --out %s/run --resume %s/run %s", CR_MODEL, data, dir, dir,
             CR_TRAIN);
    CHECK_MSG(cr_run(out, sizeof out, NULL, args) == 0, "resume after the kill: %s", out);
    CHECK_EQ_INT(count_entries(path, "adapter_model.safetensors.tmp."), 0);
    snprintf(path, sizeof path, "%s/run/adapter_model.safetensors", dir);
    CHECK_MSG(cr_exists(path), "the resumed run has no adapter: %s", out);
    cr_remove_tree(dir);
    free(data);
    free(dir);
}
