/* gguf_writer.h — writes a GGUF file (gguf.h) in one pass, streaming the tensor data, so a model
 * larger than memory converts tensor by tensor.
 *
 * Metadata is serialized as it is added; tensors are declared (name, ggml shape, type) before the
 * file is opened, so every offset is known when the header goes out; then the data of each tensor
 * is appended in declaration order and padded to the alignment. The file is written to a temporary
 * path and renamed at fl_gguf_writer_finish (io/file_util.h): a failure never leaves a half file.
 *
 *     fl_gguf_writer w;
 *     fl_gguf_writer_init(&w);
 *     fl_gguf_kv_str(&w, "general.architecture", "llama");
 *     fl_gguf_kv_u32(&w, "llama.block_count", 2);
 *     int64_t ne[2] = {64, 200};                       // torch shape (200, 64)
 *     fl_gguf_add_tensor(&w, "token_embd.weight", 2, ne, FL_GGML_F32);
 *     fl_gguf_writer_begin(&w, "out.gguf");
 *     fl_gguf_write_data(&w, embd, 200 * 64 * 4);      // may be called in pieces
 *     fl_gguf_writer_finish(&w);                       // or fl_gguf_writer_abort on error
 *     fl_gguf_writer_free(&w);
 * Not a reader (gguf_reader.h) and not a model converter (export.h).
 */
#ifndef FL_EXPORT_GGUF_WRITER_H
#define FL_EXPORT_GGUF_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "common/strbuf.h"
#include "export/gguf.h"
#include "io/file_util.h"

typedef struct {
    char name[FL_GGUF_MAX_NAME + 1];
    int n_dims;
    int64_t ne[FL_GGUF_MAX_DIMS];
    fl_ggml_type type;
    uint64_t offset;   /* in the data section */
    uint64_t nbytes;
} fl_gguf_tensor_info;

typedef struct {
    uint32_t alignment;
    fl_strbuf kv;                  /* serialized metadata entries */
    uint64_t n_kv;
    uint64_t arr_left;             /* elements an open array still expects */
    uint32_t arr_type;
    fl_gguf_tensor_info *tensors;  /* (n_tensors,) */
    int n_tensors, cap_tensors;
    uint64_t data_size;            /* bytes of the data section, padding included */
    /* streaming state */
    fl_atomic_file out;
    int open, current;             /* tensor being written */
    uint64_t current_written;
    int failed;
} fl_gguf_writer;

/* A writer with the default alignment (32). Writing the u32 key "general.alignment" (8, 16, 32
 * or 64: a power of two and a multiple of 8, gguf.md) before any tensor sets another. */
void fl_gguf_writer_init(fl_gguf_writer *w);
void fl_gguf_writer_free(fl_gguf_writer *w);

/* Metadata. Keys are ASCII `lower_snake_case` segments joined by '.'; values as named. */
void fl_gguf_kv_u32(fl_gguf_writer *w, const char *key, uint32_t v);
void fl_gguf_kv_i32(fl_gguf_writer *w, const char *key, int32_t v);
void fl_gguf_kv_u64(fl_gguf_writer *w, const char *key, uint64_t v);
void fl_gguf_kv_f32(fl_gguf_writer *w, const char *key, float v);
void fl_gguf_kv_bool(fl_gguf_writer *w, const char *key, int v);
void fl_gguf_kv_str(fl_gguf_writer *w, const char *key, const char *s);
void fl_gguf_kv_strn(fl_gguf_writer *w, const char *key, const char *s, size_t len);
/* An array of n elements of a scalar type or STRING: declare it, then append exactly n elements
 * with the matching fl_gguf_arr_* call (checked). n must be >= 1 (gguf-py rejects empty arrays). */
void fl_gguf_kv_array(fl_gguf_writer *w, const char *key, fl_gguf_value_type elem_type, uint64_t n);
void fl_gguf_arr_str(fl_gguf_writer *w, const char *s, size_t len);
void fl_gguf_arr_i32(fl_gguf_writer *w, int32_t v);
void fl_gguf_arr_bool(fl_gguf_writer *w, int v);
void fl_gguf_arr_u32(fl_gguf_writer *w, uint32_t v);
void fl_gguf_arr_f32(fl_gguf_writer *w, float v);

/* Declares a tensor; ne in ggml order. Errors: a name longer than 63 bytes or declared twice, a
 * shape whose first dimension is not a multiple of the type's block, more than 4 dimensions. */
int fl_gguf_add_tensor(fl_gguf_writer *w, const char *name, int n_dims, const int64_t *ne, fl_ggml_type type);

/* Opens the temporary file and writes header, metadata and tensor infos. */
int fl_gguf_writer_begin(fl_gguf_writer *w, const char *path);
/* Appends data of the current tensor; moving to the next one once it is complete. */
int fl_gguf_write_data(fl_gguf_writer *w, const void *data, size_t n);
/* Checks every tensor was written in full, then renames the file into place. */
int fl_gguf_writer_finish(fl_gguf_writer *w);
void fl_gguf_writer_abort(fl_gguf_writer *w);

#endif
