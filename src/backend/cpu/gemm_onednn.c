/* gemm_onednn.c — fl_onednn_gemm_bf16 and fl_onednn_gemm_f32 (gemm_onednn.h): the bf16 and f32
 * GEMMs on oneDNN's matmul primitive.
 *
 * Per bf16 call: A (M, K) f32 is rounded to bf16 into a buffer kept between calls (oneDNN's bf16
 * matmul takes bf16 sources only); per f32 call A is described in place (strides {lda, 1}). B is
 * described in place — (K, N) with strides {1, ldb} for the nn.Linear layout (N, K), {ldb, 1} for
 * (K, N) — and C (M, N) with strides {ldc, 1}; beta != 0 is a sum post-op, alpha != 1 (f32 only,
 * oneDNN 2.x) an output scale. The primitive of a shape is created once (oneDNN JIT-compiles it)
 * and kept in a small table keyed by (dtype, trans_b, M, N, K, strides, alpha, beta). One call at a
 * time (a mutex): the trainer's GEMMs come one after another, each using every thread.
 * Both oneDNN APIs are spoken: 2.x (memory descriptors are structs, op descriptors) and 3.x
 * (opaque descriptors, primitive descriptors created directly).
 * Not here: which calls come here (gemm_bf16.c).
 */
#include "backend/cpu/gemm_onednn.h"

#ifndef FL_HAVE_ONEDNN

int fl_onednn_built(void) { return 0; }
const char *fl_onednn_isa(void) { return "absent"; }
int fl_onednn_has_amx(void) { return 0; }
const char *fl_onednn_version(void) { return "absent"; }
unsigned long fl_onednn_calls(void) { return 0; }
unsigned long fl_onednn_bf16_calls(void) { return 0; }
int fl_onednn_gemm_bf16(int trans_b, int M, int N, int K, float alpha, const float *A, int lda, const uint16_t *B,
                        int ldb, float beta, float *C, int ldc) {
    (void)trans_b, (void)M, (void)N, (void)K, (void)alpha, (void)A, (void)lda, (void)B, (void)ldb, (void)beta, (void)C,
        (void)ldc;
    return -1;
}
int fl_onednn_gemm_f32(int trans_b, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
                       float beta, float *C, int ldc) {
    (void)trans_b, (void)M, (void)N, (void)K, (void)alpha, (void)A, (void)lda, (void)B, (void)ldb, (void)beta, (void)C,
        (void)ldc;
    return -1;
}

#else

#include <oneapi/dnnl/dnnl.h>
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_isa.h"
#include "common/dtype.h"
#include "common/error.h"

/* oneDNN 3 hands out memory descriptors by handle (created and destroyed); 2.x by value. */
#define MD_T dnnl_memory_desc_t
#if DNNL_VERSION_MAJOR >= 3
#define MD_ARG(md) (md)
#define MD_FREE(md) dnnl_memory_desc_destroy(md)
#else
#define MD_ARG(md) (&(md))
#define MD_FREE(md) ((void)0)
#endif

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static dnnl_engine_t engine;
static dnnl_stream_t stream;
static int started; /* 1: engine and stream exist */
static unsigned long calls, bf16_calls;
static char version[32] = "absent";

typedef struct {
    int f32, trans_b, M, N, K, lda, ldb, ldc; /* f32: A and B f32 (else bf16); lda: f32 only (bf16 A is packed) */
    float alpha, beta;
    dnnl_primitive_t prim;
    MD_T a_md, b_md, c_md;
} entry;

enum { CACHE = 96 };
static entry cache[CACHE];
static int n_cache, next_evict;
static uint16_t *a_bf16; /* A rounded, grown as needed */
static size_t a_cap;

/* oneDNN's level for each of ours below this CPU's own (FASTLORA_CPU_ISA caps both alike). */
static dnnl_cpu_isa_t isa_for(fl_cpu_isa level) {
    switch (level) {
    case FL_CPU_ISA_PORTABLE: return dnnl_cpu_isa_sse41;
    case FL_CPU_ISA_AVX2: return dnnl_cpu_isa_avx2;
    case FL_CPU_ISA_AVX512: return dnnl_cpu_isa_avx512_core;
    default: return dnnl_cpu_isa_avx512_core_bf16;
    }
}

static void start(void) {
    fl_cpu_isa active = fl_cpu_isa_active();
    if (active < fl_cpu_isa_detected()) dnnl_set_max_cpu_isa(isa_for(active));
    const dnnl_version_t *v = dnnl_version();
    snprintf(version, sizeof version, "%d.%d.%d", v->major, v->minor, v->patch);
    if (dnnl_engine_create(&engine, dnnl_cpu, 0) != dnnl_success) return;
    if (dnnl_stream_create(&stream, engine, dnnl_stream_default_flags) != dnnl_success) {
        dnnl_engine_destroy(engine);
        return;
    }
    started = 1;
}

int fl_onednn_built(void) { return 1; }

unsigned long fl_onednn_calls(void) {
    pthread_mutex_lock(&lock);
    unsigned long n = calls;
    pthread_mutex_unlock(&lock);
    return n;
}

unsigned long fl_onednn_bf16_calls(void) {
    pthread_mutex_lock(&lock);
    unsigned long n = bf16_calls;
    pthread_mutex_unlock(&lock);
    return n;
}

const char *fl_onednn_version(void) {
    pthread_once(&once, start);
    return version;
}

int fl_onednn_has_amx(void) {
    pthread_once(&once, start);
    return started && (dnnl_get_effective_cpu_isa() & dnnl_cpu_isa_avx512_core_amx) == dnnl_cpu_isa_avx512_core_amx;
}

const char *fl_onednn_isa(void) {
    static const struct { dnnl_cpu_isa_t isa; const char *name; } names[] = {
        {dnnl_cpu_isa_sse41, "sse41"},
        {dnnl_cpu_isa_avx, "avx"},
        {dnnl_cpu_isa_avx2, "avx2"},
        {dnnl_cpu_isa_avx2_vnni, "avx2_vnni"},
        {dnnl_cpu_isa_avx512_core, "avx512_core"},
        {dnnl_cpu_isa_avx512_core_vnni, "avx512_core_vnni"},
        {dnnl_cpu_isa_avx512_core_bf16, "avx512_core_bf16"},
        {dnnl_cpu_isa_avx512_core_amx, "avx512_core_amx"},
    };
    pthread_once(&once, start);
    if (!started) return "unavailable";
    dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    const char *best = "unknown";
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if ((isa & names[i].isa) == names[i].isa) best = names[i].name; /* the levels are nested bit sets */
    return best;
}

static int md_create(MD_T *md, int64_t d0, int64_t d1, int64_t s0, int64_t s1, dnnl_data_type_t dt) {
    dnnl_dims_t dims = {d0, d1}, strides = {s0, s1};
#if DNNL_VERSION_MAJOR >= 3
    return dnnl_memory_desc_create_with_strides(md, 2, dims, dt, strides) == dnnl_success ? 0 : -1;
#else
    return dnnl_memory_desc_init_by_strides(md, 2, dims, dt, strides) == dnnl_success ? 0 : -1;
#endif
}

/* The primitive of this shape, created on first use; NULL when oneDNN cannot make one. */
static entry *primitive_for(const entry *want) {
    for (int i = 0; i < n_cache; i++) {
        entry *e = &cache[i];
        if (e->f32 == want->f32 && e->trans_b == want->trans_b && e->M == want->M && e->N == want->N &&
            e->K == want->K && e->lda == want->lda && e->ldb == want->ldb && e->ldc == want->ldc &&
            e->alpha == want->alpha && e->beta == want->beta)
            return e;
    }
    entry e = *want;
    int M = e.M, N = e.N, K = e.K, ldb = e.ldb, trans_b = e.trans_b;
    dnnl_data_type_t in_dt = e.f32 ? dnnl_f32 : dnnl_bf16;
    int mds = 0;
    if (md_create(&e.a_md, M, K, e.f32 ? e.lda : K, 1, in_dt) == 0) mds = 1;
    if (mds == 1 && md_create(&e.b_md, K, N, trans_b ? 1 : ldb, trans_b ? ldb : 1, in_dt) == 0) mds = 2;
    if (mds == 2 && md_create(&e.c_md, M, N, e.ldc, 1, dnnl_f32) == 0) mds = 3;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    dnnl_primitive_desc_t pd = NULL;
    float beta = e.beta;
    int ok = mds == 3 && dnnl_primitive_attr_create(&attr) == dnnl_success;
#if DNNL_VERSION_MAJOR < 3
    if (ok && e.alpha != 1.0f) ok = dnnl_primitive_attr_set_output_scales(attr, 1, 0, &e.alpha) == dnnl_success;
#else
    ok = ok && e.alpha == 1.0f; /* 3.x has no output scale: fl_onednn_gemm_f32 declines alpha != 1 there */
#endif
    if (ok && beta != 0.0f) {
        ok = dnnl_post_ops_create(&po) == dnnl_success;
#if DNNL_VERSION_MAJOR >= 3
        ok = ok && dnnl_post_ops_append_sum(po, beta, 0, dnnl_f32) == dnnl_success;
#else
        ok = ok && dnnl_post_ops_append_sum(po, beta) == dnnl_success;
#endif
        ok = ok && dnnl_primitive_attr_set_post_ops(attr, po) == dnnl_success;
    }
#if DNNL_VERSION_MAJOR >= 3
    ok = ok && dnnl_matmul_primitive_desc_create(&pd, engine, e.a_md, e.b_md, NULL, e.c_md, attr) == dnnl_success;
#else
    dnnl_matmul_desc_t op;
    ok = ok && dnnl_matmul_desc_init(&op, &e.a_md, &e.b_md, NULL, &e.c_md) == dnnl_success;
    ok = ok && dnnl_primitive_desc_create(&pd, &op, attr, engine, NULL) == dnnl_success;
#endif
    ok = ok && dnnl_primitive_create(&e.prim, pd) == dnnl_success;
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (po) dnnl_post_ops_destroy(po);
    if (attr) dnnl_primitive_attr_destroy(attr);
    if (!ok) {
        if (mds > 0) MD_FREE(e.a_md);
        if (mds > 1) MD_FREE(e.b_md);
        if (mds > 2) MD_FREE(e.c_md);
        return NULL;
    }
    int slot;
    if (n_cache < CACHE) {
        slot = n_cache++;
    } else { /* full: the oldest entry goes */
        slot = next_evict;
        next_evict = (next_evict + 1) % CACHE;
        dnnl_primitive_destroy(cache[slot].prim);
        MD_FREE(cache[slot].a_md);
        MD_FREE(cache[slot].b_md);
        MD_FREE(cache[slot].c_md);
    }
    cache[slot] = e;
    return &cache[slot];
}

/* A (M, K) f32 rows -> a_bf16 (M, K) contiguous, rounded to nearest even. */
static int round_a(int M, int K, const float *A, int lda) {
    size_t need = (size_t)M * K;
    if (need > a_cap) {
        uint16_t *p = realloc(a_bf16, need * sizeof *p);
        if (!p) return -1;
        a_bf16 = p;
        a_cap = need;
    }
    uint16_t *out = a_bf16;
#pragma omp parallel for schedule(static) if ((size_t)M * K > 65536)
    for (int m = 0; m < M; m++) {
        const float *a = A + (size_t)m * lda;
        uint16_t *o = out + (size_t)m * K;
        for (int k = 0; k < K; k++) o[k] = fl_f32_to_bf16(a[k]);
    }
    return 0;
}

/* C = the product `want` describes of A and B, on its primitive: 0 when computed, -1 when oneDNN
 * made no primitive (nothing written). Called with the lock held. */
static int run(const entry *want, const void *A, const void *B, float *C) {
    entry *e = primitive_for(want);
    int rc = -1;
    dnnl_memory_t am = NULL, bm = NULL, cm = NULL;
    if (e && dnnl_memory_create(&am, MD_ARG(e->a_md), engine, (void *)A) == dnnl_success &&
        dnnl_memory_create(&bm, MD_ARG(e->b_md), engine, (void *)B) == dnnl_success &&
        dnnl_memory_create(&cm, MD_ARG(e->c_md), engine, C) == dnnl_success) {
        dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}};
        /* past this point C may be written: a failure cannot be handed back */
        if (dnnl_primitive_execute(e->prim, stream, 3, args) != dnnl_success || dnnl_stream_wait(stream) != dnnl_success)
            fl_die("oneDNN matmul %d x %d x %d failed while running", e->M, e->N, e->K);
        rc = 0;
        calls++;
        if (!e->f32) bf16_calls++;
    }
    if (am) dnnl_memory_destroy(am);
    if (bm) dnnl_memory_destroy(bm);
    if (cm) dnnl_memory_destroy(cm);
    return rc;
}

int fl_onednn_gemm_bf16(int trans_b, int M, int N, int K, float alpha, const float *A, int lda, const uint16_t *B,
                        int ldb, float beta, float *C, int ldc) {
    if (alpha != 1.0f || M <= 0 || N <= 0 || K <= 0 || omp_in_parallel()) return -1;
    pthread_once(&once, start);
    if (!started) return -1;
    pthread_mutex_lock(&lock);
    int rc = -1;
    entry want = {.f32 = 0, .trans_b = trans_b, .M = M, .N = N, .K = K, .ldb = ldb, .ldc = ldc, .alpha = 1.0f,
                  .beta = beta};
    if (round_a(M, K, A, lda) == 0) rc = run(&want, a_bf16, B, C);
    pthread_mutex_unlock(&lock);
    return rc;
}

int fl_onednn_gemm_f32(int trans_b, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
                       float beta, float *C, int ldc) {
#if DNNL_VERSION_MAJOR >= 3
    if (alpha != 1.0f) return -1;
#endif
    if (M <= 0 || N <= 0 || K <= 0 || omp_in_parallel()) return -1;
    pthread_once(&once, start);
    if (!started) return -1;
    pthread_mutex_lock(&lock);
    entry want = {.f32 = 1, .trans_b = trans_b, .M = M, .N = N, .K = K, .lda = lda, .ldb = ldb, .ldc = ldc,
                  .alpha = alpha, .beta = beta};
    int rc = run(&want, A, B, C);
    pthread_mutex_unlock(&lock);
    return rc;
}

#endif
