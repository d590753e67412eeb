/* gemm_bf16.h — bf16-input, f32-accumulate GEMM for the frozen base weights on the CPU.
 *
 * The weights are stored in bf16; the activations are f32 and are rounded to bf16
 * (round-to-nearest-even, like fl_f32_to_bf16) while they are packed. Products of two bf16 are
 * exact in f32; the sums are f32. On a CPU with AVX512_BF16 the work runs on `vdpbf16ps`
 * (gemm_bf16_avx512.c); with AVX2 + FMA on 256-bit FMAs of widened values (gemm_bf16_avx2.c);
 * elsewhere a portable C path computes the same thing, slower. The two ISA kernels share one
 * blocking and threading driver (gemm_bf16_blocked.c, gemm_bf16_kernels.h).
 * All paths parallelize with OpenMP inside (any thread count; nested calls run on one thread).
 * Design, blocking sizes and measured speed: docs/CPU-GEMM.md.
 */
#ifndef FL_GEMM_BF16_H
#define FL_GEMM_BF16_H

#include <stdint.h>

/* C (M, N) = alpha · bf16(A) (M, K) · Bᵀ + beta · C, with A f32 row-major (lda), B bf16 (N, K)
 * row-major (ldb) — i.e. B is an nn.Linear weight (out, in). f32 accumulation.
 * beta == 0 means C is not read. Any M, N, K >= 0 (K == 0 gives C = beta · C). */
void fl_gemm_bf16_nt(int M, int N, int K, float alpha, const float *A, int lda, const uint16_t *B, int ldb,
                     float beta, float *C, int ldc);
/* C (M, N) = alpha · bf16(A) (M, K) · B + beta · C, with B bf16 (K, N) row-major (ldb). */
void fl_gemm_bf16_nn(int M, int N, int K, float alpha, const float *A, int lda, const uint16_t *B, int ldb,
                     float beta, float *C, int ldc);

/* Which implementation runs these GEMMs, from FASTLORA_CPU_GEMM (read once):
 *   auto    (unset or empty) oneDNN's matmul (gemm_onednn.h) for the dense calls — N and K at
 *           least FL_GEMM_ONEDNN_MIN_NK, the frozen weights' shapes, not the LoRA side GEMMs with
 *           a rank-sized side — where oneDNN runs on AMX tiles and the kernel level is this CPU's
 *           own; fastlora's kernels elsewhere (the choice and its measurements: docs/CPU-GEMM.md)
 *   own     fastlora's kernels always
 *   onednn  oneDNN for every call it takes (alpha = 1, outside parallel regions)
 * 0 when the variable is unset or valid; else an input error (one line), as for an `onednn` in a
 * build without oneDNN. Programs call it at start, beside fl_cpu_isa_check_env. */
int fl_gemm_bf16_check_env(void);
#define FL_GEMM_ONEDNN_MIN_NK 256
enum { FL_GEMM_PROVIDER_AUTO, FL_GEMM_PROVIDER_OWN, FL_GEMM_PROVIDER_ONEDNN };
/* Overrides FASTLORA_CPU_GEMM (tests, measurements): one of the FL_GEMM_PROVIDER_*, or -1 to
 * restore it; returns the override it replaces (-1: none), to be set back. Not thread-safe: call
 * between GEMM calls. */
int fl_gemm_bf16_set_provider(int provider);
/* 1 when a call of this shape with alpha = 1 would run on oneDNN now. */
int fl_gemm_bf16_takes_onednn(int M, int N, int K);

/* The f32 reference backend's GEMMs (cpu_sgemm, cpu_ops.h: the projections and the LM head) under
 * the same variable: `own` keeps every call on OpenBLAS's sgemm, `onednn` sends every call oneDNN
 * takes to its f32 matmul, and `auto` the calls with K at least FL_GEMM_ONEDNN_MIN_NK and M at least
 * FL_GEMM_F32_ONEDNN_MIN_M — the frozen-weight products, the LM head and the LoRA x·Aᵀ and dout·B,
 * not the LoRA products that accumulate a rank-sized K into a wide output (xa·s·Bᵀ, dxa·A: OpenBLAS
 * ran those faster) — on the CPUs where oneDNN was measured faster in whole steps (AVX2 without
 * AVX-512: SmolLM2-135M 4 x 256 f32 +4%, docs/CPU-GEMM.md) and the kernel level is this CPU's own.
 * 1 when a call of this shape would run on oneDNN now; the path's name for run headers
 * ("OpenBLAS sgemm", "oneDNN avx2 f32 matmul (...)"). */
#define FL_GEMM_F32_ONEDNN_MIN_M 64
int fl_gemm_f32_takes_onednn(int M, int N, int K);
const char *fl_gemm_f32_path(void);

/* ---- internal: for tests and the kernel lab (dev/cpu/bench_gemm_bf16.c) ---- */

/* The path follows the CPU kernel level (cpu_isa.h): fl_cpu_isa_set_cap(FL_CPU_ISA_PORTABLE)
 * forces the portable one. */
/* 1 when calls currently run on the AVX512_BF16 kernel. */
int fl_gemm_bf16_uses_avx512(void);
/* The kernel calls currently run on: "avx512bf16", "avx2" or "portable"; "onednn avx512_core_amx"
 * (oneDNN's instruction set) when large calls go to oneDNN. */
const char *fl_gemm_bf16_path(void);

#endif
