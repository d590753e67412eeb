/* main.c — the test runner: runs every registered test (or those whose name or file contains one of
 * the comma-separated substrings of argv[1])
 * and prints `N passed, N failed, N skipped`. Exit status 1 when any test failed. */
#include "test.h"

#include "backend/cpu/cpu_isa.h"
#include "backend/cpu/gemm_bf16.h"
#include "common/error.h"

#include <stdarg.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_TESTS 1024
static struct { const char *name, *file; fl_test_fn fn; } tests[MAX_TESTS];
static int test_count;
static int current_failures;
static const char *current_skip;

void fl_test_register(const char *name, const char *file, fl_test_fn fn) {
    if (test_count == MAX_TESTS) { fprintf(stderr, "too many tests\n"); exit(1); }
    tests[test_count].name = name;
    tests[test_count].file = file;
    tests[test_count].fn = fn;
    test_count++;
}

void fl_test_fail(const char *file, int line, const char *fmt, ...) {
    va_list args;
    if (current_failures < 20) {
        fprintf(stdout, "    FAIL %s:%d: ", file, line);
        va_start(args, fmt);
        vfprintf(stdout, fmt, args);
        va_end(args);
        fputc('\n', stdout);
    }
    current_failures++;
}

void fl_test_skip(const char *why) { current_skip = why; }
int fl_test_skipped(void) { return current_skip != NULL; }

const char *fl_test_shared_dir(void) {
    static const char *candidates[] = {"../shared", "../../shared"};
    const char *env = getenv("FASTLORA_SHARED");
    struct stat st;
    if (env && stat(env, &st) == 0) return env;
    for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++)
        if (stat(candidates[i], &st) == 0 && S_ISDIR(st.st_mode)) return candidates[i];
    return NULL;
}

const char *fl_test_bin(void) {
    const char *b = getenv("FASTLORA_BIN");
    return b && access(b, X_OK) == 0 ? b : NULL;
}

int fl_test_run_cli(char *out, size_t cap, const char *fmt, ...) {
    char args[4096], log[64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(log, sizeof log, "/tmp/fastlora-test-log-%d", (int)getpid());
    size_t n = strlen(args) + strlen(log) + 512;
    char *cmd = malloc(n);
    snprintf(cmd, n, "timeout -k 5 30 %s %s > %s 2>&1 < /dev/null", fl_test_bin(), args, log);
    int rc = system(cmd);
    free(cmd);
    out[0] = 0;
    FILE *f = fopen(log, "rb");
    if (f) {
        size_t got = fread(out, 1, cap - 1, f);
        out[got] = 0;
        fclose(f);
    }
    unlink(log);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
}

/* Whether a test's name or file contains one of the comma-separated substrings of filter (several,
 * to run tests together that interact through process state: `fastlora_tests cli_args,train_one`). */
static int matches(const char *filter, const char *name, const char *file) {
    char buf[512];
    snprintf(buf, sizeof buf, "%s", filter);
    for (char *save = NULL, *f = strtok_r(buf, ",", &save); f; f = strtok_r(NULL, ",", &save))
        if (strstr(name, f) || strstr(file, f)) return 1;
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "--cpu-isa-levels")) { /* for `make isa-test`: the levels this CPU runs */
        for (int i = 0; i <= (int)fl_cpu_isa_detected(); i++) printf("%s\n", fl_cpu_isa_name((fl_cpu_isa)i));
        return 0;
    }
    const char *filter = argc > 1 ? argv[1] : NULL;
    int passed = 0, failed = 0, skipped = 0;
    /* the CPU kernel path under test: a FASTLORA_CPU_ISA this CPU cannot honour would test another */
    if (fl_cpu_isa_check_env() || fl_gemm_bf16_check_env()) {
        fprintf(stderr, "fastlora_tests: %s\n", fl_last_error());
        return 2;
    }
    printf("CPU kernels: %s (this CPU: %s); bf16 GEMM: %s\n", fl_cpu_isa_name(fl_cpu_isa_active()),
           fl_cpu_isa_name(fl_cpu_isa_detected()), fl_gemm_bf16_path());
    for (int i = 0; i < test_count; i++) {
        if (filter && !matches(filter, tests[i].name, tests[i].file)) continue;
        current_failures = 0;
        current_skip = NULL;
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        tests[i].fn();
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
        if (current_failures) {
            failed++;
            printf("FAIL  %-44s (%d checks failed, %.0f ms)\n", tests[i].name, current_failures, ms);
        } else if (current_skip) {
            skipped++;
            printf("skip  %-44s (%s)\n", tests[i].name, current_skip);
        } else {
            passed++;
            printf("ok    %-44s (%.0f ms)\n", tests[i].name, ms);
        }
        fflush(stdout);
    }
    printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    return failed ? 1 : 0;
}
