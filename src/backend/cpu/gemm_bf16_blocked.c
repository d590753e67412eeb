/* gemm_bf16_blocked.c — the bf16 GEMM's one blocking and threading driver, over the micro-kernel
 * and packing of an instruction-set file (gemm_bf16_kernels.h). Not the kernels themselves, not
 * the choice between them (gemm_bf16.c), not the portable path.
 *
 *   - K is cut into equal blocks of at most kc (rounded up to the kernel's k_align): K = 576 is one
 *     block, so C is written once; K = 1536 two of 768. Fewer blocks, fewer passes over C.
 *   - a B block (a group of K blocks of at most KGROUP_BYTES packed, × up to nc columns) is packed
 *     once and shared by all threads (panels handed out dynamically), then a barrier — unless all
 *     of B packs into the kernel's private_b_bytes: then each thread packs it for itself and the
 *     call has no barrier but its end (on a machine whose cores are shared, a barrier waits out
 *     the time slice of whichever thread was descheduled);
 *   - work items are MC-row slices of C (at most mc rows, smaller so that there are about 4 items
 *     per thread; with very few rows, also chunks of the B block's panels), taken dynamically, so
 *     a thread slowed by other load on the machine does less, not holds up all;
 *   - an item runs the group's K blocks in turn: pack its A rows for the block, then for each B
 *     micro-panel sweep its row tiles; a barrier ends the group.
 * Details and measurements: docs/CPU-GEMM.md.
 */
#include "backend/cpu/gemm_bf16_kernels.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

/* Packed B per group of K blocks (L3-resident): a group costs two barriers, so deep K (the LM
 * head's backward, K = 49152) does not pay two per block. -D override for the kernel lab. */
#ifndef FL_GB_KGROUP_MB
#define FL_GB_KGROUP_MB 8
#endif
#define KGROUP_BYTES ((size_t)FL_GB_KGROUP_MB << 20)

void *fl_gemm_bf16_alloc(size_t bytes) {
    bytes = (bytes + 63) / 64 * 64;
    void *p = aligned_alloc(64, bytes ? bytes : 64);
    if (!p) {
        fprintf(stderr, "fastlora: out of memory (%zu bytes) in bf16 GEMM\n", bytes);
        abort();
    }
    return p;
}

/* The layout of one call's blocks. */
typedef struct {
    int nkb, kc_blk;      /* K blocks, k per block (the last may be shorter) */
    size_t apanel, bpanel; /* bytes per A / B micro-panel of a full block */
    int kgroup;           /* K blocks per packed B group */
    size_t bblock;        /* bytes of one K block's packed B (nc columns) */
    int mc, nic;          /* rows per work item, items along M */
} blocking;

static blocking plan_blocks(const fl_gemm_bf16_kernels *k, int nthreads, int M, int N, int K) {
    blocking b;
    b.nkb = (K + k->kc - 1) / k->kc;
    b.kc_blk = ((K + b.nkb - 1) / b.nkb + k->k_align - 1) / k->k_align * k->k_align;
    if (b.kc_blk > K) b.kc_blk = K;
    b.apanel = k->a_panel_bytes(b.kc_blk);
    b.bpanel = k->b_panel_bytes(b.kc_blk);
    int ncols = N < k->nc ? (N + k->nr - 1) / k->nr * k->nr : k->nc;
    b.bblock = b.bpanel * (size_t)(ncols / k->nr);
    b.kgroup = (int)(KGROUP_BYTES / b.bblock);
    if (b.kgroup < 1) b.kgroup = 1;
    if (b.kgroup > b.nkb) b.kgroup = b.nkb;
    /* rows per work item: about 4 items per thread, at most mc */
    int mtiles = (M + k->mr - 1) / k->mr;
    int want = 4 * nthreads;
    b.mc = (mtiles + want - 1) / want * k->mr;
    if (b.mc > k->mc) b.mc = k->mc;
    if (b.mc < k->mr) b.mc = k->mr;
    b.nic = (M + b.mc - 1) / b.mc;
    return b;
}

/* Packs B panel bi of a group: K block p0 + bi / npanels, panel bi % npanels of the jc block. */
static void pack_b_item(const fl_gemm_bf16_kernels *k, const blocking *b, unsigned char *bp, int bi, int npanels,
                        int p0, int K, int nc, int jc, int trans_b, const uint16_t *B, int ldb) {
    int q = bi / npanels, j = bi % npanels;
    int pc = (p0 + q) * b->kc_blk, kc = K - pc < b->kc_blk ? K - pc : b->kc_blk;
    int jr = j * k->nr, nr = nc - jr < k->nr ? nc - jr : k->nr;
    unsigned char *dst = bp + (size_t)bi * b->bpanel;
    if (trans_b) k->pack_b_nt(dst, B + (size_t)(jc + jr) * ldb + pc, ldb, nr, kc);
    else k->pack_b_nn(dst, B + (size_t)pc * ldb + jc + jr, ldb, nr, kc);
}

void fl_gemm_bf16_blocked(const fl_gemm_bf16_kernels *k, int nthreads, int trans_b, int M, int N, int K,
                          float alpha, const float *A, int lda, const uint16_t *B, int ldb, float beta, float *C,
                          int ldc) {
    const int MR = k->mr, NR = k->nr, NC = k->nc;
    blocking b = plan_blocks(k, nthreads, M, N, K);
    int private_b = nthreads > 1 && b.kgroup == b.nkb && N <= NC && b.bblock * b.kgroup <= k->private_b_bytes;
    unsigned char *bp = private_b ? NULL : fl_gemm_bf16_alloc(b.bblock * b.kgroup);
    int want = 4 * nthreads;

    #pragma omp parallel num_threads(nthreads)
    {
        unsigned char *ap = fl_gemm_bf16_alloc(b.apanel * (size_t)(b.mc / MR));
        unsigned char *bmine = private_b ? fl_gemm_bf16_alloc(b.bblock * b.kgroup) : NULL;
        unsigned char *bpt = private_b ? bmine : bp;
        for (int jc = 0; jc < N; jc += NC) {
            int nc = N - jc < NC ? N - jc : NC;
            int npanels = (nc + NR - 1) / NR;
            int nchunks = b.nic >= 2 * nthreads ? 1 : (want + b.nic - 1) / b.nic;
            if (nchunks > npanels) nchunks = npanels;
            int ppc = (npanels + nchunks - 1) / nchunks;   /* panels per chunk */
            nchunks = (npanels + ppc - 1) / ppc;
            for (int p0 = 0; p0 < b.nkb; p0 += b.kgroup) {
                int np = b.nkb - p0 < b.kgroup ? b.nkb - p0 : b.kgroup;
                /* pack B[K blocks p0..p0+np, jc block]; (block p0+q, panel j) at (q·npanels + j)·bpanel */
                if (private_b) {
                    for (int bi = 0; bi < np * npanels; bi++) pack_b_item(k, &b, bpt, bi, npanels, p0, K, nc, jc, trans_b, B, ldb);
                } else {
                    #pragma omp for schedule(dynamic, 1)
                    for (int bi = 0; bi < np * npanels; bi++) pack_b_item(k, &b, bpt, bi, npanels, p0, K, nc, jc, trans_b, B, ldb);
                    /* implicit barrier: B packed */
                }
                #pragma omp for schedule(dynamic, 1)
                for (int item = 0; item < b.nic * nchunks; item++) {
                    int ic = item / nchunks * b.mc, chunk = item % nchunks;
                    int mcur = M - ic < b.mc ? M - ic : b.mc;
                    int j0 = chunk * ppc, j1 = j0 + ppc < npanels ? j0 + ppc : npanels;
                    for (int q = 0; q < np; q++) {
                        int pc = (p0 + q) * b.kc_blk, kc = K - pc < b.kc_blk ? K - pc : b.kc_blk;
                        float beta_k = pc == 0 ? beta : 1.0f;
                        for (int ir = 0; ir < mcur; ir += MR) {
                            int mr = mcur - ir < MR ? mcur - ir : MR;
                            k->pack_a(ap + (size_t)(ir / MR) * b.apanel, A + (size_t)(ic + ir) * lda + pc, lda, mr, kc);
                        }
                        for (int j = j0; j < j1; j++) {
                            int jr = j * NR, nr = nc - jr < NR ? nc - jr : NR;
                            const unsigned char *pb = bpt + ((size_t)q * npanels + j) * b.bpanel;
                            for (int ir = 0; ir < mcur; ir += MR) {
                                int mr = mcur - ir < MR ? mcur - ir : MR;
                                k->kernel(kc, ap + (size_t)(ir / MR) * b.apanel, pb, C + (size_t)(ic + ir) * ldc + jc + jr,
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
