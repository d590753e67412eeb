/* tile_gemm.h — the small f32 GEMMs of the CPU attention's (query block × key tile) tiles, on
 * operands packed once per call instead of once per product. Not a general GEMM: no threading
 * (callers run it inside their own parallel loop), no blocking for caches beyond one tile.
 *
 * Layouts. The right-hand operand B (k × n) is packed in panels of TG_NR columns: panel c holds
 * B[p][c·TG_NR .. c·TG_NR + TG_NR − 1] for p = 0 .. k − 1, one row of TG_NR floats after another;
 * columns past n are zero. The left-hand operand A (m × k) is read in place through two strides,
 * A(i, p) = a[i·a_row + p·a_col], so a row-major matrix (a_row = ld, a_col = 1) and the transpose
 * of one (a_row = 1, a_col = ld) are both read without a copy. */
#ifndef FL_TILE_GEMM_H
#define FL_TILE_GEMM_H

#include <stddef.h>
#include <stdint.h>

#define TG_NR 16 /* columns per B panel */

static inline int64_t tg_round_up(int64_t n) { return (n + TG_NR - 1) / TG_NR * TG_NR; }

/* Panels of Xᵀ, for B = Xᵀ (k = cols, n = rows): X is (rows × cols) with row stride ld; dst holds
 * tg_round_up(rows) / TG_NR panels of (cols × TG_NR), panel stride cols·TG_NR; rows past `rows`
 * are zero. */
void tile_pack_transposed(float *dst, const float *x, int64_t ld, int rows, int cols);

/* Panels of X itself, for B = X (k = rows, n = cols): dst holds tg_round_up(cols) / TG_NR panels
 * of (rows × TG_NR), panel stride rows·TG_NR; columns past `cols` are zero. */
void tile_pack_columns(float *dst, const float *x, int64_t ld, int rows, int cols);

/* C (m × n, row stride ldc) = A · B, or += A · B when accumulate is nonzero. B's panels start at b,
 * panel c at b + c·b_panel, and its row p at + p·TG_NR (so a panel's rows k0 .. of a packed X are
 * b = packed + k0·TG_NR with the same panel stride). Only the n columns of C are written. Each
 * element of C is one sum over p in increasing order, whatever m, n and the caller's threads. */
void tile_gemm(int m, int n, int k, const float *a, int64_t a_row, int64_t a_col, const float *b, int64_t b_panel,
               float *c, int64_t ldc, int accumulate);

/* The same products in plain C: what tile_gemm runs on CPUs without AVX2 + FMA (exposed so the
 * tests check it on every machine). Same sums in the same order, rounded after each multiply. */
void tile_gemm_portable(int m, int n, int k, const float *a, int64_t a_row, int64_t a_col, const float *b,
                        int64_t b_panel, float *c, int64_t ldc, int accumulate);

#endif
