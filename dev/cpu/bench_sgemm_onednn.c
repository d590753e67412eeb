/* bench_sgemm_onednn.c — OpenBLAS's sgemm beside oneDNN's f32 matmul on the f32 reference backend's
 * GEMM shapes (cpu_matmul.c; SmolLM2-135M at 1024 tokens, r16): the frozen-weight products
 * (forward nt, input gradient nn, the LM head) and the LoRA products with a rank-sized output
 * (x·Aᵀ, dout·B) or a rank-sized K accumulating into a wide output (xa·s·Bᵀ, dxa·A; beta 1 as in
 * the step). Both called in turn R times per shape on the same operands; prints the median rates
 * and oneDNN's implementation. oneDNN 2.x API (Debian's libdnnl-dev). A measuring tool for the CPU
 * GEMM choice (docs/CPU-GEMM.md, "f32 on oneDNN"), not a test.
 *
 *   gcc -O2 -std=c11 -D_GNU_SOURCE -fopenmp dev/cpu/bench_sgemm_onednn.c -o build/bench_sgemm_onednn \
 *       -I/usr/include/x86_64-linux-gnu/openblas-openmp -L/usr/lib/x86_64-linux-gnu/openblas-openmp \
 *       -Wl,-rpath,/usr/lib/x86_64-linux-gnu/openblas-openmp -lopenblas -ldnnl
 *   OMP_NUM_THREADS=2 build/bench_sgemm_onednn [R]          (OMP_NUM_THREADS=1: one core's rate)
 */
#include <cblas.h>
#include <oneapi/dnnl/dnnl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CK(x)                                                                                                          \
    do {                                                                                                               \
        dnnl_status_t s_ = (x);                                                                                        \
        if (s_ != dnnl_success) {                                                                                      \
            fprintf(stderr, "oneDNN error %d at %s\n", (int)s_, #x);                                                   \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct {
    const char *what;
    int trans_b, N, K; /* C (M, N) = alpha · A (M, K) · op(B) + beta · C; op(B) = Bᵀ of B (N, K) when trans_b */
    float alpha, beta;
} shape;

int main(int argc, char **argv) {
    int runs = argc > 1 ? atoi(argv[1]) : 51, M = 1024;
    if (runs < 1) runs = 1;
    static const shape shapes[] = {
        {"q/k/v forward [x|xa]·[W|s·B]ᵀ", 1, 960, 624, 1, 0},  {"gate/up forward", 1, 3072, 608, 1, 0},
        {"down forward", 1, 576, 1536, 1, 0},                   {"q/k/v input gradient", 0, 624, 960, 1, 0},
        {"gate/up input gradient", 0, 608, 3072, 1, 0},         {"LM head forward", 1, 49152, 576, 1, 0},
        {"LoRA xa = x·Aᵀ (q/k/v)", 1, 48, 576, 1, 0},           {"LoRA xa = x·Aᵀ (down)", 1, 16, 1536, 1, 0},
        {"LoRA dxa = dout·s·B (o)", 0, 16, 576, 2, 0},          {"LoRA out += xa·s·Bᵀ (o)", 1, 576, 16, 2, 1},
        {"LoRA dx += dxa·A (q/k/v)", 0, 576, 48, 1, 1},
    };
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    CK(dnnl_engine_create(&engine, dnnl_cpu, 0));
    CK(dnnl_stream_create(&stream, engine, dnnl_stream_default_flags));
    size_t big = (size_t)M * 49152;
    float *A = malloc(sizeof(float) * big), *B = malloc(sizeof(float) * 49152 * 640), *C = malloc(sizeof(float) * big);
    double *t_blas = malloc(sizeof(double) * runs), *t_dnnl = malloc(sizeof(double) * runs);
    if (!A || !B || !C || !t_blas || !t_dnnl) return 1;
    for (size_t i = 0; i < big; i++) A[i] = (float)((i * 7919 % 1000) / 1000.0 - 0.5), C[i] = 0.0f;
    for (size_t i = 0; i < (size_t)49152 * 640; i++) B[i] = (float)((i * 104729 % 1000) / 1000.0 - 0.5) * 0.1f;
    printf("M = %d, %d runs each, alternating; median GFLOP/s\n", M, runs);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const shape *sh = &shapes[s];
        int N = sh->N, K = sh->K, ldb = sh->trans_b ? K : N;
        dnnl_memory_desc_t a_md, b_md, c_md;
        dnnl_dims_t ad = {M, K}, bd = {K, N}, cd = {M, N}, as = {K, 1}, cs = {N, 1};
        dnnl_dims_t bs = {sh->trans_b ? 1 : ldb, sh->trans_b ? ldb : 1};
        CK(dnnl_memory_desc_init_by_strides(&a_md, 2, ad, dnnl_f32, as));
        CK(dnnl_memory_desc_init_by_strides(&b_md, 2, bd, dnnl_f32, bs));
        CK(dnnl_memory_desc_init_by_strides(&c_md, 2, cd, dnnl_f32, cs));
        dnnl_primitive_attr_t attr;
        CK(dnnl_primitive_attr_create(&attr));
        if (sh->alpha != 1.0f) CK(dnnl_primitive_attr_set_output_scales(attr, 1, 0, &sh->alpha));
        dnnl_post_ops_t po = NULL;
        if (sh->beta != 0.0f) {
            CK(dnnl_post_ops_create(&po));
            CK(dnnl_post_ops_append_sum(po, sh->beta));
            CK(dnnl_primitive_attr_set_post_ops(attr, po));
        }
        dnnl_matmul_desc_t op;
        dnnl_primitive_desc_t pd;
        dnnl_primitive_t prim;
        CK(dnnl_matmul_desc_init(&op, &a_md, &b_md, NULL, &c_md));
        CK(dnnl_primitive_desc_create(&pd, &op, attr, engine, NULL));
        const char *impl = "?";
        dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
        CK(dnnl_primitive_create(&prim, pd));
        dnnl_memory_t am, bm, cm;
        CK(dnnl_memory_create(&am, &a_md, engine, A));
        CK(dnnl_memory_create(&bm, &b_md, engine, B));
        CK(dnnl_memory_create(&cm, &c_md, engine, C));
        dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}};
        int reps = N * K > 1000000 ? (runs + 4) / 5 : runs; /* the LM head: fewer */
        for (int r = -1; r < reps; r++) {                    /* r = -1: warm-up, not kept */
            double t = now();
            cblas_sgemm(CblasRowMajor, CblasNoTrans, sh->trans_b ? CblasTrans : CblasNoTrans, M, N, K, sh->alpha, A, K,
                        B, ldb, sh->beta, C, N);
            double blas = now() - t;
            t = now();
            CK(dnnl_primitive_execute(prim, stream, 3, args));
            CK(dnnl_stream_wait(stream));
            if (r >= 0) t_blas[r] = blas, t_dnnl[r] = now() - t;
        }
        qsort(t_blas, reps, sizeof(double), by_value);
        qsort(t_dnnl, reps, sizeof(double), by_value);
        double flop = 2.0 * M * N * K, blas = flop / t_blas[reps / 2] / 1e9, dnnl = flop / t_dnnl[reps / 2] / 1e9;
        printf("%-32s %s N %5d K %5d alpha %g beta %g: OpenBLAS %6.1f, oneDNN %6.1f (%s), oneDNN/OpenBLAS %.2f\n",
               sh->what, sh->trans_b ? "nt" : "nn", N, K, sh->alpha, sh->beta, blas, dnnl, impl, dnnl / blas);
        dnnl_memory_destroy(am);
        dnnl_memory_destroy(bm);
        dnnl_memory_destroy(cm);
        dnnl_primitive_destroy(prim);
        dnnl_primitive_desc_destroy(pd);
        if (po) dnnl_post_ops_destroy(po);
        dnnl_primitive_attr_destroy(attr);
    }
    free(A), free(B), free(C), free(t_blas), free(t_dnnl);
    dnnl_stream_destroy(stream);
    dnnl_engine_destroy(engine);
    return 0;
}
