/* gemm_nf4.c — NF4-weight GEMMs (see gemm_nf4.h): tiled dequantization to bf16 + the bf16 GEMM.
 *
 * Dequantization of one 64-block: scale s (f32, fl_nf4_block_scale), then for each packed byte the
 * high nibble (even element) and the low nibble (odd element) index the 16 NF4 values; value =
 * code · s in f32, rounded to nearest even into bf16 with integer arithmetic (not vcvtneps2bf16,
 * which would flush the denormal products of a tiny block to zero). The AVX2 path does 16 elements
 * per step: 8 bytes → 16 indices (interleaved high/low), two 8-entry vpermps table halves blended on
 * bit 3, one multiply, the rounding, one pack. Blocks that a tile cuts (cols not a multiple of 64)
 * and tails are done by the scalar path, which is the reference both are tested against.
 */
#include "backend/cpu/gemm_nf4.h"

#include <cblas.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_isa.h"
#include "backend/cpu/gemm_bf16.h"
#include "common/error.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HAVE_X86 1
#else
#define HAVE_X86 0
#endif

static int use_avx2(void) {
#if HAVE_X86
    return fl_cpu_isa_active() >= FL_CPU_ISA_AVX2;
#else
    return 0;
#endif
}

/* ---------------------------------------------------------------- dequantization */

static inline uint16_t bf16_rne(float v) {
    uint32_t u;
    memcpy(&u, &v, 4);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);   /* no NaN can occur: finite codes x finite scale */
}

/* Elements [e0, e1) of the flattening (all in block e0 / 64) at scale s, scalar. */
static void dequant_span(const uint8_t *packed, int64_t e0, int64_t e1, float s, uint16_t *dst) {
    const float *code = fl_nf4_code();
    for (int64_t e = e0; e < e1; e++) {
        uint8_t byte = packed[e / 2];
        dst[e - e0] = bf16_rne(code[e & 1 ? byte & 15 : byte >> 4] * s);
    }
}

#if HAVE_X86
/* One whole aligned 64-block: 32 bytes -> 64 bf16. */
__attribute__((target("avx2"))) static void dequant_block_avx2(const uint8_t *bytes, float s, uint16_t *dst) {
    const float *code = fl_nf4_code();
    const __m256 lut_lo = _mm256_loadu_ps(code), lut_hi = _mm256_loadu_ps(code + 8), vs = _mm256_set1_ps(s);
    const __m128i mask4 = _mm_set1_epi8(0x0f);
    const __m256i bias = _mm256_set1_epi32(0x7fff), one = _mm256_set1_epi32(1);
    for (int i = 0; i < 32; i += 8) {
        __m128i raw = _mm_loadl_epi64((const __m128i *)(bytes + i));
        __m128i idx = _mm_unpacklo_epi8(_mm_and_si128(_mm_srli_epi16(raw, 4), mask4), _mm_and_si128(raw, mask4));
        __m256i r[2];
        for (int h = 0; h < 2; h++) {
            __m256i q = _mm256_cvtepu8_epi32(h ? _mm_srli_si128(idx, 8) : idx);
            __m256 v = _mm256_blendv_ps(_mm256_permutevar8x32_ps(lut_lo, q), _mm256_permutevar8x32_ps(lut_hi, q),
                                        _mm256_castsi256_ps(_mm256_slli_epi32(q, 28)));
            __m256i u = _mm256_castps_si256(_mm256_mul_ps(v, vs));
            u = _mm256_add_epi32(u, _mm256_add_epi32(bias, _mm256_and_si256(_mm256_srli_epi32(u, 16), one)));
            r[h] = _mm256_srli_epi32(u, 16);
        }
        __m256i packed16 = _mm256_permute4x64_epi64(_mm256_packus_epi32(r[0], r[1]), 0xd8);
        _mm256_storeu_si256((__m256i *)(dst + 2 * i), packed16);
    }
}
#endif

void fl_nf4_dequantize_rows_bf16(const fl_nf4_weight *W, int64_t r0, int64_t r1, uint16_t *dst) {
    int64_t e0 = r0 * W->cols, e1 = r1 * W->cols;
    int64_t b0 = e0 / FL_NF4_BLOCK, b1 = (e1 + FL_NF4_BLOCK - 1) / FL_NF4_BLOCK;
    int avx2 = use_avx2();
    (void)avx2;
    #pragma omp parallel for schedule(static) if (e1 - e0 > (1 << 16))
    for (int64_t b = b0; b < b1; b++) {
        float s = fl_nf4_block_scale(W, b);
        int64_t lo = b * FL_NF4_BLOCK > e0 ? b * FL_NF4_BLOCK : e0;
        int64_t hi = (b + 1) * FL_NF4_BLOCK < e1 ? (b + 1) * FL_NF4_BLOCK : e1;
#if HAVE_X86
        if (avx2 && hi - lo == FL_NF4_BLOCK) {
            dequant_block_avx2(W->packed + lo / 2, s, dst + (lo - e0));
            continue;
        }
#endif
        dequant_span(W->packed, lo, hi, s, dst + (lo - e0));
    }
}

/* ---------------------------------------------------------------- GEMMs */

#define TILE_ROWS 2048                 /* the bf16 kernel's column block (NC) */
#define TILE_BYTES ((size_t)64 << 20)

static _Thread_local void *scratch;
static _Thread_local size_t scratch_bytes;

static void *tile_buffer(size_t bytes) {
    if (bytes > scratch_bytes) {
        free(scratch);
        scratch = fl_malloc(bytes);
        scratch_bytes = bytes;
    }
    return scratch;
}

/* Rows of a (rows, cols) weight per tile: at most TILE_ROWS and TILE_BYTES of bf16, at least 32. */
static int64_t tile_rows(int64_t rows, int64_t cols) {
    int64_t fit = (int64_t)(TILE_BYTES / (2 * (size_t)(cols ? cols : 1)));
    if (fit > TILE_ROWS) fit = TILE_ROWS;
    if (fit < 32) fit = 32;
    return fit < rows ? fit : rows;
}

/* The tile loop of the four GEMMs. nn = 0 (forward): C[:, r:r+nr] = alpha·A·tileᵀ + beta·C[:, r:r+nr];
 * nn = 1 (input gradient): C += alpha·A[:, r:r+nr]·tile, the first tile applying beta. f32: tiles of
 * the f32 products code·scale (what bitsandbytes multiplies with compute dtype float32) through
 * sgemm, A in f32; else bf16 tiles (its compute dtype bfloat16) through the bf16 GEMM. */
static void nf4_gemm(int nn, int f32, int M, float alpha, const float *A, int lda, const fl_nf4_weight *W, float beta,
                     float *C, int ldc) {
    int64_t tr = tile_rows(W->rows, W->cols);
    size_t elems = (size_t)(tr * W->cols);
    void *buf = tile_buffer(elems * (f32 ? sizeof(float) : sizeof(uint16_t)));
    float *tile_f = buf;
    uint16_t *tile_h = buf;
    int K = (int)W->cols;
    if (W->rows == 0 && nn) { /* K = 0: C = beta·C */
        if (f32) cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, K, 0, alpha, A, lda, tile_f, K, beta, C, ldc);
        else fl_gemm_bf16_nn(M, K, 0, alpha, A, lda, tile_h, K, beta, C, ldc);
    }
    for (int64_t r = 0; r < W->rows; r += tr) {
        int64_t nr = W->rows - r < tr ? W->rows - r : tr;
        float b = nn && r > 0 ? 1.0f : beta;
        if (f32) fl_nf4_dequantize_rows(W, r, r + nr, tile_f, FL_F32);
        else fl_nf4_dequantize_rows_bf16(W, r, r + nr, tile_h);
        if (!nn && f32)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, (int)nr, K, alpha, A, lda, tile_f, K, b, C + r, ldc);
        else if (!nn)
            fl_gemm_bf16_nt(M, (int)nr, K, alpha, A, lda, tile_h, K, b, C + r, ldc);
        else if (f32)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, K, (int)nr, alpha, A + r, lda, tile_f, K, b, C, ldc);
        else
            fl_gemm_bf16_nn(M, K, (int)nr, alpha, A + r, lda, tile_h, K, b, C, ldc);
    }
}

void fl_gemm_nf4_nt(int M, float alpha, const float *A, int lda, const fl_nf4_weight *W, float beta, float *C,
                    int ldc) {
    nf4_gemm(0, 0, M, alpha, A, lda, W, beta, C, ldc);
}

void fl_gemm_nf4_nn(int M, float alpha, const float *A, int lda, const fl_nf4_weight *W, float beta, float *C,
                    int ldc) {
    nf4_gemm(1, 0, M, alpha, A, lda, W, beta, C, ldc);
}

void fl_gemm_nf4_f32_nt(int M, float alpha, const float *A, int lda, const fl_nf4_weight *W, float beta, float *C,
                        int ldc) {
    nf4_gemm(0, 1, M, alpha, A, lda, W, beta, C, ldc);
}

void fl_gemm_nf4_f32_nn(int M, float alpha, const float *A, int lda, const fl_nf4_weight *W, float beta, float *C,
                        int ldc) {
    nf4_gemm(1, 1, M, alpha, A, lda, W, beta, C, ldc);
}

size_t fl_gemm_nf4_scratch_bytes(int64_t rows, int64_t cols, int f32) {
    return (size_t)(tile_rows(rows, cols) * cols) * (f32 ? sizeof(float) : sizeof(uint16_t));
}
