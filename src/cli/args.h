/* args.h — a tiny `--name value` / `--flag` option parser shared by the subcommands.
 * Each command declares a table of options; unknown options and bad values are one-line errors
 * that name the option and what was expected. Not getopt: no short options, no permutation. */
#ifndef FL_ARGS_H
#define FL_ARGS_H

typedef enum { FL_OPT_STRING, FL_OPT_INT, FL_OPT_FLOAT, FL_OPT_FLAG, FL_OPT_DOUBLE } fl_opt_kind;

typedef struct {
    const char *name;     /* without the leading "--" */
    fl_opt_kind kind;
    void *dest;           /* const char **, int *, float *, int * (flag set to 1), or double * */
    const char *help;
} fl_option;

/* Parses argv against options; prints `usage` + the option list and returns -1 for --help,
 * returns 2 (with the message on stderr) for bad input, 0 otherwise. */
int fl_args_parse(int argc, char **argv, const fl_option *options, int n_options, const char *usage);

#endif
