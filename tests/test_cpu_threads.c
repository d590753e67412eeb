/* test_cpu_threads.c — the OpenMP environment fastlora runs under (backend/cpu/cpu_threads.h):
 * passive waiting by default, the user's OMP_WAIT_POLICY / GOMP_SPINCOUNT kept. Through the real
 * binary (the default is applied by re-executing it), observed in the line `fastlora bench`
 * prints about its device. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"

/* Runs a tiny bench under `env_prefix` and returns its output (static buffer). */
static const char *bench_output(const char *bin, const char *env_prefix) {
    static char buf[16384];
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT %s %s bench --preset smollm2-135m --device cpu --dtype f32 "
             "--batch 1 --seq 8 --rank 2 --steps 1 --warmup 0 --threads 1 --no-sgemm 2>&1",
             env_prefix, bin);
    buf[0] = 0;
    FILE *p = popen(cmd, "r");
    if (!p) return buf;
    size_t n = fread(buf, 1, sizeof buf - 1, p);
    buf[n] = 0;
    CHECK_EQ_INT(pclose(p), 0);
    return buf;
}

TEST(cpu_threads_passive_by_default_user_choice_kept) {
    const char *bin = getenv("FASTLORA_BIN");
    if (!bin || access(bin, X_OK) != 0) SKIP("FASTLORA_BIN not set");
    CHECK_STR_CONTAINS(bench_output(bin, ""), "OMP_WAIT_POLICY passive");
    CHECK_STR_CONTAINS(bench_output(bin, "OMP_WAIT_POLICY=active"), "OMP_WAIT_POLICY active");
    /* a spin count of one's own is a choice too: no policy is imposed over it */
    CHECK_STR_CONTAINS(bench_output(bin, "GOMP_SPINCOUNT=1000"), "OMP_WAIT_POLICY (runtime default)");
}
