/* gemm_bf16_avx512.c — the AVX512_BF16 GEMM: `vdpbf16ps` micro-kernel, packing, blocking, threads.
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
 * ~97% of the core's vdpbf16ps peak (dev/cpu/kernel_lab.c). Around it:
 *   - K is cut into equal blocks of at most KC = 768 (K = 576 is one block, so C is written once);
 *   - a B block (a group of K blocks, <= 8 MB, × up to NC = 2048 columns) is packed once, shared
 *     by all threads (work split in panels, dynamic), then a barrier;
 *   - work items are MC-row slices of C (at most MC = 224 rows, smaller so that there are about
 *     4 items per thread; with very few rows, also chunks of the B block's panels), taken
 *     dynamically — so a thread slowed by other load on the machine does less, not holds up all;
 *   - an item runs the group's K blocks in turn: pack its A rows for the block (L2-resident), then
 *     for each B micro-panel (L1: 36 KB at K = 576) sweep its row tiles; a barrier ends the group.
 * Details and measurements: docs/CPU-GEMM.md.
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

/* ---------------------------------------------------------------- driver */

static void scale_c(int M, int N, float beta, float *C, int ldc) {
    for (int m = 0; m < M; m++) {
        float *c = C + (size_t)m * ldc;
        for (int n = 0; n < N; n++) c[n] = beta == 0.0f ? 0.0f : beta * c[n];
    }
}

#ifndef FL_GB_KGROUP_MB
#define FL_GB_KGROUP_MB 8
#endif
#define KGROUP_BYTES ((size_t)FL_GB_KGROUP_MB << 20)
#define PRIVATE_B_BYTES ((size_t)64 << 10)

/* Packs B panel bi of a group: K block p0 + bi / npanels, panel bi % npanels of the jc block. */
static void pack_b_item(uint32_t *bp, int bi, int npanels, int p0, int kc_blk, int kcp_blk, int K, int nc, int jc,
                        int trans_b, const uint16_t *B, int ldb) {
    int q = bi / npanels, j = bi % npanels;
    int pc = (p0 + q) * kc_blk, kc = K - pc < kc_blk ? K - pc : kc_blk;
    int jr = j * NR, nr = nc - jr < NR ? nc - jr : NR;
    uint32_t *dst = bp + (size_t)bi * kcp_blk * NR;
    if (trans_b) pack_b_nt(dst, B + (size_t)(jc + jr) * ldb + pc, ldb, nr, kc);
    else pack_b_nn(dst, B + (size_t)pc * ldb + jc + jr, ldb, nr, kc);
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

    /* K in equal blocks of at most KC (rounded up to 32): K = 576 is one block, 1536 two of 768;
     * fewer blocks means fewer passes over C. */
    int nkb = (K + KC - 1) / KC;
    int kc_blk = ((K + nkb - 1) / nkb + 31) / 32 * 32;
    if (kc_blk > K) kc_blk = K;
    int kcp_blk = (kc_blk + 1) / 2;
    size_t apanel = (size_t)((kc_blk + 31) / 32) * MR * 16;   /* words per A micro-panel */

    int nc_max = NC;
    int ncols = N < nc_max ? (N + NR - 1) / NR * NR : nc_max;
    int npanels_max = ncols / NR;
    /* K blocks are packed and run in groups of up to KGROUP_BYTES of packed B (L3-resident): a
     * group costs two barriers, and on a shared machine each barrier may wait out another
     * process's time slice, so deep K (the LM head's backward, K = 49152) must not pay 2 per block. */
    size_t bblock = sizeof(uint32_t) * (size_t)kcp_blk * NR * npanels_max;   /* one K block */
    int kgroup = (int)(KGROUP_BYTES / bblock);
    if (kgroup < 1) kgroup = 1;
    if (kgroup > nkb) kgroup = nkb;
    /* A small B block (LoRA ranks, tiny N) is packed by every thread for itself: duplicate work
     * of a few µs that saves the barrier after shared packing. */
    int private_b = nthreads > 1 && bblock * kgroup <= PRIVATE_B_BYTES;
    uint32_t *bp = private_b ? NULL : xaligned(bblock * kgroup);

    /* Rows per work item: enough items (4 per thread) to balance, at most MC. With too few rows
     * for that, items also split the columns of a B block into chunks of panels. */
    int mtiles = (M + MR - 1) / MR;
    int want = 4 * nthreads;
    int mc = (mtiles + want - 1) / want * MR;
    if (mc > MC) mc = MC;
    if (mc < MR) mc = MR;
    int nic = (M + mc - 1) / mc;

    #pragma omp parallel num_threads(nthreads)
    {
        uint32_t *ap = xaligned(sizeof(uint32_t) * apanel * (size_t)(mc / MR));
        uint32_t *bmine = private_b ? xaligned(bblock * kgroup) : NULL;
        uint32_t *bpt = private_b ? bmine : bp;
        for (int jc = 0; jc < N; jc += nc_max) {
            int nc = N - jc < nc_max ? N - jc : nc_max;
            int npanels = (nc + NR - 1) / NR;
            int nchunks = nic >= 2 * nthreads ? 1 : (want + nic - 1) / nic;
            if (nchunks > npanels) nchunks = npanels;
            int ppc = (npanels + nchunks - 1) / nchunks;   /* panels per chunk */
            nchunks = (npanels + ppc - 1) / ppc;
            for (int p0 = 0; p0 < nkb; p0 += kgroup) {
                int np = nkb - p0 < kgroup ? nkb - p0 : kgroup;
                /* pack B[K blocks p0..p0+np, jc block]; (block p0+q, panel j) at (q·npanels + j)·kcp_blk·NR */
                if (private_b) {
                    for (int bi = 0; bi < np * npanels; bi++) pack_b_item(bpt, bi, npanels, p0, kc_blk, kcp_blk, K, nc, jc, trans_b, B, ldb);
                } else {
                    #pragma omp for schedule(dynamic, 1)
                    for (int bi = 0; bi < np * npanels; bi++) pack_b_item(bpt, bi, npanels, p0, kc_blk, kcp_blk, K, nc, jc, trans_b, B, ldb);
                    /* implicit barrier: B packed */
                }
                #pragma omp for schedule(dynamic, 1)
                for (int item = 0; item < nic * nchunks; item++) {
                    int ic = item / nchunks * mc, chunk = item % nchunks;
                    int mcur = M - ic < mc ? M - ic : mc;
                    int j0 = chunk * ppc, j1 = j0 + ppc < npanels ? j0 + ppc : npanels;
                    for (int q = 0; q < np; q++) {
                        int pc = (p0 + q) * kc_blk, kc = K - pc < kc_blk ? K - pc : kc_blk;
                        int kcp = (kc + 1) / 2;
                        float beta_k = pc == 0 ? beta : 1.0f;
                        for (int ir = 0; ir < mcur; ir += MR) {
                            int mr = mcur - ir < MR ? mcur - ir : MR;
                            pack_a(ap + (size_t)(ir / MR) * apanel, A + (size_t)(ic + ir) * lda + pc, lda, mr, kc);
                        }
                        for (int j = j0; j < j1; j++) {
                            int jr = j * NR, nr = nc - jr < NR ? nc - jr : NR;
                            const uint32_t *pb = bpt + ((size_t)q * npanels + j) * kcp_blk * NR;
                            for (int ir = 0; ir < mcur; ir += MR) {
                                int mr = mcur - ir < MR ? mcur - ir : MR;
                                kernel(kcp, ap + (size_t)(ir / MR) * apanel, pb, C + (size_t)(ic + ir) * ldc + jc + jr,
                                       ldc, mr, nr, alpha, beta_k);
                            }
                        }
                    }
                }
                /* implicit barrier: C tiles of these K blocks done, B may be overwritten */
            }
        }
        free(bmine);
        free(ap);
    }
    free(bp);
}

#else /* not x86: never selected (fl_gemm_bf16_uses_avx512 returns 0) */

void fl_gemm_bf16_avx512(int trans_b, int M, int N, int K, float alpha, const float *A, int lda,
                         const uint16_t *B, int ldb, float beta, float *C, int ldc) {
    fl_gemm_bf16_portable(trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

#endif
