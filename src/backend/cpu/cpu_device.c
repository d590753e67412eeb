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

/* What measure_gemm_tflops times: OpenBLAS's sgemm, oneDNN's f32 matmul, or the bf16 GEMM
 * (gemm_bf16.h) on fastlora's kernels or on oneDNN. */
enum { PEAK_SGEMM, PEAK_ONEDNN_F32, PEAK_BF16_OWN, PEAK_BF16_ONEDNN };

/* Best of 3 timed runs after a warm-up of C = A·Bᵀ, n x n x n; TFLOP/s, 0 when oneDNN declined. */
static double measure_gemm_tflops(int n, int what) {
    int provider = what == PEAK_BF16_OWN ? FL_GEMM_PROVIDER_OWN : what == PEAK_BF16_ONEDNN ? FL_GEMM_PROVIDER_ONEDNN : -1;
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
        else if (what == PEAK_ONEDNN_F32) fl_onednn_gemm_f32(1, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
        else cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
        double dt = now_seconds() - t0;
        if (rep > 0 && dt < best) best = dt;
    }
    if (provider >= 0) fl_gemm_bf16_set_provider(saved);
    int declined = (what == PEAK_BF16_ONEDNN || what == PEAK_ONEDNN_F32) && fl_onednn_calls() == onednn_calls;
    free(bh);
    free(a);
    free(b);
    free(c);
    return declined ? 0.0 : 2.0 * n * (double)n * n / best / 1e12; /* oneDNN declined: our kernel ran */
}

double fl_cpu_measure_sgemm_tflops(int n) { return measure_gemm_tflops(n, PEAK_SGEMM); }

double fl_cpu_measure_peak_tflops(int n, char *source, size_t cap) {
    int threads = omp_get_max_threads();
    double sgemm = measure_gemm_tflops(n, PEAK_SGEMM);
    double own = measure_gemm_tflops(n, PEAK_BF16_OWN);
    double onednn = fl_onednn_built() ? measure_gemm_tflops(n, PEAK_BF16_ONEDNN) : 0.0;
    double onednn_f32 = fl_onednn_built() ? measure_gemm_tflops(n, PEAK_ONEDNN_F32) : 0.0;
    double best = sgemm > own ? sgemm : own;
    if (onednn > best) best = onednn;
    if (onednn_f32 > best) best = onednn_f32;
    char dnnl[128] = "";
    if (fl_onednn_built()) {
        char bf16[32] = "declined", f32[32] = "declined";
        if (onednn > 0) snprintf(bf16, sizeof bf16, "%.3f", onednn);
        if (onednn_f32 > 0) snprintf(f32, sizeof f32, "%.3f", onednn_f32);
        snprintf(dnnl, sizeof dnnl, ", oneDNN %s bf16 %s, f32 %s", fl_onednn_isa(), bf16, f32);
    }
    int saved = fl_gemm_bf16_set_provider(FL_GEMM_PROVIDER_OWN);
    const char *own_path = fl_gemm_bf16_path();
    fl_gemm_bf16_set_provider(saved);
    snprintf(source, cap,
             "vs measured GEMM peak %.3f TFLOP/s (the best %d^3 GEMM on %d threads: fastlora %s bf16 %.3f%s, OpenBLAS "
             "f32 sgemm %.3f; not a vendor figure)",
             best, n, threads, own_path, own, dnnl, sgemm);
    return best;
}

/* The values of the n "key : value" lines named by keys in the first processor's block of
 * /proc/cpuinfo (exact keys: "model" is not "model name"), each cut to FIELD_CAP − 1 bytes; "" for
 * a key that is not there. Returns how many were found. */
enum { FIELD_CAP = 192 };
static int cpuinfo_fields(const char *const *keys, int n, char (*vals)[FIELD_CAP]) {
    for (int k = 0; k < n; k++) vals[k][0] = 0;
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return 0;
    char line[512];
    int found = 0;
    while (found < n && fgets(line, sizeof line, f)) {
        if (line[0] == '\n') break; /* the end of the first processor's block */
        char *colon = strchr(line, ':');
        if (!colon) continue;
        size_t klen = (size_t)(colon - line);
        while (klen && (line[klen - 1] == ' ' || line[klen - 1] == '\t')) klen--;
        for (int k = 0; k < n; k++) {
            if (vals[k][0] || strlen(keys[k]) != klen || strncmp(line, keys[k], klen) != 0) continue;
            char *v = colon + 1;
            while (*v == ' ' || *v == '\t') v++;
            v[strcspn(v, "\n")] = 0;
            snprintf(vals[k], FIELD_CAP, "%s", v);
            found++;
        }
    }
    fclose(f);
    return found;
}

/* The "model name" line of /proc/cpuinfo; "cpu" when there is none. */
static void cpu_model_name(char *out, size_t cap) {
    static const char *const key[] = {"model name"};
    char val[1][FIELD_CAP];
    cpuinfo_fields(key, 1, val);
    snprintf(out, cap, "%s", val[0][0] ? val[0] : "cpu");
}

void fl_cpu_identity(char *out, size_t cap) {
    static const char *const keys[] = {"vendor_id", "cpu family", "model", "stepping"};
    char vals[4][FIELD_CAP];
    if (cap) out[0] = 0;
    if (cpuinfo_fields(keys, 4, vals) == 4)
        snprintf(out, cap, "%s family %s model %s stepping %s", vals[0], vals[1], vals[2], vals[3]);
}

static void cpu_describe(fl_device_info *info, int measure_peak) {
    memset(info, 0, sizeof *info);
    cpu_model_name(info->name, sizeof info->name);
    int threads = omp_get_max_threads();
    snprintf(info->peak_method, sizeof info->peak_method,
             "the CPU's best GEMM rate (bf16, oneDNN where built, OpenBLAS f32 sgemm; %d^3, %d threads)", PEAK_N, threads);
    if (!measure_peak) return;
    info->peak_tflops = fl_cpu_measure_peak_tflops(PEAK_N, info->peak_source, sizeof info->peak_source);
}

void fl_cpu_describe_f32(fl_device_info *info, int measure_peak) { cpu_describe(info, measure_peak); }
void fl_cpu_describe_bf16(fl_device_info *info, int measure_peak) { cpu_describe(info, measure_peak); }

void fl_cpu_read_counters(fl_device_counters *out, int reset_peak) {
    (void)reset_peak;
    memset(out, 0, sizeof *out);
}
