/* gguf_types.c — sizes and names of GGUF value types and ggml tensor types (see gguf.h). */
#include "export/gguf.h"

int fl_gguf_value_size(uint32_t type) {
    switch (type) {
    case FL_GGUF_U8: case FL_GGUF_I8: case FL_GGUF_BOOL: return 1;
    case FL_GGUF_U16: case FL_GGUF_I16: return 2;
    case FL_GGUF_U32: case FL_GGUF_I32: case FL_GGUF_F32: return 4;
    case FL_GGUF_U64: case FL_GGUF_I64: case FL_GGUF_F64: return 8;
    case FL_GGUF_STRING: case FL_GGUF_ARRAY: return 0;
    default: return -1;
    }
}

int fl_ggml_block_len(uint32_t type) {
    switch (type) {
    case FL_GGML_F32: case FL_GGML_F16: case FL_GGML_BF16: return 1;
    case FL_GGML_Q8_0: return FL_Q8_0_BLOCK;
    default: return 0;
    }
}

int fl_ggml_block_bytes(uint32_t type) {
    switch (type) {
    case FL_GGML_F32: return 4;
    case FL_GGML_F16: case FL_GGML_BF16: return 2;
    case FL_GGML_Q8_0: return FL_Q8_0_BYTES;
    default: return 0;
    }
}

const char *fl_ggml_type_name(uint32_t type) {
    switch (type) {
    case FL_GGML_F32: return "F32";
    case FL_GGML_F16: return "F16";
    case FL_GGML_Q8_0: return "Q8_0";
    case FL_GGML_BF16: return "BF16";
    default: return "?";
    }
}

size_t fl_ggml_nbytes(uint32_t type, int64_t n) {
    int len = fl_ggml_block_len(type);
    return len ? (size_t)(n / len) * (size_t)fl_ggml_block_bytes(type) : 0;
}

fl_gguf_file_type fl_gguf_file_type_of(fl_ggml_type type) {
    switch (type) {
    case FL_GGML_F16: return FL_FTYPE_MOSTLY_F16;
    case FL_GGML_Q8_0: return FL_FTYPE_MOSTLY_Q8_0;
    case FL_GGML_BF16: return FL_FTYPE_MOSTLY_BF16;
    default: return FL_FTYPE_ALL_F32;
    }
}
