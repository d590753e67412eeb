/* gemm_bf16_kernels.h — internal to the bf16 GEMM: what an instruction-set file hands the one
 * blocking and threading driver (gemm_bf16_blocked.c), and the driver's entry.
 *
 * An ISA file (gemm_bf16_avx512.c, gemm_bf16_avx2.c) holds only what needs its instructions: the
 * packing of A and B micro-panels and the micro-kernel, with its register tile and cache block
 * sizes. The driver cuts K into blocks, packs B blocks (shared by the threads, or per thread when
 * small), hands out MC-row work items and calls the micro-kernel; gemm_bf16.c chooses the kernels
 * by the CPU kernel level. Not a public API: callers use gemm_bf16.h.
 *
 * Each output element's sum runs over its K blocks in order and, inside a block, over k in order
 * in one accumulator of the micro-kernel, whichever thread, work item or tile position computes it:
 * the thread count, the item sizes and where B is packed change no bit of C.
 */
#ifndef FL_GEMM_BF16_KERNELS_H
#define FL_GEMM_BF16_KERNELS_H

#include <stddef.h>
#include <stdint.h>

typedef struct fl_gemm_bf16_kernels {
    int mr, nr;              /* register tile: rows and columns of C per micro-kernel call */
    int kc, k_align;         /* K is cut into equal blocks of at most kc, rounded up to k_align */
    int mc;                  /* most rows of C per work item (multiple of mr) */
    int nc;                  /* columns per packed B block (multiple of nr) */
    double serial_flops;     /* a call of fewer FLOPs (2·M·N·K) runs on one thread */
    size_t private_b_bytes;  /* a packed B of at most this (one block, one group) is packed by
                              * every thread for itself: no barrier before the work */
    /* Bytes of one packed micro-panel for a K block of kc k (A: with any slack its stores need). */
    size_t (*a_panel_bytes)(int kc);
    size_t (*b_panel_bytes)(int kc);
    /* A rows [0, mr) (mr <= .mr), k [0, kc) -> dst, rounded to bf16; rows past mr are zero. */
    void (*pack_a)(void *dst, const float *A, int lda, int mr, int kc);
    /* B columns [0, nr) of C (nr <= .nr), k [0, kc) -> dst; nt: B is (N, K), nn: B is (K, N). */
    void (*pack_b_nt)(void *dst, const uint16_t *B, int ldb, int nr, int kc);
    void (*pack_b_nn)(void *dst, const uint16_t *B, int ldb, int nr, int kc);
    /* C[0..mr)[0..nr) = alpha · Ap · Bp (+ beta · C) over kc k; beta == 0: C is not read. */
    void (*kernel)(int kc, const void *pa, const void *pb, float *C, int ldc, int mr, int nr, float alpha,
                   float beta);
} fl_gemm_bf16_kernels;

#if defined(__x86_64__) || defined(__i386__)
extern const fl_gemm_bf16_kernels fl_gemm_bf16_avx512_kernels;   /* gemm_bf16_avx512.c */
extern const fl_gemm_bf16_kernels fl_gemm_bf16_avx2_kernels;     /* gemm_bf16_avx2.c */
#endif

/* C (M, N) = alpha · bf16(A) · B(ᵀ) + beta · C on `k`'s micro-kernel, M, N, K > 0, on up to
 * nthreads threads (one omp parallel region). */
void fl_gemm_bf16_blocked(const fl_gemm_bf16_kernels *k, int nthreads, int trans_b, int M, int N, int K,
                          float alpha, const float *A, int lda, const uint16_t *B, int ldb, float beta, float *C,
                          int ldc);

/* 64-byte-aligned memory (a multiple of 64 bytes); out of memory ends the process with one line. */
void *fl_gemm_bf16_alloc(size_t bytes);

#endif
