/* tile_gemm.c — packing and the micro-kernel behind tile_gemm.h: C = / += A · B for the
 * attention tiles, B in panels of 16 columns packed once by the caller, A read in place.
 *
 * The AVX2 + FMA kernel keeps a 6 × 16 block of C in 12 ymm accumulators; per step p it loads the
 * panel's row p (two ymm), broadcasts A(i, p) for its six rows and issues 12 FMAs — FMA-bound, like
 * the micro-kernel of an sgemm, but with no per-call packing of either operand: at the attention's
 * inner dimension (k = head size 64, or 64 query rows) the library sgemm it replaces spent about a
 * fifth of its time packing. The kernel is chosen at run time (a build without -march=native
 * still gets it); elsewhere a plain C loop computes the same sums in the same order (without fused
 * multiply-adds). Blocks: the panels in the outer loop (one panel, k × 16 floats, stays in L1
 * while the rows stream past). One core of a Zen 3 (dev/cpu/bench_tile_gemm.c, operands in L1):
 * 81 GFLOP/s at k = 64 and 92 at k = 256 with the loop over p unrolled 4 times, 51 and 63 without. */
#include "backend/cpu/tile_gemm.h"

#include "backend/cpu/cpu_isa.h"

#include <string.h>

enum { MR = 6 }; /* rows of C per micro-kernel call */

void tile_pack_transposed(float *dst, const float *x, int64_t ld, int rows, int cols) {
    int64_t padded = tg_round_up(rows);
    for (int64_t r0 = 0; r0 < padded; r0 += TG_NR) {
        float *panel = dst + r0 * cols; /* panel r0 / TG_NR: (cols × TG_NR) */
        for (int p = 0; p < cols; p++)
            for (int j = 0; j < TG_NR; j++) panel[(int64_t)p * TG_NR + j] = r0 + j < rows ? x[(r0 + j) * ld + p] : 0.0f;
    }
}

void tile_pack_columns(float *dst, const float *x, int64_t ld, int rows, int cols) {
    int64_t padded = tg_round_up(cols);
    for (int64_t c0 = 0; c0 < padded; c0 += TG_NR) {
        float *panel = dst + c0 * rows; /* panel c0 / TG_NR: (rows × TG_NR) */
        int width = cols - c0 < TG_NR ? (int)(cols - c0) : TG_NR;
        for (int p = 0; p < rows; p++) {
            float *row = panel + (int64_t)p * TG_NR;
            memcpy(row, x + (int64_t)p * ld + c0, sizeof(float) * (size_t)width);
            for (int j = width; j < TG_NR; j++) row[j] = 0.0f;
        }
    }
}

/* Writes the first `cols` of a 16-wide block of sums into C's row. */
static inline void store_row(float *c, const float *sums, int cols, int accumulate) {
    for (int j = 0; j < cols; j++) c[j] = accumulate ? c[j] + sums[j] : sums[j];
}

/* -------------------------------------------------------------- portable reference kernel */

static void block_portable(int mr, int cols, int k, const float *a, int64_t a_row, int64_t a_col, const float *panel,
                           float *c, int64_t ldc, int accumulate) {
    for (int i = 0; i < mr; i++) {
        float sums[TG_NR] = {0};
        for (int p = 0; p < k; p++) {
            float x = a[i * a_row + p * a_col];
            for (int j = 0; j < TG_NR; j++) sums[j] += x * panel[(int64_t)p * TG_NR + j];
        }
        store_row(c + i * ldc, sums, cols, accumulate);
    }
}

/* ------------------------------------------------------------------------- AVX2 + FMA kernel */
#if defined(__x86_64__)
#include <immintrin.h>
#define TGT __attribute__((target("avx2,fma")))

/* One (mr ≤ 6) × 16 block of C. The 12 accumulators are named variables (an array of them is
 * kept in memory by the compiler); rows past mr re-read row mr − 1 and are not stored. */
TGT static void block_avx2(int mr, int cols, int k, const float *a, int64_t a_row, int64_t a_col, const float *panel,
                           float *c, int64_t ldc, int accumulate) {
    const float *a0 = a, *a1 = a + (mr > 1 ? 1 : 0) * a_row, *a2 = a + (mr > 2 ? 2 : mr - 1) * a_row;
    const float *a3 = a + (mr > 3 ? 3 : mr - 1) * a_row, *a4 = a + (mr > 4 ? 4 : mr - 1) * a_row;
    const float *a5 = a + (mr > 5 ? 5 : mr - 1) * a_row;
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
    __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
    #pragma GCC unroll 4
    for (int p = 0; p < k; p++, panel += TG_NR) {
        __m256 b0 = _mm256_loadu_ps(panel), b1 = _mm256_loadu_ps(panel + 8), x;
        int64_t at = p * a_col;
#define ROW(i)                                   \
        x = _mm256_broadcast_ss(a##i + at);      \
        c##i##0 = _mm256_fmadd_ps(x, b0, c##i##0); \
        c##i##1 = _mm256_fmadd_ps(x, b1, c##i##1);
        ROW(0) ROW(1) ROW(2) ROW(3) ROW(4) ROW(5)
#undef ROW
    }
    __m256 sums[MR][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};
    for (int i = 0; i < mr; i++) {
        float *ci = c + i * ldc;
        if (cols == TG_NR) {
            __m256 lo = sums[i][0], hi = sums[i][1];
            if (accumulate) {
                lo = _mm256_add_ps(_mm256_loadu_ps(ci), lo);
                hi = _mm256_add_ps(_mm256_loadu_ps(ci + 8), hi);
            }
            _mm256_storeu_ps(ci, lo);
            _mm256_storeu_ps(ci + 8, hi);
        } else {
            float row[TG_NR];
            _mm256_storeu_ps(row, sums[i][0]);
            _mm256_storeu_ps(row + 8, sums[i][1]);
            store_row(ci, row, cols, accumulate);
        }
    }
}

TGT static void tile_gemm_avx2(int m, int n, int k, const float *a, int64_t a_row, int64_t a_col, const float *b,
                               int64_t b_panel, float *c, int64_t ldc, int accumulate) {
    for (int j0 = 0; j0 < n; j0 += TG_NR) {
        const float *panel = b + (int64_t)(j0 / TG_NR) * b_panel;
        int cols = n - j0 < TG_NR ? n - j0 : TG_NR;
        for (int i0 = 0; i0 < m; i0 += MR)
            block_avx2(m - i0 < MR ? m - i0 : MR, cols, k, a + i0 * a_row, a_row, a_col, panel, c + i0 * ldc + j0, ldc,
                       accumulate);
    }
}

static int have_avx2_fma(void) { return fl_cpu_isa_active() >= FL_CPU_ISA_AVX2; }
#endif

void tile_gemm_portable(int m, int n, int k, const float *a, int64_t a_row, int64_t a_col, const float *b,
                        int64_t b_panel, float *c, int64_t ldc, int accumulate) {
    for (int j0 = 0; j0 < n; j0 += TG_NR) {
        const float *panel = b + (int64_t)(j0 / TG_NR) * b_panel;
        int cols = n - j0 < TG_NR ? n - j0 : TG_NR;
        for (int i0 = 0; i0 < m; i0 += MR)
            block_portable(m - i0 < MR ? m - i0 : MR, cols, k, a + i0 * a_row, a_row, a_col, panel, c + i0 * ldc + j0,
                           ldc, accumulate);
    }
}

void tile_gemm(int m, int n, int k, const float *a, int64_t a_row, int64_t a_col, const float *b, int64_t b_panel,
               float *c, int64_t ldc, int accumulate) {
#if defined(__x86_64__)
    if (have_avx2_fma()) {
        tile_gemm_avx2(m, n, k, a, a_row, a_col, b, b_panel, c, ldc, accumulate);
        return;
    }
#endif
    tile_gemm_portable(m, n, k, a, a_row, a_col, b, b_panel, c, ldc, accumulate);
}
