/* cuda_test_util.h — what the CUDA tests share (test_cuda_ops.c, test_cuda_model.c): the CUDA backend
 * or a skip, bf16-rounded random inputs, relative L2 errors, buffers held on both backends, the
 * step scalars on the device. Static inline: each file uses part of it; included inside
 * #ifdef FL_HAVE_CUDA. */
#ifndef FL_TESTS_CUDA_TEST_UTIL_H
#define FL_TESTS_CUDA_TEST_UTIL_H


#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/cuda/cuda_compare.h"
#include "backend/cuda/cuda_info.h"
#include "common/error.h"
#include "common/rng.h"
#include "engine/model.h"
#include "io/safetensors.h"
#include "lora/adapter_io.h"
#include "test.h"

/* ---- helpers ---- */

static inline const fl_backend *cuda_be(void) { return fl_backend_cuda(); }
#define CUDA_OR_SKIP(be) const fl_backend *be = cuda_be(); if (!be) SKIP("no CUDA device")

static inline float round_bf16(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest even */
    u &= 0xffff0000u;
    memcpy(&x, &u, 4);
    return x;
}

/* n values ~ U(lo, hi), rounded to bf16 */
static inline float *rand_bf16(size_t n, uint64_t seed, float lo, float hi) {
    float *x = malloc(sizeof(float) * (n ? n : 1));
    fl_rng_fill_uniform(x, n, fl_rng_stream(seed, 0xc0da, 0, 0), lo, hi);
    for (size_t i = 0; i < n; i++) x[i] = round_bf16(x[i]);
    return x;
}

static inline double rel_err(const float *got, const float *want, size_t n) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)got[i] - want[i];
        if (got[i] != got[i]) return INFINITY; /* NaN never passes */
        num += d * d;
        den += (double)want[i] * want[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

#define CHECK_REL(got, want, n, tol) do { double e_ = rel_err((got), (want), (n)); \
    CHECK_MSG(e_ <= (tol), "%s vs %s: relative error %.3g > %.3g", #got, #want, e_, (double)(tol)); } while (0)

/* act buffers: a CPU one (f32) and a CUDA one (bf16) holding the same host values */
typedef struct { float *cpu; void *dev; size_t n; } pair;

static inline pair pair_act(const fl_backend *cu, const float *host, size_t n) {
    pair p = {fl_backend_cpu()->alloc(sizeof(float) * (n ? n : 1)), cu->alloc(2 * (n ? n : 1)), n};
    if (host) {
        memcpy(p.cpu, host, sizeof(float) * n);
        cu->upload_act(p.dev, host, n);
    }
    return p;
}
static inline pair pair_f32(const fl_backend *cu, const float *host, size_t n) {
    pair p = {fl_backend_cpu()->alloc(sizeof(float) * (n ? n : 1)), cu->alloc(sizeof(float) * (n ? n : 1)), n};
    if (host) {
        memcpy(p.cpu, host, sizeof(float) * n);
        cu->upload(p.dev, host, sizeof(float) * n);
    }
    return p;
}
static inline int32_t *dev_i32(const fl_backend *cu, const int32_t *host, size_t n) {
    int32_t *d = cu->alloc(sizeof(int32_t) * (n ? n : 1));
    cu->upload(d, host, sizeof(int32_t) * n);
    return d;
}
/* the CUDA act buffer back to host f32 (caller frees) */
static inline float *down_act(const fl_backend *cu, const pair *p) {
    float *h = malloc(sizeof(float) * (p->n ? p->n : 1));
    cu->download_act(h, p->dev, p->n);
    return h;
}
static inline float *down_f32(const fl_backend *cu, const pair *p) {
    float *h = malloc(sizeof(float) * (p->n ? p->n : 1));
    cu->download(h, p->dev, sizeof(float) * p->n);
    return h;
}
static inline void pair_free(const fl_backend *cu, pair *p) {
    fl_backend_cpu()->free(p->cpu);
    cu->free(p->dev);
}
/* the step's scalars: a copy of *h in device memory, and back */
static inline fl_step_scalars *dev_scalars(const fl_backend *cu, const fl_step_scalars *h) {
    fl_step_scalars *d = cu->alloc(sizeof *d);
    cu->upload(d, h, sizeof *d);
    return d;
}
static inline fl_step_scalars host_scalars(const fl_backend *cu, const fl_step_scalars *d) {
    fl_step_scalars h;
    cu->download(&h, d, sizeof h);
    return h;
}


#endif
