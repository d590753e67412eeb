/* cuda_memory.cu — device memory for the CUDA backend: zeroed, counted allocations (one per
 * category: the engine allocates weights, LoRA buffers and activations as single blocks), copies
 * on the backend's stream, and the f32 <-> bf16 conversions behind upload_act / upload_weight /
 * download_act / cast_to_weight (round to nearest even, like torch's .to(bfloat16)).
 *
 * Host->device copies from pageable memory return once the source was staged, so callers may free
 * it at once; device->host copies return when the data is on the host. */
#include <stdio.h>
#include <stdlib.h>
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

/* Up to FL_CUDA_CAST_BLOCKS blocks of the LoRA B compute copy, passed by value (2.9 KiB of kernel
 * parameters, within the 4 KiB every CUDA version takes): blockIdx.y picks the block, a grid-stride
 * loop over x covers its rows x cols. */
#define FL_CUDA_CAST_BLOCKS 120
typedef struct {
    bf16 *dst[FL_CUDA_CAST_BLOCKS];
    const float *src[FL_CUDA_CAST_BLOCKS];
    uint32_t rows[FL_CUDA_CAST_BLOCKS];
    int32_t ld[FL_CUDA_CAST_BLOCKS];
} cast_batch;

__global__ void convert_f32_to_bf16_2d_kernel(const __grid_constant__ cast_batch batch, float scale, int cols) {
    int j = blockIdx.y;
    size_t n = (size_t)batch.rows[j] * (size_t)cols;
    bf16 *dst = batch.dst[j];
    const float *src = batch.src[j];
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dst[i / cols * batch.ld[j] + i % cols] = __float2bfloat16_rn(scale * src[i]);
}

void convert_f32_to_bf16_2d(const fl_cast_block *blocks, int n, float scale, int cols, cudaStream_t stream) {
    for (int j0 = 0; j0 < n; j0 += FL_CUDA_CAST_BLOCKS) {
        int count = n - j0 < FL_CUDA_CAST_BLOCKS ? n - j0 : FL_CUDA_CAST_BLOCKS;
        cast_batch batch;
        memset(&batch, 0, sizeof batch);
        size_t most = 0;
        for (int j = 0; j < count; j++) {
            const fl_cast_block *b = &blocks[j0 + j];
            if (b->rows > UINT32_MAX) {
                fprintf(stderr, "fastlora: cast_to_weight_2d: %zu rows in one block\n", b->rows);
                abort();
            }
            batch.dst[j] = (bf16 *)b->dst;
            batch.src[j] = b->src;
            batch.rows[j] = (uint32_t)b->rows;
            batch.ld[j] = b->ld;
            if (b->rows * (size_t)cols > most) most = b->rows * (size_t)cols;
        }
        if (!most || !cols) continue;
        dim3 grid(fl_cuda_grid_1d(most, 256, 4, 1024), (unsigned)count);
        convert_f32_to_bf16_2d_kernel<<<grid, 256, 0, stream>>>(batch, scale, cols);
        CUDA_LAUNCH_CHECK();
    }
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
    if (!bytes) return;
    CUDA_CHECK(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, fl_cuda.stream));
    fl_cuda_count_op();
}

void cuda_download(void *host_dst, const void *src, size_t bytes) {
    if (!bytes) return;
    CUDA_CHECK(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, fl_cuda.stream));
    CUDA_CHECK(cudaStreamSynchronize(fl_cuda.stream));
}

void cuda_copy(void *dst, const void *src, size_t bytes) {
    if (!bytes || dst == src) return;
    CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, fl_cuda.stream));
    fl_cuda_count_op();
}

/* Mirrors backend/cpu/cpu_memory.c's cpu_copy_2d: one strided copy on the stream (recordable). */
void cuda_copy_2d(void *dst, size_t ld_dst, const void *src, size_t ld_src, size_t width, size_t rows) {
    if (!width || !rows) return;
    CUDA_CHECK(cudaMemcpy2DAsync(dst, ld_dst, src, ld_src, width, rows, cudaMemcpyDeviceToDevice, fl_cuda.stream));
    fl_cuda_count_op();
}

void cuda_zero(void *ptr, size_t bytes) {
    if (!bytes) return;
    CUDA_CHECK(cudaMemsetAsync(ptr, 0, bytes, fl_cuda.stream));
    fl_cuda_count_op();
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

void cuda_cast_to_weight_2d(const fl_cast_block *blocks, int n, float scale, int cols) {
    convert_f32_to_bf16_2d(blocks, n, scale, cols, fl_cuda.stream);
}

/* Pinned host memory: uploads from it are true asynchronous copies, and a recorded upload (a CUDA
 * graph's memcpy node) reads it again at every replay. */
void *cuda_alloc_host(size_t bytes) {
    void *p = NULL;
    CUDA_CHECK(cudaMallocHost(&p, bytes ? bytes : 1));
    memset(p, 0, bytes);
    return p;
}

void cuda_free_host(void *ptr) {
    if (!ptr) return;
    CUDA_CHECK(cudaStreamSynchronize(fl_cuda.stream)); /* queued copies may still read it */
    CUDA_CHECK(cudaFreeHost(ptr));
}
