/* cuda_nf4.h — NF4 weights on the GPU (backend/cuda/cuda_nf4.cu; CUDA builds only).
 *
 * A device NF4 weight is an fl_nf4_weight whose arrays point into one device allocation with the
 * host layout (fl_nf4_view). The dequantization kernel writes bf16 tiles — rows [r0, r1) of W — bit
 * for bit equal to fl_nf4_dequantize(W, BF16) on the host (f32 products with explicit
 * round-to-nearest multiplies and adds: no FMA contraction), for a cuBLASLt GEMM to consume. Not the
 * GEMM itself: that is the engine's matmul op over such a tile.
 */
#ifndef FL_CUDA_NF4_H
#define FL_CUDA_NF4_H

#include "quant/nf4.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Copies host (an fl_nf4_weight in host memory) to the device: 0, or -1 when no CUDA device. */
int fl_nf4_cuda_upload(fl_nf4_weight *dev, const fl_nf4_weight *host);
void fl_nf4_cuda_free(fl_nf4_weight *dev);
/* dst (device, bf16, (r1 - r0, cols)) = rows [r0, r1) of dev, enqueued on the backend's stream. */
void fl_nf4_cuda_dequantize_rows_bf16(const fl_nf4_weight *dev, int64_t r0, int64_t r1, void *dst);
/* The CUDA backend's matmul_nf4_forward / matmul_nf4_backward_input (backend.h): tiles of rows of W
 * dequantized into scratch (fl_cuda_nf4_tile_rows rows each) and multiplied by the cuBLASLt matmul. */
void fl_nf4_cuda_matmul_forward(void *out, const void *inp, const fl_nf4_weight *w, const void *bias, float alpha,
                                float beta, size_t N, int ld_out, int ld_inp);
void fl_nf4_cuda_matmul_backward_input(void *dinp, const void *dout, const fl_nf4_weight *w, float alpha, float beta,
                                       size_t N, int ld_dinp, int ld_dout);

#ifdef __cplusplus
}
#endif

#endif
