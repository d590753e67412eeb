/* gguf_quant.c — F32/F16/BF16/Q8_0 encoders (see gguf_quant.h). */
#include "export/gguf_quant.h"

#include <math.h>
#include <string.h>

#include "common/dtype.h"
#include "common/error.h"

void fl_quantize_q8_0(const float *x, void *dst, size_t n) {
    uint8_t *out = dst;
    for (size_t b = 0; b < n / FL_Q8_0_BLOCK; b++, x += FL_Q8_0_BLOCK, out += FL_Q8_0_BYTES) {
        float amax = 0.0f;
        for (int j = 0; j < FL_Q8_0_BLOCK; j++) amax = fmaxf(amax, fabsf(x[j]));
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        uint16_t dh = fl_f32_to_f16(d);
        memcpy(out, &dh, 2);
        for (int j = 0; j < FL_Q8_0_BLOCK; j++) out[2 + j] = (uint8_t)(int8_t)roundf(x[j] * id);
    }
}

void fl_dequantize_q8_0(const void *src, float *y, size_t n) {
    const uint8_t *in = src;
    for (size_t b = 0; b < n / FL_Q8_0_BLOCK; b++, in += FL_Q8_0_BYTES, y += FL_Q8_0_BLOCK) {
        uint16_t dh;
        memcpy(&dh, in, 2);
        const float d = fl_f16_to_f32(dh);
        for (int j = 0; j < FL_Q8_0_BLOCK; j++) y[j] = (float)(int8_t)in[2 + j] * d;
    }
}

void fl_ggml_from_f32(fl_ggml_type type, const float *x, void *dst, size_t n) {
    uint16_t *h = dst;
    switch (type) {
    case FL_GGML_F32: memcpy(dst, x, n * sizeof(float)); break;
    case FL_GGML_F16: for (size_t i = 0; i < n; i++) h[i] = fl_f32_to_f16(x[i]); break;
    case FL_GGML_BF16: for (size_t i = 0; i < n; i++) h[i] = fl_f32_to_bf16(x[i]); break;
    case FL_GGML_Q8_0:
        if (n % FL_Q8_0_BLOCK) fl_die("Q8_0 of %zu values (not a multiple of 32)", n);
        fl_quantize_q8_0(x, dst, n);
        break;
    default: fl_die("no encoder for ggml type %d", (int)type);
    }
}
