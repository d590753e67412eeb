/* cuda_compare.h — the per-row error measure the CUDA op tests and the kernel lab use beside the
 * relative L2 over a whole tensor: one wrong row (one query of one head) out of 4,096 moves the
 * whole tensor's relative L2 by ~1/64 and passes a 2e-2 bound, but its own row error is ~1.
 * Plain C, compiled in every build and tested on the CPU (tests/test_cuda_plan.c). Not the
 * tolerances (each test states its own) and no GPU code. */
#ifndef FL_CUDA_COMPARE_H
#define FL_CUDA_COMPARE_H

#include <stddef.h>

typedef struct {
    double err;   /* the worst row's max |got − want| / max(max |want| in that row, floor) */
    size_t row;   /* where: token row n ... */
    int head;     /* ... and head h (0 when heads == 1) */
} fl_row_err;

/* Over N rows of `heads` heads of `cols` values each: element (n, h, i) at n·ld + h·cols + i in both
 * buffers (ld >= heads·cols: strided views of a wider buffer work). The floor, 1e-3 of the largest
 * |want| in the whole tensor, keeps rows that are ~0 from dividing by ~0. A NaN or inf in `got`
 * is an error of INFINITY at its row. */
fl_row_err fl_worst_row_err(const float *got, const float *want, size_t N, int heads, int cols, size_t ld);

#endif
