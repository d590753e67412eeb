/* gemm_bf16_avx2.c — the bf16 GEMM's leaf for CPUs with AVX2 + FMA but no AVX512_BF16 (Zen 2/3,
 * Intel before Cooper Lake): micro-kernel, packing and block sizes for the same function as
 * gemm_bf16_avx512.c — A rounded to bf16 (RNE), B bf16, exact products, f32 sums — on 256-bit FMA.
 * Not the blocking and threading: gemm_bf16_blocked.c runs them.
 *
 * Without a bf16 dot-product instruction the products are f32 FMAs of widened values, so the B
 * block is widened to f32 once, when it is packed, and the micro-kernel is an sgemm kernel:
 *
 *   B micro-panel (NR = 16 columns of C, one K block): [k][16] f32 — two aligned loads per k.
 *     nt (B (N, K), an nn.Linear weight): 8 × 8 transposes of bf16 in registers, then widening;
 *     nn (B (K, N)): rows widened as they are.
 *   A micro-panel (MR = 6 rows of C, one K block): [k][6] f32, each value already rounded to bf16
 *     — 8 × 8 transposes of rounded rows (two rows of zeros), six values kept per k.
 *
 * Micro-kernel: a 6 × 16 tile of C in 12 ymm accumulators (+ 2 for B, 1 broadcast); per k 2 B
 * loads, 6 broadcasts from memory, 12 FMAs — FMA-bound (2 per cycle). Its blocks for the driver,
 * the AVX-512 file's scaled to 256-bit registers: K in equal blocks of at most KC = 768 (K = 576 +
 * LoRA columns is one, so C — the LM head's logits — is written once; the B micro-panel, up to
 * 48 KB, streams from L2 at 64 bytes per 12 FMAs, well within L2's 32 bytes per cycle, while the A
 * micro-panel stays in L1), MC = 96 rows per work item, NC = 2048 columns per B block; a B of at
 * most 4 MB packed by each thread for itself; one thread below 4 MFLOP.
 * Details and measurements: docs/CPU-GEMM.md.
 */
#include "backend/cpu/gemm_bf16_kernels.h"

#if defined(__x86_64__) || defined(__i386__) /* the whole file: only x86 has these instructions */

#include <immintrin.h>
#include <string.h>

#define TGT __attribute__((target("avx2,fma")))

#ifndef FL_G2_KC
#define FL_G2_KC 768  /* most k per block; K is split into equal blocks below it */
#endif
#ifndef FL_G2_MC
#define FL_G2_MC 96   /* rows per work item (multiple of MR) */
#endif
#ifndef FL_G2_NC
#define FL_G2_NC 2048 /* columns per packed B block (multiple of NR) */
#endif

enum { MR = 6, NR = 16, KC = FL_G2_KC, MC = FL_G2_MC, NC = FL_G2_NC };
_Static_assert(MC % MR == 0, "MC must be a multiple of MR");
_Static_assert(NC % NR == 0, "NC must be a multiple of NR");

/* ---------------------------------------------------------------- rounding and transposes */

/* 8 f32 -> the f32 values of their bf16 rounding (RNE; NaN stays NaN, quieted), as fl_f32_to_bf16. */
TGT static inline __m256 round_bf16(__m256 x) {
    __m256i u = _mm256_castps_si256(x);
    __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    __m256i r = _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), lsb);
    __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)), _mm256_set1_epi32(0x7f800000));
    r = _mm256_blendv_epi8(r, _mm256_or_si256(u, _mm256_set1_epi32(0x00400000)), nan);
    return _mm256_castsi256_ps(_mm256_and_si256(r, _mm256_set1_epi32((int)0xffff0000u)));
}

/* In-register transpose of 8 × 8 f32: r[i] element j -> r[j] element i. */
TGT static inline void transpose8x8(__m256 r[8]) {
    __m256 t[8], s[8];
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 2; i++) {
        s[4 * i + 0] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
        s[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0xee);
        s[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
        s[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xee);
    }
    for (int j = 0; j < 4; j++) {
        r[j] = _mm256_permute2f128_ps(s[j], s[4 + j], 0x20);
        r[4 + j] = _mm256_permute2f128_ps(s[j], s[4 + j], 0x31);
    }
}

/* 8 bf16 -> 8 f32 */
TGT static inline __m256 widen8(__m128i h) { return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)); }

/* ---------------------------------------------------------------- packing */

/* A rows [0, mr) (mr <= MR), k [0, kc) -> dst [kc][MR] f32 rounded to bf16; rows past mr are zero.
 * dst has room for 2 floats past its end (the last 8-wide store overlaps). */
TGT static void pack_a(void *restrict dst_, const float *A, int lda, int mr, int kc) {
    float *dst = dst_;
    int k = 0;
    __m256 r[8];
    for (; k + 8 <= kc; k += 8) {
        for (int i = 0; i < 8; i++) r[i] = i < mr ? round_bf16(_mm256_loadu_ps(A + (size_t)i * lda + k)) : _mm256_setzero_ps();
        transpose8x8(r);
        for (int j = 0; j < 8; j++) _mm256_storeu_ps(dst + (size_t)(k + j) * MR, r[j]); /* 6 kept, 2 overwritten next */
    }
    for (; k < kc; k++)
        for (int i = 0; i < MR; i++) {
            float v = 0.0f;
            if (i < mr) _mm_store_ss(&v, _mm256_castps256_ps128(round_bf16(_mm256_set1_ps(A[(size_t)i * lda + k]))));
            dst[(size_t)k * MR + i] = v;
        }
}

/* B panel for nt (B is (N, K)): columns n [0, nr) are rows of B; k [0, kc) -> dst [kc][NR] f32. */
TGT static void pack_b_nt(void *restrict dst_, const uint16_t *B, int ldb, int nr, int kc) {
    float *dst = dst_;
    for (int g = 0; g < NR; g += 8) {
        int k = 0;
        for (; k + 8 <= kc; k += 8) {
            __m256 r[8];
            for (int i = 0; i < 8; i++)
                r[i] = g + i < nr ? widen8(_mm_loadu_si128((const __m128i *)(B + (size_t)(g + i) * ldb + k)))
                                  : _mm256_setzero_ps();
            transpose8x8(r);
            for (int j = 0; j < 8; j++) _mm256_store_ps(dst + (size_t)(k + j) * NR + g, r[j]);
        }
        for (; k < kc; k++)
            for (int i = 0; i < 8; i++) {
                uint32_t u = g + i < nr ? (uint32_t)B[(size_t)(g + i) * ldb + k] << 16 : 0;
                memcpy(dst + (size_t)k * NR + g + i, &u, 4);
            }
    }
}

/* B panel for nn (B is (K, N)): row k, columns [0, nr) widened -> dst [kc][NR] f32. */
TGT static void pack_b_nn(void *restrict dst_, const uint16_t *B, int ldb, int nr, int kc) {
    float *dst = dst_;
    for (int k = 0; k < kc; k++) {
        const uint16_t *b = B + (size_t)k * ldb;
        float *d = dst + (size_t)k * NR;
        if (nr == NR) {
            _mm256_store_ps(d, widen8(_mm_loadu_si128((const __m128i *)b)));
            _mm256_store_ps(d + 8, widen8(_mm_loadu_si128((const __m128i *)(b + 8))));
        } else {
            for (int j = 0; j < NR; j++) {
                uint32_t u = j < nr ? (uint32_t)b[j] << 16 : 0;
                memcpy(d + j, &u, 4);
            }
        }
    }
}

/* ---------------------------------------------------------------- micro-kernel */

/* C[0..mr)[0..nr) (=|+=) alpha · Ap · Bp over kc k. beta == 0: C = alpha·acc (C not read);
 * beta == 1: C += alpha·acc; else C = alpha·acc + beta·C. */
TGT static void kernel(int kc, const void *restrict pa_, const void *restrict pb_, float *C, int ldc, int mr, int nr,
                       float alpha, float beta) {
    const float *pa = pa_, *pb = pb_;
    for (int r = 0; r < mr; r++) _mm_prefetch((const char *)(C + (size_t)r * ldc), _MM_HINT_T0);
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
    __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
#define FL_G2_STEP(o)                                                                                 \
    do {                                                                                              \
        __m256 b0 = _mm256_load_ps(pb + (o) * NR), b1 = _mm256_load_ps(pb + (o) * NR + 8), a;        \
        a = _mm256_broadcast_ss(pa + (o) * MR + 0); c00 = _mm256_fmadd_ps(a, b0, c00); c01 = _mm256_fmadd_ps(a, b1, c01); \
        a = _mm256_broadcast_ss(pa + (o) * MR + 1); c10 = _mm256_fmadd_ps(a, b0, c10); c11 = _mm256_fmadd_ps(a, b1, c11); \
        a = _mm256_broadcast_ss(pa + (o) * MR + 2); c20 = _mm256_fmadd_ps(a, b0, c20); c21 = _mm256_fmadd_ps(a, b1, c21); \
        a = _mm256_broadcast_ss(pa + (o) * MR + 3); c30 = _mm256_fmadd_ps(a, b0, c30); c31 = _mm256_fmadd_ps(a, b1, c31); \
        a = _mm256_broadcast_ss(pa + (o) * MR + 4); c40 = _mm256_fmadd_ps(a, b0, c40); c41 = _mm256_fmadd_ps(a, b1, c41); \
        a = _mm256_broadcast_ss(pa + (o) * MR + 5); c50 = _mm256_fmadd_ps(a, b0, c50); c51 = _mm256_fmadd_ps(a, b1, c51); \
    } while (0)
    int k = 0;
    for (; k + 4 <= kc; k += 4) {
        FL_G2_STEP(0);
        FL_G2_STEP(1);
        FL_G2_STEP(2);
        FL_G2_STEP(3);
        pa += 4 * MR;
        pb += 4 * NR;
    }
    for (; k < kc; k++) {
        FL_G2_STEP(0);
        pa += MR;
        pb += NR;
    }
#undef FL_G2_STEP
    __m256 acc[MR][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};
    __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
    __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    __m256i m0 = _mm256_cmpgt_epi32(_mm256_set1_epi32(nr), lane), m1 = _mm256_cmpgt_epi32(_mm256_set1_epi32(nr - 8), lane);
    for (int r = 0; r < mr; r++) {
        float *c = C + (size_t)r * ldc;
        __m256 x0 = _mm256_mul_ps(va, acc[r][0]), x1 = _mm256_mul_ps(va, acc[r][1]);
        if (nr == NR) {
            if (beta == 1.0f) {
                x0 = _mm256_add_ps(x0, _mm256_loadu_ps(c));
                x1 = _mm256_add_ps(x1, _mm256_loadu_ps(c + 8));
            } else if (beta != 0.0f) {
                x0 = _mm256_fmadd_ps(vb, _mm256_loadu_ps(c), x0);
                x1 = _mm256_fmadd_ps(vb, _mm256_loadu_ps(c + 8), x1);
            }
            _mm256_storeu_ps(c, x0);
            _mm256_storeu_ps(c + 8, x1);
        } else {
            if (beta == 1.0f) {
                x0 = _mm256_add_ps(x0, _mm256_maskload_ps(c, m0));
                x1 = _mm256_add_ps(x1, _mm256_maskload_ps(c + 8, m1));
            } else if (beta != 0.0f) {
                x0 = _mm256_fmadd_ps(vb, _mm256_maskload_ps(c, m0), x0);
                x1 = _mm256_fmadd_ps(vb, _mm256_maskload_ps(c + 8, m1), x1);
            }
            _mm256_maskstore_ps(c, m0, x0);
            _mm256_maskstore_ps(c + 8, m1, x1);
        }
    }
}

/* ---------------------------------------------------------------- for the driver */

static size_t a_panel_bytes(int kc) { return sizeof(float) * ((size_t)kc * MR + 8); }   /* + the overlapping store */
static size_t b_panel_bytes(int kc) { return sizeof(float) * (size_t)kc * NR; }

const fl_gemm_bf16_kernels fl_gemm_bf16_avx2_kernels = {
    .mr = MR, .nr = NR, .kc = KC, .k_align = 1, .mc = MC, .nc = NC,
    .serial_flops = 4e6,
    .private_b_bytes = (size_t)4 << 20,
    .a_panel_bytes = a_panel_bytes, .b_panel_bytes = b_panel_bytes,
    .pack_a = pack_a, .pack_b_nt = pack_b_nt, .pack_b_nn = pack_b_nn, .kernel = kernel,
};

#endif
