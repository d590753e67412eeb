/* test_cpu_isa.c — the CPU kernel levels (backend/cpu/cpu_isa.h): the FASTLORA_CPU_ISA cap, the
 * LoRA weight-gradient kernel's instances against each other, and the CPU's default weight dtype
 * (backend/select.c) per CPU class. `make isa-test` runs the whole suite again under each level
 * below this CPU's, so every kernel path this machine can execute is tested here. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/cpu/cpu_isa.h"
#include "backend/cpu/gemm_bf16.h"
#include "backend/cpu/gemm_onednn.h"
#include "backend/cpu/rank_grad.h"
#include "common/rng.h"
#include "test.h"

TEST(cpu_isa_names_and_cap) {
    for (int i = 0; i < FL_CPU_ISA_COUNT; i++) CHECK_EQ_INT(fl_cpu_isa_parse(fl_cpu_isa_name((fl_cpu_isa)i)), i);
    CHECK_EQ_INT(fl_cpu_isa_parse("avx9"), -1);
    CHECK_EQ_INT(fl_cpu_isa_parse(NULL), -1);
    CHECK_EQ_INT(fl_cpu_isa_parse("AVX2"), -1); /* the names are exact */
    fl_cpu_isa top = fl_cpu_isa_detected(), before = fl_cpu_isa_active();
    fl_cpu_isa_set_cap(FL_CPU_ISA_PORTABLE);
    CHECK_EQ_INT(fl_cpu_isa_active(), FL_CPU_ISA_PORTABLE);
    CHECK_STR_CONTAINS(fl_gemm_bf16_path(), "portable");
    fl_cpu_isa_set_cap(FL_CPU_ISA_COUNT - 1); /* above this CPU: clamped to what it runs */
    CHECK_EQ_INT(fl_cpu_isa_active(), top);
    fl_cpu_isa_set_cap(-1);
    CHECK_EQ_INT(fl_cpu_isa_active(), before);
}

/* A FASTLORA_CPU_ISA the CPU cannot honour is one line and exit 2 from every program, before any
 * work: a test run under it would test another path. */
TEST(cpu_isa_env_refused_in_one_line) {
    if (!fl_test_bin()) SKIP("FASTLORA_BIN not set");
    const char *saved = getenv("FASTLORA_CPU_ISA");
    char *keep = saved ? strdup(saved) : NULL;
    char out[4096];
    setenv("FASTLORA_CPU_ISA", "avx9", 1);
    int rc = fl_test_run_cli(out, sizeof out, "gpus");
    CHECK_EQ_INT(rc, 2);
    CHECK_STR_CONTAINS(out, "FASTLORA_CPU_ISA='avx9' is not a CPU kernel level");
    CHECK_MSG(strchr(out, '\n') == strrchr(out, '\n'), "more than one line: %s", out);
    if (fl_cpu_isa_detected() < FL_CPU_ISA_AVX512_BF16) {
        setenv("FASTLORA_CPU_ISA", "avx512bf16", 1);
        rc = fl_test_run_cli(out, sizeof out, "gpus");
        CHECK_EQ_INT(rc, 2);
        CHECK_STR_CONTAINS(out, "this CPU cannot run that path");
    }
    setenv("FASTLORA_CPU_ISA", "portable", 1); /* every CPU runs the portable path */
    rc = fl_test_run_cli(out, sizeof out, "gpus");
    CHECK_EQ_INT(rc, 0);
    setenv("FASTLORA_CPU_ISA", "", 1); /* empty (FASTLORA_CPU_ISA= in a script): as unset */
    rc = fl_test_run_cli(out, sizeof out, "gpus");
    CHECK_MSG(rc == 0, "FASTLORA_CPU_ISA='' refused: %s", out);
    if (keep) setenv("FASTLORA_CPU_ISA", keep, 1);
    else unsetenv("FASTLORA_CPU_ISA");
    free(keep);
}

/* FASTLORA_CPU_GEMM (gemm_bf16.h): an unknown value, or `onednn` in a build without oneDNN, is
 * refused in one line before any work; the known ones run. */
TEST(cpu_gemm_env_refused_in_one_line) {
    if (!fl_test_bin()) SKIP("FASTLORA_BIN not set");
    const char *saved = getenv("FASTLORA_CPU_GEMM");
    char *keep = saved ? strdup(saved) : NULL;
    char out[4096];
    setenv("FASTLORA_CPU_GEMM", "mkl", 1);
    int rc = fl_test_run_cli(out, sizeof out, "gpus");
    CHECK_EQ_INT(rc, 2);
    CHECK_STR_CONTAINS(out, "FASTLORA_CPU_GEMM=mkl: not a CPU GEMM (expected auto, own or onednn)");
    CHECK_MSG(strchr(out, '\n') == strrchr(out, '\n'), "more than one line: %s", out);
    setenv("FASTLORA_CPU_GEMM", "onednn", 1);
    rc = fl_test_run_cli(out, sizeof out, "gpus");
    if (fl_onednn_built()) CHECK_MSG(rc == 0, "FASTLORA_CPU_GEMM=onednn refused: %s", out);
    else {
        CHECK_EQ_INT(rc, 2);
        CHECK_STR_CONTAINS(out, "this build has no oneDNN");
    }
    static const char *ok[] = {"own", "auto", ""};
    for (int i = 0; i < 3; i++) {
        setenv("FASTLORA_CPU_GEMM", ok[i], 1);
        rc = fl_test_run_cli(out, sizeof out, "gpus");
        CHECK_MSG(rc == 0, "FASTLORA_CPU_GEMM='%s' refused: %s", ok[i], out);
    }
    if (keep) setenv("FASTLORA_CPU_GEMM", keep, 1);
    else unsetenv("FASTLORA_CPU_GEMM");
    free(keep);
}

/* The weight-gradient kernel's instances on one input: the AVX2 and AVX-512 ones agree bit for bit
 * (same operations per element in the same order, rank_grad.c), the plain-C one within the f32
 * bound against a double sum: N products of size <= 1 summed in f32, error <= N·u·Σ|terms| <=
 * N²·u with u = 2^-24, plus the final scaled add. Ranks with every last-tile height of both. */
TEST(cpu_isa_rank_grad_instances_agree) {
    const int shapes[][3] = {{300, 16, 100}, {129, 64, 200}, {37, 11, 70}, {260, 5, 33}, {200, 13, 64}};
    fl_cpu_isa top = fl_cpu_isa_detected();
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int N = shapes[s][0], P = shapes[s][1], Q = shapes[s][2];
        float *X = malloc(sizeof(float) * N * P), *Y = malloc(sizeof(float) * N * Q);
        float *C0 = malloc(sizeof(float) * P * Q), *C[FL_CPU_ISA_COUNT];
        fl_rng_fill_uniform(X, (size_t)N * P, fl_rng_stream(5, s, 1, 0), -1, 1);
        fl_rng_fill_uniform(Y, (size_t)N * Q, fl_rng_stream(5, s, 2, 0), -1, 1);
        fl_rng_fill_uniform(C0, (size_t)P * Q, fl_rng_stream(5, s, 3, 0), -1, 1);
        for (int isa = 0; isa <= (int)top && isa <= FL_CPU_ISA_AVX512; isa++) {
            C[isa] = malloc(sizeof(float) * P * Q);
            memcpy(C[isa], C0, sizeof(float) * P * Q);
            fl_cpu_isa_set_cap(isa);
            fl_rank_grad_tn(C[isa], Q, 0, X, P, Y, Q, 0.75f, (size_t)N, P, Q);
        }
        fl_cpu_isa_set_cap(-1);
        double worst = 0, bound = 0.75 * (double)N * N * 0x1p-24 + 2 * 0x1p-24 * (1 + 0.75 * N);
        for (int p = 0; p < P; p++)
            for (int q = 0; q < Q; q++) {
                double acc = 0;
                for (int n = 0; n < N; n++) acc += (double)X[n * P + p] * Y[n * Q + q];
                double want = C0[p * Q + q] + 0.75 * acc, e = fabs(C[FL_CPU_ISA_PORTABLE][p * Q + q] - want);
                worst = e > worst ? e : worst;
            }
        CHECK_MSG(worst <= bound, "N=%d P=%d Q=%d: portable max error %g > %g", N, P, Q, worst, bound);
        if (top >= FL_CPU_ISA_AVX512)
            CHECK_MSG(!memcmp(C[FL_CPU_ISA_AVX2], C[FL_CPU_ISA_AVX512], sizeof(float) * P * Q),
                      "N=%d P=%d Q=%d: the AVX2 and AVX-512 instances differ", N, P, Q);
        for (int isa = 0; isa <= (int)top && isa <= FL_CPU_ISA_AVX512; isa++) free(C[isa]);
        free(X); free(Y); free(C0);
    }
}

/* The default dtype per CPU class, from the measurements select.c cites: bf16 only where the bf16
 * dot product outruns the f32 FMA (AMD with AVX512_BF16); every class says why. */
TEST(cpu_default_dtype_per_cpu_class) {
    const struct { int isa, amd, amx; const char *dtype, *says; } cls[] = {
        {FL_CPU_ISA_AVX512_BF16, 0, 1, "bf16", "AMX tiles"},        /* Sapphire Rapids + oneDNN */
        {FL_CPU_ISA_AVX512_BF16, 1, 0, "bf16", "twice the work"},   /* Zen 4 / Zen 5 */
        {FL_CPU_ISA_AVX512_BF16, 0, 0, "f32", "f32 FMA rate"},      /* Cooper Lake; Sapphire Rapids without oneDNN */
        {FL_CPU_ISA_AVX512, 0, 0, "f32", "widens"},                 /* Skylake-X, Ice Lake */
        {FL_CPU_ISA_AVX2, 1, 0, "f32", "widens"},                   /* Zen 3 */
        {FL_CPU_ISA_AVX2, 0, 0, "f32", "widens"},                   /* Haswell .. Alder Lake */
        {FL_CPU_ISA_PORTABLE, 0, 0, "f32", "portable"},             /* no x86 vector units */
    };
    for (size_t i = 0; i < sizeof cls / sizeof cls[0]; i++) {
        const char *why = NULL, *d = fl_cpu_default_dtype_for(cls[i].isa, cls[i].amd, cls[i].amx, &why);
        CHECK_MSG(!strcmp(d, cls[i].dtype), "class %zu: %s, expected %s", i, d, cls[i].dtype);
        CHECK_STR_CONTAINS(why, cls[i].says);
        CHECK_STR_CONTAINS(why, cls[i].dtype[0] == 'b' ? "--dtype f32" : "--dtype bf16");
    }
    /* the backend a plain `--device cpu` gets is the one the rule names, and follows the cap */
    for (int cap = -1; cap <= (int)FL_CPU_ISA_AVX2; cap++) {
        fl_cpu_isa_set_cap(cap);
        const fl_backend *be = NULL;
        CHECK_EQ_INT(fl_backend_select_dtype("cpu", NULL, &be), 0);
        const char *d = fl_cpu_default_dtype(NULL);
        CHECK(be == (!strcmp(d, "bf16") ? fl_backend_cpu_bf16() : fl_backend_cpu()));
        if (cap >= 0) CHECK(!strcmp(d, "f32")); /* AVX2 and below: f32 on every vendor */
    }
    fl_cpu_isa_set_cap(-1);
}
