/* cpu_isa.c — the CPU's instruction-set level and the FASTLORA_CPU_ISA cap (see cpu_isa.h). */
#include "backend/cpu/cpu_isa.h"

#include <stdlib.h>
#include <string.h>

#include "common/error.h"

static const char *const isa_names[FL_CPU_ISA_COUNT] = {"portable", "avx2", "avx512", "avx512bf16"};

fl_cpu_isa fl_cpu_isa_detected(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return FL_CPU_ISA_PORTABLE;
    if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") ||
        !__builtin_cpu_supports("avx512vl"))
        return FL_CPU_ISA_AVX2;
    if (!__builtin_cpu_supports("avx512bf16")) return FL_CPU_ISA_AVX512;
    return FL_CPU_ISA_AVX512_BF16;
#else
    return FL_CPU_ISA_PORTABLE;
#endif
}

const char *fl_cpu_isa_name(fl_cpu_isa isa) {
    return (unsigned)isa < FL_CPU_ISA_COUNT ? isa_names[isa] : "unknown";
}

int fl_cpu_isa_parse(const char *s) {
    for (int i = 0; s && i < FL_CPU_ISA_COUNT; i++)
        if (!strcmp(s, isa_names[i])) return i;
    return -1;
}

/* The cap FASTLORA_CPU_ISA sets, or -1 (unset, unknown or above this CPU). */
static int env_cap(void) {
    static int cached = -2;
    if (cached == -2) {
        int level = fl_cpu_isa_parse(getenv("FASTLORA_CPU_ISA"));
        cached = level >= 0 && level <= (int)fl_cpu_isa_detected() ? level : -1;
    }
    return cached;
}

static int test_cap = -1;

void fl_cpu_isa_set_cap(int isa) { test_cap = isa; }

fl_cpu_isa fl_cpu_isa_active(void) {
    int level = (int)fl_cpu_isa_detected();
    int cap = test_cap >= 0 ? test_cap : env_cap();
    return (fl_cpu_isa)(cap >= 0 && cap < level ? cap : level);
}

int fl_cpu_isa_check_env(void) {
    const char *s = getenv("FASTLORA_CPU_ISA");
    if (!s || !*s) return 0; /* unset or empty (FASTLORA_CPU_ISA= in a script): the CPU's own level */
    fl_cpu_isa top = fl_cpu_isa_detected();
    int level = fl_cpu_isa_parse(s);
    char have[64] = "";
    for (int i = 0; i <= (int)top; i++) {
        strcat(have, i ? ", " : "");
        strcat(have, isa_names[i]);
    }
    if (level < 0)
        return fl_input_error("FASTLORA_CPU_ISA='%s' is not a CPU kernel level (expected one of %s; this CPU runs %s)",
                              s, "portable, avx2, avx512, avx512bf16", have);
    if (level > (int)top)
        return fl_input_error("FASTLORA_CPU_ISA=%s: this CPU cannot run that path (it runs %s)", s, have);
    return 0;
}
