/* safetensors.h — reader and writer of the safetensors format (huggingface/safetensors).
 *
 * Layout: u64 little-endian header length N, N bytes of JSON
 * {"name": {"dtype", "shape", "data_offsets": [begin, end)}, "__metadata__": {...}}, then the
 * byte buffer. The reader memory-maps the file read-only and validates every length, offset and
 * shape against the file size before any data is touched: header past the end, offsets out of
 * range, overlapping or leaving holes, byte counts that disagree with dtype x shape — each is a
 * one-line error naming the file and the tensor. The writer writes to a temporary file and renames
 * it. This is not a tensor library: tensors are (dtype, shape, pointer into the map).
 */
#ifndef FL_SAFETENSORS_H
#define FL_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "common/dtype.h"

#define FL_ST_MAX_DIMS 8

typedef struct {
    char *name;
    fl_dtype dtype;
    int ndim;
    int64_t shape[FL_ST_MAX_DIMS];
    size_t numel;
    size_t nbytes;
    const void *data;  /* points into the read-only map */
} fl_st_tensor;

typedef struct {
    char *path;
    void *map;
    size_t file_size;
    int n_tensors;
    fl_st_tensor *tensors;
    int n_metadata;
    char **metadata_keys, **metadata_values;
} fl_safetensors;

/* Opens and validates `path`. On failure returns FL_ERR_INPUT with the message in fl_last_error()
 * and leaves *st empty (safe to close). */
int fl_safetensors_open(fl_safetensors *st, const char *path);
void fl_safetensors_close(fl_safetensors *st);
const fl_st_tensor *fl_safetensors_find(const fl_safetensors *st, const char *name);
const char *fl_safetensors_metadata(const fl_safetensors *st, const char *key); /* NULL if absent */

/* A floating-point tensor (F32, BF16, F16) holding a NaN or an infinity is refused with one line
 * naming the file (`path`), the tensor, the value and its index; other dtypes pass. One pass over the
 * raw bits, no conversion: cheap beside reading the tensor at all. Used where weights enter (the
 * base at load, adapters, merge and export), so a NaN never runs silently into outputs. */
int fl_st_check_finite(const fl_st_tensor *t, const char *path);

/* Tensors to write: data is host memory of numel * fl_dtype_size(dtype) bytes. */
typedef struct {
    const char *name;
    fl_dtype dtype;
    int ndim;
    int64_t shape[FL_ST_MAX_DIMS];
    const void *data;
} fl_st_write_tensor;

/* The write descriptor of t as read (name, dtype, shape, data: the file's mapped bytes): a tensor
 * copied unchanged, or the start of one whose data the caller replaces. */
fl_st_write_tensor fl_st_write_tensor_of(const fl_st_tensor *t);

/* Writes a safetensors file (tensors in the given order, header padded to 8 bytes, metadata as
 * string pairs, may be NULL/0) to `path` via a temporary file and rename. */
int fl_safetensors_write(const char *path, const fl_st_write_tensor *tensors, int n_tensors,
                         const char *const *metadata_kv, int n_metadata_pairs);

#endif
