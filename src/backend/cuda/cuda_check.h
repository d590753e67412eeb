/* cuda_check.h — the one error header of the CUDA backend.
 *
 * CUDA_CHECK(stmt) and CUBLAS_CHECK(stmt) run a CUDA runtime / cuBLAS(Lt) call and, when it fails,
 * print the statement, the function, file:line, the device and the error string, then abort: a
 * failing CUDA call inside a training step is a bug or a broken device, not bad input, so there is
 * nothing for the engine to return to. CUDA_LAUNCH_CHECK() follows every kernel launch (it reads
 * the last launch error without synchronizing, and counts the launch). Out-of-memory is reported by fl_cuda_die_oom()
 * (cuda_memory.cu) with the bytes asked for, the bytes free and the flags that help.
 *
 * Usable from .cu files only (it needs the CUDA headers); plain C code talks to the backend through
 * backend.h and cuda_info.h. Not for input errors: those go through common/error.h.
 */
#ifndef FL_CUDA_CHECK_H
#define FL_CUDA_CHECK_H

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Prints "fastlora: CUDA error: <what> (<err>) in <func> at <file>:<line> on device <n> (<name>): <stmt>"
 * and aborts. */
void fl_cuda_fail(const char *what, int code, const char *stmt, const char *func, const char *file, int line)
    __attribute__((noreturn));
/* "out of GPU memory: asked for X MiB (what), Y MiB free of Z MiB; try --recompute, --quant nf4 or a
 * smaller --batch" (train and bench take both flags) */
void fl_cuda_die_oom(size_t bytes_asked, const char *what, const char *func, const char *file, int line)
    __attribute__((noreturn));
/* The cuBLAS status name ("CUBLAS_STATUS_NOT_SUPPORTED", ...). */
const char *fl_cublas_status_string(cublasStatus_t status);
/* Counts one operation enqueued on the stream (a kernel, a GEMM, a copy or memset, a graph launch);
 * nothing while a step is being recorded (cuda_info.h: fl_cuda_ops_enqueued). */
void fl_cuda_count_op(void);

#ifdef __cplusplus
}
#endif

#define CUDA_CHECK(stmt)                                                                         \
    do {                                                                                         \
        cudaError_t fl_cuda_err_ = (stmt);                                                       \
        if (fl_cuda_err_ != cudaSuccess)                                                         \
            fl_cuda_fail(cudaGetErrorString(fl_cuda_err_), (int)fl_cuda_err_, #stmt, __func__,   \
                         __FILE__, __LINE__);                                                    \
    } while (0)

#define CUBLAS_CHECK(stmt)                                                                       \
    do {                                                                                         \
        cublasStatus_t fl_cublas_st_ = (stmt);                                                   \
        if (fl_cublas_st_ != CUBLAS_STATUS_SUCCESS)                                              \
            fl_cuda_fail(fl_cublas_status_string(fl_cublas_st_), (int)fl_cublas_st_, #stmt,      \
                         __func__, __FILE__, __LINE__);                                          \
    } while (0)

/* After every kernel launch: catches bad launch configurations at once (asynchronous faults
 * surface at the next synchronizing call, with that call's location). Build with
 * -DFL_CUDA_SYNC_CHECK to synchronize after each launch when hunting a fault. */
#ifdef FL_CUDA_SYNC_CHECK
#define CUDA_LAUNCH_CHECK()                                                                      \
    do {                                                                                         \
        fl_cuda_count_op();                                                                      \
        CUDA_CHECK(cudaGetLastError());                                                          \
        CUDA_CHECK(cudaDeviceSynchronize());                                                     \
    } while (0)
#else
#define CUDA_LAUNCH_CHECK()                                                                      \
    do {                                                                                         \
        fl_cuda_count_op();                                                                      \
        CUDA_CHECK(cudaGetLastError());                                                          \
    } while (0)
#endif

#endif
