/* gguf.h — the constants of the GGUF file format (version 3) that fastlora writes and reads, as
 * ggml's docs/gguf.md and the `gguf` Python package define them: the magic, the metadata value
 * types, the tensor types we produce (F32, F16, Q8_0, BF16) with their block layout, and the
 * default alignment.
 *
 * File layout (little-endian): u32 magic "GGUF", u32 version 3, u64 tensor count, u64 metadata
 * count; each metadata entry = string key, u32 value type, value (strings are u64 length + bytes,
 * arrays are u32 element type + u64 count + elements); each tensor info = string name, u32 n_dims,
 * u64 ne[n_dims] (ggml order: ne[0] is the contiguous dimension, so a row-major torch shape
 * (OC, IC) is ne = [IC, OC]), u32 type, u64 offset relative to the data section; zero padding to
 * the alignment; the data section, each tensor at an aligned offset.
 * Not the writer or the reader (gguf_writer.h, gguf_reader.h).
 */
#ifndef FL_EXPORT_GGUF_H
#define FL_EXPORT_GGUF_H

#include <stddef.h>
#include <stdint.h>

#define FL_GGUF_MAGIC 0x46554747u   /* "GGUF" read as a little-endian u32 */
#define FL_GGUF_VERSION 3u
#define FL_GGUF_DEFAULT_ALIGNMENT 32u
#define FL_GGUF_MAX_DIMS 4
#define FL_GGUF_MAX_NAME 63          /* ggml's GGML_MAX_NAME (64) includes the NUL */
#define FL_GGML_QUANT_VERSION 2u     /* general.quantization_version */

typedef enum {
    FL_GGUF_U8 = 0, FL_GGUF_I8 = 1, FL_GGUF_U16 = 2, FL_GGUF_I16 = 3, FL_GGUF_U32 = 4, FL_GGUF_I32 = 5,
    FL_GGUF_F32 = 6, FL_GGUF_BOOL = 7, FL_GGUF_STRING = 8, FL_GGUF_ARRAY = 9, FL_GGUF_U64 = 10,
    FL_GGUF_I64 = 11, FL_GGUF_F64 = 12, FL_GGUF_N_VALUE_TYPES
} fl_gguf_value_type;

/* ggml tensor types (the subset fastlora writes; the numbers are ggml's). */
typedef enum { FL_GGML_F32 = 0, FL_GGML_F16 = 1, FL_GGML_Q8_0 = 8, FL_GGML_BF16 = 30 } fl_ggml_type;

/* general.file_type (llama.cpp's LLAMA_FTYPE): what most tensors are. */
typedef enum { FL_FTYPE_ALL_F32 = 0, FL_FTYPE_MOSTLY_F16 = 1, FL_FTYPE_MOSTLY_Q8_0 = 7, FL_FTYPE_MOSTLY_BF16 = 32 } fl_gguf_file_type;

/* Q8_0: blocks of 32 values, each an f16 scale d = max|x|/127 then 32 int8 q = round(x/d). */
#define FL_Q8_0_BLOCK 32
#define FL_Q8_0_BYTES 34

/* Bytes of a scalar metadata value of `type` (0 for STRING and ARRAY, -1 when unknown). */
int fl_gguf_value_size(uint32_t type);
/* Block length and block bytes of a tensor type; 0 when the type is not one of ours. */
int fl_ggml_block_len(uint32_t type);
int fl_ggml_block_bytes(uint32_t type);
const char *fl_ggml_type_name(uint32_t type); /* "F32", "F16", "Q8_0", "BF16", or "?" */
/* Bytes of n elements (n a multiple of the block length). */
size_t fl_ggml_nbytes(uint32_t type, int64_t n);
fl_gguf_file_type fl_gguf_file_type_of(fl_ggml_type type);

#endif
