/* attention_rows_bf16.c — the bf16 attention's fused row steps (attention_rows_bf16.h): 32 keys of
 * a row pair at a time, the probabilities and score gradients computed in zmm registers and
 * rounded straight into the words the tile products read. The scalar path writes P and dS as f32
 * rows and packs them three times over; here each value is loaded once and stored only as bf16.
 *
 * Bit for bit the scalar path's values: the exp is fl_expf's sequence (clamps, the 1.5·2^23
 * rounding, the split ln 2, the same polynomial) with its two-step 2^k replaced by vscalefps, which
 * rounds p·2^k once, as the two exact-then-rounding multiplies do; products and differences in the
 * scalar code's order (the build does not contract them); bf16 rounding by vcvtne2ps2bf16, as the
 * packings already do. Plain C below AVX512_BF16: att_rows_bf16_fused() is then 0. */
#include "backend/cpu/attention_rows_bf16.h"

#include <math.h>

#include "backend/cpu/cpu_isa.h"
#include "backend/cpu/tile_gemm_bf16.h" /* tg16_lane_mask */
#include "common/fastmath.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define TGT __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

/* fl_expf (common/fastmath.h) on 16 lanes. */
TGT static inline __m512 exp16(__m512 x) {
    x = _mm512_max_ps(x, _mm512_set1_ps(-87.3f));
    x = _mm512_min_ps(x, _mm512_set1_ps(88.7f));
    const __m512 shift = _mm512_set1_ps(12582912.0f);
    __m512 kf = _mm512_sub_ps(_mm512_fmadd_ps(x, _mm512_set1_ps(1.44269504088896341f), shift), shift);
    __m512 r = _mm512_fnmadd_ps(kf, _mm512_set1_ps(0.693145751953125f), x);
    r = _mm512_fnmadd_ps(kf, _mm512_set1_ps(1.428606765330187045e-06f), r);
    __m512 p = _mm512_set1_ps(1.0f / 720.0f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    __mmask16 live = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.3f), _CMP_GT_OQ);
    return _mm512_maskz_scalef_ps(live, p, kf);
}

/* The lanes of keys [c, c + 16) inside [j0, j1). */
TGT static inline __mmask16 seen16(int c, int j0, int j1) {
    __m512i key = _mm512_add_epi32(_mm512_set1_epi32(c), _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11,
                                                                            12, 13, 14, 15));
    return _mm512_cmp_epi32_mask(key, _mm512_set1_epi32(j0), _MM_CMPINT_NLT) &
           _mm512_cmp_epi32_mask(key, _mm512_set1_epi32(j1), _MM_CMPINT_LT);
}

/* 16 words (lo[j], hi[j]) from two rows' 16 values: one conversion and one word shuffle. */
TGT static inline __m512i interleave_words(__m512 lo, __m512 hi) {
    const __m512i order = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22,
                                           6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    return _mm512_permutexvar_epi16(order, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
}

TGT static void backward_pair_avx512(const float *p_raw, const float *dp_raw, int64_t ld, int pair, int nq,
                                     const int *j0, const int *j1, const float *L, const float *Dr, float scale,
                                     uint32_t *p_panel, uint32_t *ds_panel, int64_t tile_panel, uint32_t *ds_rows,
                                     int64_t kw_nq) {
    const __m512 vscale = _mm512_set1_ps(scale);
    for (int c = 0; c < nq; c += 32) {
        __m512 p[2][2], ds[2][2]; /* [row][half] */
        for (int i = 0; i < 2; i++)
            for (int h = 0; h < 2; h++) {
                if (i >= pair) {
                    p[i][h] = ds[i][h] = _mm512_setzero_ps();
                    continue;
                }
                int key = c + 16 * h;
                __mmask16 m = seen16(key, j0[i], j1[i]);
                __m512 s = _mm512_maskz_loadu_ps(m, p_raw + i * ld + key);
                __m512 d = _mm512_maskz_loadu_ps(m, dp_raw + i * ld + key);
                /* p = exp(s·scale − L);  ds = p (dp − D)·scale; 0 where the row does not see the key */
                __m512 e = exp16(_mm512_sub_ps(_mm512_mul_ps(s, vscale), _mm512_set1_ps(L[i])));
                p[i][h] = _mm512_maskz_mov_ps(m, e);
                __m512 g = _mm512_mul_ps(_mm512_mul_ps(p[i][h], _mm512_sub_ps(d, _mm512_set1_ps(Dr[i]))), vscale);
                ds[i][h] = _mm512_maskz_mov_ps(m, g);
            }
        for (int h = 0; h < 2 && c + 16 * h < nq; h++) { /* one word row of panel (c + 16h) / 16 */
            int64_t at = (int64_t)((c + 16 * h) / 16) * tile_panel;
            _mm512_storeu_si512((void *)(p_panel + at), interleave_words(p[0][h], p[1][h]));
            _mm512_storeu_si512((void *)(ds_panel + at), interleave_words(ds[0][h], ds[1][h]));
        }
        int64_t w = c / 2, left = kw_nq - w; /* dS's rows: words w .. w + 15 */
        __mmask16 wm = tg16_lane_mask(left);
        for (int i = 0; i < pair; i++)
            _mm512_mask_storeu_epi32(ds_rows + i * kw_nq + w, wm, (__m512i)_mm512_cvtne2ps_pbh(ds[i][1], ds[i][0]));
    }
}

TGT static float forward_row_avx512(const float *s, int nk, int j0, int j1, float scale, float *run_max,
                                    float *run_sum, uint32_t *words) {
    __m512 vmax = _mm512_set1_ps(-INFINITY);
    for (int c = j0 / 16 * 16; c < j1; c += 16) {
        __mmask16 m = seen16(c, j0, j1);
        vmax = _mm512_mask_max_ps(vmax, m, vmax, _mm512_maskz_loadu_ps(m, s + c));
    }
    float s_max = _mm512_reduce_max_ps(vmax);
    float m = s_max * scale > *run_max ? s_max * scale : *run_max;
    float corr = m == -INFINITY ? 1.0f : fl_expf(*run_max - m);
    const __m512 vscale = _mm512_set1_ps(scale), vm = _mm512_set1_ps(m);
    __m512 vsum = _mm512_setzero_ps();
    int64_t kw = (nk + 1) / 2;
    for (int c = 0; c < nk; c += 32) {
        __m512 p[2];
        for (int h = 0; h < 2; h++) {
            __mmask16 seen = seen16(c + 16 * h, j0, j1);
            __m512 e = exp16(_mm512_sub_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(seen, s + c + 16 * h), vscale), vm));
            p[h] = _mm512_maskz_mov_ps(seen, e);
            vsum = _mm512_add_ps(vsum, p[h]);
        }
        int64_t left = kw - c / 2;
        __mmask16 wm = tg16_lane_mask(left);
        _mm512_mask_storeu_epi32(words + c / 2, wm, (__m512i)_mm512_cvtne2ps_pbh(p[1], p[0]));
    }
    *run_sum = *run_sum * corr + _mm512_reduce_add_ps(vsum);
    *run_max = m;
    return corr;
}
#endif

int att_rows_bf16_fused(void) {
#if defined(__x86_64__)
    return fl_cpu_isa_active() >= FL_CPU_ISA_AVX512_BF16;
#else
    return 0;
#endif
}

void att_backward_pair_bf16(const float *p_raw, const float *dp_raw, int64_t ld, int pair, int nq, const int *j0,
                            const int *j1, const float *L, const float *Dr, float scale, uint32_t *p_panel,
                            uint32_t *ds_panel, int64_t tile_panel, uint32_t *ds_rows, int64_t kw_nq) {
#if defined(__x86_64__)
    backward_pair_avx512(p_raw, dp_raw, ld, pair, nq, j0, j1, L, Dr, scale, p_panel, ds_panel, tile_panel, ds_rows,
                         kw_nq);
#else
    (void)p_raw, (void)dp_raw, (void)ld, (void)pair, (void)nq, (void)j0, (void)j1, (void)L, (void)Dr, (void)scale;
    (void)p_panel, (void)ds_panel, (void)tile_panel, (void)ds_rows, (void)kw_nq;
#endif
}

float att_forward_row_bf16(const float *s, int nk, int j0, int j1, float scale, float *run_max, float *run_sum,
                           uint32_t *words) {
#if defined(__x86_64__)
    return forward_row_avx512(s, nk, j0, j1, scale, run_max, run_sum, words);
#else
    (void)s, (void)nk, (void)j0, (void)j1, (void)scale, (void)run_max, (void)run_sum, (void)words;
    return 1.0f;
#endif
}
