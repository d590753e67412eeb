/* cuda_context.cu — the CUDA backend's context: device selection, the stream, the cuBLASLt handle
 * and workspace, the scratch arena, counted allocations and the error reporting of cuda_check.h.
 * Not the ops (one file per family) and not the interface binding (cuda_backend.cu). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/cuda_info.h"

fl_cuda_context fl_cuda;

static int context_state; /* 0 not tried, 1 usable, -1 unusable */

extern "C" void fl_cuda_fail(const char *what, int code, const char *stmt, const char *func, const char *file, int line) {
    int dev = -1;
    cudaGetDevice(&dev);
    fprintf(stderr, "fastlora: CUDA error: %s (%d) in %s at %s:%d on device %d (%s): %s\n", what, code, func, file, line,
            dev, fl_cuda.prop.name[0] ? fl_cuda.prop.name : "?", stmt);
    fflush(stderr);
    abort();
}

extern "C" void fl_cuda_die_oom(size_t bytes_asked, const char *what, const char *func, const char *file, int line) {
    size_t free_b = 0, total_b = 0;
    cudaGetLastError(); /* clear the sticky-free OOM error so the query works */
    cudaMemGetInfo(&free_b, &total_b);
    fprintf(stderr,
            "fastlora: out of GPU memory: asked for %.1f MiB (%s) in %s at %s:%d; %.1f MiB free of %.1f MiB on %s, "
            "fastlora holds %.1f MiB. Try --recompute (keep each layer's input only), --quant nf4 (4-bit frozen "
            "projections) or a smaller --batch / --seq; `fastlora plan` says what fits.\n",
            bytes_asked / 1048576.0, what, func, file, line, free_b / 1048576.0, total_b / 1048576.0,
            fl_cuda.prop.name[0] ? fl_cuda.prop.name : "the GPU", fl_cuda.live_bytes / 1048576.0);
    fflush(stderr);
    exit(1);
}

extern "C" const char *fl_cublas_status_string(cublasStatus_t status) {
    switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
    default: return "CUBLAS_STATUS_UNKNOWN";
    }
}

/* ---- allocations: counted, with the OOM message ---- */

/* Host-side record of live allocations (ptr -> bytes) so free() can keep the counters. The
 * backend allocates per category (a handful of buffers), so a linear table is plenty. */
#define MAX_ALLOCS 4096
static struct { void *ptr; size_t bytes; } allocs[MAX_ALLOCS];

void *fl_cuda_malloc_checked(size_t bytes, const char *what, const char *func, const char *file, int line) {
    void *p = NULL;
    size_t rounded = (bytes + 255) / 256 * 256;
    if (rounded == 0) rounded = 256;
    cudaError_t err = cudaMalloc(&p, rounded);
    if (err == cudaErrorMemoryAllocation) fl_cuda_die_oom(rounded, what, func, file, line);
    if (err != cudaSuccess) fl_cuda_fail(cudaGetErrorString(err), (int)err, "cudaMalloc(&p, rounded)", func, file, line);
    int slot = -1;
    for (int i = 0; i < MAX_ALLOCS; i++)
        if (!allocs[i].ptr) { slot = i; break; }
    if (slot < 0) {
        fprintf(stderr, "fastlora: CUDA backend: more than %d live allocations (%s)\n", MAX_ALLOCS, what);
        abort();
    }
    allocs[slot].ptr = p;
    allocs[slot].bytes = rounded;
    fl_cuda.live_bytes += rounded;
    if (fl_cuda.live_bytes > fl_cuda.peak_bytes) fl_cuda.peak_bytes = fl_cuda.live_bytes;
    return p;
}

void fl_cuda_free_counted(void *ptr) {
    if (!ptr) return;
    for (int i = 0; i < MAX_ALLOCS; i++)
        if (allocs[i].ptr == ptr) {
            fl_cuda.live_bytes -= allocs[i].bytes;
            allocs[i].ptr = NULL;
            break;
        }
    CUDA_CHECK(cudaFree(ptr));
}

/* ---- scratch arena ---- */

static struct { void *ptr; size_t bytes; } scratch[FL_SCRATCH_COUNT];

void *fl_cuda_scratch(fl_scratch_slot slot, size_t bytes) {
    if (scratch[slot].bytes >= bytes && scratch[slot].ptr) return scratch[slot].ptr;
    if (fl_cuda.recording) {
        /* no synchronize or free while recording: the recording fails (it is discarded unrun), and the
         * ops still being recorded get a stand-in address they never touch */
        fl_cuda.record_failed = 1;
        return scratch[slot].ptr ? scratch[slot].ptr : fl_cuda.workspace;
    }
    /* growing: work queued on the stream may still read the old buffer */
    CUDA_CHECK(cudaStreamSynchronize(fl_cuda.stream));
    /* every recording made so far may hold the old address: they go stale (cuda_capture_replay) */
    if (scratch[slot].ptr) fl_cuda.scratch_generation++;
    fl_cuda_free_counted(scratch[slot].ptr);
    /* a quarter of slack for small slots that grow step by step; none for large ones (the LM head's
     * whole-batch logits are 2.5 GB, sized once per shape) */
    size_t grown = bytes < ((size_t)256 << 20) ? bytes + bytes / 4 : bytes;
    scratch[slot].ptr = FL_CUDA_MALLOC(grown, "scratch arena");
    scratch[slot].bytes = grown;
    return scratch[slot].ptr;
}

/* ---- init ---- */

int fl_cuda_init(void) {
    if (context_state) return context_state > 0 ? 0 : -1;
    context_state = -1;
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count <= 0) {
        cudaGetLastError();
        return -1;
    }
    const char *env = getenv("FL_CUDA_DEVICE");
    int dev = env ? atoi(env) : 0;
    if (dev < 0 || dev >= count) dev = 0;
    if (cudaSetDevice(dev) != cudaSuccess || cudaGetDeviceProperties(&fl_cuda.prop, dev) != cudaSuccess) {
        cudaGetLastError();
        return -1;
    }
    if (fl_cuda.prop.major < 8) {
        fprintf(stderr, "fastlora: %s (sm_%d%d) is older than sm_80; the CUDA backend needs bf16 tensor cores, "
                        "using the CPU\n", fl_cuda.prop.name, fl_cuda.prop.major, fl_cuda.prop.minor);
        return -1;
    }
    fl_cuda.device = dev;
    CUDA_CHECK(cudaStreamCreateWithFlags(&fl_cuda.stream, cudaStreamNonBlocking));
    CUBLAS_CHECK(cublasLtCreate(&fl_cuda.lt));
    fl_cuda.workspace_bytes = FL_CUDA_WORKSPACE_BYTES;
    fl_cuda.workspace = FL_CUDA_MALLOC(fl_cuda.workspace_bytes, "cuBLASLt workspace");
    context_state = 1;
    return 0;
}

/* ---- cuda_info.h ---- */

extern "C" const char *fl_cuda_device_name(void) { return context_state > 0 ? fl_cuda.prop.name : ""; }
extern "C" int fl_cuda_compute_capability(void) {
    return context_state > 0 ? fl_cuda.prop.major * 10 + fl_cuda.prop.minor : 0;
}
extern "C" size_t fl_cuda_live_bytes(void) { return fl_cuda.live_bytes; }
extern "C" void fl_cuda_count_op(void) {
    if (!fl_cuda.recording) fl_cuda.ops++;
}
extern "C" unsigned long long fl_cuda_ops_enqueued(void) { return fl_cuda.ops; }
extern "C" size_t fl_cuda_peak_bytes(void) { return fl_cuda.peak_bytes; }
extern "C" void fl_cuda_reset_peak(void) { fl_cuda.peak_bytes = fl_cuda.live_bytes; }
extern "C" void fl_cuda_mem_info(size_t *free_bytes, size_t *total_bytes) {
    *free_bytes = *total_bytes = 0;
    if (context_state > 0) CUDA_CHECK(cudaMemGetInfo(free_bytes, total_bytes));
}
