/* cpu_memory.c — host memory for the CPU backend (64-byte aligned; zeroed, except kernel scratch). */
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_ops.h"
#include "common/dtype.h"
#include "common/error.h"

void *cpu_alloc_scratch(size_t bytes) {
    size_t rounded = (bytes + 63) / 64 * 64;
    void *p = aligned_alloc(64, rounded ? rounded : 64);
    if (!p) fl_die("out of host memory allocating %.1f MiB", bytes / 1048576.0);
    return p;
}
void *cpu_alloc(size_t bytes) {
    void *p = cpu_alloc_scratch(bytes);
    memset(p, 0, (bytes + 63) / 64 * 64);
    return p;
}
void cpu_free(void *ptr) { free(ptr); }
void cpu_copy(void *dst, const void *src, size_t bytes) { memcpy(dst, src, bytes); }
void cpu_copy_2d(void *dst, size_t ld_dst, const void *src, size_t ld_src, size_t width, size_t rows) {
    for (size_t r = 0; r < rows; r++) memcpy((char *)dst + r * ld_dst, (const char *)src + r * ld_src, width);
}
void cpu_zero(void *ptr, size_t bytes) { memset(ptr, 0, bytes); }
void cpu_synchronize(void) {}
void cpu_upload_act(void *dst, const float *host_src, size_t n) { memcpy(dst, host_src, n * sizeof(float)); }
void cpu_download_act(float *host_dst, const void *src, size_t n) { memcpy(host_dst, src, n * sizeof(float)); }
void cpu_cast_to_weight(void *dst, const float *src, size_t n) { if (dst != src) memcpy(dst, src, n * sizeof(float)); }
void cpu_cast_to_weight_2d(const fl_cast_block *blocks, int n, float scale, int cols) {
    for (int i = 0; i < n; i++) {
        float *dst = blocks[i].dst;
        const float *src = blocks[i].src;
        for (size_t r = 0; r < blocks[i].rows; r++)
            for (int c = 0; c < cols; c++) dst[r * (size_t)blocks[i].ld + c] = scale * src[r * (size_t)cols + c];
    }
}

/* bf16 weights */
void cpu_upload_weight_bf16(void *dst, const float *host_src, size_t n) { cpu_cast_to_weight_bf16(dst, host_src, n); }
void cpu_cast_to_weight_bf16(void *dst_, const float *src, size_t n) {
    uint16_t *dst = dst_;
    #pragma omp parallel for schedule(static) if (n > 1 << 16)
    for (size_t i = 0; i < n; i++) dst[i] = fl_f32_to_bf16(src[i]);
}
void cpu_cast_to_weight_2d_bf16(const fl_cast_block *blocks, int n, float scale, int cols) {
    for (int i = 0; i < n; i++) {
        uint16_t *dst = blocks[i].dst;
        const float *src = blocks[i].src;
        for (size_t r = 0; r < blocks[i].rows; r++)
            for (int c = 0; c < cols; c++)
                dst[r * (size_t)blocks[i].ld + c] = fl_f32_to_bf16(scale * src[r * (size_t)cols + c]);
    }
}
