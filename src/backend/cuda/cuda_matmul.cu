/* cuda_matmul.cu — the three matmuls of a frozen-base LoRA model through cuBLASLt: bf16 operands,
 * f32 accumulation (CUBLAS_COMPUTE_32F), the bias as an epilogue, beta=1 accumulation (the LoRA B
 * product lands in the base output without a separate add), and the LoRA weight gradient written
 * straight into its f32 accumulator.
 *
 * Row-major (HF layout, weight (OC, IC)) mapped onto cuBLAS's column-major: a row-major (R, C)
 * matrix with row stride ld is a column-major (C, R) one with leading dimension ld, so
 *   forward      out (N,OC)  = inp·Wᵀ        ->  outᵀ (OC,N)  = op_T(W) · inpᵀ          "TN", m=OC n=N  k=IC
 *   bwd input    dinp (N,IC) = dout·W        ->  dinpᵀ (IC,N) = Wᵀ_cm · doutᵀ           "NN", m=IC n=N  k=OC
 *   bwd weight   dW (OC,IC) += doutᵀ·inp     ->  dWᵀ (IC,OC) += inpᵀ · op_T(doutᵀ)      "NT", m=IC n=OC k=N
 * Each distinct problem (layouts, sizes, pointer alignments, epilogue) gets its descriptors and the
 * heuristic's best algorithm once, cached; later calls only set the pointers and launch. Not
 * thread-safe (one host thread drives the backend). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_common.cuh"

typedef struct {
    int transa, transb;
    int64_t m, n, k, lda, ldb, ldc;
    cudaDataType_t ctype;    /* C/D: bf16 or f32 */
    int bias;
    int align_a, align_b, align_c;
} gemm_key;

typedef struct {
    gemm_key key;
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t a, b, c;
    cublasLtMatmulAlgo_t algo;
    int gemm_ex;             /* 1: cuBLASLt had no algorithm; run through cublasGemmEx instead */
} gemm_plan;

#define MAX_PLANS 512
static gemm_plan plans[MAX_PLANS];
static int n_plans;

static int pointer_alignment(const void *p) {
    uintptr_t v = (uintptr_t)p;
    int a = 16;
    while (a > 1 && (v & (uintptr_t)(a - 1))) a >>= 1;
    return a;
}

static gemm_plan *plan_get(const gemm_key *key) {
    for (int i = 0; i < n_plans; i++)
        if (!memcmp(&plans[i].key, key, sizeof *key)) return &plans[i];
    if (n_plans == MAX_PLANS) {
        fprintf(stderr, "fastlora: cuBLASLt plan cache full (%d shapes)\n", MAX_PLANS);
        abort();
    }
    gemm_plan *p = &plans[n_plans];
    memset(p, 0, sizeof *p);
    p->key = *key;
    cublasOperation_t ta = key->transa ? CUBLAS_OP_T : CUBLAS_OP_N, tb = key->transb ? CUBLAS_OP_T : CUBLAS_OP_N;
    CUBLAS_CHECK(cublasLtMatmulDescCreate(&p->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    if (key->bias) {
        cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
        cudaDataType_t bias_type = CUDA_R_16BF;
        CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
        CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type,
                                                    sizeof bias_type));
    }
    /* stored (rows, cols) of each operand in column-major terms */
    int64_t a_rows = key->transa ? key->k : key->m, a_cols = key->transa ? key->m : key->k;
    int64_t b_rows = key->transb ? key->n : key->k, b_cols = key->transb ? key->k : key->n;
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->a, CUDA_R_16BF, (uint64_t)a_rows, (uint64_t)a_cols, key->lda));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->b, CUDA_R_16BF, (uint64_t)b_rows, (uint64_t)b_cols, key->ldb));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->c, key->ctype, (uint64_t)key->m, (uint64_t)key->n, key->ldc));

    cublasLtMatmulPreference_t pref;
    CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    size_t ws = fl_cuda.workspace_bytes;
    uint32_t aa = (uint32_t)key->align_a, ab = (uint32_t)key->align_b, ac = (uint32_t)key->align_c;
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &aa, sizeof aa));
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &ab, sizeof ab));
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &ac, sizeof ac));
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &ac, sizeof ac));
    cublasLtMatmulHeuristicResult_t result;
    int found = 0;
    /* No algorithm shows up either as found == 0 or, depending on the cuBLASLt version, as
     * CUBLAS_STATUS_NOT_SUPPORTED from the call itself: both get the message that names the problem. */
    cublasStatus_t st =
        cublasLtMatmulAlgoGetHeuristic(fl_cuda.lt, p->desc, p->a, p->b, p->c, p->c, pref, 1, &result, &found);
    CUBLAS_CHECK(cublasLtMatmulPreferenceDestroy(pref));
    if (getenv("FL_CUDA_FORCE_GEMM_EX")) found = 0; /* tests: take the fallback on purpose */
    if (st != CUBLAS_STATUS_SUCCESS || !found) {
        /* Tiny LoRA ranks give leading dimensions that are not a multiple of 16 bytes (a rank-4
         * product's 8 bytes; the K-concatenated q/k/v weight's C + 3·R columns), which some
         * cuBLASLt versions find no kernel for: cublasGemmEx takes any layout (and the bias, which
         * it has no epilogue for, is added by a kernel after it). */
        fprintf(stderr,
                "fastlora: cuBLASLt has no algorithm for %c%c m=%lld n=%lld k=%lld (ld %lld/%lld/%lld, %s output, "
                "alignment %d/%d/%d bytes, bias %d): %s; using cublasGemmEx\n",
                key->transa ? 'T' : 'N', key->transb ? 'T' : 'N', (long long)key->m, (long long)key->n,
                (long long)key->k, (long long)key->lda, (long long)key->ldb, (long long)key->ldc,
                key->ctype == CUDA_R_32F ? "f32" : "bf16", key->align_a, key->align_b, key->align_c, key->bias,
                st != CUBLAS_STATUS_SUCCESS ? fl_cublas_status_string(st) : "0 results");
        p->gemm_ex = 1;
    } else {
        p->algo = result.algo;
    }
    n_plans++;
    return p;
}

/* D (m, n) col-major (bf16, column stride ldc) += bias (m): the bias epilogue of the GemmEx
 * fallback. Rounds twice (the product to bf16, then the sum) where the epilogue rounds once: a
 * bf16 ulp at most, on a path that only runs when cuBLASLt has no algorithm. */
__global__ void add_bias_kernel(bf16 *D, const bf16 *bias, int64_t m, int64_t n, int64_t ldc) {
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < m * n; i += (int64_t)gridDim.x * blockDim.x) {
        bf16 *d = D + (i / m) * ldc + i % m;
        *d = __float2bfloat16_rn(__bfloat162float(*d) + __bfloat162float(bias[i % m]));
    }
}

/* The fallback for problems cuBLASLt has no algorithm for: the same product through cublasGemmEx
 * (bf16 operands, f32 compute), on the backend's stream, then the bias if any. Deterministic like
 * the rest of cuBLAS. */
static void gemm_ex_fallback(const gemm_key *key, const bf16 *A, const bf16 *B, void *D, const bf16 *bias, float alpha,
                             float beta, cudaStream_t stream) {
    static cublasHandle_t handle;
    if (!handle) {
        CUBLAS_CHECK(cublasCreate(&handle));
        /* the fixed workspace (shared with cuBLASLt on the same stream), so that cuBLAS allocates
         * nothing of its own inside a recorded step */
        CUBLAS_CHECK(cublasSetWorkspace(handle, fl_cuda.workspace, fl_cuda.workspace_bytes));
    }
    CUBLAS_CHECK(cublasSetStream(handle, stream));
    CUBLAS_CHECK(cublasGemmEx(handle, key->transa ? CUBLAS_OP_T : CUBLAS_OP_N, key->transb ? CUBLAS_OP_T : CUBLAS_OP_N,
                              (int)key->m, (int)key->n, (int)key->k, &alpha, A, CUDA_R_16BF, (int)key->lda, B,
                              CUDA_R_16BF, (int)key->ldb, &beta, D, key->ctype, (int)key->ldc, CUBLAS_COMPUTE_32F,
                              CUBLAS_GEMM_DEFAULT));
    fl_cuda_count_op();
    if (bias) { /* biased problems are forwards: bf16 output */
        unsigned blocks = fl_cuda_grid_1d((size_t)(key->m * key->n), 256, 1, (unsigned)fl_cuda.prop.multiProcessorCount * 8);
        add_bias_kernel<<<blocks ? blocks : 1, 256, 0, stream>>>((bf16 *)D, bias, key->m, key->n, key->ldc);
        CUDA_LAUNCH_CHECK();
    }
}

/* D (m, n) col-major = alpha · op(A) · op(B) + beta · D (+ bias (m)) */
static void lt_gemm(int transa, int transb, int64_t m, int64_t n, int64_t k, const bf16 *A, int64_t lda, const bf16 *B,
                    int64_t ldb, void *D, int64_t ldc, cudaDataType_t ctype, const bf16 *bias, float alpha, float beta,
                    cudaStream_t stream) {
    if (m == 0 || n == 0) return;
    gemm_key key;
    memset(&key, 0, sizeof key); /* padding bytes take part in memcmp */
    key.transa = transa;
    key.transb = transb;
    key.m = m; key.n = n; key.k = k;
    key.lda = lda; key.ldb = ldb; key.ldc = ldc;
    key.ctype = ctype;
    key.bias = bias != NULL;
    key.align_a = pointer_alignment(A);
    key.align_b = pointer_alignment(B);
    key.align_c = pointer_alignment(D);
    gemm_plan *p = plan_get(&key);
    if (p->gemm_ex) {
        gemm_ex_fallback(&key, A, B, D, bias, alpha, beta, stream);
        return;
    }
    if (bias) CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
    CUBLAS_CHECK(cublasLtMatmul(fl_cuda.lt, p->desc, &alpha, A, p->a, B, p->b, &beta, D, p->c, D, p->c, &p->algo,
                                fl_cuda.workspace, fl_cuda.workspace_bytes, stream));
    fl_cuda_count_op();
}

void matmul_forward(bf16 *out, const bf16 *inp, const bf16 *weight, const bf16 *bias, float alpha, float beta, size_t N,
                    int IC, int OC, int ld_out, int ld_inp, int ld_w, cudaStream_t stream) {
    if (IC == 0) {
        /* nothing to multiply; the interface still asks for beta·out + bias — never used by the engine */
        fprintf(stderr, "fastlora: matmul_forward with IC == 0\n");
        abort();
    }
    lt_gemm(1, 0, OC, (int64_t)N, IC, weight, ld_w, inp, ld_inp, out, ld_out, CUDA_R_16BF, bias, alpha, beta, stream);
}

void matmul_backward_input(bf16 *dinp, const bf16 *dout, const bf16 *weight, float alpha, float beta, size_t N, int IC,
                           int OC, int ld_dinp, int ld_dout, int ld_w, cudaStream_t stream) {
    lt_gemm(0, 0, IC, (int64_t)N, OC, weight, ld_w, dout, ld_dout, dinp, ld_dinp, CUDA_R_16BF, NULL, alpha, beta, stream);
}

void matmul_backward_weight(float *dweight, const bf16 *dout, const bf16 *inp, float alpha, size_t N, int IC, int OC,
                            int ld_dout, int ld_inp, cudaStream_t stream) {
    lt_gemm(0, 1, IC, OC, (int64_t)N, inp, ld_inp, dout, ld_dout, dweight, IC, CUDA_R_32F, NULL, alpha, 1.0f, stream);
}

/* out (N, OC) f32 = inp · weightᵀ: the LM head's logits when the caller wants them in f32. */
void matmul_forward_f32out(float *out, const bf16 *inp, const bf16 *weight, size_t N, int IC, int OC,
                           cudaStream_t stream) {
    lt_gemm(1, 0, OC, (int64_t)N, IC, weight, IC, inp, IC, out, OC, CUDA_R_32F, NULL, 1.0f, 0.0f, stream);
}
