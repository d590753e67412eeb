/* cuda_info.cu — the measured ceilings of cuda_info.h: the bf16 GEMM rate through the backend's
 * own cuBLASLt path and the device-to-device copy bandwidth, each timed with CUDA events after a
 * warm-up on random data (never zeros: they run faster than real data), median of the runs. */
#include <stdlib.h>

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/cuda_info.h"

__global__ void fill_random_bf16_kernel(bf16 *x, size_t n, uint64_t seed) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        x[i] = __float2bfloat16_rn(fl_rng_uniform_dev(seed, i) * 2.0f - 1.0f);
}

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

extern "C" double fl_cuda_measure_matmul_tflops(int m, int n, int k, int iters) {
    if (!fl_backend_cuda() || iters < 1) return 0.0;
    cudaStream_t s = fl_cuda.stream;
    bf16 *a = (bf16 *)FL_CUDA_MALLOC((size_t)m * k * 2, "matmul benchmark A");
    bf16 *b = (bf16 *)FL_CUDA_MALLOC((size_t)n * k * 2, "matmul benchmark B");
    bf16 *c = (bf16 *)FL_CUDA_MALLOC((size_t)m * n * 2, "matmul benchmark C");
    fill_random_bf16_kernel<<<1024, 256, 0, s>>>(a, (size_t)m * k, 1);
    fill_random_bf16_kernel<<<1024, 256, 0, s>>>(b, (size_t)n * k, 2);
    CUDA_LAUNCH_CHECK();
    cudaEvent_t e0, e1;
    CUDA_CHECK(cudaEventCreate(&e0));
    CUDA_CHECK(cudaEventCreate(&e1));
    for (int w = 0; w < 3; w++) matmul_forward(c, a, b, NULL, 1.0f, 0.0f, (size_t)m, k, n, n, k, k, s);
    float *ms = (float *)malloc(sizeof(float) * iters);
    for (int i = 0; i < iters; i++) {
        CUDA_CHECK(cudaEventRecord(e0, s));
        matmul_forward(c, a, b, NULL, 1.0f, 0.0f, (size_t)m, k, n, n, k, k, s);
        CUDA_CHECK(cudaEventRecord(e1, s));
        CUDA_CHECK(cudaEventSynchronize(e1));
        CUDA_CHECK(cudaEventElapsedTime(&ms[i], e0, e1));
    }
    qsort(ms, (size_t)iters, sizeof(float), cmp_float);
    double median_s = ms[iters / 2] * 1e-3;
    free(ms);
    CUDA_CHECK(cudaEventDestroy(e0));
    CUDA_CHECK(cudaEventDestroy(e1));
    fl_cuda_free_counted(a);
    fl_cuda_free_counted(b);
    fl_cuda_free_counted(c);
    return 2.0 * m * n * (double)k / median_s / 1e12;
}

extern "C" double fl_cuda_measure_copy_gbs(size_t bytes, int iters) {
    if (!fl_backend_cuda() || iters < 1 || bytes == 0) return 0.0;
    cudaStream_t s = fl_cuda.stream;
    bf16 *src = (bf16 *)FL_CUDA_MALLOC(bytes, "copy benchmark source");
    bf16 *dst = (bf16 *)FL_CUDA_MALLOC(bytes, "copy benchmark destination");
    fill_random_bf16_kernel<<<1024, 256, 0, s>>>(src, bytes / 2, 3);
    CUDA_LAUNCH_CHECK();
    cudaEvent_t e0, e1;
    CUDA_CHECK(cudaEventCreate(&e0));
    CUDA_CHECK(cudaEventCreate(&e1));
    CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s));
    float *ms = (float *)malloc(sizeof(float) * iters);
    for (int i = 0; i < iters; i++) {
        CUDA_CHECK(cudaEventRecord(e0, s));
        CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s));
        CUDA_CHECK(cudaEventRecord(e1, s));
        CUDA_CHECK(cudaEventSynchronize(e1));
        CUDA_CHECK(cudaEventElapsedTime(&ms[i], e0, e1));
    }
    qsort(ms, (size_t)iters, sizeof(float), cmp_float);
    double median_s = ms[iters / 2] * 1e-3;
    free(ms);
    CUDA_CHECK(cudaEventDestroy(e0));
    CUDA_CHECK(cudaEventDestroy(e1));
    fl_cuda_free_counted(src);
    fl_cuda_free_counted(dst);
    return 2.0 * (double)bytes / median_s / 1e9;
}
