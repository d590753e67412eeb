/* args.c — the option parser and the number parser of every command (see args.h). */
#include "common/args.h"

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"

/* ---- plain decimal numbers --------------------------------------------------------------------- */

static int is_digit(char c) { return c >= '0' && c <= '9'; }

/* Length of the longest plain-decimal number at the start of s: [+-]? (D+ (. D*)? | . D+) ([eE] [+-]? D+)?;
 * 0 when there is none. Hex, inf, nan and leading spaces are not numbers here. */
static size_t decimal_prefix(const char *s) {
    size_t i = 0, digits = 0;
    if (s[i] == '+' || s[i] == '-') i++;
    while (is_digit(s[i])) i++, digits++;
    if (s[i] == '.') {
        i++;
        while (is_digit(s[i])) i++, digits++;
    }
    if (!digits) return 0;
    if (s[i] == 'e' || s[i] == 'E') {
        size_t j = i + 1;
        if (s[j] == '+' || s[j] == '-') j++;
        if (is_digit(s[j])) {
            while (is_digit(s[j])) j++;
            i = j;
        }
    }
    return i;
}

enum { PARSE_OK = 0, PARSE_SYNTAX = -1, PARSE_TOO_LARGE = -2, PARSE_TOO_SMALL = -3 };

/* The decimal number at the start of s (all of s when end is NULL). */
static int parse_double(const char *s, double *out, const char **end) {
    size_t n = decimal_prefix(s);
    if (!n || (!end && s[n])) return PARSE_SYNTAX;
    char *copy = strndup(s, n);   /* strtod alone would also read "0x1p3", "inf" and "nan" */
    if (!copy) fl_die("out of memory");
    errno = 0;
    double v = strtod(copy, NULL);
    int range_error = errno == ERANGE;
    int nonzero = strcspn(copy, "123456789") < strcspn(copy, "eE");   /* a nonzero digit before any exponent */
    free(copy);
    if (!isfinite(v)) return PARSE_TOO_LARGE;
    if (range_error && v == 0 && nonzero) return PARSE_TOO_SMALL;
    *out = v;
    if (end) *end = s + n;
    return PARSE_OK;
}

int fl_parse_double(const char *s, double *out, const char **end) {
    return parse_double(s, out, end) == PARSE_OK ? 0 : -1;
}

static int parse_int64(const char *s, int64_t lo, int64_t hi, int64_t *out) {
    size_t i = s[0] == '+' || s[0] == '-';
    if (!is_digit(s[i])) return PARSE_SYNTAX;
    while (is_digit(s[i])) i++;
    if (s[i]) return PARSE_SYNTAX;
    errno = 0;
    long long v = strtoll(s, NULL, 10);
    if (errno == ERANGE || v < lo || v > hi) return PARSE_TOO_LARGE;
    *out = v;
    return PARSE_OK;
}

int fl_parse_int64(const char *s, int64_t lo, int64_t hi, int64_t *out) {
    return parse_int64(s, lo, hi, out) == PARSE_OK ? 0 : -1;
}

static int parse_u64(const char *s, uint64_t *out) {
    size_t i = s[0] == '+';
    if (!is_digit(s[i])) return PARSE_SYNTAX;   /* strtoull would take "-1" as 2^64 - 1 */
    while (is_digit(s[i])) i++;
    if (s[i]) return PARSE_SYNTAX;
    errno = 0;
    unsigned long long v = strtoull(s, NULL, 10);
    if (errno == ERANGE) return PARSE_TOO_LARGE;
    *out = v;
    return PARSE_OK;
}

/* ---- ranges ------------------------------------------------------------------------------------ */

/* The shortest "%.Ng" that reads back as v: 0.1 -> "0.1", 1048576 -> "1048576". */
static void format_number(char *buf, size_t cap, double v) {
    if (v == floor(v) && fabs(v) < 1e16) { snprintf(buf, cap, "%.0f", v); return; }   /* 10, not 1e+01 */
    for (int precision = 1; precision <= 17; precision++) {
        snprintf(buf, cap, "%.*g", precision, v);
        if (strtod(buf, NULL) == v) return;
    }
}

static int is_integer_kind(fl_opt_kind k) { return k == FL_OPT_INT || k == FL_OPT_U64; }

/* The closed integer range of an integer option: its bounds within the type's. */
static void integer_range(const fl_option *opt, double *lo, double *hi) {
    if (opt->kind == FL_OPT_U64) { *lo = 0; *hi = 18446744073709551615.0; }
    else { *lo = INT_MIN; *hi = INT_MAX; }
    if (opt->bounds & FL_MIN) *lo = fmax(*lo, ceil(opt->lo));
    if (opt->bounds & FL_MIN_OPEN) *lo = fmax(*lo, floor(opt->lo) + 1);
    if (opt->bounds & FL_MAX) *hi = fmin(*hi, floor(opt->hi));
    if (opt->bounds & FL_MAX_OPEN) *hi = fmin(*hi, ceil(opt->hi) - 1);
}

void fl_option_describe(const fl_option *opt, char *out, unsigned cap) {
    char a[40], b[40];
    if (opt->kind == FL_OPT_U64 && !opt->bounds) {
        snprintf(out, cap, "an integer in 0..18446744073709551615");
    } else if (is_integer_kind(opt->kind)) {
        double lo, hi;
        integer_range(opt, &lo, &hi);
        format_number(a, sizeof a, lo);
        format_number(b, sizeof b, hi);
        int has_lo = opt->bounds & (FL_MIN | FL_MIN_OPEN), has_hi = opt->bounds & (FL_MAX | FL_MAX_OPEN);
        if (has_lo && !has_hi) snprintf(out, cap, "an integer >= %s", a);
        else if (has_hi && !has_lo) snprintf(out, cap, "an integer <= %s", b);
        else snprintf(out, cap, "an integer in %s..%s", a, b);
    } else {
        format_number(a, sizeof a, opt->lo);
        format_number(b, sizeof b, opt->hi);
        const char *lo_op = opt->bounds & FL_MIN ? ">=" : opt->bounds & FL_MIN_OPEN ? ">" : NULL;
        const char *hi_op = opt->bounds & FL_MAX ? "<=" : opt->bounds & FL_MAX_OPEN ? "<" : NULL;
        if (lo_op && hi_op) snprintf(out, cap, "a number %s %s and %s %s", lo_op, a, hi_op, b);
        else if (lo_op) snprintf(out, cap, "a finite number %s %s", lo_op, a);
        else if (hi_op) snprintf(out, cap, "a finite number %s %s", hi_op, b);
        else snprintf(out, cap, "a finite number");
    }
}

static int in_range(const fl_option *opt, double v) {
    if (!isfinite(v)) return 0;
    if (is_integer_kind(opt->kind)) {
        double lo, hi;
        integer_range(opt, &lo, &hi);
        return v == floor(v) && v >= lo && v <= hi;
    }
    if (opt->kind == FL_OPT_FLOAT && (fabs(v) > FLT_MAX || (v != 0 && (float)v == 0))) return 0;
    return !((opt->bounds & FL_MIN && !(v >= opt->lo)) || (opt->bounds & FL_MIN_OPEN && !(v > opt->lo)) ||
             (opt->bounds & FL_MAX && !(v <= opt->hi)) || (opt->bounds & FL_MAX_OPEN && !(v < opt->hi)));
}

static int range_error(const fl_option *opt, const char *where, const char *got, const char *why) {
    char want[128];
    fl_option_describe(opt, want, sizeof want);
    if (where) return fl_input_error("%s: expected %s, got %s%s", where, want, got, why);
    return fl_input_error("--%s: expected %s, got '%s'%s", opt->name, want, got, why);
}

int fl_option_check(const fl_option *opt, double v, const char *where) {
    if (in_range(opt, v)) return 0;
    char got[40];
    format_number(got, sizeof got, v);
    return range_error(opt, where, got, "");
}

double fl_option_value(const fl_option *opt) {
    switch (opt->kind) {
    case FL_OPT_INT: return *(const int *)opt->dest;
    case FL_OPT_FLOAT: return *(const float *)opt->dest;
    case FL_OPT_DOUBLE: return *(const double *)opt->dest;
    case FL_OPT_U64: return (double)*(const uint64_t *)opt->dest;
    default: return NAN;
    }
}

int fl_option_set(const fl_option *opt, const char *value) {
    static const char *const why[] = {"", "", " (too large)", " (too small: it rounds to 0)"};
    int rc = PARSE_OK;
    switch (opt->kind) {
    case FL_OPT_STRING: *(const char **)opt->dest = value; return 0;
    case FL_OPT_FLAG: *(int *)opt->dest = 1; return 0;
    case FL_OPT_U64: {
        uint64_t v = 0;
        rc = parse_u64(value, &v);
        if (rc == PARSE_OK && opt->bounds && !in_range(opt, (double)v)) rc = PARSE_SYNTAX;
        if (rc == PARSE_OK) *(uint64_t *)opt->dest = v;
        break;
    }
    case FL_OPT_INT: {
        int64_t v = 0;
        rc = parse_int64(value, INT_MIN, INT_MAX, &v);
        if (rc == PARSE_OK && !in_range(opt, (double)v)) rc = PARSE_SYNTAX;
        if (rc == PARSE_OK) *(int *)opt->dest = (int)v;
        break;
    }
    default: {
        double v = 0;
        rc = parse_double(value, &v, NULL);
        if (rc == PARSE_OK && opt->kind == FL_OPT_FLOAT && fabs(v) > FLT_MAX) rc = PARSE_TOO_LARGE;
        if (rc == PARSE_OK && opt->kind == FL_OPT_FLOAT && v != 0 && (float)v == 0) rc = PARSE_TOO_SMALL;
        if (rc == PARSE_OK && !in_range(opt, v)) rc = PARSE_SYNTAX;
        if (rc == PARSE_OK && opt->kind == FL_OPT_DOUBLE) *(double *)opt->dest = v; /* keeps what was typed: 0.01 */
        else if (rc == PARSE_OK) *(float *)opt->dest = (float)v;
    }
    }
    return rc == PARSE_OK ? 0 : range_error(opt, NULL, value, why[-rc]);
}

/* ---- the command line ------------------------------------------------------------------------- */

static void print_help(const fl_option *options, int n_options, const char *usage) {
    printf("%s\n\noptions:\n", usage);
    for (int i = 0; i < n_options; i++) {
        const char *arg = options[i].kind == FL_OPT_FLAG ? "" : options[i].kind == FL_OPT_STRING ? " STR"
                          : is_integer_kind(options[i].kind) ? " N" : " X";
        char left[64];
        snprintf(left, sizeof left, "--%s%s", options[i].name, arg);
        printf("  %-22s %s\n", left, options[i].help);
    }
}

static const fl_option *find_option(const fl_option *options, int n_options, const char *arg) {
    if (strncmp(arg, "--", 2) != 0) return NULL;
    for (int k = 0; k < n_options; k++)
        if (!strcmp(arg + 2, options[k].name)) return &options[k];
    return NULL;
}

int fl_args_parse(const char *command, int argc, char **argv, const fl_option *options, int n_options,
                  const char *usage) {
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
            print_help(options, n_options, usage);
            return -1;
        }
        if (strncmp(arg, "--", 2) != 0) {
            fprintf(stderr, "fastlora %s: unexpected argument '%s' (options start with --; see --help)\n", command, arg);
            return 2;
        }
        const fl_option *opt = find_option(options, n_options, arg);
        if (!opt) {
            fprintf(stderr, "fastlora %s: unknown option '%s' (see --help)\n", command, arg);
            return 2;
        }
        if (opt->kind == FL_OPT_FLAG) {
            *(int *)opt->dest = 1;
            continue;
        }
        /* `--out --force`: the value is missing, not "--force" */
        if (i + 1 >= argc || find_option(options, n_options, argv[i + 1]) || !strcmp(argv[i + 1], "--help")) {
            fprintf(stderr, "fastlora %s: option '%s' needs a value\n", command, arg);
            return 2;
        }
        if (fl_option_set(opt, argv[++i])) {
            fprintf(stderr, "fastlora %s: %s\n", command, fl_last_error());
            return 2;
        }
    }
    return 0;
}
