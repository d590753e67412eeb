/* test_cuda_device_check.c — scripts/device-check's host-side behaviour, on any machine (no GPU
 * needed, none used): the first output line says whether a GPU is there and what is missing, a
 * run without GPU or binaries exits 0 with every stage in the table, and a run killed after a stage
 * (DC_DIE_AFTER, SIGKILL) still leaves that stage's row in summary.md. Runs the script with
 * SKIP=build and an empty build folder of its own, so it takes a few seconds and touches no
 * other build. Not the GPU stages themselves (the device run). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_run.h"
#include "test.h"

/* Runs the script with `env` under a scratch OUT/BUILD; returns its exit status, the first line of
 * its output in `first` and summary.md in `table` (both malloc'd, "" when absent). */
static int run_device_check(const char *env, char **first, char **table) {
    char *dir = cr_temp_dir(), cmd[2048], path[600];
    snprintf(cmd, sizeof cmd,
             "OUT='%s/out' BUILD='%s/build' SKIP=build BUDGET=60 %s bash scripts/device-check >'%s/stdout' 2>&1",
             dir, dir, env, dir);
    int rc = system(cmd);
    rc = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
    snprintf(path, sizeof path, "%s/stdout", dir);
    *first = calloc(1, 4096);
    FILE *f = fopen(path, "r");
    if (f) {
        if (!fgets(*first, 4096, f)) (*first)[0] = 0;
        fclose(f);
    }
    snprintf(path, sizeof path, "%s/out/summary.md", dir);
    *table = calloc(1, 65536);
    f = fopen(path, "r");
    if (f) {
        size_t n = fread(*table, 1, 65535, f);
        (*table)[n] = 0;
        fclose(f);
    }
    cr_remove_tree(dir);
    free(dir);
    return rc;
}

TEST(dc_script_first_line_and_full_table_without_gpu) {
    if (access("scripts/device-check", R_OK) != 0) SKIP("not run from the repository root");
    char *first, *table;
    int rc = run_device_check("", &first, &table);
    CHECK_MSG(!strncmp(first, "device-check: ", 14) && strstr(first, "missing: "), "first line: %s", first);
    if (strstr(first, "no GPU")) CHECK_EQ_INT(rc, 0); /* no GPU, no binaries: a clean exit */
    const char *stages[] = {"| environment |", "| deps |", "| build |", "| bench1 |", "| tests |", "| bench |",
                            "| sanitizer |", "| lab", "| peer |", "| board |", "| plan --check |"};
    const char *prev = table;
    for (size_t i = 0; i < sizeof stages / sizeof *stages; i++) {
        const char *at = strstr(table, stages[i]);
        CHECK_MSG(at && at >= prev, "stage %s missing or out of order in:\n%s", stages[i], table);
        if (at) prev = at;
    }
    CHECK(strstr(table, "| bench1 |") < strstr(table, "| tests |")); /* a number before the tests */
    free(first);
    free(table);
}

TEST(dc_script_names_what_is_missing_first) {
    if (access("scripts/device-check", R_OK) != 0) SKIP("not run from the repository root");
    char *first, *table;
    run_device_check("MAKE=fastlora-no-such-make CUDA_HOME=/nonexistent DC_NO_LDCONFIG=1", &first, &table);
    CHECK_MSG(strstr(first, "no GPU") && strstr(first, "make") && strstr(first, "cuBLAS") && strstr(first, "cuBLASLt"),
              "first line: %s", first);
    free(first);
    free(table);
}

TEST(dc_script_table_survives_a_kill) {
    if (access("scripts/device-check", R_OK) != 0) SKIP("not run from the repository root");
    char *first, *table;
    int rc = run_device_check("DC_DIE_AFTER=deps", &first, &table);
    CHECK_MSG(rc != 0, "a killed run exited %d", rc);
    CHECK_MSG(strstr(table, "| environment |") && strstr(table, "| deps |"), "table after the kill:\n%s", table);
    CHECK(!strstr(table, "| build |")); /* nothing after the kill */
    free(first);
    free(table);
}
