/* cuda_nf4.cu — NF4 weights on the GPU: upload, and the tiled dequantization to bf16 (nf4_cuda.h).
 *
 * Mirrors fl_nf4_dequantize_rows (quant/nf4.c) element for element: scale = f32(f32(map[code] ·
 * nested_absmax[b / 256]) + offset) with __fmul_rn / __fadd_rn, so that nvcc cannot contract it
 * into an FMA (its default --fmad=true would, and the result would differ from bitsandbytes' in the
 * last bit); value = code[nibble] · scale, rounded to nearest even into bf16 (cvt.rn keeps denormals).
 * One thread per element, grid-stride: memory bound on reading 0.5 byte and writing 2 per element.
 */
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/cuda_memory.h"
#include "quant/nf4_cuda.h"

__constant__ float nf4_code_dev[16];

__global__ void nf4_dequant_bf16_kernel(bf16 *dst, const uint8_t *packed, const uint8_t *absmax_q,
                                        const float *nested_absmax, const float *nested_map, const float *absmax,
                                        float offset, int double_quant, int64_t e0, int64_t n) {
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t e = e0 + i, b = e / FL_NF4_BLOCK;
        float s = double_quant ? __fadd_rn(__fmul_rn(nested_map[absmax_q[b]], nested_absmax[b / FL_NF4_GROUP]), offset)
                               : absmax[b];
        uint8_t byte = packed[e >> 1];
        int q = (e & 1) ? (byte & 15) : (byte >> 4);
        dst[i] = __float2bfloat16_rn(__fmul_rn(nf4_code_dev[q], s));
    }
}

extern "C" int fl_nf4_cuda_upload(fl_nf4_weight *dev, const fl_nf4_weight *host) {
    if (fl_cuda_init() != 0) return -1;
    static int code_ready;
    if (!code_ready) {
        CUDA_CHECK(cudaMemcpyToSymbol(nf4_code_dev, fl_nf4_code(), 16 * sizeof(float)));
        code_ready = 1;
    }
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
    nf4_dequant_bf16_kernel<<<fl_cuda_grid_1d((size_t)n, 256, 1, 1u << 20), 256, 0, fl_cuda.stream>>>(
        (bf16 *)dst, dev->packed, dev->absmax_q, dev->nested_absmax, dev->nested_map, dev->absmax, dev->offset,
        dev->double_quant, e0, n);
    CUDA_LAUNCH_CHECK();
}
