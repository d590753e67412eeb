/* gemm_nf4.h — GEMMs with an NF4 weight on the CPU: the frozen projection stays in 4 bits and is
 * dequantized to bf16 tile by tile, right before the bf16 GEMM (gemm_bf16.h) consumes the tile.
 *
 * Numerically each call is the bf16 GEMM applied to fl_nf4_dequantize(W, BF16) — the bf16 values
 * bitsandbytes' dequantize_4bit gives for compute dtype bf16 — so the NF4 path inherits the bf16
 * kernel's contract (A rounded to bf16, exact products, f32 sums) and its speed on AVX512_BF16.
 * Tiles are row slices of W (at most 2048 rows, the bf16 kernel's column block, and 64 MB), held
 * in a per-thread scratch buffer that grows to the largest tile seen. Design and figures:
 * docs/QUANT.md. Not the quantizer (quant/nf4.h).
 */
#ifndef FL_GEMM_NF4_H
#define FL_GEMM_NF4_H

#include "quant/nf4.h"

/* Forward: C (M, OC) = alpha · bf16(A) (M, IC) · Wᵀ + beta · C, W NF4 (OC, IC) (nn.Linear layout). */
void fl_gemm_nf4_nt(int M, float alpha, const float *A, int lda, const fl_nf4_weight *W, float beta, float *C,
                    int ldc);
/* Input gradient: C (M, IC) = alpha · bf16(A) (M, OC) · W + beta · C, W NF4 (OC, IC). */
void fl_gemm_nf4_nn(int M, float alpha, const float *A, int lda, const fl_nf4_weight *W, float beta, float *C,
                    int ldc);

/* The same two GEMMs for the f32 reference backend: tiles of the f32 dequantization (code · scale,
 * not rounded further: what bitsandbytes multiplies with bnb_4bit_compute_dtype float32) times A in
 * f32, by sgemm. */
void fl_gemm_nf4_f32_nt(int M, float alpha, const float *A, int lda, const fl_nf4_weight *W, float beta, float *C,
                        int ldc);
void fl_gemm_nf4_f32_nn(int M, float alpha, const float *A, int lda, const fl_nf4_weight *W, float beta, float *C,
                        int ldc);
/* Bytes of the tile scratch (per calling thread) a GEMM with a (rows, cols) weight allocates (f32: the
 * f32 variants): the planner's figure. */
size_t fl_gemm_nf4_scratch_bytes(int64_t rows, int64_t cols, int f32);

/* Rows [r0, r1) of W dequantized to bf16 into dst ((r1 - r0), cols) row-major; equal bit for bit to
 * the matching slice of fl_nf4_dequantize(W, BF16). AVX2 where the CPU has it, else portable C. */
void fl_nf4_dequantize_rows_bf16(const fl_nf4_weight *W, int64_t r0, int64_t r1, uint16_t *dst);

/* The dequantization follows the CPU kernel level: fl_cpu_isa_set_cap(FL_CPU_ISA_PORTABLE)
 * (cpu_isa.h) forces the portable one. */

#endif
