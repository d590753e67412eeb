/* cpu_loss.c — the LM head fused with cross-entropy, chunked over tokens.
 *
 * For a chunk of rows: logits (rows, V) = inp · weightᵀ (one GEMM); per row with target != -100,
 * two passes over its logits — (1) the max and Σ exp(z − max) together, in blocks of 256 logits
 * (the block's max is taken from L1, the running sum rescaled once per block), giving
 * loss = logsumexp − z[target]; (2) in place, dlogits = grad_scale·(exp(z − lse) − onehot) (zero
 * for ignored rows) — then dinp (rows, C) = dlogits · weight (one GEMM). Chunks are as large as
 * the budgets of cpu_plan.h allow (128 MiB of logits, or up to 512 rows within 512 MiB): every
 * chunk packs the whole (V, C) weight for both GEMMs, so few large chunks run the head at the
 * GEMM's rate. Each row's loss also goes to token_loss when asked (0 for ignored rows). The
 * chunk's logits and row losses are slots of the backend's scratch arena
 * (cpu_scratch.h), kept between calls (one step runs at a time; not reentrant). With a soft-cap
 * (Gemma 2's final_logit_softcapping, cap > 0) the chunk's logits become zc = cap·tanh(z/cap) right
 * after the GEMM — what logits_out, the loss and the softmax see — and each dlogit is multiplied by
 * dzc/dz = 1 − (zc/cap)². */
#include <math.h>

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/cpu_plan.h"
#include "backend/cpu/cpu_scratch.h"
#include "common/fastmath.h"
#include "backend/cpu/gemm_bf16.h"

size_t fl_cpu_lm_head_chunk_rows(size_t N, int V) {
    size_t row_bytes = sizeof(float) * (size_t)V;
    size_t most = FL_CPU_LM_HEAD_BUDGET / row_bytes;
    if (most < FL_CPU_LM_HEAD_ROWS) {
        most = FL_CPU_LM_HEAD_BUDGET_MAX / row_bytes;
        if (most > FL_CPU_LM_HEAD_ROWS) most = FL_CPU_LM_HEAD_ROWS;
    }
    if (most < 64) most = 64;
    if (N <= most) return N;
    size_t chunks = (N + most - 1) / most;
    return (N + chunks - 1) / chunks;
}

/* logits (rows, V) = inp (rows, C) · weightᵀ, and dinp (rows, C) = dlogits (rows, V) · weight */
typedef struct {
    void (*logits)(float *logits, const float *inp, const void *weight, size_t rows, int C, int V);
    void (*dinp)(float *dinp, const float *dlogits, const void *weight, size_t rows, int C, int V);
} head_gemms;

static void logits_f32(float *logits, const float *inp, const void *weight, size_t rows, int C, int V) {
    cpu_sgemm(1, rows, V, C, 1.0f, inp, C, weight, C, 0.0f, logits, V);
}
static void dinp_f32(float *dinp, const float *dlogits, const void *weight, size_t rows, int C, int V) {
    cpu_sgemm(0, rows, C, V, 1.0f, dlogits, V, weight, C, 0.0f, dinp, C);
}
static void logits_bf16(float *logits, const float *inp, const void *weight, size_t rows, int C, int V) {
    fl_gemm_bf16_nt((int)rows, V, C, 1.0f, inp, C, weight, C, 0.0f, logits, V);
}
static void dinp_bf16(float *dinp, const float *dlogits, const void *weight, size_t rows, int C, int V) {
    fl_gemm_bf16_nn((int)rows, C, V, 1.0f, dlogits, V, weight, C, 0.0f, dinp, C);
}

/* log Σ exp(row) over V logits: max and sum in one pass over memory, 256 at a time. */
static double row_logsumexp(const float *row, int V) {
    enum { BLK = 256 };
    float max = -INFINITY, sum = 0.0f;
    for (int i0 = 0; i0 < V; i0 += BLK) {
        int n = V - i0 < BLK ? V - i0 : BLK;
        const float *z = row + i0;
        float bmax = -INFINITY;
        #pragma omp simd reduction(max : bmax)
        for (int i = 0; i < n; i++) bmax = z[i] > bmax ? z[i] : bmax;
        if (bmax > max) {
            sum *= fl_expf(max - bmax); /* exp(-inf) = 0 on the first block */
            max = bmax;
        }
        /* f32 partial sums in vector lanes, relative error ~1e-7·sqrt(V/8) */
        float s = 0.0f;
        #pragma omp simd reduction(+ : s)
        for (int i = 0; i < n; i++) s += fl_expf(z[i] - max);
        sum += s;
    }
    return max + log(sum);
}

static void lm_head_loss_impl(float *dinp, float *logits_out, float *token_loss, fl_step_scalars *sc, const float *inp,
                              const int32_t *targets, const void *weight, float cap, size_t N, int C, int V,
                              head_gemms gemm) {
    float grad_scale = dinp ? sc->grad_scale : 0.0f;
    size_t chunk = fl_cpu_lm_head_chunk_rows(N, V);
    float *logits = fl_cpu_scratch(FL_CPU_SCRATCH_LM_LOGITS, sizeof(float) * chunk * (size_t)V);
    double *row_loss = fl_cpu_scratch(FL_CPU_SCRATCH_LM_ROW_LOSS, sizeof(double) * chunk);
    double loss_sum = 0.0;
    size_t counted = 0;
    for (size_t n0 = 0; n0 < N; n0 += chunk) {
        size_t rows = N - n0 < chunk ? N - n0 : chunk;
        gemm.logits(logits, inp + n0 * C, weight, rows, C, V);
        if (cap > 0.0f) {
            #pragma omp parallel for schedule(static)
            for (size_t i = 0; i < rows * (size_t)V; i++) logits[i] = cap * tanhf(logits[i] / cap);
        }
        if (logits_out)
            for (size_t i = 0; i < rows * (size_t)V; i++) logits_out[n0 * V + i] = logits[i];
        #pragma omp parallel for schedule(dynamic, 8)
        for (size_t r = 0; r < rows; r++) {
            float *row = logits + r * V;
            int32_t target = targets[n0 + r];
            row_loss[r] = -1.0;
            if (target < 0) {
                if (dinp) for (int i = 0; i < V; i++) row[i] = 0.0f;
                continue;
            }
            double lse = row_logsumexp(row, V);
            row_loss[r] = lse - row[target];
            if (dinp) {
                float l = (float)lse;
                if (cap > 0.0f) {
                    for (int i = 0; i < V; i++) {
                        float zc = row[i], p = fl_expf(zc - l) * grad_scale - (i == target ? grad_scale : 0.0f);
                        row[i] = p * (1.0f - (zc / cap) * (zc / cap));
                    }
                } else {
                    #pragma omp simd
                    for (int i = 0; i < V; i++) row[i] = fl_expf(row[i] - l) * grad_scale;
                    row[target] -= grad_scale;
                }
            }
        }
        for (size_t r = 0; r < rows; r++) /* in order: the sum is the same for any thread count */
            if (!(row_loss[r] < 0.0)) { loss_sum += row_loss[r]; counted++; } /* NaN counts: it must surface */
        if (token_loss)
            for (size_t r = 0; r < rows; r++) token_loss[n0 + r] = row_loss[r] < 0.0 ? 0.0f : (float)row_loss[r];
        if (dinp) gemm.dinp(dinp + n0 * C, logits, weight, rows, C, V);
    }
    if (sc) {
        sc->loss_sum += loss_sum;
        sc->n_counted += (double)counted;
    }
}

void lm_head_loss_cpu(void *dinp, float *logits_out, float *token_loss, fl_step_scalars *sc, const void *inp,
                      const int32_t *targets, const void *weight, size_t N, int C, int V) {
    lm_head_loss_impl(dinp, logits_out, token_loss, sc, inp, targets, weight, 0.0f, N, C, V,
                      (head_gemms){logits_f32, dinp_f32});
}

void lm_head_loss_softcap_cpu(void *dinp, float *logits_out, float *token_loss, fl_step_scalars *sc, const void *inp,
                              const int32_t *targets, const void *weight, float softcap, size_t N, int C, int V) {
    lm_head_loss_impl(dinp, logits_out, token_loss, sc, inp, targets, weight, softcap, N, C, V,
                      (head_gemms){logits_f32, dinp_f32});
}

void lm_head_loss_cpu_bf16(void *dinp, float *logits_out, float *token_loss, fl_step_scalars *sc, const void *inp,
                           const int32_t *targets, const void *weight, size_t N, int C, int V) {
    lm_head_loss_impl(dinp, logits_out, token_loss, sc, inp, targets, weight, 0.0f, N, C, V,
                      (head_gemms){logits_bf16, dinp_bf16});
}

void lm_head_loss_softcap_cpu_bf16(void *dinp, float *logits_out, float *token_loss, fl_step_scalars *sc,
                                   const void *inp, const int32_t *targets, const void *weight, float softcap, size_t N,
                                   int C, int V) {
    lm_head_loss_impl(dinp, logits_out, token_loss, sc, inp, targets, weight, softcap, N, C, V,
                      (head_gemms){logits_bf16, dinp_bf16});
}
