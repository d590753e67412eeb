/* gemm_bf16_avx512.c — the AVX512_BF16 GEMM: `vdpbf16ps` micro-kernel, packing, blocking, threads.
 *
 * vdpbf16ps acc, a, b: for each of the 16 f32 lanes, acc += a.lo·b.lo + a.hi·b.hi, where a and b
 * hold bf16 pairs. A lane therefore consumes two consecutive k of one output element, so both
 * packed operands store (k, k+1) pairs as one 32-bit word:
 *
 *   B micro-panel (NR = 16·NV columns of C, one K block): [kp][NR] words, kp = k/2 — one zmm load
 *     per 16 columns per k-pair. Padded with zero columns past N and a zero k past an odd K.
 *   A micro-panel (MR rows of C, one K block): [kp/16][MR][16] words — each row's 32 bf16 of a
 *     32-k chunk are one `vcvtne2ps2bf16` of two f32 loads (RNE), stored as they come, no
 *     transpose; the kernel broadcasts (embedded {1to16}) from constant offsets r·64 + j·4.
 *
 * The micro-kernel keeps an MR × NR tile of C in MR·NV zmm accumulators (14 × 32 → 28 of 32
 * registers) and per k-pair issues NV B loads and MR broadcast-FMAs. The loops around it follow
 * the usual five-loop scheme: NC columns (packed B block, KC × NC), KC depth (the B micro-panel,
 * 16 KB at KC = 256... see docs/CPU-GEMM.md, stays in L1 across the MC/MR row tiles), MC rows
 * (packed A block, L2). Threads split M (each packs its own copy of the B block: B is reused by
 * M/threads rows, so packing it twice is cheap and needs no barrier); with few rows they split N.
 */
#include "backend/cpu/gemm_bf16.h"

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TGT __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

/* Register tile and cache blocks; -D overrides are for the kernel lab only. */
#ifndef FL_GB_MR
#define FL_GB_MR 14   /* rows of C per micro-tile */
#endif
#ifndef FL_GB_NV
#define FL_GB_NV 2    /* zmm columns per micro-tile: NR = 16·NV */
#endif
#ifndef FL_GB_KC
#define FL_GB_KC 384  /* k per block (multiple of 32) */
#endif
#ifndef FL_GB_MC
#define FL_GB_MC (FL_GB_MR * 16)   /* rows per packed A block */
#endif
#ifndef FL_GB_NC
#define FL_GB_NC 1024 /* columns per packed B block (multiple of NR) */
#endif

enum { MR = FL_GB_MR, NV = FL_GB_NV, NR = 16 * FL_GB_NV, KC = FL_GB_KC, MC = FL_GB_MC, NC = FL_GB_NC };
_Static_assert(KC % 32 == 0, "KC must be a multiple of 32");
_Static_assert(MC % MR == 0, "MC must be a multiple of MR");
_Static_assert(NC % NR == 0, "NC must be a multiple of NR");

static void *xaligned(size_t bytes) {
    bytes = (bytes + 63) / 64 * 64;
    void *p = aligned_alloc(64, bytes ? bytes : 64);
    if (!p) {
        fprintf(stderr, "fastlora: out of memory (%zu bytes) in bf16 GEMM\n", bytes);
        abort();
    }
    return p;
}

static inline __mmask16 tail_mask16(int n) { return n >= 16 ? (__mmask16)0xffff : n <= 0 ? 0 : (__mmask16)((1u << n) - 1); }

/* ---------------------------------------------------------------- packing */

/* A rows [0, mr) (mr <= MR), k [0, kc) -> dst, [ceil(kc/32)][MR][16] words. Rows past mr and k
 * past kc are zero. */
TGT static void pack_a(uint32_t *restrict dst, const float *A, int lda, int mr, int kc) {
    int nblk = (kc + 31) / 32;
    for (int blk = 0; blk < nblk; blk++) {
        int k = 32 * blk, nk = kc - k;
        __mmask16 lo = tail_mask16(nk), hi = tail_mask16(nk - 16);
        uint32_t *d = dst + (size_t)blk * MR * 16;
        int r = 0;
        if (nk >= 32) {
            for (; r < mr; r++) {
                const float *a = A + (size_t)r * lda + k;
                __m512bh v = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(a + 16), _mm512_loadu_ps(a));
                _mm512_store_si512((void *)(d + r * 16), (__m512i)v);
            }
        } else {
            for (; r < mr; r++) {
                const float *a = A + (size_t)r * lda + k;
                __m512bh v = _mm512_cvtne2ps_pbh(_mm512_maskz_loadu_ps(hi, a + 16), _mm512_maskz_loadu_ps(lo, a));
                _mm512_store_si512((void *)(d + r * 16), (__m512i)v);
            }
        }
        for (; r < MR; r++) _mm512_store_si512((void *)(d + r * 16), _mm512_setzero_si512());
    }
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
TGT static void pack_b_nt(uint32_t *restrict dst, const uint16_t *B, int ldb, int nr, int kc) {
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
TGT static void pack_b_nn(uint32_t *restrict dst, const uint16_t *B, int ldb, int nr, int kc) {
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

/* C[0..mr)[0..nr) (=|+=) alpha · Ap · Bp over kcp k-pairs. beta == 0: C = alpha·acc (C not read);
 * beta == 1: C += alpha·acc; else C = alpha·acc + beta·C. */
TGT static void kernel(int kcp, const uint32_t *restrict pa, const uint32_t *restrict pb, float *C, int ldc,
                       int mr, int nr, float alpha, float beta) {
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

/* ---------------------------------------------------------------- driver */

/* One thread's region of C: rows [m0, m1), columns [n0, n1). */
static void region(int trans_b, int m0, int m1, int n0, int n1, int K, float alpha, const float *A, int lda,
                   const uint16_t *B, int ldb, float beta, float *C, int ldc) {
    int kc_max = K < KC ? K : KC;
    int kcp_max = (kc_max + 1) / 2;
    int kblk_max = (kc_max + 31) / 32;            /* 16-pair blocks in a packed A micro-panel */
    int ncols = n1 - n0 < NC ? (n1 - n0 + NR - 1) / NR * NR : NC;
    int nrows = m1 - m0 < MC ? (m1 - m0 + MR - 1) / MR * MR : MC;
    size_t bpanel = (size_t)kcp_max * NR;         /* words per B micro-panel */
    size_t apanel = (size_t)kblk_max * MR * 16;   /* words per A micro-panel */
    uint32_t *bp = xaligned(sizeof(uint32_t) * bpanel * (ncols / NR));
    uint32_t *ap = xaligned(sizeof(uint32_t) * apanel * (nrows / MR));

    for (int jc = n0; jc < n1; jc += NC) {
        int nc = n1 - jc < NC ? n1 - jc : NC;
        for (int pc = 0; pc < K; pc += KC) {
            int kc = K - pc < KC ? K - pc : KC;
            int kcp = (kc + 1) / 2;
            float beta_k = pc == 0 ? beta : 1.0f;
            /* B panels of this block; panel stride uses kcp so consecutive panels are dense. */
            for (int jr = 0; jr < nc; jr += NR) {
                int nr = nc - jr < NR ? nc - jr : NR;
                uint32_t *dst = bp + (size_t)(jr / NR) * kcp * NR;
                if (trans_b) pack_b_nt(dst, B + (size_t)(jc + jr) * ldb + pc, ldb, nr, kc);
                else pack_b_nn(dst, B + (size_t)pc * ldb + jc + jr, ldb, nr, kc);
            }
            for (int ic = m0; ic < m1; ic += MC) {
                int mc = m1 - ic < MC ? m1 - ic : MC;
                size_t astride = (size_t)((kc + 31) / 32) * MR * 16;
                for (int ir = 0; ir < mc; ir += MR) {
                    int mr = mc - ir < MR ? mc - ir : MR;
                    pack_a(ap + (size_t)(ir / MR) * astride, A + (size_t)(ic + ir) * lda + pc, lda, mr, kc);
                }
                for (int jr = 0; jr < nc; jr += NR) {
                    int nr = nc - jr < NR ? nc - jr : NR;
                    const uint32_t *pb = bp + (size_t)(jr / NR) * kcp * NR;
                    for (int ir = 0; ir < mc; ir += MR) {
                        int mr = mc - ir < MR ? mc - ir : MR;
                        kernel(kcp, ap + (size_t)(ir / MR) * astride, pb, C + (size_t)(ic + ir) * ldc + jc + jr, ldc,
                               mr, nr, alpha, beta_k);
                    }
                }
            }
        }
    }
    free(ap);
    free(bp);
}

static void scale_c(int M, int N, float beta, float *C, int ldc) {
    for (int m = 0; m < M; m++) {
        float *c = C + (size_t)m * ldc;
        for (int n = 0; n < N; n++) c[n] = beta == 0.0f ? 0.0f : beta * c[n];
    }
}

void fl_gemm_bf16_avx512(int trans_b, int M, int N, int K, float alpha, const float *A, int lda,
                         const uint16_t *B, int ldb, float beta, float *C, int ldc) {
    if (M <= 0 || N <= 0) return;
    if (K <= 0) {
        scale_c(M, N, beta, C, ldc);
        return;
    }
    double flops = 2.0 * M * N * K;
    int nthreads = flops < 8e6 ? 1 : omp_get_max_threads();
    #pragma omp parallel num_threads(nthreads)
    {
        int nt = omp_get_num_threads(), t = omp_get_thread_num();
        int m0 = 0, m1 = M, n0 = 0, n1 = N;
        int mtiles = (M + MR - 1) / MR, ntiles = (N + NR - 1) / NR;
        if (nt == 1) {
        } else if (mtiles >= 4 * nt || ntiles < 2 * nt) { /* split rows, in whole micro-tiles */
            int per = (mtiles + nt - 1) / nt * MR;
            m0 = t * per < M ? t * per : M;
            m1 = m0 + per < M ? m0 + per : M;
        } else { /* few rows: split columns */
            int per = (ntiles + nt - 1) / nt * NR;
            n0 = t * per < N ? t * per : N;
            n1 = n0 + per < N ? n0 + per : N;
        }
        if (m0 < m1 && n0 < n1) region(trans_b, m0, m1, n0, n1, K, alpha, A, lda, B, ldb, beta, C, ldc);
    }
}

#else /* not x86: never selected (fl_gemm_bf16_uses_avx512 returns 0) */

void fl_gemm_bf16_avx512(int trans_b, int M, int N, int K, float alpha, const float *A, int lda,
                         const uint16_t *B, int ldb, float beta, float *C, int ldc) {
    fl_gemm_bf16_portable(trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

#endif
