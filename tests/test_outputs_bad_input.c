/* test_outputs_bad_input.c — every output path of every command (board --out/--html, plan --html,
 * bench --json, export --gguf, generate --logits, train --out and the files in it,
 * merge/convert-llama2c --out --force) when what is
 * there is a FIFO, a device, a folder or a file where a folder belongs: refused at once with exit
 * status 2 and one line, before any work and with nothing written (an atomic write's rename used to
 * replace a device node or a link, bench --json blocked on a FIFO, train --out FILE failed only when
 * it first wrote, a merge into a folder holding a folder of a staged file's name stopped half-way).
 * A link at an output path is never written through: the link is replaced, the file it named stays.
 * These run again under ASan/UBSan (`make asan-test`). */
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/error.h"
#include "io/file_util.h"
#include "test.h"
#include "train/data.h"

static void run_ok_or_refused(const char *what, int rc, const char *out, const char *needle) {
    const char *nl = strchr(out, '\n');
    CHECK_MSG(rc == 2 && strstr(out, needle) && nl && !nl[1], "%s: exit %d (124: it blocked), output: %s", what, rc, out);
}

static long file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

TEST(outputs_bad_input_special_files_every_command) {
    if (!fl_test_bin()) SKIP("FASTLORA_BIN not set");
    char dir[] = "/tmp/fastlora-outputs-XXXXXX";
    if (!mkdtemp(dir)) SKIP("mkdtemp failed");
    char fifo[128], folder[128], device[128], file[128], out[8192], cmd_buf[512];
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    snprintf(folder, sizeof folder, "%s/folder", dir);
    snprintf(device, sizeof device, "%s/null", dir);   /* a link to /dev/null: never write /dev itself */
    snprintf(file, sizeof file, "%s/file", dir);
    CHECK(mkfifo(fifo, 0600) == 0 && mkdir(folder, 0755) == 0 && symlink("/dev/null", device) == 0);
    FILE *f = fopen(file, "w");
    fputs("not a folder\n", f);
    fclose(f);
    const char *targets[][2] = {{fifo, "a FIFO, not a regular file"}, {folder, "Is a directory"},
                                {device, "a character device, not a regular file"}};
    const char *lines[] = {
        "board tests/fixtures/board/mixed.jsonl --out %s",
        "board tests/fixtures/board/mixed.jsonl --html %s",
        "plan --preset smollm2-135m --html %s",
        "bench --model tests/fixtures/hf/llama_gqa/model --steps 1 --warmup 0 --batch 1 --seq 4 --device cpu "
        "--no-sgemm --json %s",
        "export --model tests/fixtures/hf/llama_gqa/model --no-tokenizer --force --gguf %s",
        "generate --model tests/fixtures/hf/llama_gqa/model --prompt-ids 1,2 --device cpu --logits %s",
    };
    for (size_t t = 0; t < 3; t++)
        for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
            char args[1024], want[256];
            snprintf(args, sizeof args, lines[i], targets[t][0]);
            snprintf(want, sizeof want, "cannot write %s: %s", targets[t][0], targets[t][1]);
            int rc = fl_test_run_cli(out, sizeof out, "%s", args);
            run_ok_or_refused(args, rc, out, want);
            struct stat st;
            CHECK_MSG(lstat(targets[t][0], &st) == 0 && !S_ISREG(st.st_mode), "%s: the target was replaced", args);
        }
    /* board: --html refused, so --out is not written either */
    char md[128];
    snprintf(md, sizeof md, "%s/board.md", dir);
    int rc = fl_test_run_cli(out, sizeof out, "board tests/fixtures/board/mixed.jsonl --out %s --html %s", md, fifo);
    run_ok_or_refused("board --out ok --html fifo", rc, out, "a FIFO");
    CHECK(file_size(md) < 0);
    /* a link is never written through: it is replaced by the file, what it named is left alone */
    char link_path[128];
    snprintf(link_path, sizeof link_path, "%s/link.md", dir);
    CHECK(symlink(md, link_path) == 0);
    rc = fl_test_run_cli(out, sizeof out, "board tests/fixtures/board/mixed.jsonl --out %s", link_path);
    CHECK_MSG(rc == 0, "board --out LINK: exit %d: %s", rc, out);
    struct stat st;
    CHECK(lstat(link_path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 && file_size(md) < 0);
    /* bench --json appends whole lines: a file without its last newline gets one first */
    char records[128];
    snprintf(records, sizeof records, "%s/records.jsonl", dir);
    f = fopen("tests/fixtures/board/mixed.jsonl", "rb");
    FILE *g = fopen(records, "wb");
    char buf[1 << 16];
    size_t n = f ? fread(buf, 1, sizeof buf, f) : 0;
    while (n && buf[n - 1] == '\n') n--;
    fwrite(buf, 1, n, g);
    fclose(g);
    if (f) fclose(f);
    rc = fl_test_run_cli(out, sizeof out, "bench --model tests/fixtures/hf/llama_gqa/model --steps 1 --warmup 0 --batch 1 "
                         "--seq 4 --device cpu --no-sgemm --json %s", records);
    CHECK_MSG(rc == 0, "bench --json: exit %d: %s", rc, out);
    rc = fl_test_run_cli(out, sizeof out, "board %s", records);
    CHECK_MSG(rc == 0, "board on the appended records: exit %d: %s", rc, out);
    /* train --out: a file is not a folder; a run folder whose metrics.jsonl is a FIFO */
    char tokens[128];
    snprintf(tokens, sizeof tokens, "%s/data.tok", dir);
    fl_dataset ds = {0};
    int32_t ids[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    fl_dataset_add(&ds, ids, NULL, 8);
    CHECK(fl_tokens_file_write(tokens, &ds) == 0);
    fl_dataset_free(&ds);
    rc = fl_test_run_cli(out, sizeof out, "train --model tests/fixtures/hf/llama_gqa/model --data %s --out %s "
                         "--device cpu --max-steps 1", tokens, file);
    run_ok_or_refused("train --out FILE", rc, out, "exists and is not a directory");
    char run[128], metrics[160];
    snprintf(run, sizeof run, "%s/run", dir);
    snprintf(metrics, sizeof metrics, "%s/metrics.jsonl", run);
    CHECK(mkdir(run, 0755) == 0 && mkfifo(metrics, 0600) == 0);
    rc = fl_test_run_cli(out, sizeof out, "train --model tests/fixtures/hf/llama_gqa/model --data %s --out %s "
                         "--device cpu --max-steps 1 --overwrite", tokens, run);
    run_ok_or_refused("train --out RUN (metrics.jsonl a FIFO)", rc, out, "metrics.jsonl: a FIFO, not a regular file");
    /* export --force onto a file of its own input folder: refused (it would replace the model's weights) */
    char model_copy[128], weights[160];
    snprintf(model_copy, sizeof model_copy, "%s/model", dir);
    snprintf(weights, sizeof weights, "%s/model.safetensors", model_copy);
    snprintf(cmd_buf, sizeof cmd_buf, "cp -r tests/fixtures/hf/llama_gqa/model %s", model_copy);
    CHECK(system(cmd_buf) == 0);
    long before = file_size(weights);
    rc = fl_test_run_cli(out, sizeof out, "export --model %s --no-tokenizer --force --gguf %s", model_copy, weights);
    run_ok_or_refused("export --gguf onto the model's weights", rc, out, "is a file of the input folder");
    CHECK(file_size(weights) == before);
    /* merge --force into a folder holding a folder named like an output file: refused, nothing moved */
    char merged[128], blocker[160];
    snprintf(merged, sizeof merged, "%s/merged", dir);
    snprintf(blocker, sizeof blocker, "%s/model.safetensors", merged);
    CHECK(mkdir(merged, 0755) == 0 && mkdir(blocker, 0755) == 0);
    rc = fl_test_run_cli(out, sizeof out, "merge --model tests/fixtures/hf/llama_gqa/model --adapter "
                         "tests/fixtures/hf/llama_gqa/adapter --out %s --force", merged);
    run_ok_or_refused("merge --force (a folder in the way)", rc, out, "model.safetensors: is a folder, not a file");
    char config[160];
    snprintf(config, sizeof config, "%s/config.json", merged);
    CHECK_MSG(file_size(config) < 0, "merge moved config.json into place before it stopped");
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
}

/* An output in a folder this process cannot write: refused before the work (bench --json measured
 * for minutes, then could not save the record). Checked as user nobody: root writes anywhere. */
TEST(outputs_bad_input_read_only_folder) {
    char dir[] = "/tmp/fastlora-ro-XXXXXX";
    if (!mkdtemp(dir)) SKIP("mkdtemp failed");
    char ro[128], path[160];
    snprintf(ro, sizeof ro, "%s/ro", dir);
    snprintf(path, sizeof path, "%s/records.jsonl", ro);
    CHECK(chmod(dir, 0755) == 0 && mkdir(ro, 0555) == 0 && chmod(ro, 0555) == 0);
    int fd[2];
    CHECK(pipe(fd) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        struct passwd *nobody = getpwnam("nobody");
        if (geteuid() == 0 && (!nobody || setgid(nobody->pw_gid) || setuid(nobody->pw_uid))) _exit(3);
        int rc = fl_output_file_check(path);
        const char *e = rc ? fl_last_error() : "accepted";
        if (write(fd[1], e, strlen(e)) < 0) _exit(4);
        _exit(rc == FL_ERR_INPUT ? 0 : 5);
    }
    close(fd[1]);
    char msg[512];
    ssize_t n = read(fd[0], msg, sizeof msg - 1);
    msg[n > 0 ? n : 0] = 0;
    close(fd[0]);
    int status;
    waitpid(pid, &status, 0);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child: %s", msg);
    char want[256];
    snprintf(want, sizeof want, "cannot write %s: Permission denied", path);
    CHECK_STR_CONTAINS(msg, want);
    /* a folder still to be made is not refused here (making it reports its own error) */
    snprintf(path, sizeof path, "%s/new/records.jsonl", dir);
    CHECK_EQ_INT(fl_output_file_check(path), 0);
    chmod(ro, 0755);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
}
