/* cpu_decode.c — attention of new queries against a K/V cache (backend.h attention_decode), the op
 * that makes generation O(T) per token instead of re-running the whole sequence.
 *
 *   s_ij = q_i·k_j / sqrt(HS) for lo_i <= j <= start+i;  p = softmax_j(s);  out_i = Σ_j p_ij v_j
 * lo_i = 0, or under a sliding window of W positions max(0, start+i-W+1) (the cache keeps every
 * position; keys before the window are simply not read). Query head h reads key/value head
 * h / (NH/NKV). One sequence (no batch), f32 (CPU act type). softcap > 0 caps each s to
 * softcap·tanh(s/softcap) first (Gemma 2), as attention_forward_cpu does. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_decode.h"
#include "common/error.h"

void attention_decode_cpu(void *out_, const void *q_, const void *k_, const void *v_, int start, int Tn, int window, int NH,
                          int NKV, int HS, int ld_q, float softcap) {
    float *out = out_;
    const float *q = q_, *k = k_, *v = v_;
    int group = NH / NKV, T = start + Tn;
    float scale = 1.0f / sqrtf((float)HS);
    #pragma omp parallel if ((size_t)Tn * NH * T > 4096)
    {
        float *scores = fl_malloc(sizeof(float) * (size_t)T);
        #pragma omp for schedule(dynamic, 4) collapse(2)
        for (int i = 0; i < Tn; i++)
            for (int h = 0; h < NH; h++) {
                int kvh = h / group, last = start + i, lo = window > 0 && last - window + 1 > 0 ? last - window + 1 : 0;
                const float *qi = q + (size_t)i * ld_q + (size_t)h * HS;
                float max = -INFINITY;
                for (int j = lo; j <= last; j++) {
                    const float *kj = k + ((size_t)j * NKV + kvh) * HS;
                    float s = 0.0f;
                    #pragma omp simd reduction(+ : s)
                    for (int d = 0; d < HS; d++) s += qi[d] * kj[d];
                    scores[j] = softcap > 0.0f ? softcap * tanhf(s * scale / softcap) : s * scale;
                    if (scores[j] > max) max = scores[j];
                }
                float sum = 0.0f;
                for (int j = lo; j <= last; j++) sum += (scores[j] = expf(scores[j] - max));
                float *oi = out + ((size_t)i * NH + h) * HS, inv = 1.0f / sum;
                memset(oi, 0, sizeof(float) * (size_t)HS);
                for (int j = lo; j <= last; j++) {
                    const float *vj = v + ((size_t)j * NKV + kvh) * HS;
                    float p = scores[j] * inv;
                    #pragma omp simd
                    for (int d = 0; d < HS; d++) oi[d] += p * vj[d];
                }
            }
        free(scores);
    }
}
