/* rank_grad.h — the LoRA weight-gradient GEMM where one side is the rank: C (P, Q) += alpha ·
 * Σ_n X[n, p] · Y[n, q] with P small (the rank, ≤ 64) and N (tokens) long. BLAS blocks for
 * square-ish shapes and reaches a fraction of its rate here. Not a general GEMM: cpu_matmul.c
 * calls it for dA and dB only. */
#ifndef FL_RANK_GRAD_H
#define FL_RANK_GRAD_H

#include <stddef.h>

/* C[p][q] (or C[q][p] when transposed_store) += alpha · Σ_n X[n·ldx + p] · Y[n·ldy + q],
 * p in [0, P), q in [0, Q); the instance of the active instruction-set level (cpu_isa.h). The
 * result does not depend on the thread count. */
void fl_rank_grad_tn(float *C, int ldc, int transposed_store, const float *X, int ldx, const float *Y, int ldy,
                     float alpha, size_t N, int P, int Q);

#endif
