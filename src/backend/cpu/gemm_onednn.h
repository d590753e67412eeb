/* gemm_onednn.h — the bf16 GEMM of gemm_bf16.h on oneDNN's matmul primitive, for the CPUs whose
 * matrix units oneDNN drives and fastlora's kernels do not (AMX on Sapphire Rapids and later:
 * `brg:avx512_core_amx`); and the f32 reference backend's GEMMs where oneDNN's f32 matmul outruns
 * OpenBLAS's sgemm (AVX2). Which calls come here is gemm_bf16.c's choice
 * (docs/CPU-GEMM.md).
 *
 * Same function as fl_gemm_bf16_nt / _nn: A f32 rounded to bf16 (round-to-nearest-even, NaN kept:
 * fl_f32_to_bf16, before the call), B bf16 read in place through strides, f32 accumulation, beta
 * as oneDNN's sum post-op. Only in builds with oneDNN (FL_HAVE_ONEDNN: the Makefile finds
 * oneapi/dnnl/dnnl.h, oneDNN 2.x or 3.x); elsewhere every call is declined.
 * Not here: which GEMM a call takes (gemm_bf16.c), fastlora's own kernels (gemm_bf16_*.c).
 */
#ifndef FL_GEMM_ONEDNN_H
#define FL_GEMM_ONEDNN_H

#include <stdint.h>

/* 1 when this build links oneDNN. */
int fl_onednn_built(void);
/* oneDNN's instruction set on this CPU ("avx512_core_amx", "avx512_core_bf16", "avx2", ...), after
 * the cap below; "absent" in builds without oneDNN. Starts oneDNN (the cap is fixed from then on). */
const char *fl_onednn_isa(void);
/* 1 when oneDNN runs its matmuls on AMX tiles here. */
int fl_onednn_has_amx(void);
/* The oneDNN version, "2.6.3" say; "absent" without it. */
const char *fl_onednn_version(void);

/* C (M, N) = alpha · bf16(A) · op(B) + beta · C, op(B) = Bᵀ with B (N, K) when trans_b, else B
 * (K, N); the arguments of fl_gemm_bf16_nt / _nn, M, N, K > 0. 0 when computed; -1 when declined
 * (no oneDNN, alpha != 1, called inside an OpenMP parallel region, or oneDNN refused the shape):
 * the caller computes it then, nothing was written (a failure while oneDNN runs is fatal).
 * oneDNN's instruction set is capped when it starts to the active CPU kernel level
 * (FASTLORA_CPU_ISA, cpu_isa.h) if that is below this CPU's own; otherwise ONEDNN_MAX_CPU_ISA,
 * oneDNN's own variable, applies. Thread-safe (one call at a time). */
int fl_onednn_gemm_bf16(int trans_b, int M, int N, int K, float alpha, const float *A, int lda, const uint16_t *B,
                        int ldb, float beta, float *C, int ldc);

/* C (M, N) = alpha · A · op(B) + beta · C in f32, the arguments of cblas_sgemm (row-major, A not
 * transposed, B transposed when trans_b), M, N, K > 0. 0 when computed; -1 when declined (no oneDNN,
 * inside an OpenMP parallel region, alpha != 1 with oneDNN 3.x, or oneDNN refused the shape):
 * nothing was written then. Same cap and locking as fl_onednn_gemm_bf16. */
int fl_onednn_gemm_f32(int trans_b, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
                       float beta, float *C, int ldc);

/* How many calls oneDNN computed so far, f32 and bf16 (tests); and of those the bf16 ones. */
unsigned long fl_onednn_calls(void);
unsigned long fl_onednn_bf16_calls(void);

#endif
