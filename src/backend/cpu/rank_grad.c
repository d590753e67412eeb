/* rank_grad.c — the LoRA weight-gradient kernel (rank_grad.h), one instance per instruction-set
 * level (rank_grad_kernel.h), picked at run time by fl_cpu_isa_active().
 *
 * dweight (OC, IC) += alpha · doutᵀ · inp sums N (thousands of tokens) outer products, and one of
 * OC, IC is the LoRA rank (4..64). BLAS kernels block for square-ish shapes and reach a fraction of
 * their rate here, so this case has its own kernel: C (P, Q) += alpha · Σ_n X[n, p] · Y[n, q] with P
 * the rank side (small) and Q the model side. The other case (small IC) computes Cᵀ the same way
 * and stores it transposed.
 *
 * Memory decides much of its speed (2·P flops per element of Y): walking a column chunk of Y down
 * its rows touches a new page per row, which the prefetchers do not follow. So Y is read in blocks
 * of NB rows × a group of column chunks, each row's segment contiguously, and copied (inline vector
 * moves, zero-padded past Q) into [chunk][n][CW] panels that stay in L1 while the register tiles
 * sweep them. X is read where it is: a block's NB rows of P values. Register tile: up to PR rows of
 * C × one chunk of CW = 2 vectors (AVX2: 6 × 16 in 12 ymm, AVX-512: 12 × 32 in 24 zmm), named
 * accumulators (GCC keeps an array of vectors on the stack), fused multiply-adds where the target
 * has them; the last rows of P run a tile of exactly the rows left. The tile's sums over the NB
 * rows are added into the group's f32 sums; after all N rows C += alpha · sums, one rounding of a
 * product and one of the sum (not contracted: -std=c11), which docs/DISTRIBUTED.md's bit-for-bit
 * equality of micro-batch accumulation relies on. Threads own whole column groups, and every
 * element is summed over n in the same order (NB-row blocks in turn), so the result does not
 * depend on the thread count. Same f32 arithmetic as sgemm, different summation order.
 *
 * The instances: AVX-512 (VW 16, PR 12), AVX2 + FMA (VW 8, PR 6) and plain C (VW 8, or 4 on a
 * target without AVX; PR 6; the multiply and the add rounded apart, as on a CPU without FMA).
 * Every element of C gets the same operations in the same order in the two FMA instances — the
 * chunk width and tile height change which elements share a register, not the sum over n — so
 * they agree bit for bit (tested); the plain-C one differs from them by its extra roundings only. */
#include "backend/cpu/rank_grad.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define RG_X86 1
#else
#define RG_X86 0
#endif
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_isa.h"
#include "common/error.h"

#define NB 128      /* rows of X and Y per block (measured: 64-256 within noise, 128 best on AVX2) */
#define GROUP_MAX 8 /* chunks per column group at most: the Y panels of a block stay in L2 */

#if RG_X86
#define RG(name) name##_avx512
#define RG_VW 16
#define RG_PR 12
#define RG_ISA 2
#define RG_TGT __attribute__((target("avx512f,avx512bw,avx512vl,fma")))
#include "backend/cpu/rank_grad_kernel.h"
#undef RG
#undef RG_VW
#undef RG_PR
#undef RG_ISA
#undef RG_TGT

/* The instance an AVX2 CPU runs. In a build for an AVX-512 CPU (-march=native) the compiler may
 * encode it with AVX-512 instructions (it cannot drop them: the intrinsics inherit the build's
 * target), the same IEEE operations: under FASTLORA_CPU_ISA=avx2 it computes what an AVX2 CPU does. */
#define RG(name) name##_avx2
#define RG_VW 8
#define RG_PR 6
#define RG_ISA 1
#define RG_TGT __attribute__((target("avx2,fma")))
#include "backend/cpu/rank_grad_kernel.h"
#undef RG
#undef RG_VW
#undef RG_PR
#undef RG_ISA
#undef RG_TGT
#endif

#define RG(name) name##_portable
#ifdef __AVX__
#define RG_VW 8
#else
#define RG_VW 4 /* a build for a target without AVX (16-byte vectors: no ABI change for the helpers) */
#endif
#define RG_PR 6
#define RG_ISA 0
#define RG_TGT
#include "backend/cpu/rank_grad_kernel.h"

void fl_rank_grad_tn(float *C, int ldc, int transposed_store, const float *X, int ldx, const float *Y, int ldy,
                     float alpha, size_t N, int P, int Q) {
#if RG_X86
    fl_cpu_isa isa = fl_cpu_isa_active();
    if (isa >= FL_CPU_ISA_AVX512) {
        small_rank_tn_avx512(C, ldc, transposed_store, X, ldx, Y, ldy, alpha, N, P, Q);
        return;
    }
    if (isa >= FL_CPU_ISA_AVX2) {
        small_rank_tn_avx2(C, ldc, transposed_store, X, ldx, Y, ldy, alpha, N, P, Q);
        return;
    }
#endif
    small_rank_tn_portable(C, ldc, transposed_store, X, ldx, Y, ldy, alpha, N, P, Q);
}
