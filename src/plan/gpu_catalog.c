/* gpu_catalog.c — reading, merging and searching the GPU catalog (see gpu_catalog.h).
 *
 * One table (GPU_COLUMNS) names every CSV column, its kind and its field in fl_gpu_spec, so the
 * parser, the defaults and `fastlora gpus --json` never drift apart. */
#include "plan/gpu_catalog.h"

#include <ctype.h>
#include <jansson.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "common/error.h"
#include "plan/csv.h"

/* X(column, kind, field): TEXT = char array; NUM = double that must be given (> 0) for a new row;
 * RATE = TFLOPS, blank = 0 (no such tensor path); OPT = double, blank = -1 (unknown). */
#define GPU_COLUMNS(X)                                  \
    X(name, TEXT, name)                                 \
    X(short_name, TEXT, short_name)                     \
    X(aliases, TEXT, aliases)                           \
    X(arch, TEXT, arch)                                 \
    X(sm, TEXT, sm)                                     \
    X(vram_gb, NUM, vram_gb)                            \
    X(usable_mib, OPT, usable_mib)                      \
    X(mem_type, TEXT, mem_type)                         \
    X(mem_bw_gbs, NUM, mem_bw_gbs)                      \
    X(bf16_dense_tflops, RATE, bf16_dense_tflops)       \
    X(fp16_dense_tflops, RATE, fp16_dense_tflops)       \
    X(fp8_dense_tflops, RATE, fp8_dense_tflops)         \
    X(tf32_dense_tflops, RATE, tf32_dense_tflops)       \
    X(fp32_tflops, RATE, fp32_tflops)                   \
    X(sms, OPT, sms)                                    \
    X(l2_mb, OPT, l2_mb)                                \
    X(tdp_w, OPT, tdp_w)                                \
    X(interconnect, TEXT, interconnect)                 \
    X(nvlink_gbs, OPT, nvlink_gbs)                      \
    X(nvlink_gpus, OPT, nvlink_gpus)                    \
    X(pcie_gbs, OPT, pcie_gbs)                          \
    X(target_use, TEXT, target_use)                     \
    X(ecc, TEXT, ecc)                                   \
    X(year, OPT, year)                                  \
    X(price_usd_hr, OPT, price_usd_hr)                  \
    X(source, TEXT, source)                             \
    X(notes, TEXT, notes)

enum {
#define X(col, kind, field) COL_##col,
    GPU_COLUMNS(X)
#undef X
    N_COLS
};

enum { KIND_TEXT, KIND_NUM, KIND_RATE, KIND_OPT };
#define KIND_ID_TEXT KIND_TEXT
#define KIND_ID_NUM KIND_NUM
#define KIND_ID_RATE KIND_RATE
#define KIND_ID_OPT KIND_OPT

static const struct {
    const char *name;
    int kind;
    size_t offset, size;
} columns[N_COLS] = {
#define X(col, kind, field) {#col, KIND_ID_##kind, offsetof(fl_gpu_spec, field), sizeof(((fl_gpu_spec *)0)->field)},
    GPU_COLUMNS(X)
#undef X
};

/* A row as read from one file: the spec and which columns had a non-empty cell. */
typedef struct {
    fl_gpu_spec spec;
    uint32_t given;   /* bit COL_x */
} partial_row;

static void spec_defaults(fl_gpu_spec *g) {
    memset(g, 0, sizeof *g);
    for (int c = 0; c < N_COLS; c++)
        if (columns[c].kind == KIND_OPT) *(double *)((char *)g + columns[c].offset) = -1.0;
}

static const char *trim(char *s) {
    while (isspace((unsigned char)*s)) s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1])) s[--n] = 0;
    return s;
}

/* Sets column c of g from the cell text; errors name file:line and the column. */
static int set_field(fl_gpu_spec *g, int c, const char *value, const char *file, int line) {
    char *dst = (char *)g + columns[c].offset;
    if (columns[c].kind == KIND_TEXT) {
        size_t n = strlen(value);
        if (n >= columns[c].size)
            return fl_input_error("%s:%d: %s: expected at most %zu characters, got %zu", file, line, columns[c].name,
                                  columns[c].size - 1, n);
        /* the text goes into tables and `gpus --json`: it must be UTF-8 (jansson checks) without control
         * characters other than tab and newline */
        json_t *as_json = json_stringn(value, n);
        int ok = as_json != NULL;
        json_decref(as_json);
        for (size_t i = 0; ok && i < n; i++)
            ok = !((unsigned char)value[i] < 0x20 && value[i] != '\t' && value[i] != '\n') && value[i] != 0x7f;
        if (!ok)
            return fl_input_error("%s:%d: %s: expected UTF-8 text without control characters", file, line,
                                  columns[c].name);
        memcpy(dst, value, n + 1);
        return 0;
    }
    /* plain decimal only (strtod would also take hex, "infinity", "nan(...)"); at most 1e9, which keeps
     * every product the planner forms finite */
    char *end = NULL;
    errno = 0;
    double v = strtod(value, &end);
    int plain = strspn(value, "0123456789.eE+-") == strlen(value);
    if (!plain || errno || end == value || *end || !isfinite(v) || v < 0 || (columns[c].kind == KIND_NUM && v <= 0))
        return fl_input_error("%s:%d: %s: expected a number %s, got '%s'", file, line, columns[c].name,
                              columns[c].kind == KIND_NUM ? "> 0" : ">= 0 (or an empty cell)", value);
    if (v > 1e9) return fl_input_error("%s:%d: %s: expected a number <= 1e+09, got '%s'", file, line, columns[c].name, value);
    *(double *)dst = v;
    return 0;
}

/* Reads a catalog CSV into partial rows. */
static int read_rows(const char *path, partial_row **out, int *n_out) {
    *out = NULL;
    *n_out = 0;
    fl_csv_table t;
    FL_TRY(fl_csv_read_file(&t, path));
    if (t.n_rows == 0) {
        fl_csv_free(&t);
        return fl_input_error("%s:1: expected a header line naming the columns (name,vram_gb,...), got an empty file", path);
    }
    const fl_csv_row *hdr = &t.rows[0];
    int map[64];
    if (hdr->n > 64) {
        int status = fl_input_error("%s:%d: header: expected at most 64 columns, got %d", path, hdr->line, hdr->n);
        fl_csv_free(&t);
        return status;
    }
    int have_name = 0;
    for (int i = 0; i < hdr->n; i++) {
        char *h = hdr->fields[i];
        const char *name = trim(h);
        if (!strcasecmp(name, "price_usd_hr_indicative")) name = "price_usd_hr";
        map[i] = -1;
        for (int c = 0; c < N_COLS; c++)
            if (!strcasecmp(name, columns[c].name)) map[i] = c;
        if (map[i] < 0) {
            char known[1024] = "";
            for (int c = 0; c < N_COLS; c++)
                snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", c ? ", " : "", columns[c].name);
            int status = fl_input_error("%s:%d: header: unknown column '%s' (expected one of: %s)", path, hdr->line,
                                        name, known);
            fl_csv_free(&t);
            return status;
        }
        for (int j = 0; j < i; j++)
            if (map[j] == map[i]) {
                int status = fl_input_error("%s:%d: header: column '%s' appears twice", path, hdr->line, name);
                fl_csv_free(&t);
                return status;
            }
        if (map[i] == COL_name) have_name = 1;
    }
    if (!have_name) {
        int status = fl_input_error("%s:%d: header: expected a 'name' column", path, hdr->line);
        fl_csv_free(&t);
        return status;
    }
    partial_row *rows = fl_calloc((size_t)t.n_rows, sizeof *rows);
    int n = 0, status = 0;
    for (int r = 1; r < t.n_rows && !status; r++) {
        const fl_csv_row *row = &t.rows[r];
        if (row->n != hdr->n) {
            status = fl_input_error("%s:%d: expected %d fields as in the header, got %d", path, row->line, hdr->n,
                                    row->n);
            break;
        }
        partial_row *p = &rows[n];
        spec_defaults(&p->spec);
        for (int i = 0; i < row->n && !status; i++) {
            const char *v = trim(row->fields[i]);
            if (!*v) continue;
            status = set_field(&p->spec, map[i], v, path, row->line);
            p->given |= 1u << map[i];
        }
        if (status) break;
        if (!p->spec.name[0]) {
            status = fl_input_error("%s:%d: name: expected a GPU name, got an empty cell", path, row->line);
            break;
        }
        for (int k = 0; k < n; k++)
            if (!strcasecmp(rows[k].spec.name, p->spec.name)) {
                status = fl_input_error("%s:%d: name: '%s' appears twice in this file (first at line %d)", path,
                                        row->line, p->spec.name, atoi(rows[k].spec.origin));
                break;
            }
        snprintf(p->spec.origin, sizeof p->spec.origin, "%d", row->line);  /* line for now */
        n++;
    }
    fl_csv_free(&t);
    if (status) {
        free(rows);
        return status;
    }
    *out = rows;
    *n_out = n;
    return 0;
}

/* A new row must say enough to plan with. */
static int check_complete(const partial_row *p, const char *path) {
    int line = atoi(p->spec.origin);
    if (!(p->given & (1u << COL_vram_gb)))
        return fl_input_error("%s:%d: vram_gb: expected a number > 0 for new GPU '%s', got an empty cell", path, line,
                              p->spec.name);
    if (!(p->given & (1u << COL_mem_bw_gbs)))
        return fl_input_error("%s:%d: mem_bw_gbs: expected a number > 0 for new GPU '%s', got an empty cell", path,
                              line, p->spec.name);
    if (!(p->spec.bf16_dense_tflops > 0) && !(p->spec.fp16_dense_tflops > 0) && !(p->spec.fp32_tflops > 0))
        return fl_input_error("%s:%d: bf16_dense_tflops: expected a rate > 0 (or fp16_dense_tflops / fp32_tflops) for "
                              "new GPU '%s'", path, line, p->spec.name);
    return 0;
}

static void finish_row(fl_gpu_spec *g, const char *path, const char *what) {
    int line = atoi(g->origin);
    snprintf(g->origin, sizeof g->origin, "%.200s:%d%s", path, line, what);
    if (!g->short_name[0]) {
        const char *s = g->name;
        if (!strncasecmp(s, "NVIDIA ", 7)) s += 7;
        snprintf(g->short_name, sizeof g->short_name, "%.47s", s);
    }
}

static void catalog_append(fl_gpu_catalog *c, const fl_gpu_spec *g) {
    fl_gpu_spec *p = realloc(c->gpus, sizeof *p * (size_t)(c->n + 1));
    if (!p) fl_die("out of memory growing the GPU catalog");
    c->gpus = p;
    c->gpus[c->n++] = *g;
}

int fl_gpu_catalog_load(fl_gpu_catalog *c, const char *csv_path) {
    memset(c, 0, sizeof *c);
    int status = fl_gpu_catalog_merge_file(c, csv_path);
    if (status) fl_gpu_catalog_free(c); /* rows before the bad one were added: leave c empty */
    return status;
}

int fl_gpu_catalog_merge_file(fl_gpu_catalog *c, const char *csv_path) {
    partial_row *rows;
    int n;
    FL_TRY(read_rows(csv_path, &rows, &n));
    for (int i = 0; i < n; i++) {
        partial_row *p = &rows[i];
        fl_gpu_spec *existing = NULL;
        for (int k = 0; k < c->n && !existing; k++)
            if (!strcasecmp(c->gpus[k].name, p->spec.name) || !strcasecmp(c->gpus[k].short_name, p->spec.name))
                existing = &c->gpus[k];
        if (existing) {
            for (int col = 0; col < N_COLS; col++) {
                if (col == COL_name || !(p->given & (1u << col))) continue;
                memcpy((char *)existing + columns[col].offset, (char *)&p->spec + columns[col].offset,
                       columns[col].size);
            }
            char line[32];
            snprintf(line, sizeof line, "%d", atoi(p->spec.origin));
            snprintf(existing->origin, sizeof existing->origin, "%.200s:%s (override)", csv_path, line);
            continue;
        }
        int status = check_complete(p, csv_path);
        if (status) {
            free(rows);
            return status;
        }
        finish_row(&p->spec, csv_path, "");
        catalog_append(c, &p->spec);
    }
    free(rows);
    return 0;
}

int fl_gpu_catalog_load_default(fl_gpu_catalog *c) {
    memset(c, 0, sizeof *c);
    char tried[2048] = "";
    const char *env = getenv("FASTLORA_DATA");
    char candidates[4][PATH_MAX + 64];
    int nc = 0;
    if (env && *env) {
        size_t n = strlen(env);
        if (n > 4 && !strcasecmp(env + n - 4, ".csv")) snprintf(candidates[nc++], sizeof candidates[0], "%s", env);
        else snprintf(candidates[nc++], sizeof candidates[0], "%s/gpus.csv", env);
    }
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len > 0) {
        exe[len] = 0;
        char *slash = strrchr(exe, '/');
        if (slash) *slash = 0;
        snprintf(candidates[nc++], sizeof candidates[0], "%s/../data/gpus.csv", exe);
        snprintf(candidates[nc++], sizeof candidates[0], "%s/../../data/gpus.csv", exe);
    }
    snprintf(candidates[nc++], sizeof candidates[0], "data/gpus.csv");
    for (int i = 0; i < nc; i++) {
        if (access(candidates[i], R_OK) == 0) return fl_gpu_catalog_load(c, candidates[i]);
        snprintf(tried + strlen(tried), sizeof tried - strlen(tried), "%s%.480s", i ? ", " : "", candidates[i]);
    }
    return fl_input_error("GPU catalog not found (tried %s); set FASTLORA_DATA to the folder holding gpus.csv", tried);
}

void fl_gpu_catalog_free(fl_gpu_catalog *c) {
    free(c->gpus);
    memset(c, 0, sizeof *c);
}

/* ---- finding a row by a device name ---------------------------------------------------------- */

#define MAX_TOKENS 48

/* Lowercase alphanumeric tokens of s, minus the vendor words every row shares. */
static int tokenize(const char *s, char tokens[][32], int n, int cap) {
    while (*s && n < cap) {
        while (*s && !isalnum((unsigned char)*s)) s++;
        if (!*s) break;
        char tok[32];
        int k = 0;
        while (*s && isalnum((unsigned char)*s)) {
            if (k < 31) tok[k++] = (char)tolower((unsigned char)*s);
            s++;
        }
        tok[k] = 0;
        if (!strcmp(tok, "nvidia") || !strcmp(tok, "geforce") || !strcmp(tok, "tesla")) continue;
        memcpy(tokens[n++], tok, sizeof tok);
    }
    return n;
}

static int has_digit(const char *s) {
    for (; *s; s++)
        if (isdigit((unsigned char)*s)) return 1;
    return 0;
}

static int alias_matches(const char *aliases, const char *name) {
    const char *p = aliases;
    size_t n = strlen(name);
    while (*p) {
        const char *end = strchr(p, ';');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        while (len && isspace((unsigned char)*p)) { p++; len--; }
        while (len && isspace((unsigned char)p[len - 1])) len--;
        if (len == n && !strncasecmp(p, name, n)) return 1;
        if (!end) break;
        p = end + 1;
    }
    return 0;
}

const fl_gpu_spec *fl_gpu_catalog_find(const fl_gpu_catalog *c, const char *device_name) {
    if (!c || !device_name) return NULL;
    char name[256];
    snprintf(name, sizeof name, "%s", device_name);
    const char *q = trim(name);
    for (int i = 0; i < c->n; i++)
        if (!strcasecmp(c->gpus[i].name, q) || !strcasecmp(c->gpus[i].short_name, q) ||
            alias_matches(c->gpus[i].aliases, q))
            return &c->gpus[i];
    char qt[MAX_TOKENS][32];
    int nq = tokenize(q, qt, 0, MAX_TOKENS);
    if (nq == 0) return NULL;
    int model_tok = -1;
    for (int i = 0; i < nq && model_tok < 0; i++)
        if (has_digit(qt[i])) model_tok = i;
    const fl_gpu_spec *best = NULL;
    int best_score = 0;
    for (int i = 0; i < c->n; i++) {
        const fl_gpu_spec *g = &c->gpus[i];
        char rt[MAX_TOKENS * 3][32];
        int nr = tokenize(g->name, rt, 0, MAX_TOKENS);
        nr = tokenize(g->short_name, rt, nr, MAX_TOKENS * 2);
        nr = tokenize(g->aliases, rt, nr, MAX_TOKENS * 3);
        int score = 0, has_model = model_tok < 0;
        for (int a = 0; a < nq; a++) {
            int found = 0;
            for (int b = 0; b < nr && !found; b++) found = !strcmp(qt[a], rt[b]);
            score += found;
            if (found && a == model_tok) has_model = 1;
        }
        if (has_model && score > best_score) {
            best = g;
            best_score = score;
        }
    }
    return best;
}

double fl_gpu_train_tflops(const fl_gpu_spec *g) {
    if (g->bf16_dense_tflops > 0) return g->bf16_dense_tflops;
    if (g->fp16_dense_tflops > 0) return g->fp16_dense_tflops;
    return g->fp32_tflops > 0 ? g->fp32_tflops : 0.0;
}

double fl_gpu_usable_bytes(const fl_gpu_spec *g) {
    if (g->usable_mib > 0) return g->usable_mib * 1048576.0;
    return g->vram_gb * 1e9 * 0.97;
}

/* ---- columns --------------------------------------------------------------------------------- */

int fl_gpu_column_count(void) { return N_COLS; }
const char *fl_gpu_column_name(int i) { return i >= 0 && i < N_COLS ? columns[i].name : NULL; }
int fl_gpu_column_index(const char *name) {
    if (name && !strcasecmp(name, "price_usd_hr_indicative")) name = "price_usd_hr";
    for (int c = 0; name && c < N_COLS; c++)
        if (!strcasecmp(name, columns[c].name)) return c;
    return -1;
}
int fl_gpu_column_is_text(int i) { return i >= 0 && i < N_COLS && columns[i].kind == KIND_TEXT; }
const char *fl_gpu_column_text(const fl_gpu_spec *g, int i) {
    return fl_gpu_column_is_text(i) ? (const char *)g + columns[i].offset : "";
}
double fl_gpu_column_number(const fl_gpu_spec *g, int i) {
    if (i < 0 || i >= N_COLS || columns[i].kind == KIND_TEXT) return -1;
    return *(const double *)((const char *)g + columns[i].offset);
}
