/* lab.h — helpers shared by the kernel lab (the .cu files of dev/cuda): each program runs one family of the
 * backend's kernels standalone, checks it against the CPU reference op (backend/cpu) on fresh
 * random inputs, then times it with CUDA events against the card's measured ceilings (copy
 * bandwidth for memory-bound kernels, the cuBLASLt bf16 rate for matrix-bound ones).
 * Built by `make dev-cuda` into build/dev/<name>; not part of the library or the tests. */
#ifndef FL_DEV_CUDA_LAB_H
#define FL_DEV_CUDA_LAB_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vector>
#include <algorithm>

extern "C" {
#include "backend/cpu/cpu_ops.h"
#include "common/rng.h"
}
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/cuda_info.h"

static inline void lab_init(void) {
    if (!fl_backend_cuda()) {
        fprintf(stderr, "no CUDA device: the lab needs a GPU\n");
        exit(2);
    }
    printf("# %s (sm_%d), %d SMs\n", fl_cuda_device_name(), fl_cuda_compute_capability(),
           fl_cuda.prop.multiProcessorCount);
}

/* Copies and fills go through the backend's stream and wait for it. The stream is created with
 * cudaStreamNonBlocking, so plain cudaMemcpy / cudaMemset (legacy default stream) would NOT be
 * ordered against the kernels: a download could read an output before its kernel finished, a
 * poison memset could land after the kernel wrote the output. */
static inline void lab_copy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind) {
    CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, kind, fl_cuda.stream));
    CUDA_CHECK(cudaStreamSynchronize(fl_cuda.stream));
}
static inline void lab_memset(void *d, int value, size_t bytes) {
    CUDA_CHECK(cudaMemsetAsync(d, value, bytes, fl_cuda.stream));
    CUDA_CHECK(cudaStreamSynchronize(fl_cuda.stream));
}

static inline float lab_round_bf16(float x) { return __bfloat162float(__float2bfloat16_rn(x)); }

/* n bf16-representable floats ~ U(lo, hi) */
static inline std::vector<float> lab_rand(size_t n, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
    std::vector<float> x(n);
    fl_rng_fill_uniform(x.data(), n, fl_rng_stream(seed, 0x1ab, 0, 0), lo, hi);
    for (auto &v : x) v = lab_round_bf16(v);
    return x;
}

static inline bf16 *lab_dev_bf16(const std::vector<float> &h) {
    bf16 *d;
    CUDA_CHECK(cudaMalloc(&d, h.size() * 2 + 16));
    std::vector<bf16> t(h.size());
    for (size_t i = 0; i < h.size(); i++) t[i] = __float2bfloat16_rn(h[i]);
    lab_copy(d, t.data(), h.size() * 2, cudaMemcpyHostToDevice);
    return d;
}
template <typename T> static inline T *lab_dev(const std::vector<T> &h) {
    T *d;
    CUDA_CHECK(cudaMalloc(&d, h.size() * sizeof(T) + 16));
    lab_copy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice);
    return d;
}
static inline std::vector<float> lab_host_bf16(const bf16 *d, size_t n) {
    std::vector<bf16> t(n);
    lab_copy(t.data(), d, n * 2, cudaMemcpyDeviceToHost);
    std::vector<float> h(n);
    for (size_t i = 0; i < n; i++) h[i] = __bfloat162float(t[i]);
    return h;
}
static inline std::vector<float> lab_host_f32(const float *d, size_t n) {
    std::vector<float> h(n);
    lab_copy(h.data(), d, n * 4, cudaMemcpyDeviceToHost);
    return h;
}
/* q (N, QD), k and v (N, KVD) side by side in one (N, ld) buffer (zeros past v), as the engine's
 * fused q/k/v projection stores them */
static inline std::vector<float> lab_pack_qkv(const std::vector<float> &q, const std::vector<float> &k,
                                              const std::vector<float> &v, size_t N, int QD, int KVD, int ld) {
    std::vector<float> qkv(N * ld, 0.0f);
    for (size_t n = 0; n < N; n++) {
        std::copy(q.begin() + n * QD, q.begin() + (n + 1) * QD, qkv.begin() + n * ld);
        std::copy(k.begin() + n * KVD, k.begin() + (n + 1) * KVD, qkv.begin() + n * ld + QD);
        std::copy(v.begin() + n * KVD, v.begin() + (n + 1) * KVD, qkv.begin() + n * ld + QD + KVD);
    }
    return qkv;
}

/* Poisons an output so unwritten elements show up as NaN. */
static inline void lab_poison(void *d, size_t bytes) { lab_memset(d, 0xff, bytes); }

static inline double lab_rel_err(const std::vector<float> &got, const std::vector<float> &want) {
    double num = 0, den = 0;
    for (size_t i = 0; i < want.size(); i++) {
        if (!(got[i] == got[i])) return INFINITY;
        num += ((double)got[i] - want[i]) * ((double)got[i] - want[i]);
        den += (double)want[i] * want[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

static int lab_failures;
static inline void lab_check(const char *what, double err, double tol) {
    int ok = err <= tol;
    lab_failures += !ok;
    printf("%-40s rel err %.3g (tol %.3g) %s\n", what, err, tol, ok ? "ok" : "FAIL");
}

/* Median milliseconds of `iters` runs of fn() after 3 warm-ups, CUDA events on the backend stream. */
template <typename F> static inline double lab_time_ms(F fn, int iters = 20) {
    cudaEvent_t e0, e1;
    CUDA_CHECK(cudaEventCreate(&e0));
    CUDA_CHECK(cudaEventCreate(&e1));
    for (int i = 0; i < 3; i++) fn();
    std::vector<float> ms(iters);
    for (int i = 0; i < iters; i++) {
        CUDA_CHECK(cudaEventRecord(e0, fl_cuda.stream));
        fn();
        CUDA_CHECK(cudaEventRecord(e1, fl_cuda.stream));
        CUDA_CHECK(cudaEventSynchronize(e1));
        CUDA_CHECK(cudaEventElapsedTime(&ms[i], e0, e1));
    }
    std::sort(ms.begin(), ms.end());
    CUDA_CHECK(cudaEventDestroy(e0));
    CUDA_CHECK(cudaEventDestroy(e1));
    return ms[iters / 2];
}

#endif
