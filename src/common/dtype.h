/* dtype.h — the element types fastlora reads and writes, and the bf16/f16 <-> f32 conversions.
 * BF16 is the top half of an IEEE f32 (round-to-nearest-even on the way down, NaN kept quiet);
 * F16 is IEEE binary16. Not a tensor library: just the scalar conversions and their names. */
#ifndef FL_DTYPE_H
#define FL_DTYPE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef enum { FL_F32 = 0, FL_BF16, FL_F16, FL_I32, FL_I64, FL_U8, FL_DTYPE_UNKNOWN } fl_dtype;

size_t fl_dtype_size(fl_dtype dtype);
const char *fl_dtype_name(fl_dtype dtype);          /* safetensors spelling: "F32", "BF16", ... */
fl_dtype fl_dtype_from_name(const char *name);      /* FL_DTYPE_UNKNOWN when not supported */

static inline float fl_bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline uint16_t fl_f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

float fl_f16_to_f32(uint16_t h);
uint16_t fl_f32_to_f16(float f);

/* Converts n elements of `src` (any float dtype) to f32. */
void fl_convert_to_f32(float *dst, const void *src, fl_dtype src_dtype, size_t n);

#endif
