/* cpu_isa.h — which instruction-set path the CPU kernels take, and the override that forces one.
 *
 * Every CPU kernel with more than one implementation (the bf16 GEMM, the attention tiles, the NF4
 * dequantization, the LoRA weight-gradient kernel) asks fl_cpu_isa_active() which to run. That is
 * the best level this CPU executes (fl_cpu_isa_detected), unless FASTLORA_CPU_ISA names a lower
 * one: then every kernel runs the path it would run on a CPU that stops at that level. So one
 * machine runs the paths of every CPU class below its own (`make isa-test` runs the kernel tests
 * under each), and a difference between paths shows wherever the tests run, not only on the CPU
 * that has the path. The levels are ordered; each includes the ones before it:
 *
 *   portable    the plain-C kernels (compiled for the build's target, no intrinsics)
 *   avx2        AVX2 + FMA (Haswell, Zen 1-3)
 *   avx512      AVX-512 F/BW/VL (Skylake-X, Ice Lake)
 *   avx512bf16  + AVX512_BF16 dot products (Cooper Lake, Sapphire Rapids, Zen 4/5)
 *
 * What it does not change: OpenBLAS picks its own kernels (OPENBLAS_CORETYPE), and code the
 * compiler vectorizes by itself follows the build's -march. Not the dtype choice (select.c reads
 * the level this returns). */
#ifndef FL_CPU_ISA_H
#define FL_CPU_ISA_H

typedef enum {
    FL_CPU_ISA_PORTABLE,
    FL_CPU_ISA_AVX2,
    FL_CPU_ISA_AVX512,
    FL_CPU_ISA_AVX512_BF16,
    FL_CPU_ISA_COUNT
} fl_cpu_isa;

/* The best level this CPU executes. */
fl_cpu_isa fl_cpu_isa_detected(void);
/* The level the kernels run: the detected one, capped by FASTLORA_CPU_ISA (read once) or by
 * fl_cpu_isa_set_cap. An unknown or unexecutable FASTLORA_CPU_ISA is ignored here; programs call
 * fl_cpu_isa_check_env first, which reports it. */
fl_cpu_isa fl_cpu_isa_active(void);
/* "portable", "avx2", "avx512", "avx512bf16". */
const char *fl_cpu_isa_name(fl_cpu_isa isa);
/* The level named s, or -1. */
int fl_cpu_isa_parse(const char *s);
/* 0 when FASTLORA_CPU_ISA is unset or names a level this CPU executes; else an input error (one
 * line: the value, the levels this CPU has). */
int fl_cpu_isa_check_env(void);
/* Caps the active level (tests): a level above the detected one is clamped to it; -1 restores the
 * environment's cap. Not thread-safe: call between kernel calls. */
void fl_cpu_isa_set_cap(int isa);

#endif
