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
#include "backend/cuda/cuda_nf4.h"
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

/* The CUDA backend's NF4 matmuls (tiles dequantized on the device, cuBLASLt) against cpu-bf16's
 * (the same bf16 dequantization, the bf16 GEMM): strided operands with padding that must stay
 * untouched, a bias, beta = 0 over NaN and beta = 1 accumulation, a weight wider than one tile row
 * block. Inputs are bf16-exact on both sides; the CUDA output is rounded to bf16 (2^-9 relative),
 * so the relative L2 error bound is 1e-2 (a wrong tile offset or stride is O(1)). */
#ifdef FL_HAVE_CUDA
static double rel_l2(const float *a, const float *b, size_t n) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        if (a[i] != a[i]) return INFINITY;
        num += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        den += (double)b[i] * b[i];
    }
    return sqrt(num / (den > 0 ? den : 1));
}
#endif

TEST(nf4_cuda_matmul_equals_cpu_bf16) {
#ifndef FL_HAVE_CUDA
    SKIP("built without CUDA");
#else
    const fl_backend *cu = fl_backend_cuda(), *cpu = fl_backend_cpu_bf16();
    if (!cu) SKIP("no CUDA device");
    const int OC = 300, IC = 96, N = 33, ld_x = IC + 5, ld_o = OC + 3, ld_d = IC + 7;
    fl_nf4_weight W = random_weight(OC, IC, 41, 1), D;
    void *storage = cu->alloc(W.bytes);
    cu->upload(storage, W.storage, W.bytes);
    fl_nf4_view(&D, &W, storage);
    float *x = malloc(sizeof(float) * N * ld_x), *bias = malloc(sizeof(float) * OC);
    float *dout = malloc(sizeof(float) * N * ld_o), *ref = malloc(sizeof(float) * N * ld_o);
    float *got = malloc(sizeof(float) * N * ld_o);
    fl_rng_fill_uniform(x, (size_t)N * ld_x, fl_rng_stream(1, 2, 3, 4), -1, 1);
    fl_rng_fill_uniform(bias, OC, fl_rng_stream(1, 2, 3, 5), -0.1f, 0.1f);
    fl_rng_fill_uniform(dout, (size_t)N * ld_o, fl_rng_stream(1, 2, 3, 6), -1, 1);
    for (size_t i = 0; i < (size_t)N * ld_x; i++) x[i] = fl_bf16_to_f32(fl_f32_to_bf16(x[i]));
    for (size_t i = 0; i < (size_t)N * ld_o; i++) dout[i] = fl_bf16_to_f32(fl_f32_to_bf16(dout[i]));
    for (int i = 0; i < OC; i++) bias[i] = fl_bf16_to_f32(fl_f32_to_bf16(bias[i]));
    void *x_d = cu->alloc(2 * (size_t)N * ld_x), *b_d = cu->alloc(2 * (size_t)OC), *o_d = cu->alloc(2 * (size_t)N * ld_o);
    cu->upload_act(x_d, x, (size_t)N * ld_x);
    cu->upload_act(b_d, bias, OC);
    /* forward, beta 0 with the bias; padding columns (NaN on neither side: zero) must stay zero */
    memset(ref, 0, sizeof(float) * N * ld_o);
    cpu->matmul_nf4_forward(ref, x, &W, bias, 1.0f, 0.0f, N, ld_o, ld_x);
    cu->matmul_nf4_forward(o_d, x_d, &D, b_d, 1.0f, 0.0f, N, ld_o, ld_x);
    cu->download_act(got, o_d, (size_t)N * ld_o);
    double e = rel_l2(got, ref, (size_t)N * ld_o);
    CHECK_MSG(e < 1e-2, "forward: relative L2 error %.3g", e);
    for (int n = 0; n < N; n++)
        for (int c = OC; c < ld_o; c++) CHECK(got[(size_t)n * ld_o + c] == 0.0f);
    /* input gradient, beta 1 onto a non-zero dinp (stride ld_d) */
    float *dref = malloc(sizeof(float) * N * ld_d), *dgot = malloc(sizeof(float) * N * ld_d);
    fl_rng_fill_uniform(dref, (size_t)N * ld_d, fl_rng_stream(1, 2, 3, 7), -1, 1);
    for (size_t i = 0; i < (size_t)N * ld_d; i++) dref[i] = fl_bf16_to_f32(fl_f32_to_bf16(dref[i]));
    void *d_d = cu->alloc(2 * (size_t)N * ld_d), *g_d = cu->alloc(2 * (size_t)N * ld_o);
    cu->upload_act(d_d, dref, (size_t)N * ld_d);
    cu->upload_act(g_d, dout, (size_t)N * ld_o);
    cpu->matmul_nf4_backward_input(dref, dout, &W, 0.5f, 1.0f, N, ld_d, ld_o);
    cu->matmul_nf4_backward_input(d_d, g_d, &D, 0.5f, 1.0f, N, ld_d, ld_o);
    cu->download_act(dgot, d_d, (size_t)N * ld_d);
    e = rel_l2(dgot, dref, (size_t)N * ld_d);
    CHECK_MSG(e < 1e-2, "input gradient: relative L2 error %.3g", e);
    cu->free(x_d); cu->free(b_d); cu->free(o_d); cu->free(d_d); cu->free(g_d); cu->free(storage);
    free(x); free(bias); free(dout); free(ref); free(got); free(dref); free(dgot);
    fl_nf4_free(&W);
#endif
}
