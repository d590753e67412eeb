/* test_run_lock.c — one process per output (io/run_lock.h), with two real processes: a second
 * `train` into a running run's --out, a `--resume` of a running run, a second `merge` into the same
 * --out and a second `export` of the same --gguf are refused with one line naming the first
 * process, and the first finishes with all its outputs (every metrics row, its own config). A lock
 * file left by a process that died is taken over with a note. The first process holds its lock
 * until the test lets it go (FASTLORA_TEST_LOCK_HOLD), so the overlap is certain, not timed. */
#include "cli_run.h"
#include "test.h"

/* Starts `args` holding its lock until DIR/go exists; waits until lock_path names it. */
static pid_t start_holder(const char *dir, const char *args, const char *lock_path, char *log, size_t cap) {
    char env[600], pid_text[32];
    snprintf(env, sizeof env, "FASTLORA_TEST_LOCK_HOLD=%s/go", dir);
    snprintf(log, cap, "%s/holder.log", dir);
    pid_t pid = cr_spawn(env, args, log);
    snprintf(pid_text, sizeof pid_text, "pid %d\n", (int)pid);
    CHECK_MSG(cr_wait_for_file(lock_path, pid_text), "%s never named the first process (%s)", lock_path, pid_text);
    return pid;
}

static void let_go(const char *dir) {
    char path[600];
    snprintf(path, sizeof path, "%s/go", dir);
    FILE *f = fopen(path, "w");
    if (f) fclose(f);
}

/* The refusal: exit 2, one line, naming the holder's command and pid. */
static void check_refused(int rc, const char *out, const char *command, pid_t holder) {
    char needle[96];
    CHECK_EQ_INT(rc, 2);
    snprintf(needle, sizeof needle, "is in use by fastlora %s, pid %d", command, (int)holder);
    CHECK_STR_CONTAINS(out, needle);
    const char *nl = strchr(out, '\n');
    CHECK_MSG(nl && nl[1] == 0, "expected one line, got: %s", out);
}

TEST(run_lock_second_train_and_resume_of_a_running_run_are_refused) {
    CR_NEED_BIN();
    char *dir = cr_temp_dir();
    char *data = cr_token_data(dir, "data.tokens", 30, 0);
    char args[2048], out[8192], log[700], lock[700], path[700];
    snprintf(lock, sizeof lock, "%s/X/.fastlora-lock", dir);
    snprintf(args, sizeof args, "train --model %s --data %s --out %s/X --seed 1 %s", CR_MODEL, data, dir, CR_TRAIN);
    pid_t first = start_holder(dir, args, lock, log, sizeof log);
    /* the same --out, another seed: before the lock it ran on, and the folder ended with run 1's
     * adapter and checkpoints but run 2's config and metrics */
    snprintf(args, sizeof args, "train --model %s --data %s --out %s/X --seed 2 %s", CR_MODEL, data, dir, CR_TRAIN);
    check_refused(cr_run(out, sizeof out, NULL, args), out, "train", first);
    /* --resume of the running run: before, the resumer cut metrics.jsonl back under the runner */
    snprintf(args, sizeof args, "train --model %s --data %s --out %s/X --seed 1 --resume %s/X %s", CR_MODEL, data, dir,
             dir, CR_TRAIN);
    check_refused(cr_run(out, sizeof out, NULL, args), out, "train", first);
    let_go(dir);
    CHECK_EQ_INT(cr_wait(first), 0);
    snprintf(path, sizeof path, "%s/X/metrics.jsonl", dir);
    CHECK_EQ_INT(cr_count_lines(path, "\"loss\""), 4);
    snprintf(path, sizeof path, "%s/X/train_config.json", dir);
    char *config = cr_read(path, NULL);
    CHECK_STR_CONTAINS(config, "\"seed\": 1");
    free(config);
    CHECK_MSG(!cr_exists(lock), "the lock file outlived its run");
    /* free again: the same resume now runs */
    CHECK_EQ_INT(cr_run(out, sizeof out, NULL, args), 0);
    cr_remove_tree(dir);
    free(data);
    free(dir);
}

TEST(run_lock_of_a_dead_process_is_taken_over_with_a_note) {
    CR_NEED_BIN();
    char *dir = cr_temp_dir();
    char *data = cr_token_data(dir, "data.tokens", 30, 0);
    pid_t dead = fork();
    if (dead == 0) _exit(0);
    waitpid(dead, NULL, 0);
    char path[700], args[2048], out[8192], needle[96];
    snprintf(path, sizeof path, "%s/X", dir);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/X/.fastlora-lock", dir);
    FILE *f = fopen(path, "w");
    fprintf(f, "pid %d\nhost here\nstarted 2026-01-01T00:00:00Z\ncommand train\n", (int)dead);
    fclose(f);
    snprintf(args, sizeof args, "train --model %s --data %s --out %s/X %s", CR_MODEL, data, dir, CR_TRAIN);
    CHECK_EQ_INT(cr_run(out, sizeof out, NULL, args), 0);
    snprintf(needle, sizeof needle, "took over the lock of fastlora train, pid %d", (int)dead);
    CHECK_STR_CONTAINS(out, needle);
    CHECK(!cr_exists(path));
    cr_remove_tree(dir);
    free(data);
    free(dir);
}

TEST(run_lock_second_merge_and_export_of_the_same_output_are_refused) {
    CR_NEED_BIN();
    char *dir = cr_temp_dir();
    char args[2048], out[8192], log[700], lock[700], path[700];
    /* merge */
    snprintf(lock, sizeof lock, "%s/.merged.fastlora-lock", dir);
    snprintf(args, sizeof args, "merge --model %s --adapter %s --out %s/merged", CR_MODEL, CR_ADAPTER, dir);
    pid_t first = start_holder(dir, args, lock, log, sizeof log);
    snprintf(args, sizeof args, "merge --model %s --adapter %s --out %s/merged --force", CR_MODEL, CR_ADAPTER, dir);
    check_refused(cr_run(out, sizeof out, NULL, args), out, "merge", first);
    let_go(dir);
    CHECK_EQ_INT(cr_wait(first), 0);
    snprintf(path, sizeof path, "%s/merged/model.safetensors", dir);
    CHECK(cr_exists(path));
    CHECK(!cr_exists(lock));
    snprintf(path, sizeof path, "%s/go", dir);
    unlink(path);
    /* export */
    snprintf(lock, sizeof lock, "%s/.m.gguf.fastlora-lock", dir);
    snprintf(args, sizeof args, "export --gguf %s/m.gguf --model %s --adapter %s --no-tokenizer", dir, CR_MODEL, CR_ADAPTER);
    first = start_holder(dir, args, lock, log, sizeof log);
    snprintf(args, sizeof args, "export --gguf %s/m.gguf --model %s --no-tokenizer --force", dir, CR_MODEL);
    check_refused(cr_run(out, sizeof out, NULL, args), out, "export", first);
    let_go(dir);
    CHECK_EQ_INT(cr_wait(first), 0);
    snprintf(path, sizeof path, "%s/m.gguf", dir);
    CHECK(cr_exists(path));
    CHECK(!cr_exists(lock));
    cr_remove_tree(dir);
    free(dir);
}
