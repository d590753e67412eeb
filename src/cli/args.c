/* args.c — the option parser (see args.h). */
#include "cli/args.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void print_help(const fl_option *options, int n_options, const char *usage) {
    printf("%s\n\noptions:\n", usage);
    for (int i = 0; i < n_options; i++) {
        const char *arg = options[i].kind == FL_OPT_FLAG ? "" : options[i].kind == FL_OPT_STRING ? " STR"
                          : options[i].kind == FL_OPT_INT ? " N" : " X";
        char left[64];
        snprintf(left, sizeof left, "--%s%s", options[i].name, arg);
        printf("  %-22s %s\n", left, options[i].help);
    }
}

int fl_args_parse(int argc, char **argv, const fl_option *options, int n_options, const char *usage) {
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
            print_help(options, n_options, usage);
            return -1;
        }
        if (strncmp(arg, "--", 2) != 0) {
            fprintf(stderr, "fastlora: unexpected argument '%s' (options start with --; see --help)\n", arg);
            return 2;
        }
        const fl_option *opt = NULL;
        for (int k = 0; k < n_options && !opt; k++)
            if (!strcmp(arg + 2, options[k].name)) opt = &options[k];
        if (!opt) {
            fprintf(stderr, "fastlora: unknown option '%s' (see --help)\n", arg);
            return 2;
        }
        if (opt->kind == FL_OPT_FLAG) {
            *(int *)opt->dest = 1;
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "fastlora: option '%s' needs a value\n", arg);
            return 2;
        }
        const char *value = argv[++i];
        char *end = NULL;
        errno = 0;
        if (opt->kind == FL_OPT_STRING) {
            *(const char **)opt->dest = value;
        } else if (opt->kind == FL_OPT_INT) {
            long v = strtol(value, &end, 10);
            if (errno || !*value || *end || v < -2147483647L || v > 2147483647L) {
                fprintf(stderr, "fastlora: option '%s' expects an integer, got '%s'\n", arg, value);
                return 2;
            }
            *(int *)opt->dest = (int)v;
        } else {
            /* a double keeps what was typed: 0.01 stays 0.01 */
            double v = opt->kind == FL_OPT_DOUBLE ? strtod(value, &end) : strtof(value, &end);
            if (errno || !*value || *end) {
                fprintf(stderr, "fastlora: option '%s' expects a number, got '%s'\n", arg, value);
                return 2;
            }
            if (opt->kind == FL_OPT_DOUBLE) *(double *)opt->dest = v;
            else *(float *)opt->dest = (float)v;
        }
    }
    return 0;
}
