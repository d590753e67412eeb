/* host_info.h — what the bench reads about the machine and the build around it: the process's
 * peak resident memory (and its reset), the memory available to a run, fastlora's version, the
 * NVIDIA driver and CUDA versions. Linux files (/proc) and commands (git, nvidia-smi); every
 * reader gives 0 or "" when its source is missing.
 * Not here: the device itself (backend.h's describe), the timing loop (bench/bench_point.h). */
#ifndef FL_BENCH_HOST_INFO_H
#define FL_BENCH_HOST_INFO_H

#include <stddef.h>

/* Peak resident memory since the last fl_host_reset_peak_rss() (VmHWM; getrusage when /proc lacks it). */
size_t fl_host_peak_rss_bytes(void);
/* Linux resets VmHWM to the current RSS when "5" is written to /proc/self/clear_refs. */
void fl_host_reset_peak_rss(void);
/* MemAvailable + this process's VmRSS, in bytes: what a run on the CPU may use; 0 when unknown. */
size_t fl_host_available_bytes(void);

/* fastlora's version: $FASTLORA_VERSION when set (scripts that run a copy of the binary, e.g.
 * scripts/cpu-peer-bench, name the commit it was built from), else `git describe` of the checkout
 * this binary was built in (<repo>/build/fastlora), else the FL_VERSION the build baked in, else
 * "unknown". */
void fl_host_fastlora_version(char *out, size_t cap);

/* The NVIDIA kernel module's version (/proc/driver/nvidia/version) and the CUDA version the driver
 * supports (nvidia-smi); "" when there is none. */
void fl_host_nvidia_driver_version(char *out, size_t cap);
void fl_host_cuda_driver_version(char *out, size_t cap);

#endif
