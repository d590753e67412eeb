/* cpu_device.c — the CPU as a device (cpu_device.h): model name, threads, the measured GEMM peak.
 * Not a kernel: nothing here runs inside a training step. */
#include "backend/cpu/cpu_device.h"

#include <cblas.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/cpu/gemm_bf16.h"
#include "backend/cpu/gemm_onednn.h"
#include "common/dtype.h"
#include "common/error.h"

#define PEAK_N 1536

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

/* Best of 3 timed runs after a warm-up of C = A·Bᵀ, n x n x n: OpenBLAS's f32 sgemm (provider < 0)
 * or the bf16 GEMM (gemm_bf16.h) on the given FL_GEMM_PROVIDER_*; TFLOP/s. */
static double measure_gemm_tflops(int n, int provider) {
    size_t nn = (size_t)n * n;
    float *a = fl_malloc(sizeof(float) * nn), *b = fl_malloc(sizeof(float) * nn), *c = fl_malloc(sizeof(float) * nn);
    uint16_t *bh = provider >= 0 ? fl_malloc(sizeof(uint16_t) * nn) : NULL;
    for (size_t i = 0; i < nn; i++) {
        a[i] = (float)((i * 7 % 13) - 6) * 0.01f;
        b[i] = (float)((i * 5 % 11) - 5) * 0.01f;
        if (bh) bh[i] = fl_f32_to_bf16(b[i]);
    }
    int saved = provider >= 0 ? fl_gemm_bf16_set_provider(provider) : -1;
    unsigned long onednn_calls = fl_onednn_calls();
    double best = 1e30;
    for (int rep = 0; rep < 4; rep++) {
        double t0 = now_seconds();
        if (bh) fl_gemm_bf16_nt(n, n, n, 1.0f, a, n, bh, n, 0.0f, c, n);
        else cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
        double dt = now_seconds() - t0;
        if (rep > 0 && dt < best) best = dt;
    }
    if (provider >= 0) fl_gemm_bf16_set_provider(saved);
    int declined = provider == FL_GEMM_PROVIDER_ONEDNN && fl_onednn_calls() == onednn_calls;
    free(bh);
    free(a);
    free(b);
    free(c);
    return declined ? 0.0 : 2.0 * n * (double)n * n / best / 1e12; /* oneDNN declined: our kernel ran */
}

double fl_cpu_measure_sgemm_tflops(int n) { return measure_gemm_tflops(n, -1); }

double fl_cpu_measure_peak_tflops(int n, char *source, size_t cap) {
    int threads = omp_get_max_threads();
    double sgemm = measure_gemm_tflops(n, -1);
    double own = measure_gemm_tflops(n, FL_GEMM_PROVIDER_OWN);
    double onednn = fl_onednn_built() ? measure_gemm_tflops(n, FL_GEMM_PROVIDER_ONEDNN) : 0.0;
    double best = sgemm > own ? sgemm : own;
    if (onednn > best) best = onednn;
    char dnnl[96] = "";
    if (fl_onednn_built() && onednn > 0) snprintf(dnnl, sizeof dnnl, ", oneDNN %s bf16 %.3f", fl_onednn_isa(), onednn);
    else if (fl_onednn_built()) snprintf(dnnl, sizeof dnnl, ", oneDNN %s declined", fl_onednn_isa());
    int saved = fl_gemm_bf16_set_provider(FL_GEMM_PROVIDER_OWN);
    const char *own_path = fl_gemm_bf16_path();
    fl_gemm_bf16_set_provider(saved);
    snprintf(source, cap,
             "vs measured GEMM peak %.3f TFLOP/s (the best %d^3 GEMM on %d threads: fastlora %s bf16 %.3f%s, OpenBLAS "
             "f32 sgemm %.3f; not a vendor figure)",
             best, n, threads, own_path, own, dnnl, sgemm);
    return best;
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

static void cpu_describe(fl_device_info *info, int measure_peak) {
    memset(info, 0, sizeof *info);
    cpu_model_name(info->name, sizeof info->name);
    int threads = omp_get_max_threads();
    snprintf(info->peak_method, sizeof info->peak_method,
             "the CPU's best GEMM rate (bf16 and OpenBLAS f32 sgemm, %d^3, %d threads)", PEAK_N, threads);
    if (!measure_peak) return;
    info->peak_tflops = fl_cpu_measure_peak_tflops(PEAK_N, info->peak_source, sizeof info->peak_source);
}

void fl_cpu_describe_f32(fl_device_info *info, int measure_peak) { cpu_describe(info, measure_peak); }
void fl_cpu_describe_bf16(fl_device_info *info, int measure_peak) { cpu_describe(info, measure_peak); }

void fl_cpu_read_counters(fl_device_counters *out, int reset_peak) {
    (void)reset_peak;
    memset(out, 0, sizeof *out);
}
