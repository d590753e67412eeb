/* records.c — benchmark result records (see records.h): validation, JSON Lines I/O, names. */
#include "bench/records.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/error.h"
#include "io/file_util.h"
#include "model/config.h"

/* ---- presets / folders -> the Hugging Face names of their weights (model/config.c) ----------- */

void fl_bench_weights_name(const char *preset_or_dir, int is_preset, char *out, size_t cap) {
    if (is_preset) {
        const char *hf = fl_config_preset_hf_name(preset_or_dir);
        snprintf(out, cap, "%s", hf ? hf : preset_or_dir);
        return;
    }
    /* a folder: its last non-empty component */
    size_t len = strlen(preset_or_dir);
    while (len > 1 && preset_or_dir[len - 1] == '/') len--;
    size_t start = len;
    while (start > 0 && preset_or_dir[start - 1] != '/') start--;
    char base[256];
    snprintf(base, sizeof base, "%.*s", (int)(len - start), preset_or_dir + start);
    const char *preset = fl_config_preset_for_hf_name(base);
    snprintf(out, cap, "%s", preset ? fl_config_preset_hf_name(preset) : base);
}

void fl_bench_format_tok_s(double v, char *out, size_t cap) {
    snprintf(out, cap, "%.1f", v);
    size_t n = strlen(out);
    if (n > 2 && !strcmp(out + n - 2, ".0")) out[n - 2] = 0;
}

/* ---- one record <-> JSON ---------------------------------------------------------------------- */

void fl_bench_record_clear(fl_bench_record *r) {
    memset(r, 0, sizeof *r);
    r->mfu = -1.0;
}

json_t *fl_bench_record_to_json(const fl_bench_record *r) {
    json_t *o = json_object();
    json_object_set_new(o, "tool", json_string(r->tool));
    if (r->version[0]) json_object_set_new(o, "version", json_string(r->version));
    json_object_set_new(o, "weights", json_string(r->weights));
    json_object_set_new(o, "device", json_string(r->device));
    if (r->device_kind[0]) json_object_set_new(o, "device_kind", json_string(r->device_kind));
    json_object_set_new(o, "dtype", json_string(r->dtype));
    json_object_set_new(o, "batch", json_integer(r->batch));
    json_object_set_new(o, "seq", json_integer(r->seq));
    json_object_set_new(o, "rank", json_integer(r->rank));
    if (r->threads) json_object_set_new(o, "threads", json_integer(r->threads));
    if (r->steps) json_object_set_new(o, "steps", json_integer(r->steps));
    if (r->warmup) json_object_set_new(o, "warmup", json_integer(r->warmup));
    json_object_set_new(o, "train_tok_s", json_real(r->train_tok_s));
    if (r->train_tok_s_min > 0) json_object_set_new(o, "train_tok_s_min", json_real(r->train_tok_s_min));
    if (r->train_tok_s_max > 0) json_object_set_new(o, "train_tok_s_max", json_real(r->train_tok_s_max));
    if (r->ms_per_step > 0) json_object_set_new(o, "ms_per_step", json_real(r->ms_per_step));
    if (r->peak_mem_bytes > 0) json_object_set_new(o, "peak_mem_bytes", json_integer((json_int_t)r->peak_mem_bytes));
    if (r->mfu >= 0) json_object_set_new(o, "mfu", json_real(r->mfu));
    if (r->interrupted) json_object_set_new(o, "interrupted", json_true());
    json_object_set_new(o, "date", json_string(r->date));
    return o;
}

/* A short rendering of a JSON value for "got ..." in error messages. */
static void describe_value(const json_t *v, char *out, size_t cap) {
    if (!v) {
        snprintf(out, cap, "nothing (the key is missing)");
        return;
    }
    char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!s) {
        snprintf(out, cap, "an unprintable value");
        return;
    }
    if (strlen(s) > 40) snprintf(out, cap, "%.37s...", s);
    else snprintf(out, cap, "%s", s);
    free(s);
}

static int bad_field(const char *file, int line, const char *field, const char *expected, const json_t *got) {
    char desc[64];
    describe_value(got, desc, sizeof desc);
    return fl_input_error("%s:%d: %s: expected %s, got %s", file, line, field, expected, desc);
}

static int get_string(const json_t *o, const char *key, int required, char *out, size_t cap, const char *file,
                      int line) {
    const json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) {
        if (!required) { out[0] = 0; return 0; }
        return bad_field(file, line, key, "a non-empty string", v);
    }
    if (!json_is_string(v) || (required && json_string_length(v) == 0))
        return bad_field(file, line, key, required ? "a non-empty string" : "a string", v);
    if (json_string_length(v) >= cap || strlen(json_string_value(v)) != json_string_length(v)) {
        char what[64];
        snprintf(what, sizeof what, "a string of at most %zu bytes without NUL", cap - 1);
        return bad_field(file, line, key, what, v);
    }
    memcpy(out, json_string_value(v), json_string_length(v) + 1);
    return 0;
}

/* Integer in [lo, hi]; absent/null allowed when !required (out = 0). */
static int get_int(const json_t *o, const char *key, int required, long long lo, long long hi, int *out,
                   const char *file, int line) {
    const json_t *v = json_object_get(o, key);
    char what[80];
    snprintf(what, sizeof what, "an integer >= %lld", lo);
    if (!v || json_is_null(v)) {
        if (!required) { *out = 0; return 0; }
        return bad_field(file, line, key, what, v);
    }
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return bad_field(file, line, key, what, v);
    *out = (int)json_integer_value(v);
    return 0;
}

/* Finite number; > 0 when positive, else >= 0. Absent/null allowed when !required (out = absent). */
static int get_number(const json_t *o, const char *key, int required, int positive, double absent, double *out,
                      const char *file, int line) {
    const json_t *v = json_object_get(o, key);
    const char *what = positive ? "a number > 0" : "a number >= 0";
    if (!v || json_is_null(v)) {
        if (!required) { *out = absent; return 0; }
        return bad_field(file, line, key, what, v);
    }
    if (!json_is_number(v)) return bad_field(file, line, key, what, v);
    double x = json_number_value(v);
    if (!isfinite(x) || x < 0 || (positive && x == 0)) return bad_field(file, line, key, what, v);
    if (x > 1e15) return bad_field(file, line, key, "a number <= 1e15", v);   /* keeps later arithmetic finite */
    *out = x;
    return 0;
}

/* "targets": a string, or an array of strings joined with ','. Absent/null: "". */
static int get_targets(const json_t *o, char *out, size_t cap, const char *file, int line) {
    const json_t *v = json_object_get(o, "targets");
    out[0] = 0;
    if (!v || json_is_null(v) || json_is_string(v)) return get_string(o, "targets", 0, out, cap, file, line);
    const char *what = "a string or an array of projection names";
    if (!json_is_array(v)) return bad_field(file, line, "targets", what, v);
    size_t i, used = 0;
    const json_t *item;
    json_array_foreach(v, i, item) {
        if (!json_is_string(item) || strlen(json_string_value(item)) != json_string_length(item))
            return bad_field(file, line, "targets", what, v);
        int n = snprintf(out + used, cap - used, "%s%s", i ? "," : "", json_string_value(item));
        if (n < 0 || (size_t)n >= cap - used) return bad_field(file, line, "targets", "at most 159 bytes of names", v);
        used += (size_t)n;
    }
    return 0;
}

int fl_bench_record_from_json(fl_bench_record *r, const json_t *o, const char *file, int line) {
    fl_bench_record_clear(r);
    snprintf(r->file, sizeof r->file, "%s", file);
    r->line = line;
    if (!json_is_object(o)) return bad_field(file, line, "record", "a JSON object", o);
    FL_TRY(get_string(o, "tool", 1, r->tool, sizeof r->tool, file, line));
    FL_TRY(get_string(o, "version", 0, r->version, sizeof r->version, file, line));
    FL_TRY(get_string(o, "weights", 1, r->weights, sizeof r->weights, file, line));
    FL_TRY(get_string(o, "device", 1, r->device, sizeof r->device, file, line));
    FL_TRY(get_string(o, "device_kind", 0, r->device_kind, sizeof r->device_kind, file, line));
    FL_TRY(get_string(o, "model", 0, r->model, sizeof r->model, file, line));
    FL_TRY(get_targets(o, r->targets, sizeof r->targets, file, line));
    FL_TRY(get_string(o, "dtype", 1, r->dtype, sizeof r->dtype, file, line));
    FL_TRY(get_int(o, "batch", 1, 1, 1 << 30, &r->batch, file, line));
    FL_TRY(get_int(o, "seq", 1, 1, 1 << 30, &r->seq, file, line));
    FL_TRY(get_int(o, "rank", 1, 1, 1 << 20, &r->rank, file, line));
    FL_TRY(get_int(o, "threads", 0, 0, 1 << 20, &r->threads, file, line));
    FL_TRY(get_int(o, "steps", 0, 0, 1 << 30, &r->steps, file, line));
    FL_TRY(get_int(o, "warmup", 0, 0, 1 << 30, &r->warmup, file, line));
    FL_TRY(get_number(o, "train_tok_s", 1, 1, 0, &r->train_tok_s, file, line));
    FL_TRY(get_number(o, "train_tok_s_min", 0, 0, 0, &r->train_tok_s_min, file, line));
    FL_TRY(get_number(o, "train_tok_s_max", 0, 0, 0, &r->train_tok_s_max, file, line));
    FL_TRY(get_number(o, "ms_per_step", 0, 1, 0, &r->ms_per_step, file, line));
    FL_TRY(get_number(o, "peak_mem_bytes", 0, 0, 0, &r->peak_mem_bytes, file, line));
    FL_TRY(get_number(o, "mfu", 0, 0, -1.0, &r->mfu, file, line));
    FL_TRY(get_string(o, "quant", 0, r->quant, sizeof r->quant, file, line));
    const json_t *v = json_object_get(o, "interrupted");
    if (v && !json_is_null(v) && !json_is_boolean(v)) return bad_field(file, line, "interrupted", "true or false", v);
    r->interrupted = v && json_is_true(v);
    v = json_object_get(o, "recompute");
    if (v && !json_is_null(v) && !json_is_boolean(v)) return bad_field(file, line, "recompute", "true or false", v);
    r->recompute = v && json_is_true(v);
    FL_TRY(get_string(o, "date", 1, r->date, sizeof r->date, file, line));
    return 0;
}

int fl_bench_record_parse_line(fl_bench_record *r, const char *text, size_t len, const char *file, int line) {
    size_t i = 0;
    while (i < len && isspace((unsigned char)text[i])) i++;
    if (i == len) return -1;
    json_error_t err;
    json_t *o = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &err);
    if (!o)
        return fl_input_error("%s:%d: record: expected one JSON object per line (%s, column %d)", file, line, err.text,
                              err.column);
    int status = fl_bench_record_from_json(r, o, file, line);
    json_decref(o);
    return status;
}

/* ---- files -------------------------------------------------------------------------------------- */

void fl_bench_record_list_push(fl_bench_record_list *list, const fl_bench_record *r) {
    if (list->n == list->cap) {
        size_t cap = list->cap ? 2 * list->cap : 16;
        fl_bench_record *items = realloc(list->items, cap * sizeof *items);
        if (!items) fl_die("out of memory growing a record list to %zu", cap);
        list->items = items;
        list->cap = cap;
    }
    list->items[list->n++] = *r;
}

void fl_bench_record_list_free(fl_bench_record_list *list) {
    free(list->items);
    memset(list, 0, sizeof *list);
}

int fl_bench_records_read(const char *path, fl_bench_record_list *list, FILE *errors) {
    char *text;
    size_t len;
    FL_TRY(fl_file_read_all(path, FL_FILE_TABLE, &text, &len));
    int line = 0, bad = 0;
    size_t n_before = list->n;
    char first_error[512] = "";
    size_t at = len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3) ? 3 : 0;   /* a UTF-8 byte-order mark */
    while (at < len) {
        const char *start = text + at, *nl = memchr(start, '\n', len - at);
        size_t n = nl ? (size_t)(nl - start) : len - at;
        at += n + 1;
        line++;
        fl_bench_record r;
        int rc = fl_bench_record_parse_line(&r, start, n, path, line);
        if (rc < 0) continue;
        if (rc) {
            if (!bad) snprintf(first_error, sizeof first_error, "%s", fl_last_error());
            bad++;
            if (errors && bad <= FL_BENCH_MAX_REPORTED) fprintf(errors, "%s\n", fl_last_error());
            continue;
        }
        fl_bench_record_list_push(list, &r);
    }
    free(text);
    if (errors && bad > FL_BENCH_MAX_REPORTED)
        fprintf(errors, "%s: %d more bad lines not shown\n", path, bad - FL_BENCH_MAX_REPORTED);
    if (!bad && list->n == n_before)
        return fl_input_error("%s: no records (expected JSON lines from `fastlora bench --json`)", path);
    if (bad == 1) return fl_input_error("%s", first_error);
    if (bad) return fl_input_error("%s (and %d more bad record%s)", first_error, bad - 1, bad == 2 ? "" : "s");
    return 0;
}

int fl_bench_record_check_target(const char *path) {
    FL_TRY(fl_output_file_check(path));
    return fl_file_exists(path) ? fl_file_check_read(path, FL_FILE_TABLE) : 0;
}

int fl_bench_record_append(const char *path, const json_t *record) {
    char *old = NULL, *text = json_dumps(record, JSON_COMPACT | JSON_PRESERVE_ORDER);
    size_t old_len = 0;
    if (!text) return fl_fail(FL_ERR_INTERNAL, "cannot encode the result record");
    int status = fl_bench_record_check_target(path);
    if (!status && fl_file_exists(path)) status = fl_file_read_all(path, FL_FILE_TABLE, &old, &old_len);
    fl_atomic_file f;
    if (!status) status = fl_atomic_file_open(&f, path);
    if (!status) {
        fwrite(old, 1, old_len, f.fp);
        if (old_len && old[old_len - 1] != '\n') fputc('\n', f.fp);   /* a last line without its newline */
        fprintf(f.fp, "%s\n", text);
        status = fl_atomic_file_commit(&f);
    }
    free(old);
    free(text);
    return status;
}
