/* text_check.h — whether bytes are text the tokenizer encodes, for readers outside src/tokenizer/
 * (the plain-text dataset reader names the file, line and byte before any encoding). The rule is
 * the tokenizer's own (utf8.c: strict UTF-8, no overlong forms, surrogates or code points past
 * U+10FFFF), plus NUL bytes, which text files do not hold. Not a repair of bad text.
 */
#ifndef FL_TOKENIZER_TEXT_CHECK_H
#define FL_TOKENIZER_TEXT_CHECK_H

#include <stddef.h>

/* The offset of the first byte of s[0, len) that is a NUL or starts invalid UTF-8, or len when all
 * of it is text; *is_nul says which (1: a NUL byte). A multi-byte character cut by `len` counts as
 * invalid: give whole lines. */
size_t fl_text_check(const char *s, size_t len, int *is_nul);

#endif
