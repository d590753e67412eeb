/* byte_level.c — the GPT-2 byte-level map (bytes_to_unicode) and its inverse; byte_level.h.
 * Pure functions, no tables kept: safe from any thread. Not the pre-tokenizer or decoder steps. */
#include "tokenizer/byte_level.h"

#include "tokenizer/tokenizer_internal.h"

static int printable(uint32_t b) { return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255); }

void fl_byte_level_tables(uint32_t byte_to_cp[256]) {
    uint32_t extra = 0;
    for (uint32_t b = 0; b < 256; b++) byte_to_cp[b] = printable(b) ? b : 256 + extra++;
}

/* The byte written as code point cp, or -1. The 68 bytes that are not printable, in order:
 * 0-32 (33), 127-160 (34), 173 — written as 256 + their index in that list. */
static int cp_to_byte(uint32_t cp) {
    if (cp < 256) return printable(cp) ? (int)cp : -1;
    uint32_t e = cp - 256;
    if (e < 33) return (int)e;
    if (e < 67) return (int)(127 + e - 33);
    if (e == 67) return 173;
    return -1;
}

int fl_byte_level_to_bytes(const char *s, size_t len, char *out, size_t *out_len) {
    const unsigned char *u = (const unsigned char *)s;
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        int cl = fl_utf8_len(u + i, len - i);
        if (!cl) return 0;
        int b = cp_to_byte(fl_utf8_decode(u + i, cl));
        if (b < 0) return 0;
        out[n++] = (char)b;
        i += (size_t)cl;
    }
    *out_len = n;
    return 1;
}
