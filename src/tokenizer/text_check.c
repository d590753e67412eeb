/* text_check.c — NUL bytes and invalid UTF-8 in text, by the tokenizer's UTF-8 rule (text_check.h). */
#include "tokenizer/text_check.h"

#include <string.h>

#include "tokenizer/tokenizer_internal.h"

size_t fl_text_check(const char *s, size_t len, int *is_nul) {
    *is_nul = 0;
    if (!len) return 0; /* s may be NULL then */
    const char *nul = memchr(s, 0, len);
    size_t text_len = nul ? (size_t)(nul - s) : len;
    size_t bad = fl_utf8_validate(s, text_len);
    *is_nul = bad == text_len && nul != NULL;
    return bad;
}
