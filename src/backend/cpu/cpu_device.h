/* cpu_device.h — the CPU as a device: its model name, its thread count, and the peak its MFU is
 * measured against (a timed OpenBLAS sgemm: a CPU has no vendor "dense peak" we could quote).
 * The backends' describe / read_counters entries (backend.h) are these.
 * Not here: the kernels (cpu_ops.h), the process's memory (bench/host_info.h). */
#ifndef FL_CPU_DEVICE_H
#define FL_CPU_DEVICE_H

#include "backend/backend.h"

/* Sets the thread count of OpenMP and of OpenBLAS (n > 0), so our kernels and BLAS share one pool. */
void fl_cpu_set_threads(int n);

/* Best of 3 timed OpenBLAS sgemm (n x n x n, row-major, b transposed) after one warm-up, in
 * TFLOP/s, on the current thread count. */
double fl_cpu_measure_sgemm_tflops(int n);

/* describe for the f32 reference ("cpu") and the bf16-weight backend ("cpu-bf16"): the model name
 * from /proc/cpuinfo; with measure_peak, fl_cpu_measure_sgemm_tflops(1536) and its source line
 * (the bf16 one says that its kernels are not bounded by an f32 sgemm). */
void fl_cpu_describe_f32(fl_device_info *info, int measure_peak);
void fl_cpu_describe_bf16(fl_device_info *info, int measure_peak);
/* read_counters: the CPU counts nothing (all zeros). */
void fl_cpu_read_counters(fl_device_counters *out, int reset_peak);

#endif
