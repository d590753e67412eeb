/* nf4.h — 4-bit NormalFloat (NF4) weights as bitsandbytes stores them (QLoRA): quantization,
 * dequantization and the in-memory form the engine holds for a frozen projection.
 *
 * Format (bitsandbytes quantize_4bit(A, blocksize=64, quant_type="nf4", compress_statistics=True),
 * what transformers saves for BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
 * bnb_4bit_use_double_quant=True)); a weight (rows, cols) = nn.Linear (out, in) is flattened
 * row-major to n = rows·cols elements:
 *   - blocks of 64 consecutive elements (the last one may be short; blocks cross rows when cols is
 *     not a multiple of 64); absmax[b] = max |x| over block b;
 *   - each element → the index (0..15) of the nearest value of the NF4 table (fl_nf4_code) to
 *     x / absmax[b]; two indices per byte, element 2i in the HIGH nibble, 2i+1 in the low one; an
 *     odd n pads the last low nibble with the index of 0.0 (7);
 *   - double quantization: offset = mean(absmax); absmax[b] - offset is quantized to 8 bits with
 *     bitsandbytes' dynamic map (fl_nf4_dynamic_map) in groups of 256 blocks, each group scaled by
 *     its own absmax (nested_absmax, f32);
 *   - dequantization: scale[b] = f32(f32(map[absmax_q[b]] · nested_absmax[b / 256]) + offset),
 *     w = f32(code[idx] · scale[b]), then rounded to nearest even into bf16/f16 when asked.
 * The exact rounding rules (ties, the reciprocal, the 8-bit lookup) and how they are tested against
 * the real library are in docs/QUANT.md. Not a GEMM (backend/cpu/gemm_nf4.h) and not a file reader
 * (model/weights_nf4.h).
 */
#ifndef FL_QUANT_NF4_H
#define FL_QUANT_NF4_H

#include <stddef.h>
#include <stdint.h>

#include "common/dtype.h"

#ifdef __cplusplus
extern "C" {   /* also included by backend/cuda/cuda_nf4.cu */
#endif

#define FL_NF4_BLOCK 64          /* elements per absmax block */
#define FL_NF4_GROUP 256         /* absmax blocks per nested (double-quantization) group */
/* Bytes per weight element with double quantization: 4-bit index, 8-bit code per 64, f32 per 64·256 */
#define FL_NF4_BYTES_PER_WEIGHT (0.5 + 1.0 / FL_NF4_BLOCK + 4.0 / (FL_NF4_BLOCK * FL_NF4_GROUP))

/* A frozen (rows, cols) matrix in NF4. All arrays live in one allocation (`storage`, host memory);
 * offsets into it are fixed by fl_nf4_layout so a backend can copy the whole thing at once. */
typedef struct {
    int64_t rows, cols;          /* the matrix: nn.Linear (out, in) */
    int64_t n_blocks;            /* ceil(rows·cols / 64) */
    int64_t n_groups;            /* entries of nested_absmax: ceil(n_blocks / 256) of the whole matrix (of the
                                    fused module for a row view); 0 without double quantization */
    int64_t block0;              /* the index of block 0 in the matrix the nested groups are counted over: 0,
                                    or for a row view (fl_nf4_rows_view) its first block in the fused module */
    fl_dtype dtype;              /* the dtype it was quantized from (bitsandbytes' quant_state.dtype) */
    int double_quant;            /* 1: absmax_q + nested_absmax + offset; 0: absmax (f32) */
    uint8_t *packed;             /* (ceil(rows·cols / 2)) two 4-bit indices per byte, high nibble first */
    uint8_t *absmax_q;           /* (n_blocks) 8-bit codes of absmax - offset (double_quant) */
    float *nested_absmax;        /* (n_groups) */
    float *nested_map;           /* (256) the 8-bit map the codes index (double_quant) */
    float *absmax;               /* (n_blocks) plain f32 absmax (!double_quant) */
    float offset;                /* mean of the absmax (double_quant) */
    void *storage;
    size_t bytes;
} fl_nf4_weight;

/* The 16 NF4 values, ascending, -1 .. 1 (index 7 is 0.0). */
const float *fl_nf4_code(void);
/* bitsandbytes' signed 8-bit dynamic map (create_dynamic_map()), 256 values ascending. */
const float *fl_nf4_dynamic_map(void);

/* Bytes of host storage for a (rows, cols) NF4 weight (with or without double quantization). */
size_t fl_nf4_bytes(int64_t rows, int64_t cols, int double_quant);
/* Allocates w's storage and sets its shape fields; the contents are uninitialized (nested_map is
 * set to fl_nf4_dynamic_map). fl_nf4_free releases it. */
void fl_nf4_alloc(fl_nf4_weight *w, int64_t rows, int64_t cols, fl_dtype dtype, int double_quant);
void fl_nf4_free(fl_nf4_weight *w);
/* dst = src's fields with its arrays at the same offsets inside `storage` (src->bytes bytes holding
 * a copy of src->storage, e.g. on a device); dst does not own storage. */
void fl_nf4_view(fl_nf4_weight *dst, const fl_nf4_weight *src, void *storage);

/* Quantizes a (rows, cols) matrix of F32/BF16/F16 values exactly as bitsandbytes' quantize_4bit
 * with blocksize 64 and compress_statistics = double_quant. `name` is used in the error message:
 * a non-finite value is an input error (FL_ERR_INPUT naming the tensor and the element). */
int fl_nf4_quantize(fl_nf4_weight *w, const void *src, fl_dtype dtype, int64_t rows, int64_t cols,
                    int double_quant, const char *name);

/* dst = rows [r0, r1) of src as a weight of its own, without a copy: its packed, absmax_q and absmax
 * start at row r0's first block, nested_absmax, nested_map and offset stay src's (the fused module's:
 * bitsandbytes quantizes a fused qkv_proj as ONE matrix, its offset the mean over all its blocks and
 * its groups of 256 blocks counted over all of it), block0 says where the view's blocks sit among
 * them. storage and bytes stay src's, so fl_nf4_view rebases a row view onto a device copy of src's
 * storage. Needs cols % 64 == 0 (no block crosses a row) unless the range is all of src: FL_ERR_INPUT
 * naming `name` otherwise. Example: q, k, v of a (QD + 2·KVD, C) qkv_proj are rows [0, QD),
 * [QD, QD + KVD), [QD + KVD, QD + 2·KVD). */
int fl_nf4_rows_view(fl_nf4_weight *dst, const fl_nf4_weight *src, int64_t r0, int64_t r1, const char *name);

/* The f32 scale of block b (what the dequantization multiplies the NF4 value by). */
static inline float fl_nf4_block_scale(const fl_nf4_weight *w, int64_t b) {
    if (!w->double_quant) return w->absmax[b];
    float s = w->nested_map[w->absmax_q[b]] * w->nested_absmax[(w->block0 + b) / FL_NF4_GROUP];
    return s + w->offset;   /* two roundings, as bitsandbytes: no fused multiply-add */
}
/* All n_blocks scales into scales (n_blocks). */
void fl_nf4_block_scales(const fl_nf4_weight *w, float *scales);

/* Dequantizes rows [r0, r1) into out (r1 - r0, cols) of dtype F32, BF16 or F16, as bitsandbytes'
 * dequantize_4bit does (f32 product, then round to nearest even). */
void fl_nf4_dequantize_rows(const fl_nf4_weight *w, int64_t r0, int64_t r1, void *out, fl_dtype dtype);
static inline void fl_nf4_dequantize(const fl_nf4_weight *w, void *out, fl_dtype dtype) {
    fl_nf4_dequantize_rows(w, 0, w->rows, out, dtype);
}

/* ---- the stages, exposed for the tests (tests/test_nf4.c) -------------------------------------- */

/* Stage 1 over n elements: packed (ceil(n/2)) and absmax (ceil(n/64)). Returns the index of the
 * first non-finite element, or -1. */
int64_t fl_nf4_quantize_blocks(const void *src, fl_dtype dtype, int64_t n, uint8_t *packed, float *absmax);
/* The offset of the double quantization: the mean of absmax (n values) as torch computes it in f32
 * (absmax.mean(): its cascade sum in the order of its AVX2 build on one thread, then / n). */
float fl_nf4_absmax_mean(const float *absmax, int64_t n);
/* Stage 2: codes (n) and nested (ceil(n/256)) of absmax - offset, as bitsandbytes'
 * quantize_blockwise(absmax - offset, blocksize=256) on the CPU. */
void fl_nf4_double_quant(const float *absmax, int64_t n, float offset, uint8_t *codes, float *nested);

#ifdef __cplusplus
}
#endif

#endif
