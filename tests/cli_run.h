/* cli_run.h — helpers for the tests that drive `fastlora` as real processes against real folders
 * (test_run_lock.c, test_links.c, test_resume_inputs.c, test_leftovers.c, test_nonfinite.c,
 * test_rope_parity.c): a scratch folder, a small tokens file (ids below 64, for the llama_gqa fixture
 * model and any with a larger vocabulary), the CLI run in the
 * foreground (status + output) or in the background (a pid to wait for), file comparisons.
 * Static functions in a header: each test file gets its own copy; not a harness of its own. */
#ifndef FL_TESTS_CLI_RUN_H
#define FL_TESTS_CLI_RUN_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/error.h"
#include "train/data.h"

#define CR_MODEL "tests/fixtures/hf/llama_gqa/model"
#define CR_ADAPTER "tests/fixtures/hf/llama_gqa/adapter"
/* a short run on the fixture: checkpoints at 2 and 4 */
#define CR_TRAIN "--seq 16 --batch 2 --max-steps 4 --save-every 2 --rank 4 --alpha 8 --lr 0.01 --dtype f32 " \
                 "--log-every 0 --eval-every 0"

static inline char *cr_temp_dir(void) {
    char *dir = strdup("/tmp/fastlora-cr-XXXXXX");
    return mkdtemp(dir);
}

static inline void cr_remove_tree(const char *dir) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

/* DIR/NAME: a tokens file of n_docs documents (ids < 64, below the fixture's vocabulary); `salt`
 * changes the ids, `reversed` writes the same documents in the opposite order. Malloc'd path. */
static inline char *cr_token_data_ordered(const char *dir, const char *name, int n_docs, int salt, int reversed) {
    fl_dataset ds = {0};
    for (int k = 0; k < n_docs; k++) {
        int d = reversed ? n_docs - 1 - k : k;
        int32_t ids[40];
        int n = 3 + (d * 7) % 29;
        for (int i = 0; i < n; i++) ids[i] = (int32_t)((d * 5 + i * i + 3 + salt) % 61 + 3);
        fl_dataset_add(&ds, ids, NULL, n);
    }
    char *path = malloc(strlen(dir) + strlen(name) + 2);
    sprintf(path, "%s/%s", dir, name);
    if (fl_tokens_file_write(path, &ds)) printf("    %s\n", fl_last_error());
    fl_dataset_free(&ds);
    return path;
}

static inline char *cr_token_data(const char *dir, const char *name, int n_docs, int salt) {
    return cr_token_data_ordered(dir, name, n_docs, salt, 0);
}

/* Runs `$FASTLORA_BIN ARGS` (a shell command line: ENV=... prefixes go in `env`), stdout + stderr
 * into out; the exit status (128 + signal when killed). */
static inline int cr_run(char *out, size_t cap, const char *env, const char *args) {
    char path[] = "/tmp/fastlora-cr-out-XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    size_t n = strlen(args) + strlen(path) + 600;
    char *cmd = malloc(n);
    snprintf(cmd, n, "%s timeout 60 %s %s </dev/null >%s 2>&1", env ? env : "", getenv("FASTLORA_BIN"), args, path);
    int rc = system(cmd);
    free(cmd);
    FILE *f = fopen(path, "rb");
    size_t got = f ? fread(out, 1, cap - 1, f) : 0;
    out[got] = 0;
    if (f) fclose(f);
    unlink(path);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
}

/* The same in the background: returns the child's pid (its own process group); output into log. */
static inline pid_t cr_spawn(const char *env, const char *args, const char *log) {
    size_t n = strlen(args) + strlen(log) + 600;
    char *cmd = malloc(n);
    snprintf(cmd, n, "exec env %s %s %s </dev/null >%s 2>&1", env ? env : "", getenv("FASTLORA_BIN"), args, log);
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    free(cmd);
    return pid;
}

/* Waits for pid (at most 60 s, then SIGKILL); its exit status as cr_run gives it. */
static inline int cr_wait(pid_t pid) {
    int st = 0;
    for (int i = 0; i < 6000; i++) {
        if (waitpid(pid, &st, WNOHANG) == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        usleep(10000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    return 124;
}

/* Waits (at most 30 s) until path exists and contains needle (NULL: exists). */
static inline int cr_wait_for_file(const char *path, const char *needle) {
    for (int i = 0; i < 3000; i++) {
        FILE *f = fopen(path, "rb");
        if (f) {
            char buf[4096];
            size_t n = fread(buf, 1, sizeof buf - 1, f);
            buf[n] = 0;
            fclose(f);
            if (!needle || strstr(buf, needle)) return 1;
        }
        usleep(10000);
    }
    return 0;
}

/* A whole file, malloc'd and NUL-terminated (*len its size); NULL when unreadable. */
static inline char *cr_read(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    size_t got = fread(buf, 1, (size_t)n, f);
    buf[got] = 0;
    fclose(f);
    if (len) *len = got;
    return buf;
}

static inline int cr_files_equal(const char *a, const char *b) {
    size_t na = 0, nb = 0;
    char *x = cr_read(a, &na), *y = cr_read(b, &nb);
    int eq = x && y && na == nb && !memcmp(x, y, na);
    free(x);
    free(y);
    return eq;
}

static inline int cr_copy(const char *from, const char *to) {
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "cp -r '%s' '%s'", from, to);
    return system(cmd);
}

/* Lines of a file that contain needle. */
static inline int cr_count_lines(const char *path, const char *needle) {
    char *text = cr_read(path, NULL);
    int n = 0;
    for (char *p = text; p && (p = strstr(p, needle)); p += strlen(needle)) n++;
    free(text);
    return n;
}

static inline int cr_exists(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0;
}

#define CR_NEED_BIN() do { const char *b_ = getenv("FASTLORA_BIN"); \
    if (!b_ || access(b_, X_OK) != 0) SKIP("FASTLORA_BIN not set"); } while (0)

#endif
