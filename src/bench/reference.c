/* reference.c — the published reference board (see reference.h). */
#include "bench/reference.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"
#include "io/file_util.h"

/* Lower-cases, trims and collapses runs of white space into one space. */
static void normalize_name(const char *in, char *out, size_t cap) {
    size_t n = 0;
    int pending_space = 0;
    for (; *in && n + 2 < cap; in++) {
        if (isspace((unsigned char)*in)) {
            pending_space = n > 0;
            continue;
        }
        if (pending_space) out[n++] = ' ';
        pending_space = 0;
        out[n++] = (char)tolower((unsigned char)*in);
    }
    out[n] = 0;
}

int fl_bench_same_name(const char *a, const char *b) {
    char na[256], nb[256];
    normalize_name(a, na, sizeof na);
    normalize_name(b, nb, sizeof nb);
    return !strcmp(na, nb);
}

int fl_reference_board_default_path(char *out, size_t cap) {
    const char *env = getenv("FASTLORA_DATA");
    if (env && *env) {
        snprintf(out, cap, "%s/reference-board.csv", env);
        if (fl_file_exists(out)) return 0;
    }
    /* <repo>/build/fastlora -> <repo>/data/reference-board.csv */
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = 0;
        for (int up = 0; up < 2; up++) {
            char *slash = strrchr(exe, '/');
            if (!slash) break;
            *slash = 0;
        }
        snprintf(out, cap, "%s/data/reference-board.csv", exe);
        if (fl_file_exists(out)) return 0;
    }
    snprintf(out, cap, "data/reference-board.csv");
    if (fl_file_exists(out)) return 0;
    return fl_input_error("reference board not found ($FASTLORA_DATA/reference-board.csv, data/ beside the build "
                          "folder, ./data/reference-board.csv); give --reference-file FILE");
}

/* Splits one CSV line into at most max fields in place ("..." quoting with "" escapes). */
static int split_csv(char *line, char **fields, int max) {
    int n = 0;
    char *p = line;
    for (;;) {
        if (n == max) return n + 1;
        char *w = p;
        fields[n++] = w;
        if (*p == '"') {
            p++;
            for (;;) {
                if (!*p) return -1;
                if (*p == '"' && p[1] == '"') { *w++ = '"'; p += 2; continue; }
                if (*p == '"') { p++; break; }
                *w++ = *p++;
            }
            if (*p && *p != ',') return -1;
        } else {
            while (*p && *p != ',') *w++ = *p++;
        }
        char sep = *p;
        *w = 0;
        if (sep != ',') return n;
        p++;
    }
}

int fl_reference_board_load(fl_reference_board *ref, const char *path) {
    memset(ref, 0, sizeof *ref);
    if (!path) {
        FL_TRY(fl_reference_board_default_path(ref->path, sizeof ref->path));
    } else {
        snprintf(ref->path, sizeof ref->path, "%s", path);
    }
    FILE *f;
    FL_TRY(fl_file_fopen_read(ref->path, FL_FILE_TABLE, &f));
    char *text = NULL;
    size_t text_cap = 0, cap = 0;
    int line = 0, status = 0, seen_header = 0;
    while (getline(&text, &text_cap, f) >= 0) {
        line++;
        text[strcspn(text, "\r\n")] = 0;
        if (line == 1 && !strncmp(text, "\xEF\xBB\xBF", 3)) memmove(text, text + 3, strlen(text + 3) + 1);   /* BOM */
        if (!text[0]) continue;
        char *fields[4];
        int nf = split_csv(text, fields, 3);
        if (!seen_header) {
            seen_header = 1;
            if (nf != 3 || strcmp(fields[0], "model") || strcmp(fields[1], "gpu") || strcmp(fields[2], "train_tok_s")) {
                status = fl_input_error("%s:%d: header: expected 'model,gpu,train_tok_s'", ref->path, line);
                break;
            }
            continue;
        }
        if (nf != 3) {
            status = fl_input_error("%s:%d: row: expected 3 comma-separated fields (model,gpu,train_tok_s)", ref->path,
                                    line);
            break;
        }
        char *end;
        errno = 0;
        double v = strtod(fields[2], &end);
        if (errno || end == fields[2] || *end || !isfinite(v) || v <= 0 || v > 1e15) {
            status = fl_input_error("%s:%d: train_tok_s: expected a number > 0%s, got '%s'", ref->path, line,
                                    v > 1e15 ? " and <= 1e15" : "", fields[2]);
            break;
        }
        if (!fields[0][0] || !fields[1][0] || strlen(fields[0]) >= sizeof ref->entries->weights ||
            strlen(fields[1]) >= sizeof ref->entries->gpu) {
            status = fl_input_error("%s:%d: %s: expected a non-empty name of at most %zu bytes", ref->path, line,
                                    !fields[0][0] || strlen(fields[0]) >= sizeof ref->entries->weights ? "model" : "gpu",
                                    sizeof ref->entries->gpu - 1);
            break;
        }
        if (ref->n == cap) {
            cap = cap ? 2 * cap : 64;
            fl_reference_entry *e = realloc(ref->entries, cap * sizeof *e);
            if (!e) fl_die("out of memory reading %s", ref->path);
            ref->entries = e;
        }
        fl_reference_entry *e = &ref->entries[ref->n++];
        snprintf(e->weights, sizeof e->weights, "%s", fields[0]);
        snprintf(e->gpu, sizeof e->gpu, "%s", fields[1]);
        e->train_tok_s = v;
    }
    if (!status && !seen_header) status = fl_input_error("%s: empty file (expected the header model,gpu,train_tok_s)", ref->path);
    free(text);
    fclose(f);
    if (status) fl_reference_board_free(ref);
    return status;
}

double fl_reference_board_find(const fl_reference_board *ref, const char *weights, const char *gpu) {
    for (size_t i = 0; i < ref->n; i++)
        if (fl_bench_same_name(ref->entries[i].weights, weights) && fl_bench_same_name(ref->entries[i].gpu, gpu))
            return ref->entries[i].train_tok_s;
    return -1.0;
}

void fl_reference_board_free(fl_reference_board *ref) {
    free(ref->entries);
    ref->entries = NULL;
    ref->n = 0;
}
