/* cuda_memory.cu — device memory for the CUDA backend: zeroed, counted allocations (one per
 * category: the engine allocates weights, LoRA buffers and activations as single blocks), copies
 * on the backend's stream, and the f32 <-> bf16 conversions behind upload_act / upload_weight /
 * download_act / cast_to_weight (round to nearest even, like torch's .to(bfloat16)).
 *
 * Host->device copies from pageable memory return once the source was staged, so callers may free
 * it at once; device->host copies return when the data is on the host. */
#include <string.h>

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/cuda_memory.h"

__global__ void convert_f32_to_bf16_kernel(bf16 *dst, const float *src, size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dst[i] = __float2bfloat16_rn(src[i]);
}

__global__ void convert_bf16_to_f32_kernel(float *dst, const bf16 *src, size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dst[i] = __bfloat162float(src[i]);
}

__global__ void convert_f32_to_bf16_2d_kernel(bf16 *dst, const float *src, float scale, size_t rows, int cols,
                                              int ld_dst) {
    size_t n = rows * (size_t)cols;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dst[i / cols * ld_dst + i % cols] = __float2bfloat16_rn(scale * src[i]);
}

void convert_f32_to_bf16_2d(bf16 *dst, const float *src, float scale, size_t rows, int cols, int ld_dst,
                            cudaStream_t stream) {
    size_t n = rows * (size_t)cols;
    if (!n) return;
    convert_f32_to_bf16_2d_kernel<<<fl_cuda_grid_1d(n, 256, 4, 65535), 256, 0, stream>>>(dst, src, scale, rows, cols,
                                                                                          ld_dst);
    CUDA_LAUNCH_CHECK();
}

void convert_f32_to_bf16(bf16 *dst, const float *src, size_t n, cudaStream_t stream) {
    if (!n) return;
    convert_f32_to_bf16_kernel<<<fl_cuda_grid_1d(n, 256, 4, 65535), 256, 0, stream>>>(dst, src, n);
    CUDA_LAUNCH_CHECK();
}

void convert_bf16_to_f32(float *dst, const bf16 *src, size_t n, cudaStream_t stream) {
    if (!n) return;
    convert_bf16_to_f32_kernel<<<fl_cuda_grid_1d(n, 256, 4, 65535), 256, 0, stream>>>(dst, src, n);
    CUDA_LAUNCH_CHECK();
}

void *cuda_alloc(size_t bytes) {
    void *p = FL_CUDA_MALLOC(bytes, "backend alloc");
    CUDA_CHECK(cudaMemsetAsync(p, 0, bytes ? bytes : 1, fl_cuda.stream));
    return p;
}

void cuda_free(void *ptr) {
    if (!ptr) return;
    CUDA_CHECK(cudaStreamSynchronize(fl_cuda.stream)); /* queued work may still use it */
    fl_cuda_free_counted(ptr);
}

void cuda_upload(void *dst, const void *host_src, size_t bytes) {
    if (bytes) CUDA_CHECK(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, fl_cuda.stream));
}

void cuda_download(void *host_dst, const void *src, size_t bytes) {
    if (!bytes) return;
    CUDA_CHECK(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, fl_cuda.stream));
    CUDA_CHECK(cudaStreamSynchronize(fl_cuda.stream));
}

void cuda_copy(void *dst, const void *src, size_t bytes) {
    if (bytes && dst != src) CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, fl_cuda.stream));
}

void cuda_zero(void *ptr, size_t bytes) {
    if (bytes) CUDA_CHECK(cudaMemsetAsync(ptr, 0, bytes, fl_cuda.stream));
}

void cuda_synchronize(void) { CUDA_CHECK(cudaStreamSynchronize(fl_cuda.stream)); }

/* f32 host -> bf16 device through an f32 staging buffer, FL_CUDA_STAGING_FLOATS at a time. */
void cuda_upload_act(void *dst, const float *host_src, size_t n) {
    size_t chunk = n < FL_CUDA_STAGING_FLOATS ? n : FL_CUDA_STAGING_FLOATS;
    if (!n) return;
    float *staging = (float *)fl_cuda_scratch(FL_SCRATCH_STAGING, chunk * sizeof(float));
    for (size_t i = 0; i < n; i += chunk) {
        size_t m = n - i < chunk ? n - i : chunk;
        /* stream order: the previous chunk's conversion has read the staging buffer before this copy */
        CUDA_CHECK(cudaMemcpyAsync(staging, host_src + i, m * sizeof(float), cudaMemcpyHostToDevice, fl_cuda.stream));
        convert_f32_to_bf16((bf16 *)dst + i, staging, m, fl_cuda.stream);
    }
}

void cuda_download_act(float *host_dst, const void *src, size_t n) {
    size_t chunk = n < FL_CUDA_STAGING_FLOATS ? n : FL_CUDA_STAGING_FLOATS;
    if (!n) return;
    float *staging = (float *)fl_cuda_scratch(FL_SCRATCH_STAGING, chunk * sizeof(float));
    for (size_t i = 0; i < n; i += chunk) {
        size_t m = n - i < chunk ? n - i : chunk;
        convert_bf16_to_f32(staging, (const bf16 *)src + i, m, fl_cuda.stream);
        CUDA_CHECK(cudaMemcpyAsync(host_dst + i, staging, m * sizeof(float), cudaMemcpyDeviceToHost, fl_cuda.stream));
        CUDA_CHECK(cudaStreamSynchronize(fl_cuda.stream));
    }
}

void cuda_cast_to_weight(void *dst, const float *src, size_t n) { convert_f32_to_bf16((bf16 *)dst, src, n, fl_cuda.stream); }

void cuda_cast_to_weight_2d(void *dst, const float *src, float scale, size_t rows, int cols, int ld_dst) {
    convert_f32_to_bf16_2d((bf16 *)dst, src, scale, rows, cols, ld_dst, fl_cuda.stream);
}
