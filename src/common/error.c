/* error.c — per-thread last-error buffer and the checked allocators (see error.h). */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local char last_message[1024];
static _Thread_local char last_where[256];

int fl_fail_at(const char *src_file, int src_line, int code, const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    vsnprintf(last_message, sizeof last_message, fmt, args);
    va_end(args);
    snprintf(last_where, sizeof last_where, "%s:%d", src_file, src_line);
    return code;
}

const char *fl_last_error(void) { return last_message[0] ? last_message : "unknown error"; }
const char *fl_last_error_where(void) { return last_where; }
void fl_clear_error(void) { last_message[0] = 0; last_where[0] = 0; }

void fl_die_at(const char *src_file, int src_line, const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    fprintf(stderr, "fastlora: fatal (%s:%d): ", src_file, src_line);
    vfprintf(stderr, fmt, args);
    fputc('\n', stderr);
    va_end(args);
    abort();
}

void *fl_malloc_at(const char *src_file, int src_line, size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    if (!p) fl_die_at(src_file, src_line, "out of memory allocating %zu bytes", bytes);
    return p;
}

void *fl_calloc_at(const char *src_file, int src_line, size_t count, size_t size) {
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p) fl_die_at(src_file, src_line, "out of memory allocating %zu x %zu bytes", count, size);
    return p;
}
