/* error.h — the one error mechanism of fastlora.
 *
 * Engine and loader functions return an int status (0 = ok) and, on failure, leave a one-line
 * message in a per-thread buffer, prefixed by the place it was raised (file:line). The command
 * layer prints that line and exits with code 2 (bad input) or 1 (internal failure). This header
 * is not for CUDA: backend/cuda/cuda_check.h checks CUDA and cuBLAS statuses (a failure there
 * prints the statement, file:line and device, then aborts).
 */
#ifndef FL_ERROR_H
#define FL_ERROR_H

#include <stddef.h>

enum { FL_OK = 0, FL_ERR_INPUT = 2, FL_ERR_INTERNAL = 1 };

/* Records a printf-style message; returns `code` so callers can `return fl_fail(...)`. */
int fl_fail_at(const char *src_file, int src_line, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
#define fl_fail(code, ...) fl_fail_at(__FILE__, __LINE__, (code), __VA_ARGS__)
#define fl_input_error(...) fl_fail_at(__FILE__, __LINE__, FL_ERR_INPUT, __VA_ARGS__)

/* The last recorded message (without the source location) and its location. */
const char *fl_last_error(void);
const char *fl_last_error_where(void);
void fl_clear_error(void);

/* Propagate a failing status unchanged. */
#define FL_TRY(expr) do { int fl_try_status_ = (expr); if (fl_try_status_) return fl_try_status_; } while (0)

/* For allocation failures and broken invariants that are bugs, not bad input: print and abort. */
void fl_die_at(const char *src_file, int src_line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));
#define fl_die(...) fl_die_at(__FILE__, __LINE__, __VA_ARGS__)

void *fl_malloc_at(const char *src_file, int src_line, size_t bytes);
void *fl_calloc_at(const char *src_file, int src_line, size_t count, size_t size);
#define fl_malloc(bytes) fl_malloc_at(__FILE__, __LINE__, (bytes))
#define fl_calloc(count, size) fl_calloc_at(__FILE__, __LINE__, (count), (size))

#endif
