/* fastmath.h — an expf that vectorizes. glibc's expf is a scalar call inside `omp simd` loops
 * unless the whole program is built with -ffast-math, and softmax over a 49k-152k vocabulary or a
 * 2k-key attention row spends most of its time there. This one is branch-free C that GCC turns into
 * AVX-512 code: exp(x) = 2^k · p(r), k = round(x·log2 e), r = x − k·ln 2 (two-part ln 2), p a
 * degree-6 polynomial, its steps written as fmaf (ISO C mode does not contract a·b + c, and a
 * multiply plus an add is twice the instructions of one FMA: the attention rows ran 19-23%
 * faster). Relative error ≤ 2.3e-7 (≤ 2 ulp) over [-87, 88.5] (tests/test_fastmath.c); the input
 * is clamped to [-87.3, 88.7], so it returns 0 far below and ~3.3e38 far above; NaN is not
 * propagated (callers never pass NaN). Not a libm. */
#ifndef FL_FASTMATH_H
#define FL_FASTMATH_H

#include <math.h>
#include <stdint.h>


static inline float fl_expf(float x) {
    x = x > -87.3f ? x : -87.3f; /* (the forms of maxps and minps) */
    x = x < 88.7f ? x : 88.7f;
    /* round to nearest with the 1.5·2^23 trick (exact for |x·log2 e| < 2^22; GCC vectorizes it,
     * while __builtin_roundevenf stops the vectorizer) */
    float kf = fmaf(x, 1.44269504088896341f, 12582912.0f) - 12582912.0f;
    float r = fmaf(-kf, 0.693145751953125f, x);   /* ln 2 high part (exact in f32 for |k| < 2^10) */
    r = fmaf(-kf, 1.428606765330187045e-06f, r);  /* ln 2 low part */
    /* Taylor/minimax-ish coefficients for e^r on [-ln2/2, ln2/2] */
    float p = 1.0f / 720.0f;
    p = fmaf(p, r, 1.0f / 120.0f);
    p = fmaf(p, r, 1.0f / 24.0f);
    p = fmaf(p, r, 1.0f / 6.0f);
    p = fmaf(p, r, 0.5f);
    p = fmaf(p, r, 1.0f);
    p = fmaf(p, r, 1.0f);
    int32_t k = (int32_t)kf;
    /* 2^k via the exponent field; k in [-126, 128] after the clamp. Split to stay in range. */
    int32_t k1 = k >> 1, k2 = k - k1;
    union { uint32_t u; float f; } s1 = {.u = (uint32_t)(k1 + 127) << 23}, s2 = {.u = (uint32_t)(k2 + 127) << 23};
    float result = p * s1.f * s2.f;
    return x <= -87.3f ? 0.0f : result;
}

#endif
