/* gguf_quant.h — f32 rows into the ggml tensor types fastlora writes: F32 (copy), F16 (IEEE
 * binary16, round to nearest even), BF16 (round to nearest even, NaN kept quiet) and Q8_0, and Q8_0
 * back to f32 (for tests and error estimates).
 *
 * Q8_0, as ggml's reference quantize_row_q8_0 and gguf-py's quants.Q8_0 compute it, bit for bit:
 * per block of 32 values, amax = max|x|, d = amax / 127 (f32), id = d ? 1/d : 0, q[j] = roundf(x[j]
 * · id) (half away from zero), stored as the f16 of d (nearest even) then the 32 int8 q. The largest
 * error per value is d/2 (plus the f16 rounding of d): about amax/254.
 * Not a general quantization library: no k-quants, no importance matrices.
 */
#ifndef FL_EXPORT_GGUF_QUANT_H
#define FL_EXPORT_GGUF_QUANT_H

#include <stddef.h>
#include <stdint.h>

#include "export/gguf.h"

/* Writes n values of x as `type` into dst (fl_ggml_nbytes(type, n) bytes). n must be a multiple
 * of the type's block length. */
void fl_ggml_from_f32(fl_ggml_type type, const float *x, void *dst, size_t n);
void fl_quantize_q8_0(const float *x, void *dst, size_t n);   /* (n/32) blocks of 34 bytes */
void fl_dequantize_q8_0(const void *src, float *y, size_t n);

#endif
