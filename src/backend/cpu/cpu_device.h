/* cpu_device.h — the CPU as a device: its model name, its thread count, and the peak its MFU is
 * measured against (the best timed GEMM: a CPU has no vendor "dense peak" we could quote).
 * The backends' describe / read_counters entries (backend.h) are these.
 * Not here: the kernels (cpu_ops.h), the process's memory (bench/host_info.h). */
#ifndef FL_CPU_DEVICE_H
#define FL_CPU_DEVICE_H

#include <stddef.h>

#include "backend/backend.h"

/* Sets the thread count of OpenMP and of OpenBLAS (n > 0), so our kernels and BLAS share one pool. */
void fl_cpu_set_threads(int n);

/* Best of 3 timed OpenBLAS sgemm (n x n x n, row-major, b transposed) after one warm-up, in
 * TFLOP/s, on the current thread count. */
double fl_cpu_measure_sgemm_tflops(int n);
/* MFU's denominator on the CPU: the best of the same timing for OpenBLAS's sgemm, fastlora's bf16
 * GEMM and oneDNN's bf16 and f32 matmuls (where built) — the matrix units' rate where oneDNN drives
 * AMX, so no training step, whose GEMMs run on one of these, can exceed it. `source` gets the line
 * naming them all. */
double fl_cpu_measure_peak_tflops(int n, char *source, size_t cap);

/* describe for the f32 reference ("cpu") and the bf16-weight backend ("cpu-bf16"): the model name
 * from /proc/cpuinfo; with measure_peak, fl_cpu_measure_peak_tflops(1536) and its source line. */
void fl_cpu_describe_f32(fl_device_info *info, int measure_peak);
void fl_cpu_describe_bf16(fl_device_info *info, int measure_peak);
/* What identifies the silicon where the model name does not (a hypervisor may report "AMD EPYC"
 * for several generations, and hide instruction sets): "<vendor_id> family F model M stepping S"
 * from /proc/cpuinfo, in decimal as Linux prints them; "" when there is no such file. */
void fl_cpu_identity(char *out, size_t cap);
/* read_counters: the CPU counts nothing (all zeros). */
void fl_cpu_read_counters(fl_device_counters *out, int reset_peak);

#endif
