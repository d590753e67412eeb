/* cpu_attention.c — causal grouped-query attention, O(T) memory: the forward keeps only the
 * output and the log-sum-exp of each query row; the backward recomputes the probabilities.
 *
 *   s_tj = q_t·k_j / sqrt(HS) for seg_start[t] <= j <= t;  p = softmax_j(s);  out_t = Σ_j p_tj v_j
 *   backward: D_t = dout_t·out_t, dp_tj = dout_t·v_j, ds_tj = p_tj (dp_tj − D_t),
 *             dq_t = Σ_j ds_tj k_j / sqrt(HS), dk_j += ds_tj q_t / sqrt(HS), dv_j += p_tj dout_t.
 * Query head h reads key/value head h / (NH/NKV), never a materialized copy. Query t of row b
 * sees keys seg_start[b*T+t] .. t (0 .. t for plain causal attention). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_ops.h"
#include "common/error.h"

static inline float dot(const float *a, const float *b, int n) {
    float s = 0.0f;
    #pragma omp simd reduction(+ : s)
    for (int i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

/* y += a·x */
static inline void axpy(float *restrict y, float a, const float *restrict x, int n) {
    #pragma omp simd
    for (int i = 0; i < n; i++) y[i] += a * x[i];
}

void attention_forward_cpu(void *out_, float *lse, const void *q_, const void *k_, const void *v_,
                           const int32_t *seg_start, int B, int T, int NH, int NKV, int HS) {
    float *out = out_;
    const float *q = q_, *k = k_, *v = v_;
    int group = NH / NKV;
    float scale = 1.0f / sqrtf((float)HS);
    #pragma omp parallel
    {
        float *scores = fl_malloc(sizeof(float) * (size_t)T);
        #pragma omp for schedule(dynamic, 8) collapse(3)
        for (int b = 0; b < B; b++)
            for (int h = 0; h < NH; h++)
                for (int t = 0; t < T; t++) {
                    int kvh = h / group;
                    size_t row = (size_t)b * T + t;
                    int j0 = seg_start[row];
                    const float *qt = q + (row * NH + h) * HS;
                    float max = -INFINITY;
                    for (int j = j0; j <= t; j++) {
                        float s = dot(qt, k + (((size_t)b * T + j) * NKV + kvh) * HS, HS) * scale;
                        scores[j] = s;
                        if (s > max) max = s;
                    }
                    float sum = 0.0f;
                    #pragma omp simd reduction(+ : sum)
                    for (int j = j0; j <= t; j++) sum += (scores[j] = expf(scores[j] - max));
                    float *ot = out + (row * NH + h) * HS;
                    memset(ot, 0, sizeof(float) * (size_t)HS);
                    float inv_sum = 1.0f / sum;
                    for (int j = j0; j <= t; j++)
                        axpy(ot, scores[j] * inv_sum, v + (((size_t)b * T + j) * NKV + kvh) * HS, HS);
                    lse[((size_t)b * NH + h) * T + t] = max + logf(sum);
                }
        free(scores);
    }
}

void attention_backward_cpu(void *dq_, void *dk_, void *dv_, const void *dout_, const void *out_, const float *lse,
                            const void *q_, const void *k_, const void *v_, const int32_t *seg_start, int B, int T,
                            int NH, int NKV, int HS) {
    float *dq = dq_, *dk = dk_, *dv = dv_;
    const float *dout = dout_, *out = out_, *q = q_, *k = k_, *v = v_;
    int group = NH / NKV;
    float scale = 1.0f / sqrtf((float)HS);
    /* One task per (batch, kv head): it owns dk/dv of that head, so no two threads write the same row. */
    #pragma omp parallel for schedule(dynamic, 1) collapse(2)
    for (int b = 0; b < B; b++)
        for (int kvh = 0; kvh < NKV; kvh++) {
            for (int t = 0; t < T; t++) {
                size_t row = (size_t)b * T + t;
                memset(dk + (row * NKV + kvh) * HS, 0, sizeof(float) * (size_t)HS);
                memset(dv + (row * NKV + kvh) * HS, 0, sizeof(float) * (size_t)HS);
            }
            for (int h = kvh * group; h < (kvh + 1) * group; h++)
                for (int t = 0; t < T; t++) {
                    size_t row = (size_t)b * T + t;
                    int j0 = seg_start[row];
                    const float *qt = q + (row * NH + h) * HS, *dot_ = dout + (row * NH + h) * HS;
                    float *dqt = dq + (row * NH + h) * HS;
                    float D = dot(dot_, out + (row * NH + h) * HS, HS);
                    float L = lse[((size_t)b * NH + h) * T + t];
                    memset(dqt, 0, sizeof(float) * (size_t)HS);
                    for (int j = j0; j <= t; j++) {
                        size_t kv_off = (((size_t)b * T + j) * NKV + kvh) * HS;
                        const float *kj = k + kv_off, *vj = v + kv_off;
                        float p = expf(dot(qt, kj, HS) * scale - L);
                        float ds = p * (dot(dot_, vj, HS) - D) * scale;
                        axpy(dqt, ds, kj, HS);
                        axpy(dk + kv_off, ds, qt, HS);
                        axpy(dv + kv_off, p, dot_, HS);
                    }
                }
        }
}
