/* cuda_nf4.cu — NF4 weights on the GPU: upload, the tiled dequantization to bf16, and the backend's
 * two NF4 matmuls (cuda_nf4.h): each tile of rows of W is dequantized into the scratch arena's NF4
 * slot and multiplied by the cuBLASLt matmul of cuda_matmul.cu, on the one stream.
 *
 * Mirrors fl_nf4_dequantize_rows (quant/nf4.c) element for element: scale = f32(f32(map[code] ·
 * nested_absmax[(block0 + b) / 256]) + offset) with __fmul_rn / __fadd_rn, so that nvcc cannot contract it
 * into an FMA (its default --fmad=true would, and the result would differ from bitsandbytes' in the
 * last bit); value = code[nibble] · scale, rounded to nearest even into bf16 (cvt.rn keeps denormals).
 * One thread per element, grid-stride: memory bound on reading 0.5 byte and writing 2 per element.
 */
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/cuda_memory.h"
#include "backend/cuda/cuda_nf4.h"

__constant__ float nf4_code_dev[16];

__global__ void nf4_dequant_bf16_kernel(bf16 *dst, const uint8_t *packed, const uint8_t *absmax_q,
                                        const float *nested_absmax, const float *nested_map, const float *absmax,
                                        float offset, int double_quant, int64_t block0, int64_t e0, int64_t n) {
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t e = e0 + i, b = e / FL_NF4_BLOCK;
        float s = double_quant ? __fadd_rn(__fmul_rn(nested_map[absmax_q[b]], nested_absmax[(block0 + b) / FL_NF4_GROUP]), offset)
                               : absmax[b];
        uint8_t byte = packed[e >> 1];
        int q = (e & 1) ? (byte & 15) : (byte >> 4);
        dst[i] = __float2bfloat16_rn(__fmul_rn(nf4_code_dev[q], s));
    }
}

/* The NF4 table in constant memory, once per process. */
static void ensure_code_table(void) {
    static int code_ready;
    if (!code_ready) {
        CUDA_CHECK(cudaMemcpyToSymbol(nf4_code_dev, fl_nf4_code(), 16 * sizeof(float)));
        code_ready = 1;
    }
}

extern "C" int fl_nf4_cuda_upload(fl_nf4_weight *dev, const fl_nf4_weight *host) {
    if (fl_cuda_init() != 0) return -1;
    ensure_code_table();
    void *storage = cuda_alloc(host->bytes);
    cuda_upload(storage, host->storage, host->bytes);
    fl_nf4_view(dev, host, storage);
    return 0;
}

extern "C" void fl_nf4_cuda_free(fl_nf4_weight *dev) {
    if (dev->storage) cuda_free(dev->storage);
    memset(dev, 0, sizeof *dev);
}

extern "C" void fl_nf4_cuda_dequantize_rows_bf16(const fl_nf4_weight *dev, int64_t r0, int64_t r1, void *dst) {
    int64_t e0 = r0 * dev->cols, n = (r1 - r0) * dev->cols;
    if (n <= 0) return;
    ensure_code_table();
    nf4_dequant_bf16_kernel<<<fl_cuda_grid_1d((size_t)n, 256, 1, 1u << 20), 256, 0, fl_cuda.stream>>>(
        (bf16 *)dst, dev->packed, dev->absmax_q, dev->nested_absmax, dev->nested_map, dev->absmax, dev->offset,
        dev->double_quant, dev->block0, e0, n);
    CUDA_LAUNCH_CHECK();
}

/* Rows of W per dequantized tile: FL_CUDA_NF4_TILE_BYTES of bf16 (cuda_plan.h), at least one row. */
static int64_t tile_rows(const fl_nf4_weight *w) {
    int64_t rows = fl_cuda_nf4_tile_rows(w->rows, w->cols);
    return rows > 0 ? rows : 1;
}

extern "C" void fl_nf4_cuda_matmul_forward(void *out, const void *inp, const fl_nf4_weight *w, const void *bias,
                                           float alpha, float beta, size_t N, int ld_out, int ld_inp) {
    int64_t tr = tile_rows(w);
    bf16 *tile = (bf16 *)fl_cuda_scratch(FL_SCRATCH_NF4, (size_t)(tr * w->cols) * sizeof(bf16));
    for (int64_t r = 0; r < w->rows; r += tr) {
        int64_t nr = w->rows - r < tr ? w->rows - r : tr;
        fl_nf4_cuda_dequantize_rows_bf16(w, r, r + nr, tile);
        /* out[:, r:r+nr] = alpha · inp · tileᵀ + bias[r:r+nr] + beta · out[:, r:r+nr] */
        matmul_forward((bf16 *)out + r, (const bf16 *)inp, tile, bias ? (const bf16 *)bias + r : NULL, alpha, beta, N,
                       (int)w->cols, (int)nr, ld_out, ld_inp, (int)w->cols, fl_cuda.stream);
    }
}

extern "C" void fl_nf4_cuda_matmul_backward_input(void *dinp, const void *dout, const fl_nf4_weight *w, float alpha,
                                                  float beta, size_t N, int ld_dinp, int ld_dout) {
    int64_t tr = tile_rows(w);
    bf16 *tile = (bf16 *)fl_cuda_scratch(FL_SCRATCH_NF4, (size_t)(tr * w->cols) * sizeof(bf16));
    for (int64_t r = 0; r < w->rows; r += tr) {
        int64_t nr = w->rows - r < tr ? w->rows - r : tr;
        fl_nf4_cuda_dequantize_rows_bf16(w, r, r + nr, tile);
        /* dinp += alpha · dout[:, r:r+nr] · tile (the first tile applies beta) */
        matmul_backward_input((bf16 *)dinp, (const bf16 *)dout + r, tile, alpha, r == 0 ? beta : 1.0f, N, (int)w->cols,
                              (int)nr, ld_dinp, ld_dout, (int)w->cols, fl_cuda.stream);
    }
}
