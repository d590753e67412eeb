/* nf4.c — NF4 quantization and dequantization, bit for bit as bitsandbytes 0.50 on the CPU.
 *
 * Every float operation below is one IEEE f32 operation in the order bitsandbytes performs it
 * (the project builds with -std=c11, so the compiler does not fuse a·b + c into an FMA). The rules
 * that matter for equality, each checked by tests/test_nf4.c against the library's own output:
 *   - stage 1 (torch code in bitsandbytes' default backend): full 64-blocks scale by the f32
 *     reciprocal, x · (1 / max(absmax, 1e-38)); the short last block divides, x / max(absmax, 1e-38);
 *     the index is the number of midpoints (code[i] + code[i+1]) / 2 strictly below the clamped
 *     value, so a value exactly on a midpoint takes the LOWER code;
 *   - stage 2 (bitsandbytes' C++ quantize_cpu): per 256-group, v · (1 / absmax) clamped to [-1, 1]
 *     is mapped to a 16-bit index (v + 1) · 0.5 · 65535 + 0.5 (truncated) into a 65536-entry table
 *     of the nearest dynamic-map code; an all-zero group is all code 0.
 */
#include "quant/nf4.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"

/* ---------------------------------------------------------------- tables */

/* NF4: quantiles of N(0, 1) normalized to [-1, 1] (QLoRA), as f32. */
static const float nf4_code[16] = {
    -1.0f, -0.6961928009986877f, -0.5250730514526367f, -0.39491748809814453f,
    -0.28444138169288635f, -0.18477343022823334f, -0.09105003625154495f, 0.0f,
    0.07958029955625534f, 0.16093020141124725f, 0.24611230194568634f, 0.33791524171829224f,
    0.44070982933044434f, 0.5626170039176941f, 0.7229568362236023f, 1.0f,
};

static float dynamic_map[256];
static float nf4_bounds[15];           /* midpoints between consecutive NF4 codes */
static uint8_t dynamic_lut[65536];     /* 16-bit position in [-1, 1] -> nearest dynamic code */
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* torch.linspace(start, end, steps) in f32 as its CPU kernel computes it (built with FMA
 * contraction): the first half counts up from start, the second half down from end, each value one
 * fused multiply-add of step = (end - start) / (steps - 1). Checked against the library's map. */
static void linspace_f32(float *out, float start, float end, int steps) {
    float step = (end - start) / (float)(steps - 1);
    int half = steps / 2;
    for (int j = 0; j < steps; j++)
        out[j] = j < half ? fmaf(step, (float)j, start) : fmaf(-step, (float)(steps - 1 - j), end);
}

/* bitsandbytes' create_dynamic_map(signed=True, max_exponent_bits=7, total_bits=8): for exponent
 * i = 0..6, 2^i fraction values (means of linspace(0.1, 1, 2^i + 1)) times ±10^(i-6); then 0 and 1;
 * sorted. */
static void build_dynamic_map(float *map) {
    static const double pow10[7] = {1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0};
    int k = 0;
    for (int i = 0; i < 7; i++) {
        int items = (1 << i) + 1;
        float bounds[65];
        linspace_f32(bounds, 0.1f, 1.0f, items);
        float scale = (float)pow10[i];
        for (int j = 0; j + 1 < items; j++) {
            float mean = (bounds[j] + bounds[j + 1]) / 2.0f;
            map[k++] = scale * mean;
        }
        for (int j = 0; j + 1 < items; j++) {
            float mean = (bounds[j] + bounds[j + 1]) / 2.0f;
            map[k++] = -scale * mean;
        }
    }
    map[k++] = 0.0f;
    map[k++] = 1.0f;
    qsort(map, 256, sizeof(float), cmp_float);
}

static void build_tables(void) {
    build_dynamic_map(dynamic_map);
    for (int i = 0; i < 15; i++) nf4_bounds[i] = (nf4_code[i] + nf4_code[i + 1]) / 2.0f;
    float mid[255];
    for (int i = 0; i < 255; i++) mid[i] = 0.5f * (dynamic_map[i] + dynamic_map[i + 1]);
    int c = 0;
    for (int i = 0; i < 65536; i++) {
        float val = -1.0f + (2.0f * (float)i) / 65535.0f;
        while (c < 255 && mid[c] < val) c++;
        dynamic_lut[i] = (uint8_t)c;
    }
}

static void tables_init(void) { pthread_once(&tables_once, build_tables); }

const float *fl_nf4_code(void) { return nf4_code; }

const float *fl_nf4_dynamic_map(void) {
    tables_init();
    return dynamic_map;
}

/* ---------------------------------------------------------------- storage */

static size_t align64(size_t x) { return (x + 63) / 64 * 64; }

/* Byte offsets of the arrays inside the one allocation: packed, absmax_q | absmax, nested_absmax,
 * nested_map — each 64-byte aligned. */
static size_t layout(int64_t rows, int64_t cols, int dq, size_t *o_codes, size_t *o_nested, size_t *o_map) {
    int64_t n = rows * cols, nb = (n + FL_NF4_BLOCK - 1) / FL_NF4_BLOCK, ng = dq ? (nb + FL_NF4_GROUP - 1) / FL_NF4_GROUP : 0;
    size_t off = align64((size_t)(n + 1) / 2);
    *o_codes = off;
    off += align64((size_t)nb * (dq ? 1 : sizeof(float)));
    *o_nested = off;
    off += align64((size_t)ng * sizeof(float));
    *o_map = off;
    off += dq ? 256 * sizeof(float) : 0;
    return off;
}

size_t fl_nf4_bytes(int64_t rows, int64_t cols, int double_quant) {
    size_t a, b, c;
    return layout(rows, cols, double_quant, &a, &b, &c);
}

void fl_nf4_alloc(fl_nf4_weight *w, int64_t rows, int64_t cols, fl_dtype dtype, int double_quant) {
    memset(w, 0, sizeof *w);
    size_t o_codes, o_nested, o_map;
    w->bytes = layout(rows, cols, double_quant, &o_codes, &o_nested, &o_map);
    w->storage = aligned_alloc(64, w->bytes ? w->bytes : 64);
    if (!w->storage) fl_die("out of memory (%zu bytes) for an NF4 weight", w->bytes);
    char *s = w->storage;
    w->rows = rows;
    w->cols = cols;
    w->dtype = dtype;
    w->double_quant = double_quant;
    w->n_blocks = (rows * cols + FL_NF4_BLOCK - 1) / FL_NF4_BLOCK;
    w->n_groups = double_quant ? (w->n_blocks + FL_NF4_GROUP - 1) / FL_NF4_GROUP : 0;
    w->packed = (uint8_t *)s;
    if (double_quant) {
        w->absmax_q = (uint8_t *)(s + o_codes);
        w->nested_absmax = (float *)(s + o_nested);
        w->nested_map = (float *)(s + o_map);
        memcpy(w->nested_map, fl_nf4_dynamic_map(), 256 * sizeof(float));
    } else {
        w->absmax = (float *)(s + o_codes);
    }
}

void fl_nf4_view(fl_nf4_weight *dst, const fl_nf4_weight *src, void *storage) {
    *dst = *src;
    dst->storage = storage;
    #define REBASE(field) dst->field = src->field ? (void *)((char *)storage + ((char *)src->field - (char *)src->storage)) : NULL
    REBASE(packed);
    REBASE(absmax_q);
    REBASE(nested_absmax);
    REBASE(nested_map);
    REBASE(absmax);
    #undef REBASE
}

int fl_nf4_rows_view(fl_nf4_weight *dst, const fl_nf4_weight *src, int64_t r0, int64_t r1, const char *name) {
    if (r0 < 0 || r1 > src->rows || r0 > r1)
        return fl_input_error("%s: rows [%lld, %lld) are not inside its %lld rows", name, (long long)r0, (long long)r1,
                              (long long)src->rows);
    if (src->cols % FL_NF4_BLOCK && (r0 || r1 != src->rows))
        return fl_input_error("%s: NF4 rows of a fused module need in-features (%lld) a multiple of %d, so that no "
                              "64-block crosses a row (every released Phi-3 has 3072); load this model unquantized",
                              name, (long long)src->cols, FL_NF4_BLOCK);
    int64_t b0 = r0 * src->cols / FL_NF4_BLOCK;   /* exact: r0·cols is a multiple of 64 */
    *dst = *src;
    dst->rows = r1 - r0;
    dst->n_blocks = (dst->rows * dst->cols + FL_NF4_BLOCK - 1) / FL_NF4_BLOCK;
    dst->block0 = src->block0 + b0;
    dst->packed = src->packed + r0 * src->cols / 2;
    if (src->absmax_q) dst->absmax_q = src->absmax_q + b0;
    if (src->absmax) dst->absmax = src->absmax + b0;
    return 0;
}

void fl_nf4_free(fl_nf4_weight *w) {
    free(w->storage);
    memset(w, 0, sizeof *w);
}

/* ---------------------------------------------------------------- quantization */

static inline float load_f32(const void *src, fl_dtype dtype, int64_t i) {
    if (dtype == FL_F32) return ((const float *)src)[i];
    if (dtype == FL_BF16) return fl_bf16_to_f32(((const uint16_t *)src)[i]);
    return fl_f16_to_f32(((const uint16_t *)src)[i]);
}

/* The NF4 index of a value already scaled into [-1, 1]: the number of midpoints below it. */
static inline uint8_t nf4_index(float y) {
    uint8_t q = 0;
    for (int i = 0; i < 15; i++) q += nf4_bounds[i] < y;
    return q;
}

int64_t fl_nf4_quantize_blocks(const void *src, fl_dtype dtype, int64_t n, uint8_t *packed, float *absmax) {
    tables_init();
    int64_t nb = (n + FL_NF4_BLOCK - 1) / FL_NF4_BLOCK, full = n / FL_NF4_BLOCK;
    int64_t bad = -1;
    #pragma omp parallel for schedule(static) if (n > (1 << 18))
    for (int64_t b = 0; b < nb; b++) {
        int64_t start = b * FL_NF4_BLOCK, len = n - start < FL_NF4_BLOCK ? n - start : FL_NF4_BLOCK;
        float x[FL_NF4_BLOCK], amax = 0.0f;
        int64_t bad_here = -1;
        for (int64_t i = 0; i < len; i++) {
            x[i] = load_f32(src, dtype, start + i);
            if (!isfinite(x[i]) && bad_here < 0) bad_here = start + i;
            float a = fabsf(x[i]);
            amax = a > amax ? a : amax;
        }
        if (bad_here >= 0) {
            #pragma omp critical(fl_nf4_bad)
            if (bad < 0 || bad_here < bad) bad = bad_here;
            continue;
        }
        absmax[b] = amax;
        float denom = fmaxf(amax, 1e-38f);
        float recip = 1.0f / denom;
        uint8_t q[FL_NF4_BLOCK + 1];
        for (int64_t i = 0; i < len; i++) {
            float y = b < full ? x[i] * recip : x[i] / denom;
            y = fminf(fmaxf(y, -1.0f), 1.0f);
            q[i] = nf4_index(y);
        }
        q[len] = 7;   /* the pad of an odd n: index of 0.0 */
        for (int64_t i = 0; i < len; i += 2) packed[(start + i) / 2] = (uint8_t)(q[i] << 4 | q[i + 1]);
    }
    return bad;
}

/* torch's sum of a vector shorter than one 8-lane load: its scalar row_sum, which keeps 4
 * accumulators over the first 4·(n/4) values, adds the rest to the first and folds the four in order
 * (n = 5: ((((x0 + x4) + x1) + x2) + x3), not the left-to-right sum). */
static float torch_sum_short_f32(const float *x, int64_t n) {
    float p[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    int64_t m = n / 4 * 4;
    for (int64_t i = 0; i < m; i++) p[i % 4] += x[i];
    for (int64_t i = m; i < n; i++) p[0] += x[i];
    return ((p[0] + p[1]) + p[2]) + p[3];
}

/* torch's f32 sum of a contiguous vector (its cascade sum: 8-lane vectors, 4 independent
 * accumulators, partial sums folded every 2^k rows), in the order its AVX2 build adds on one thread
 * (torch 2.15 with CPU capability AVX512 adds in the same order: measured on 9065 vectors of 1..70000). */
static float torch_sum_f32(const float *x, int64_t n) {
    enum { LANES = 8, ILP = 4, LEVELS = 4 };
    if (n < LANES) return torch_sum_short_f32(x, n);
    int64_t nv = n / LANES, rows = nv / ILP;
    int ceil_log2 = rows <= 2 ? 1 : 64 - __builtin_clzll((unsigned long long)(rows - 1));
    int lp = ceil_log2 / LEVELS > 4 ? ceil_log2 / LEVELS : 4;
    int64_t step = (int64_t)1 << lp, mask = step - 1;
    float acc[LEVELS][ILP][LANES];
    memset(acc, 0, sizeof acc);
    #define ADD_ROW(dst, r) for (int k = 0; k < ILP; k++) for (int l = 0; l < LANES; l++) \
        dst[k][l] += x[((r) * ILP + k) * LANES + l]
    int64_t i = 0;
    while (i + step <= rows) {
        for (int64_t j = 0; j < step; j++, i++) ADD_ROW(acc[0], i);
        for (int j = 1; j < LEVELS; j++) {
            for (int k = 0; k < ILP; k++)
                for (int l = 0; l < LANES; l++) { acc[j][k][l] += acc[j - 1][k][l]; acc[j - 1][k][l] = 0.0f; }
            if (i & (mask << (j * lp))) break;
        }
    }
    for (; i < rows; i++) ADD_ROW(acc[0], i);
    #undef ADD_ROW
    for (int j = 1; j < LEVELS; j++)
        for (int k = 0; k < ILP; k++)
            for (int l = 0; l < LANES; l++) acc[0][k][l] += acc[j][k][l];
    for (int64_t v = rows * ILP; v < nv; v++)
        for (int l = 0; l < LANES; l++) acc[0][0][l] += x[v * LANES + l];
    for (int k = 1; k < ILP; k++)
        for (int l = 0; l < LANES; l++) acc[0][0][l] += acc[0][k][l];
    float sum = 0.0f;
    for (int64_t e = nv * LANES; e < n; e++) sum += x[e];
    for (int l = 0; l < LANES; l++) sum += acc[0][0][l];
    return sum;
}

float fl_nf4_absmax_mean(const float *absmax, int64_t n) {
    return n > 0 ? torch_sum_f32(absmax, n) / (float)n : 0.0f;
}

void fl_nf4_double_quant(const float *absmax, int64_t n, float offset, uint8_t *codes, float *nested) {
    tables_init();
    int64_t ng = (n + FL_NF4_GROUP - 1) / FL_NF4_GROUP;
    for (int64_t g = 0; g < ng; g++) {
        int64_t start = g * FL_NF4_GROUP, len = n - start < FL_NF4_GROUP ? n - start : FL_NF4_GROUP;
        float v[FL_NF4_GROUP], amax = 0.0f;
        for (int64_t i = 0; i < len; i++) {
            v[i] = absmax[start + i] - offset;
            float a = fabsf(v[i]);
            amax = a > amax ? a : amax;
        }
        nested[g] = amax;
        if (amax == 0.0f) {
            memset(codes + start, 0, (size_t)len);
            continue;
        }
        float inv = 1.0f / amax;
        for (int64_t i = 0; i < len; i++) {
            float y = fminf(fmaxf(v[i] * inv, -1.0f), 1.0f);
            float pos = (y + 1.0f) * 0.5f;
            pos = pos * 65535.0f;
            pos = pos + 0.5f;
            codes[start + i] = dynamic_lut[(uint16_t)pos];
        }
    }
}

int fl_nf4_quantize(fl_nf4_weight *w, const void *src, fl_dtype dtype, int64_t rows, int64_t cols,
                    int double_quant, const char *name) {
    if (dtype != FL_F32 && dtype != FL_BF16 && dtype != FL_F16)
        return fl_input_error("%s: dtype %s cannot be quantized to NF4 (expected F32, BF16 or F16)", name,
                              fl_dtype_name(dtype));
    fl_nf4_alloc(w, rows, cols, dtype, double_quant);
    float *absmax = double_quant ? fl_malloc((size_t)w->n_blocks * sizeof(float)) : w->absmax;
    int64_t bad = fl_nf4_quantize_blocks(src, dtype, rows * cols, w->packed, absmax);
    if (bad >= 0) {
        if (double_quant) free(absmax);
        fl_nf4_free(w);
        return fl_input_error("%s: element [%lld, %lld] is %s; NF4 quantization needs finite weights", name,
                              (long long)(bad / cols), (long long)(bad % cols),
                              isnan(load_f32(src, dtype, bad)) ? "NaN" : "infinite");
    }
    if (double_quant) {
        w->offset = fl_nf4_absmax_mean(absmax, w->n_blocks);
        fl_nf4_double_quant(absmax, w->n_blocks, w->offset, w->absmax_q, w->nested_absmax);
        free(absmax);
    }
    return 0;
}

/* ---------------------------------------------------------------- dequantization */

void fl_nf4_block_scales(const fl_nf4_weight *w, float *scales) {
    for (int64_t b = 0; b < w->n_blocks; b++) scales[b] = fl_nf4_block_scale(w, b);
}

void fl_nf4_dequantize_rows(const fl_nf4_weight *w, int64_t r0, int64_t r1, void *out, fl_dtype dtype) {
    int64_t e0 = r0 * w->cols, e1 = r1 * w->cols;
    #pragma omp parallel for schedule(static) if (e1 - e0 > (1 << 18))
    for (int64_t b = e0 / FL_NF4_BLOCK; b < (e1 + FL_NF4_BLOCK - 1) / FL_NF4_BLOCK; b++) {
        float s = fl_nf4_block_scale(w, b);
        int64_t lo = b * FL_NF4_BLOCK > e0 ? b * FL_NF4_BLOCK : e0;
        int64_t hi = (b + 1) * FL_NF4_BLOCK < e1 ? (b + 1) * FL_NF4_BLOCK : e1;
        for (int64_t e = lo; e < hi; e++) {
            uint8_t byte = w->packed[e / 2];
            float v = nf4_code[e & 1 ? byte & 15 : byte >> 4] * s;
            if (dtype == FL_F32) ((float *)out)[e - e0] = v;
            else if (dtype == FL_BF16) ((uint16_t *)out)[e - e0] = fl_f32_to_bf16(v);
            else ((uint16_t *)out)[e - e0] = fl_f32_to_f16(v);
        }
    }
}
