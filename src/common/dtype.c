/* dtype.c — dtype names, sizes and the f16 conversions (bf16 ones are inline in dtype.h). */
#include "common/dtype.h"

static const struct { const char *name; size_t size; } dtype_table[] = {
    [FL_F32] = {"F32", 4}, [FL_BF16] = {"BF16", 2}, [FL_F16] = {"F16", 2},
    [FL_I32] = {"I32", 4}, [FL_I64] = {"I64", 8},   [FL_U8] = {"U8", 1},
};

size_t fl_dtype_size(fl_dtype dtype) { return dtype < FL_DTYPE_UNKNOWN ? dtype_table[dtype].size : 0; }
const char *fl_dtype_name(fl_dtype dtype) { return dtype < FL_DTYPE_UNKNOWN ? dtype_table[dtype].name : "?"; }

fl_dtype fl_dtype_from_name(const char *name) {
    for (int d = 0; d < FL_DTYPE_UNKNOWN; d++)
        if (!strcmp(name, dtype_table[d].name)) return (fl_dtype)d;
    return FL_DTYPE_UNKNOWN;
}

float fl_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff, u;
    if (exp == 0) {
        if (mant == 0) {
            u = sign;
        } else { /* subnormal: normalize */
            exp = 127 - 15 + 1;
            while (!(mant & 0x400)) { mant <<= 1; exp--; }
            u = sign | (exp << 23) | ((mant & 0x3ff) << 13);
        }
    } else if (exp == 31) {
        u = sign | 0x7f800000u | (mant << 13);
    } else {
        u = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    }
    float f;
    memcpy(&f, &u, 4);
    return f;
}

uint16_t fl_f32_to_f16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t sign = (u >> 16) & 0x8000;
    int32_t exp = (int32_t)((u >> 23) & 0xff) - 127 + 15;
    uint32_t mant = u & 0x7fffff;
    if (((u >> 23) & 0xff) == 0xff) return (uint16_t)(sign | 0x7c00 | (mant ? 0x200 : 0));
    if (exp >= 31) return (uint16_t)(sign | 0x7c00);
    if (exp <= 0) {
        if (exp < -10) return (uint16_t)sign;
        mant |= 0x800000;
        uint32_t shift = (uint32_t)(14 - exp);
        uint32_t half = mant >> shift, rem = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1))) half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = sign | ((uint32_t)exp << 10) | (mant >> 13);
    uint32_t rem = mant & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (half & 1))) half++;
    return (uint16_t)half;
}

void fl_convert_to_f32(float *dst, const void *src, fl_dtype src_dtype, size_t n) {
    if (src_dtype == FL_F32) {
        memcpy(dst, src, n * 4);
    } else if (src_dtype == FL_BF16) {
        const uint16_t *s = src;
        #pragma omp parallel for schedule(static) if (n > 1 << 16)
        for (size_t i = 0; i < n; i++) dst[i] = fl_bf16_to_f32(s[i]);
    } else if (src_dtype == FL_F16) {
        const uint16_t *s = src;
        #pragma omp parallel for schedule(static) if (n > 1 << 16)
        for (size_t i = 0; i < n; i++) dst[i] = fl_f16_to_f32(s[i]);
    }
}
