/* cuda_info.h — what plain C (the CUDA backend's describe/read_counters hooks, the tests) may ask
 * the CUDA backend beyond the interface of backend.h: device name, memory counters, a measured
 * matmul rate. Declared in every build; defined only when the build has CUDA (FL_HAVE_CUDA), so
 * callers guard their use with #ifdef FL_HAVE_CUDA. The bench asks backend.h's describe instead.
 *
 * Usage (tests):
 *   #ifdef FL_HAVE_CUDA
 *   if (be == fl_backend_cuda()) printf("%s, peak %.1f GiB\n", fl_cuda_device_name(), fl_cuda_peak_bytes() / 1073741824.0);
 *   #endif
 */
#ifndef FL_CUDA_INFO_H
#define FL_CUDA_INFO_H

#include <stddef.h>

#include "backend/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The CUDA backend, or NULL when no device/driver is usable (the binary then runs on the CPU). */
const fl_backend *fl_backend_cuda(void);

/* "NVIDIA H200" etc.; "" before fl_backend_cuda() succeeded. */
const char *fl_cuda_device_name(void);
/* Compute capability as major*10+minor (90 for Hopper), 0 when none. */
int fl_cuda_compute_capability(void);
/* Bytes held by the backend's allocations (alloc() plus its scratch arena) now and at the peak. */
size_t fl_cuda_live_bytes(void);
size_t fl_cuda_peak_bytes(void);
void fl_cuda_reset_peak(void);
/* Device memory free and total, as cudaMemGetInfo reports (includes other processes). */
void fl_cuda_mem_info(size_t *free_bytes, size_t *total_bytes);
/* Measured bf16 GEMM rate (TFLOP/s) of out (m, n) = a (m, k) · b (n, k)ᵀ through the backend's
 * cuBLASLt path on random data, median of `iters` timed runs after warm-up. */
double fl_cuda_measure_matmul_tflops(int m, int n, int k, int iters);
/* Measured device-to-device copy bandwidth in GB/s (bytes read + bytes written). */
double fl_cuda_measure_copy_gbs(size_t bytes, int iters);
/* Operations enqueued on the backend's stream so far, outside recordings: kernel launches, GEMMs
 * (one cuBLASLt or cuBLAS call each), copies and memsets, and graph launches (a replayed step counts
 * 1). The bench's "launches per step" is the difference over a step run op by op. */
unsigned long long fl_cuda_ops_enqueued(void);
/* Bytes of bf16 logits per LM-head chunk (cuda_plan.h); 0 (default): FL_CUDA_LM_HEAD_BUDGET, fixed,
 * so the chunks depend on the shapes alone. Tests set it to take the chunked path. */
void fl_cuda_set_lm_head_budget(size_t bytes);
/* Which attention runs: "mma" (tensor cores, HS 64/128; the default) or "simple" (CUDA cores, any
 * HS up to 256), forward and backward. The environment variable FL_CUDA_ATTN=simple|mma sets the
 * start value; the setter overrides it (tests run both). FL_CUDA_ATTN_BWD=simple keeps the simple
 * backward under the mma forward (docs/CUDA.md). */
const char *fl_cuda_attention_variant(void);
void fl_cuda_set_attention_variant(const char *name);

#ifdef __cplusplus
}
#endif

#endif
