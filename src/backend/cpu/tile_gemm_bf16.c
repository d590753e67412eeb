/* tile_gemm_bf16.c — packing and the micro-kernel behind tile_gemm_bf16.h: C = / += A · B for the
 * bf16 backend's attention tiles, both operands as bf16 pair words, f32 sums.
 *
 * The AVX512_BF16 kernel keeps an 8 × 32 block of C in 16 zmm accumulators; per pair p it loads
 * the two panels' word rows (two zmm), broadcasts A's word for each of its eight rows and issues
 * 16 vdpbf16ps, each two multiply-adds per lane — twice the products of the f32 tiles' FMA kernel
 * per instruction. The packings a tile repeats (its rows of P and dS, and those two as panels)
 * are vectorized too: their cost is a fraction of the tile's products only when they run at
 * vector speed. Elsewhere plain C computes the same sums from the same words (the products of two
 * bf16 are exact in f32; only the order inside one pair's two products may differ). */
#include "backend/cpu/tile_gemm_bf16.h"

#include "backend/cpu/cpu_isa.h"
#include "common/dtype.h"

enum { MR = 8 }; /* rows of C per micro-kernel call */

static inline uint32_t pair_word(float lo, float hi) {
    return (uint32_t)fl_f32_to_bf16(lo) | (uint32_t)fl_f32_to_bf16(hi) << 16;
}

/* ------------------------------------------------------------------ portable packing */

static void pack_rows_portable(uint32_t *dst, int64_t ldw, const float *x, int64_t ld, int rows, int cols) {
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (int64_t)r * ld;
        uint32_t *d = dst + (int64_t)r * ldw;
        for (int c = 0; c + 1 < cols; c += 2) d[c / 2] = pair_word(xr[c], xr[c + 1]);
        if (cols % 2) d[cols / 2] = pair_word(xr[cols - 1], 0.0f);
    }
}

static void pack_panels_portable(uint32_t *dst, int64_t panel_words, const float *x, int64_t ld, int rows, int cols) {
    int64_t padded = tg_round_up(cols);
    for (int64_t c0 = 0; c0 < padded; c0 += TG_NR) {
        uint32_t *panel = dst + c0 / TG_NR * panel_words;
        for (int r = 0; r < rows; r += 2) {
            const float *lo = x + (int64_t)r * ld, *hi = r + 1 < rows ? lo + ld : NULL;
            uint32_t *d = panel + (int64_t)(r / 2) * TG_NR;
            for (int j = 0; j < TG_NR; j++) {
                int64_t c = c0 + j;
                d[j] = c < cols ? pair_word(lo[c], hi ? hi[c] : 0.0f) : 0u;
            }
        }
    }
}

static void pack_rows_transposed_portable(uint32_t *dst, int64_t ldw, const float *x, int64_t ld, int rows, int cols) {
    for (int r = 0; r < rows; r += 2) {
        const float *lo = x + (int64_t)r * ld, *hi = r + 1 < rows ? lo + ld : NULL;
        for (int c = 0; c < cols; c++) dst[(int64_t)c * ldw + r / 2] = pair_word(lo[c], hi ? hi[c] : 0.0f);
    }
}

static void pack_panels_transposed_portable(uint32_t *dst, const float *x, int64_t ld, int rows, int cols) {
    int64_t padded = tg_round_up(rows), kw = tg16_words(cols);
    for (int64_t r0 = 0; r0 < padded; r0 += TG_NR) {
        uint32_t *panel = dst + r0 / TG_NR * kw * TG_NR;
        for (int j = 0; j < TG_NR; j++) {
            const float *xr = r0 + j < rows ? x + (r0 + j) * ld : NULL;
            for (int64_t p = 0; p < kw; p++) {
                int c = (int)(2 * p);
                panel[p * TG_NR + j] = xr ? pair_word(xr[c], c + 1 < cols ? xr[c + 1] : 0.0f) : 0u;
            }
        }
    }
}

/* ------------------------------------------------------------------- portable kernel */

void tile_gemm_bf16_portable(int m, int n, int k, const uint32_t *a, int64_t lda, const uint32_t *b,
                             int64_t b_panel, float *c, int64_t ldc, int accumulate) {
    int64_t kw = tg16_words(k);
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            const uint32_t *ai = a + (int64_t)i * lda, *bj = b + (int64_t)(j / TG_NR) * b_panel + j % TG_NR;
            float sum = 0.0f;
            for (int64_t p = 0; p < kw; p++) {
                uint32_t wa = ai[p], wb = bj[p * TG_NR];
                sum += fl_bf16_to_f32((uint16_t)wa) * fl_bf16_to_f32((uint16_t)wb) +
                       fl_bf16_to_f32((uint16_t)(wa >> 16)) * fl_bf16_to_f32((uint16_t)(wb >> 16));
            }
            float *cij = c + (int64_t)i * ldc + j;
            *cij = accumulate ? *cij + sum : sum;
        }
}

/* ------------------------------------------------------------------ AVX512_BF16 paths */
#if defined(__x86_64__)
#include <immintrin.h>
#define TGT __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

/* 16 words from two rows of 16 floats: word j = (lo[j], hi[j]). */
TGT static inline __m512i interleave16(__m512 lo, __m512 hi) {
    __m512i l = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(lo));
    __m512i h = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(hi));
    return _mm512_or_si512(l, _mm512_slli_epi32(h, 16));
}

TGT static void pack_rows_avx512(uint32_t *dst, int64_t ldw, const float *x, int64_t ld, int rows, int cols) {
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (int64_t)r * ld;
        uint32_t *d = dst + (int64_t)r * ldw;
        for (int c = 0; c < cols; c += 32) { /* 32 floats: one cvtne2ps, 16 words in order */
            int left = cols - c;
            __m512 lo = _mm512_maskz_loadu_ps(tg16_lane_mask(left), xr + c);
            __m512 hi = _mm512_maskz_loadu_ps(tg16_lane_mask(left - 16), xr + c + 16);
            __m512i w = (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
            _mm512_mask_storeu_epi32(d + c / 2, tg16_lane_mask((left + 1) / 2), w);
        }
    }
}

TGT static void pack_panels_avx512(uint32_t *dst, int64_t panel_words, const float *x, int64_t ld, int rows, int cols) {
    for (int c0 = 0; c0 < cols; c0 += TG_NR) {
        uint32_t *panel = dst + (int64_t)(c0 / TG_NR) * panel_words;
        __mmask16 m = tg16_lane_mask(cols - c0);
        for (int r = 0; r < rows; r += 2) {
            const float *lo = x + (int64_t)r * ld + c0;
            __m512 vlo = _mm512_maskz_loadu_ps(m, lo);
            __m512 vhi = r + 1 < rows ? _mm512_maskz_loadu_ps(m, lo + ld) : _mm512_setzero_ps();
            _mm512_storeu_si512((void *)(panel + (int64_t)(r / 2) * TG_NR), interleave16(vlo, vhi));
        }
    }
}

/* Xᵀ as rows: two rows of X at a time become, 16 columns at a time, the words of 16 rows of dst
 * (one word each, ldw apart); the words go through a vector store and out as scalars. */
TGT static void pack_rows_transposed_avx512(uint32_t *dst, int64_t ldw, const float *x, int64_t ld, int rows,
                                            int cols) {
    uint32_t w[16];
    for (int r = 0; r < rows; r += 2) {
        const float *lo = x + (int64_t)r * ld, *hi = lo + ld;
        for (int c0 = 0; c0 < cols; c0 += 16) {
            int n = cols - c0 < 16 ? cols - c0 : 16;
            __m512 vlo = _mm512_maskz_loadu_ps(tg16_lane_mask(n), lo + c0);
            __m512 vhi = r + 1 < rows ? _mm512_maskz_loadu_ps(tg16_lane_mask(n), hi + c0) : _mm512_setzero_ps();
            _mm512_storeu_si512((void *)w, interleave16(vlo, vhi));
            uint32_t *d = dst + (int64_t)c0 * ldw + r / 2;
            for (int j = 0; j < n; j++) d[(int64_t)j * ldw] = w[j];
        }
    }
}

/* Xᵀ as panels: each row of X is one column of a panel, its pair words (the row packing's) 16
 * apart; rows past `rows` up to the panel's end are zero columns. */
TGT static void pack_panels_transposed_avx512(uint32_t *dst, const float *x, int64_t ld, int rows, int cols) {
    int64_t padded = tg_round_up(rows), kw = tg16_words(cols);
    uint32_t w[16];
    for (int64_t r = 0; r < padded; r++) {
        uint32_t *col = dst + r / TG_NR * kw * TG_NR + r % TG_NR;
        if (r >= rows) {
            for (int64_t p = 0; p < kw; p++) col[p * TG_NR] = 0u;
            continue;
        }
        const float *xr = x + r * ld;
        for (int c = 0; c < cols; c += 32) { /* 32 floats: 16 words */
            int left = cols - c;
            __m512 lo = _mm512_maskz_loadu_ps(tg16_lane_mask(left), xr + c);
            __m512 hi = _mm512_maskz_loadu_ps(tg16_lane_mask(left - 16), xr + c + 16);
            _mm512_storeu_si512((void *)w, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
            int n = (left + 1) / 2 < 16 ? (left + 1) / 2 : 16;
            uint32_t *d = col + (int64_t)(c / 2) * TG_NR;
            for (int j = 0; j < n; j++) d[j * TG_NR] = w[j];
        }
    }
}

/* One (mr ≤ 8) × (16·NV) block of C; the last panel's first `cols` columns are stored. Rows past
 * mr re-read row mr − 1 and are not stored. */
#define BLOCK_FN(NAME, NV)                                                                                         \
    TGT static void NAME(int mr, int cols, int64_t kw, const uint32_t *a, int64_t lda, const uint32_t *b0,         \
                         const uint32_t *b1, float *c, int64_t ldc, int accumulate) {                             \
        const uint32_t *ar[MR];                                                                                   \
        for (int i = 0; i < MR; i++) ar[i] = a + (i < mr ? i : mr - 1) * lda;                                      \
        __m512 acc[MR][NV];                                                                                       \
        for (int i = 0; i < MR; i++)                                                                              \
            for (int v = 0; v < NV; v++) acc[i][v] = _mm512_setzero_ps();                                         \
        for (int64_t p = 0; p < kw; p++) {                                                                        \
            __m512bh bv[NV];                                                                                      \
            bv[0] = (__m512bh)_mm512_loadu_si512((const void *)(b0 + p * TG_NR));                                 \
            if (NV > 1) bv[NV - 1] = (__m512bh)_mm512_loadu_si512((const void *)(b1 + p * TG_NR));               \
            _Pragma("GCC unroll 8") for (int i = 0; i < MR; i++) {                                                \
                __m512bh x = (__m512bh)_mm512_set1_epi32((int)ar[i][p]);                                          \
                _Pragma("GCC unroll 2") for (int v = 0; v < NV; v++) acc[i][v] = _mm512_dpbf16_ps(acc[i][v], x, bv[v]); \
            }                                                                                                     \
        }                                                                                                         \
        for (int i = 0; i < mr; i++)                                                                              \
            for (int v = 0; v < NV; v++) {                                                                        \
                float *ci = c + i * ldc + 16 * v;                                                                 \
                __mmask16 m = v == NV - 1 ? tg16_lane_mask(cols) : (__mmask16)0xffff;                                     \
                __m512 s = acc[i][v];                                                                             \
                if (accumulate) s = _mm512_add_ps(_mm512_maskz_loadu_ps(m, ci), s);                               \
                _mm512_mask_storeu_ps(ci, m, s);                                                                  \
            }                                                                                                     \
    }
BLOCK_FN(block_nv1, 1)
BLOCK_FN(block_nv2, 2)
#undef BLOCK_FN

TGT static void tile_gemm_bf16_avx512(int m, int n, int k, const uint32_t *a, int64_t lda, const uint32_t *b,
                                      int64_t b_panel, float *c, int64_t ldc, int accumulate) {
    int64_t kw = tg16_words(k);
    for (int j0 = 0; j0 < n; j0 += 2 * TG_NR) {
        const uint32_t *p0 = b + (int64_t)(j0 / TG_NR) * b_panel;
        int two = n - j0 > TG_NR, cols = two ? n - j0 - TG_NR : n - j0;
        cols = cols > TG_NR ? TG_NR : cols;
        for (int i0 = 0; i0 < m; i0 += MR) {
            int mr = m - i0 < MR ? m - i0 : MR;
            if (two)
                block_nv2(mr, cols, kw, a + i0 * lda, lda, p0, p0 + b_panel, c + i0 * ldc + j0, ldc, accumulate);
            else
                block_nv1(mr, cols, kw, a + i0 * lda, lda, p0, p0, c + i0 * ldc + j0, ldc, accumulate);
        }
    }
}

static int have_bf16_dot(void) { return fl_cpu_isa_active() >= FL_CPU_ISA_AVX512_BF16; }
#endif

void tg16_pack_rows(uint32_t *dst, int64_t ldw, const float *x, int64_t ld, int rows, int cols) {
#if defined(__x86_64__)
    if (have_bf16_dot()) {
        pack_rows_avx512(dst, ldw, x, ld, rows, cols);
        return;
    }
#endif
    pack_rows_portable(dst, ldw, x, ld, rows, cols);
}

void tg16_pack_panels(uint32_t *dst, int64_t panel_words, const float *x, int64_t ld, int rows, int cols) {
#if defined(__x86_64__)
    if (have_bf16_dot()) {
        pack_panels_avx512(dst, panel_words, x, ld, rows, cols);
        return;
    }
#endif
    pack_panels_portable(dst, panel_words, x, ld, rows, cols);
}

void tg16_pack_rows_transposed(uint32_t *dst, int64_t ldw, const float *x, int64_t ld, int rows, int cols) {
#if defined(__x86_64__)
    if (have_bf16_dot()) {
        pack_rows_transposed_avx512(dst, ldw, x, ld, rows, cols);
        return;
    }
#endif
    pack_rows_transposed_portable(dst, ldw, x, ld, rows, cols);
}

void tg16_pack_panels_transposed(uint32_t *dst, const float *x, int64_t ld, int rows, int cols) {
#if defined(__x86_64__)
    if (have_bf16_dot()) {
        pack_panels_transposed_avx512(dst, x, ld, rows, cols);
        return;
    }
#endif
    pack_panels_transposed_portable(dst, x, ld, rows, cols);
}

void tile_gemm_bf16(int m, int n, int k, const uint32_t *a, int64_t lda, const uint32_t *b, int64_t b_panel,
                    float *c, int64_t ldc, int accumulate) {
#if defined(__x86_64__)
    if (have_bf16_dot()) {
        tile_gemm_bf16_avx512(m, n, k, a, lda, b, b_panel, c, ldc, accumulate);
        return;
    }
#endif
    tile_gemm_bf16_portable(m, n, k, a, lda, b, b_panel, c, ldc, accumulate);
}
