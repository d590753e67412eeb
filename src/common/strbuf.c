/* strbuf.c — growable byte buffer (see strbuf.h): capacity doubles, so appends are amortized O(1). */
#include "common/strbuf.h"

#include <stdlib.h>

#include "common/error.h"

void fl_strbuf_append(fl_strbuf *b, const void *src, size_t n) {
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1) cap *= 2;
        char *np = fl_malloc(cap);
        if (b->n) memcpy(np, b->p, b->n);
        free(b->p);
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->n, src, n);
    b->n += n;
    b->p[b->n] = 0;
}
