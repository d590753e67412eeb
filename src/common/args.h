/* args.h — a tiny `--name value` / `--flag` option parser shared by the subcommands, and the one
 * place where a numeric option's text becomes a number.
 *
 * Each command declares a table of options; unknown options and bad values are one-line errors
 * that name the command, the option and what was expected:
 *     fastlora train: --lr: expected a number > 0 and < 10, got 'inf'
 * A number is plain decimal: optional sign, digits, optional fraction and exponent. Refused for
 * every numeric option: an empty string, surrounding spaces, trailing junk, hex ("0x10", "0x1p3"),
 * inf / nan, a value the target type cannot hold (an int past 2^31, a float past 3.4e38 or so small
 * it rounds to 0), then anything outside the option's own range (bounds, lo, hi).
 * Not getopt: no short options, no permutation. */
#ifndef FL_ARGS_H
#define FL_ARGS_H

#include <stdint.h>

typedef enum { FL_OPT_STRING, FL_OPT_INT, FL_OPT_FLOAT, FL_OPT_FLAG, FL_OPT_DOUBLE, FL_OPT_U64 } fl_opt_kind;

/* Which ends of [lo, hi] an option's range has (0: the type's whole range). */
enum { FL_MIN = 1, FL_MIN_OPEN = 2, FL_MAX = 4, FL_MAX_OPEN = 8 };

typedef struct {
    const char *name;     /* without the leading "--" */
    fl_opt_kind kind;
    void *dest;           /* const char **, int *, float *, int * (flag set to 1), double * or uint64_t * */
    const char *help;
    unsigned bounds;      /* FL_MIN: v >= lo, FL_MIN_OPEN: v > lo, FL_MAX: v <= hi, FL_MAX_OPEN: v < hi */
    double lo, hi;
} fl_option;

/* Limits of a run's shape that every command shares (train, bench, plan): a micro-batch of at most
 * FL_MAX_MICRO_TOKENS positions keeps every B·T·C product far inside size_t and every token count
 * inside an int. */
#define FL_MAX_BATCH 65536
#define FL_MAX_SEQ (1 << 20)
#define FL_MAX_RANK 4096
#define FL_MAX_MICRO_TOKENS (1 << 24)

/* Range shorthands for option tables: {"rank", FL_OPT_INT, &rank, "LoRA rank", FL_RANGE(1, 4096)},
 * {"out", FL_OPT_STRING, &out, "output folder", FL_NO_RANGE} */
#define FL_RANGE(lo, hi) FL_MIN | FL_MAX, (lo), (hi)
#define FL_AT_LEAST(lo) FL_MIN, (lo), 0
#define FL_ABOVE(lo) FL_MIN_OPEN, (lo), 0
#define FL_NO_RANGE 0, 0, 0

/* Parses argv against options; prints `usage` + the option list and returns -1 for --help,
 * returns 2 (with "fastlora COMMAND: ..." on stderr) for bad input, 0 otherwise. */
int fl_args_parse(const char *command, int argc, char **argv, const fl_option *options, int n_options,
                  const char *usage);

/* Sets *opt->dest from the text `value` (every check above). 0, or FL_ERR_INPUT with
 * "--NAME: expected ..., got 'VALUE'" in fl_last_error(). For a string or flag it just stores. */
int fl_option_set(const fl_option *opt, const char *value);

/* Checks a number from elsewhere (a JSON config file) against opt's range and type: 0, or
 * FL_ERR_INPUT with "--NAME: expected ..., got V" (`where`, when not NULL, replaces "--NAME"). */
int fl_option_check(const fl_option *opt, double v, const char *where);

/* The value of a numeric option as a double (for fl_option_check); NAN for strings and flags. */
double fl_option_value(const fl_option *opt);

/* "a number > 0 and < 10", "an integer in 1..4096": what opt accepts, for messages. */
void fl_option_describe(const fl_option *opt, char *out, unsigned cap);

/* Plain-decimal parsers for values that are not table options (lists, sizes with a unit suffix):
 * the same syntax rules. fl_parse_double stops at *end (NULL: the whole string must be the number)
 * and refuses non-finite results. 0, or -1 on bad text. */
int fl_parse_double(const char *s, double *out, const char **end);
int fl_parse_int64(const char *s, int64_t lo, int64_t hi, int64_t *out);

#endif
