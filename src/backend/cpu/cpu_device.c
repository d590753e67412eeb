/* cpu_device.c — the CPU as a device (cpu_device.h): model name, threads, the measured sgemm peak.
 * Not a kernel: nothing here runs inside a training step. */
#include "backend/cpu/cpu_device.h"

#include <cblas.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/error.h"

#define SGEMM_PEAK_N 1536

void openblas_set_num_threads(int num_threads);

void fl_cpu_set_threads(int n) {
    omp_set_num_threads(n);
    openblas_set_num_threads(n);
}

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

double fl_cpu_measure_sgemm_tflops(int n) {
    float *a = fl_malloc(sizeof(float) * (size_t)n * n), *b = fl_malloc(sizeof(float) * (size_t)n * n),
          *c = fl_malloc(sizeof(float) * (size_t)n * n);
    for (size_t i = 0; i < (size_t)n * n; i++) {
        a[i] = (float)((i * 7 % 13) - 6) * 0.01f;
        b[i] = (float)((i * 5 % 11) - 5) * 0.01f;
    }
    double best = 1e30;
    for (int rep = 0; rep < 4; rep++) {
        double t0 = now_seconds();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
        double dt = now_seconds() - t0;
        if (rep > 0 && dt < best) best = dt;
    }
    free(a);
    free(b);
    free(c);
    return 2.0 * n * (double)n * n / best / 1e12;
}

/* The "model name" line of /proc/cpuinfo; "cpu" when there is none. */
static void cpu_model_name(char *out, size_t cap) {
    snprintf(out, cap, "cpu");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", strlen("model name")) != 0) continue;
        char *colon = strchr(line, ':');
        if (!colon) break;
        colon++;
        while (*colon == ' ' || *colon == '\t') colon++;
        colon[strcspn(colon, "\n")] = 0;
        snprintf(out, cap, "%s", colon);
        break;
    }
    fclose(f);
}

static void cpu_describe(fl_device_info *info, int measure_peak, int bf16_weights) {
    memset(info, 0, sizeof *info);
    cpu_model_name(info->name, sizeof info->name);
    int threads = omp_get_max_threads();
    snprintf(info->peak_method, sizeof info->peak_method, "the CPU's sgemm rate (OpenBLAS, %d^3, %d threads)",
             SGEMM_PEAK_N, threads);
    if (!measure_peak) return;
    info->peak_tflops = fl_cpu_measure_sgemm_tflops(SGEMM_PEAK_N);
    snprintf(info->peak_source, sizeof info->peak_source,
             "vs measured sgemm peak %.3f TFLOP/s (OpenBLAS f32 sgemm %d^3, %d threads; not a vendor figure%s)",
             info->peak_tflops, SGEMM_PEAK_N, threads,
             bf16_weights ? "; bf16-weight kernels are not bounded by an f32 sgemm, so > 100% is possible" : "");
}

void fl_cpu_describe_f32(fl_device_info *info, int measure_peak) { cpu_describe(info, measure_peak, 0); }
void fl_cpu_describe_bf16(fl_device_info *info, int measure_peak) { cpu_describe(info, measure_peak, 1); }

void fl_cpu_read_counters(fl_device_counters *out, int reset_peak) {
    (void)reset_peak;
    memset(out, 0, sizeof *out);
}
