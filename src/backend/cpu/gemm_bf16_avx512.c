/* gemm_bf16_avx512.c — the bf16 GEMM's AVX512_BF16 leaf: the `vdpbf16ps` micro-kernel, the packing
 * it reads and its block sizes. Not the blocking and threading: gemm_bf16_blocked.c runs them.
 *
 * vdpbf16ps acc, a, b: for each of the 16 f32 lanes, acc += a.lo·b.lo + a.hi·b.hi, where a and b
 * hold bf16 pairs. A lane therefore consumes two consecutive k of one output element, so both
 * packed operands store (k, k+1) pairs as one 32-bit word:
 *
 *   B micro-panel (NR = 16·NV columns of C, one K block): [kp][NR] words, kp = k/2 — one zmm load
 *     per 16 columns per k-pair. Zero columns past N, a zero k past an odd K. For nt (B (N, K))
 *     the pairs are already words in B's rows: 16 × 16 word transposes; for nn (B (K, N)) two
 *     rows are zero-extended and interleaved.
 *   A micro-panel (MR rows of C, one K block): [kp/16][MR][16] words — each row's 32 bf16 of a
 *     32-k chunk are one `vcvtne2ps2bf16` (RNE) of two f32 loads, stored as they come, no
 *     transpose; the kernel broadcasts word j of row r from the constant offset r·64 + j·4.
 *
 * Micro-kernel: an MR × NR = 14 × 32 tile of C in 28 zmm accumulators (+ 2 for B, 1 for the
 * broadcast A pair); per k-pair 2 B loads, 14 broadcasts, 28 vdpbf16ps. Measured alone it runs at
 * ~97% of the core's vdpbf16ps peak (dev/cpu/kernel_lab.c). Its blocks for the driver: K in
 * equal blocks of at most KC = 768, multiples of 32 (K = 576 is one block, so C is written once);
 * MC = 224 rows per work item (the packed A, L2-resident; each B micro-panel, 36 KB at K = 576,
 * reused from L1 over its row tiles); NC = 2048 columns per B block; a B of at most 64 KB packed
 * by each thread for itself; one thread below 8 MFLOP.
 * Details and measurements: docs/CPU-GEMM.md.
 */
#include "backend/cpu/gemm_bf16_kernels.h"

#if defined(__x86_64__) || defined(__i386__) /* the whole file: only x86 has these instructions */

#include <immintrin.h>

#define TGT __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

/* Register tile and cache blocks; -D overrides are for the kernel lab only. */
#ifndef FL_GB_MR
#define FL_GB_MR 14   /* rows of C per micro-tile */
#endif
#ifndef FL_GB_NV
#define FL_GB_NV 2    /* zmm columns per micro-tile: NR = 16·NV */
#endif
#ifndef FL_GB_KC
#define FL_GB_KC 768  /* most k per block (multiple of 32); K is split into equal blocks below it */
#endif
#ifndef FL_GB_MC
#define FL_GB_MC (FL_GB_MR * 16)   /* rows per packed A block */
#endif
#ifndef FL_GB_NC
#define FL_GB_NC 2048 /* columns per packed B block (multiple of NR) */
#endif

enum { MR = FL_GB_MR, NV = FL_GB_NV, NR = 16 * FL_GB_NV, KC = FL_GB_KC, MC = FL_GB_MC, NC = FL_GB_NC };
_Static_assert(KC % 32 == 0, "KC must be a multiple of 32");
_Static_assert(MC % MR == 0, "MC must be a multiple of MR");
_Static_assert(NC % NR == 0, "NC must be a multiple of NR");

static inline __mmask16 tail_mask16(int n) { return n >= 16 ? (__mmask16)0xffff : n <= 0 ? 0 : (__mmask16)((1u << n) - 1); }

/* ---------------------------------------------------------------- packing */

/* A rows [0, mr) (mr <= MR), k [0, kc) -> dst, [ceil(kc/32)][MR][16] words. Rows past mr and k
 * past kc are zero. */
TGT static void pack_a(void *restrict dst_, const float *A, int lda, int mr, int kc) {
    uint32_t *dst = dst_;
    int nblk = (kc + 31) / 32, nfull = kc / 32;
    /* row by row, so each row is one sequential stream for the hardware prefetcher */
    for (int r = 0; r < mr; r++) {
        const float *a = A + (size_t)r * lda;
        uint32_t *d = dst + r * 16;
        for (int blk = 0; blk < nfull; blk++) {
            __m512bh v = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(a + 32 * blk + 16), _mm512_loadu_ps(a + 32 * blk));
            _mm512_store_si512((void *)(d + (size_t)blk * MR * 16), (__m512i)v);
        }
        if (nfull < nblk) {
            int nk = kc - 32 * nfull;
            const float *t = a + 32 * nfull;
            __m512bh v = _mm512_cvtne2ps_pbh(_mm512_maskz_loadu_ps(tail_mask16(nk - 16), t + 16),
                                             _mm512_maskz_loadu_ps(tail_mask16(nk), t));
            _mm512_store_si512((void *)(d + (size_t)nfull * MR * 16), (__m512i)v);
        }
    }
    for (int r = mr; r < MR; r++)
        for (int blk = 0; blk < nblk; blk++)
            _mm512_store_si512((void *)(dst + ((size_t)blk * MR + r) * 16), _mm512_setzero_si512());
}

/* In-register transpose of a 16 × 16 block of 32-bit words: r[i] word j -> r[j] word i. */
TGT static inline void transpose16x16(__m512i r[16]) {
    __m512i t[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
    }
    /* now, in 128-bit lane L, r[4i + j] = rows 4i..4i+3 of column 4L + j */
    for (int i = 0; i < 4; i++) {
        r[4 * i + 0] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
        r[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
        r[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
        r[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
    }
    for (int j = 0; j < 4; j++) {
        __m512i xl = _mm512_shuffle_i32x4(r[j], r[4 + j], 0x44), xh = _mm512_shuffle_i32x4(r[j], r[4 + j], 0xee);
        __m512i yl = _mm512_shuffle_i32x4(r[8 + j], r[12 + j], 0x44), yh = _mm512_shuffle_i32x4(r[8 + j], r[12 + j], 0xee);
        t[0 + j] = _mm512_shuffle_i32x4(xl, yl, 0x88);
        t[4 + j] = _mm512_shuffle_i32x4(xl, yl, 0xdd);
        t[8 + j] = _mm512_shuffle_i32x4(xh, yh, 0x88);
        t[12 + j] = _mm512_shuffle_i32x4(xh, yh, 0xdd);
    }
    for (int i = 0; i < 16; i++) r[i] = t[i];
}

/* B panel for nt (B is (N, K)): columns n [0, nr) are rows of B, whose (k, k+1) pairs are already
 * words; k [0, kc) -> dst [kcp][NR] words, by 16 × 16 word transposes. */
TGT static void pack_b_nt(void *restrict dst_, const uint16_t *B, int ldb, int nr, int kc) {
    uint32_t *dst = dst_;
    int kcp = (kc + 1) / 2;
    for (int g = 0; g < NV; g++) {
        int rows = nr - 16 * g;
        for (int kp0 = 0; kp0 < kcp; kp0 += 16) {
            int nk = kc - 2 * kp0;   /* bf16 left in each row */
            __mmask32 m = nk >= 32 ? (__mmask32)0xffffffffu : (__mmask32)((1u << nk) - 1);
            __m512i r[16];
            for (int c = 0; c < 16; c++)
                r[c] = c < rows ? _mm512_maskz_loadu_epi16(m, B + (size_t)(16 * g + c) * ldb + 2 * kp0)
                                : _mm512_setzero_si512();
            transpose16x16(r);
            int nw = kcp - kp0 < 16 ? kcp - kp0 : 16;
            for (int i = 0; i < nw; i++) _mm512_store_si512((void *)(dst + (size_t)(kp0 + i) * NR + 16 * g), r[i]);
        }
    }
}

/* B panel for nn (B is (K, N)): rows 2kp and 2kp+1, columns [0, nr) interleaved into words. */
TGT static void pack_b_nn(void *restrict dst_, const uint16_t *B, int ldb, int nr, int kc) {
    uint32_t *dst = dst_;
    int kcp = (kc + 1) / 2;
    for (int kp = 0; kp < kcp; kp++) {
        const uint16_t *b0 = B + (size_t)(2 * kp) * ldb;
        const uint16_t *b1 = b0 + ldb;
        int has1 = 2 * kp + 1 < kc;
        for (int v = 0; v < NV; v++) {
            __mmask16 m = tail_mask16(nr - 16 * v);
            __m512i x0 = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, b0 + 16 * v));
            __m512i x1 = has1 ? _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, b1 + 16 * v)) : _mm512_setzero_si512();
            _mm512_store_si512((void *)(dst + (size_t)kp * NR + 16 * v), _mm512_or_si512(x0, _mm512_slli_epi32(x1, 16)));
        }
    }
}

/* ---------------------------------------------------------------- micro-kernel */

/* C[0..mr)[0..nr) (=|+=) alpha · Ap · Bp over kc k ((kc + 1) / 2 k-pairs). beta == 0: C = alpha·acc (C not read);
 * beta == 1: C += alpha·acc; else C = alpha·acc + beta·C. */
TGT static void kernel(int kc, const void *restrict pa_, const void *restrict pb_, float *C, int ldc, int mr, int nr,
                       float alpha, float beta) {
    const uint32_t *pa = pa_, *pb = pb_;
    int kcp = (kc + 1) / 2;
    /* Ask for the C tile now (for writing), so its misses overlap the k loop instead of stalling
     * the stores at the end — with C bigger than the caches (the LM head's logits) that matters. */
    for (int r = 0; r < mr; r++) {
        const char *c = (const char *)(C + (size_t)r * ldc);
        for (int o = 0; o < NR * 4; o += 64) _mm_prefetch(c + o, _MM_HINT_ET0);
        _mm_prefetch(c + NR * 4 - 4, _MM_HINT_ET0);   /* the row's last line when C is not aligned */
    }
    __m512 acc[MR][NV];
    #pragma GCC unroll 64
    for (int r = 0; r < MR; r++)
        #pragma GCC unroll 8
        for (int v = 0; v < NV; v++) acc[r][v] = _mm512_setzero_ps();

    int nblk = kcp / 16, rem = kcp % 16;
    for (int blk = 0; blk < nblk; blk++) {
        #pragma GCC unroll 16
        for (int j = 0; j < 16; j++) {
            __m512bh b[NV];
            #pragma GCC unroll 8
            for (int v = 0; v < NV; v++) b[v] = (__m512bh)_mm512_load_si512((const void *)(pb + j * NR + 16 * v));
            #pragma GCC unroll 64
            for (int r = 0; r < MR; r++) {
                __m512bh a = (__m512bh)_mm512_set1_epi32((int)pa[r * 16 + j]);
                #pragma GCC unroll 8
                for (int v = 0; v < NV; v++) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], a, b[v]);
            }
        }
        pa += MR * 16;
        pb += 16 * NR;
    }
    for (int j = 0; j < rem; j++) {
        __m512bh b[NV];
        #pragma GCC unroll 8
        for (int v = 0; v < NV; v++) b[v] = (__m512bh)_mm512_load_si512((const void *)(pb + j * NR + 16 * v));
        #pragma GCC unroll 64
        for (int r = 0; r < MR; r++) {
            __m512bh a = (__m512bh)_mm512_set1_epi32((int)pa[r * 16 + j]);
            #pragma GCC unroll 8
            for (int v = 0; v < NV; v++) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], a, b[v]);
        }
    }

    __mmask16 mask[NV];
    #pragma GCC unroll 8
    for (int v = 0; v < NV; v++) mask[v] = tail_mask16(nr - 16 * v);
    __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
    #pragma GCC unroll 64
    for (int r = 0; r < MR; r++) {
        if (r >= mr) break;
        float *c = C + (size_t)r * ldc;
        #pragma GCC unroll 8
        for (int v = 0; v < NV; v++) {
            __m512 x = _mm512_mul_ps(va, acc[r][v]);
            if (beta == 1.0f)
                x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(mask[v], c + 16 * v));
            else if (beta != 0.0f)
                x = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(mask[v], c + 16 * v), x);
            _mm512_mask_storeu_ps(c + 16 * v, mask[v], x);
        }
    }
}

/* ---------------------------------------------------------------- for the driver */

static size_t a_panel_bytes(int kc) { return sizeof(uint32_t) * (size_t)((kc + 31) / 32) * MR * 16; }
static size_t b_panel_bytes(int kc) { return sizeof(uint32_t) * (size_t)((kc + 1) / 2) * NR; }

const fl_gemm_bf16_kernels fl_gemm_bf16_avx512_kernels = {
    .mr = MR, .nr = NR, .kc = KC, .k_align = 32, .mc = MC, .nc = NC,
    .serial_flops = 8e6,
    .private_b_bytes = (size_t)64 << 10,
    .a_panel_bytes = a_panel_bytes, .b_panel_bytes = b_panel_bytes,
    .pack_a = pack_a, .pack_b_nt = pack_b_nt, .pack_b_nn = pack_b_nn, .kernel = kernel,
};

#endif
