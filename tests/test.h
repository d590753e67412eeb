/* test.h — the test harness: a few macros, tests self-register, one runner prints the summary.
 *
 * A test is `TEST(name) { ... }` in any .c file under tests/; CHECK* macros record a failure with
 * file:line and continue, so one run shows every broken check. SKIP("why") ends a test as skipped
 * (used when ../shared or an optional tool is absent). The runner (tests/main.c) prints one line
 * per test and closes with `N passed, N failed, N skipped`. Not a framework: no fixtures, no forks.
 */
#ifndef FL_TEST_H
#define FL_TEST_H

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef void (*fl_test_fn)(void);
void fl_test_register(const char *name, const char *file, fl_test_fn fn);
void fl_test_fail(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void fl_test_skip(const char *why);
int fl_test_skipped(void);

#define TEST(name)                                                              \
    static void test_##name(void);                                             \
    __attribute__((constructor)) static void register_##name(void) {          \
        fl_test_register(#name, __FILE__, test_##name);                        \
    }                                                                           \
    static void test_##name(void)

#define CHECK(cond) do { if (!(cond)) fl_test_fail(__FILE__, __LINE__, "CHECK(%s)", #cond); } while (0)
#define CHECK_MSG(cond, ...) do { if (!(cond)) fl_test_fail(__FILE__, __LINE__, __VA_ARGS__); } while (0)
#define CHECK_EQ_INT(a, b) do { long long a_ = (long long)(a), b_ = (long long)(b); \
    if (a_ != b_) fl_test_fail(__FILE__, __LINE__, "%s == %s: %lld != %lld", #a, #b, a_, b_); } while (0)
#define CHECK_STR_CONTAINS(hay, needle) do { const char *h_ = (hay); \
    if (!h_ || !strstr(h_, (needle))) fl_test_fail(__FILE__, __LINE__, "'%s' does not contain '%s'", h_ ? h_ : "(null)", (needle)); } while (0)
/* |a-b| <= atol + rtol*|b| */
#define CHECK_CLOSE(a, b, atol, rtol) do { double a_ = (a), b_ = (b); \
    if (!(fabs(a_ - b_) <= (atol) + (rtol) * fabs(b_))) \
        fl_test_fail(__FILE__, __LINE__, "%s ~ %s: %.9g vs %.9g (atol %g rtol %g)", #a, #b, a_, b_, (double)(atol), (double)(rtol)); } while (0)
#define SKIP(why) do { fl_test_skip(why); return; } while (0)

/* Path of ../shared beside the project root, or NULL when absent (tests then SKIP). */
const char *fl_test_shared_dir(void);

/* The CLI under test ($FASTLORA_BIN when executable), or NULL (tests then SKIP). */
const char *fl_test_bin(void);
/* Runs `fastlora ARGS` (a shell command line, stdin /dev/null) under a 30 s `timeout`, so a hang
 * fails (exit 124) instead of stopping the suite; returns the exit status (128 + signal when killed)
 * with stdout + stderr in out. */
int fl_test_run_cli(char *out, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
