/* utf8.h — strict UTF-8: the length of the sequence at a position, validation, decoding and
 * encoding (common/utf8.c). Overlong forms, surrogates (U+D800..DFFF) and code points above
 * U+10FFFF are invalid, as in Rust's `str` and Python's decoder. For the tokenizer and the Jinja
 * engine; lossy repair of invalid text is the tokenizer's decode.c. */
#ifndef FL_COMMON_UTF8_H
#define FL_COMMON_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when invalid. */
int fl_utf8_len(const unsigned char *s, size_t avail);
size_t fl_utf8_validate(const char *s, size_t len); // offset of the first invalid byte, or len
int fl_utf8_encode(uint32_t cp, char *out);          // bytes written (1..4) to out
uint32_t fl_utf8_decode(const unsigned char *s, int n); // the code point of a valid sequence of n bytes

#endif
