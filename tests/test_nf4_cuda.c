/* test_nf4_cuda.c — NF4 on the GPU (backend/cuda/cuda_nf4.cu) against the CPU dequantization.
 *
 * The host part runs everywhere: a device weight is a view of a byte-for-byte copy of the host
 * storage (fl_nf4_view), so a view into a second host buffer must dequantize identically. The GPU
 * part (CUDA builds, SKIP without a device) uploads weights of several shapes — cols not a multiple
 * of 64, odd row ranges, tiny-scale blocks whose products are denormal, and a weight without double
 * quantization — dequantizes row ranges on the device and requires them EQUAL, bit for bit, to
 * fl_nf4_dequantize(W, BF16) on the host (itself equal to bitsandbytes, test_nf4.c).
 */
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "common/rng.h"
#include "quant/nf4.h"
#include "test.h"
#ifdef FL_HAVE_CUDA
#include "backend/cuda/cuda_info.h"
#include "quant/nf4_cuda.h"
#endif

static fl_nf4_weight random_weight(int64_t rows, int64_t cols, uint64_t seed, int double_quant) {
    float *w = malloc(sizeof(float) * (size_t)(rows * cols));
    fl_rng_fill_uniform(w, (size_t)(rows * cols), fl_rng_stream(seed, 3, 0, 0), -1.0f, 1.0f);
    for (int64_t i = 0; i < rows * cols; i++) w[i] *= (i / 64) % 3 == 0 ? 1e-39f : 0.02f;   /* denormal blocks */
    fl_nf4_weight W;
    CHECK_EQ_INT(fl_nf4_quantize(&W, w, FL_F32, rows, cols, double_quant, "w"), 0);
    free(w);
    return W;
}

TEST(nf4_view_of_a_copy_dequantizes_the_same) {
    for (int dq = 0; dq < 2; dq++) {
        fl_nf4_weight W = random_weight(37, 70, 5 + dq, dq), V;
        void *copy = malloc(W.bytes);
        memcpy(copy, W.storage, W.bytes);
        fl_nf4_view(&V, &W, copy);
        uint16_t *a = malloc(2 * 37 * 70), *b = malloc(2 * 37 * 70);
        fl_nf4_dequantize(&W, a, FL_BF16);
        memset(W.storage, 0, W.bytes);   /* V must not read through W's pointers */
        fl_nf4_dequantize(&V, b, FL_BF16);
        CHECK(V.storage == copy && (char *)V.packed >= (char *)copy && (char *)V.packed < (char *)copy + W.bytes);
        CHECK(!memcmp(a, b, 2 * 37 * 70));
        free(a); free(b); free(copy);
        fl_nf4_free(&W);
    }
}

TEST(nf4_cuda_dequantize_equals_cpu) {
#ifndef FL_HAVE_CUDA
    SKIP("built without CUDA");
#else
    const fl_backend *be = fl_backend_cuda();
    if (!be) SKIP("no CUDA device");
    const struct { int64_t rows, cols, r0, r1; int dq; } cases[] = {
        {64, 64, 0, 64, 1}, {37, 70, 3, 30, 1}, {1, 7, 0, 1, 1}, {300, 896, 17, 299, 1}, {130, 96, 1, 130, 0},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        fl_nf4_weight W = random_weight(cases[c].rows, cases[c].cols, 20 + c, cases[c].dq), D;
        CHECK_EQ_INT(fl_nf4_cuda_upload(&D, &W), 0);
        size_t n = (size_t)(cases[c].r1 - cases[c].r0) * (size_t)cases[c].cols;
        uint16_t *ref = malloc(2 * n), *got = malloc(2 * n);
        fl_nf4_dequantize_rows(&W, cases[c].r0, cases[c].r1, ref, FL_BF16);
        void *dst = be->alloc(2 * n);
        fl_nf4_cuda_dequantize_rows_bf16(&D, cases[c].r0, cases[c].r1, dst);
        be->synchronize();
        be->download(got, dst, 2 * n);
        size_t bad = 0;
        while (bad < n && got[bad] == ref[bad]) bad++;
        CHECK_MSG(bad == n, "case %zu: element %zu: 0x%04x vs CPU 0x%04x", c, bad, bad < n ? got[bad] : 0,
                  bad < n ? ref[bad] : 0);
        be->free(dst);
        fl_nf4_cuda_free(&D);
        fl_nf4_free(&W);
        free(ref);
        free(got);
    }
#endif
}
