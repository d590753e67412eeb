/* strbuf.h — a growable, always NUL-terminated byte buffer (chat rendering, decoding, reports).
 * Zero-initialize it, append, take `p` (caller frees). Not a string library. */
#ifndef FL_STRBUF_H
#define FL_STRBUF_H

#include <stddef.h>
#include <string.h>

typedef struct {
    char *p;
    size_t n, cap;
} fl_strbuf;

/* Appends n bytes; aborts with a clear message when out of memory. */
void fl_strbuf_append(fl_strbuf *b, const void *src, size_t n);
static inline void fl_strbuf_append_str(fl_strbuf *b, const char *s) { fl_strbuf_append(b, s, strlen(s)); }

#endif
