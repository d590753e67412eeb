/* tile_gemm_bf16.h — the attention tiles' small GEMMs on bf16 operands with f32 sums, for the
 * bf16 backend on CPUs with AVX512_BF16 (vdpbf16ps does two multiply-adds per f32 lane, twice an
 * f32 FMA's work). Not a general GEMM: no threading (callers run it inside their own parallel
 * loop), no cache blocking beyond one tile; not the f32 tiles (tile_gemm.h), which the reference
 * backend keeps.
 *
 * Words. Every packed operand holds bf16 pairs along the inner dimension k as 32-bit words: the
 * low half is k = 2p, the high half k = 2p + 1 (zero past an odd k), each value rounded from f32
 * to nearest even. So a product's k0 must be even to start inside a packed operand.
 *   A (m × k): rows of words, A(i, 2p..2p+1) at a[i·lda + p] (tg16_pack_rows for A = X,
 *              tg16_pack_rows_transposed for A = Xᵀ).
 *   B (k × n): panels of TG_NR columns; panel c is [ceil(k/2)][TG_NR] words, word (p, j) holding
 *              B(2p, c·TG_NR + j) and B(2p + 1, c·TG_NR + j); columns past n are zero
 *              (tg16_pack_panels for B = X, tg16_pack_panels_transposed for B = Xᵀ).
 * Each element of C is one f32 sum over the pairs in increasing order, whatever m, n and the
 * caller's threads; the products of two bf16 are exact in f32. */
#ifndef FL_TILE_GEMM_BF16_H
#define FL_TILE_GEMM_BF16_H

#include <stddef.h>
#include <stdint.h>

#include "backend/cpu/tile_gemm.h" /* TG_NR, tg_round_up */

/* The lane mask of the first n of 16 lanes (0 for n ≤ 0, all for n ≥ 16): an AVX-512 __mmask16. */
static inline uint16_t tg16_lane_mask(int n) { return n >= 16 ? (uint16_t)0xffff : n <= 0 ? 0 : (uint16_t)((1u << n) - 1); }

/* Words per row of a k-long operand. */
static inline int64_t tg16_words(int64_t k) { return (k + 1) / 2; }

/* A = X (rows × cols, row stride ld): dst[r·ldw + p] = (X[r][2p], X[r][2p+1]), p < words(cols). */
void tg16_pack_rows(uint32_t *dst, int64_t ldw, const float *x, int64_t ld, int rows, int cols);
/* A = Xᵀ (cols × rows): dst[c·ldw + p] = (X[2p][c], X[2p+1][c]), p < words(rows). */
void tg16_pack_rows_transposed(uint32_t *dst, int64_t ldw, const float *x, int64_t ld, int rows, int cols);
/* B = X (k = rows, n = cols): tg_round_up(cols) / TG_NR panels, panel stride panel_words
 * (≥ words(rows)·TG_NR); each panel's first words(rows)·TG_NR words are written. */
void tg16_pack_panels(uint32_t *dst, int64_t panel_words, const float *x, int64_t ld, int rows, int cols);
/* B = Xᵀ (k = cols, n = rows): tg_round_up(rows) / TG_NR panels of words(cols)·TG_NR words each,
 * back to back. */
void tg16_pack_panels_transposed(uint32_t *dst, const float *x, int64_t ld, int rows, int cols);

/* C (m × n, row stride ldc) = A · B, or += when accumulate is nonzero. A's rows at a (lda words
 * apart), B's panels at b, b_panel words apart. Runs vdpbf16ps where the CPU's kernel level has
 * it (cpu_isa.h), tile_gemm_bf16_portable elsewhere. */
void tile_gemm_bf16(int m, int n, int k, const uint32_t *a, int64_t lda, const uint32_t *b, int64_t b_panel,
                    float *c, int64_t ldc, int accumulate);
/* The same sums in plain C (exposed so the tests check it on every machine). */
void tile_gemm_bf16_portable(int m, int n, int k, const uint32_t *a, int64_t lda, const uint32_t *b,
                             int64_t b_panel, float *c, int64_t ldc, int accumulate);

#endif
