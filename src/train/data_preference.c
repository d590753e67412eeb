/* data_preference.c — files of preference rows to pairs (preference_data.h: fl_pref_set_load): the
 * same files, line reader and bad-row reports as SFT data (data_internal.h), each row through
 * fl_pref_encode_row. Not the tokenization rules (preference_data.c).
 */
#include "train/data_internal.h"
#include "train/preference_data.h"

#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "io/file_util.h"

static void push_pair(fl_pref_set *set, fl_pref_pair p) {
    if (set->n == set->cap) {
        set->cap = set->cap ? 2 * set->cap : 64;
        fl_pref_pair *np = realloc(set->pairs, set->cap * sizeof *np);
        if (!np) fl_die("out of memory growing the preference data to %zu pairs", set->cap);
        set->pairs = np;
    }
    set->pairs[set->n++] = p;
}

/* One row: renamed (ours = theirs, as SFT data), encoded; 0 kept, FL_PREF_DROPPED counted, else bad. */
static int add_row(fl_pref_set *set, json_t *row, fl_tokenizer *tok, const fl_pref_options *po, const fl_data_options *d) {
    if (json_is_object(row))
        for (int i = 0; i < d->n_field_map; i++) {
            json_t *v = json_object_get(row, d->field_from[i]);
            if (v && !json_object_get(row, d->field_to[i])) json_object_set(row, d->field_to[i], v);
        }
    fl_pref_pair p;
    int rc = fl_pref_encode_row(row, tok, po, &p);
    if (rc == FL_PREF_DROPPED) { set->n_dropped++; return 0; }
    if (rc) return rc;
    for (int s = 0; s < 2; s++)
        for (int t = 0; t < p.n[s]; t++)
            if (d->vocab_size > 0 && (p.ids[s][t] < 0 || p.ids[s][t] >= d->vocab_size)) {
                fl_pref_pair_free(&p);
                return fl_input_error("token id %d is outside the model's vocabulary of %d", p.ids[s][t], d->vocab_size);
            }
    push_pair(set, p);
    return 0;
}

static int first_char_is_bracket(const char *path) {
    FILE *f;
    if (fl_file_fopen_read(path, FL_FILE_DATASET, &f)) { fl_clear_error(); return 0; }
    int c = 0;
    if (!fl_data_skip_bom(f, path))
        while ((c = getc(f)) == ' ' || c == '\t' || c == '\n' || c == '\r') {}
    fclose(f);
    fl_clear_error();
    return c == '[';
}

static int load_array(fl_pref_set *set, const char *path, fl_tokenizer *tok, const fl_pref_options *po,
                      const fl_data_options *d) {
    json_t *root;
    FL_TRY(fl_file_load_json(path, FL_FILE_DATASET, JSON_REJECT_DUPLICATES, &root));
    if (!json_is_array(root)) { json_decref(root); return fl_input_error("%s: expected a JSON array of rows", path); }
    fl_data_report r;
    fl_data_report_init(&r, path, d, "record");
    int status = 0;
    size_t index;
    json_t *item;
    json_array_foreach(root, index, item) {
        set->n_rows++;
        r.n_records++;
        size_t before = set->n_dropped;
        if (!add_row(set, item, tok, po, d)) { if (set->n_dropped == before) fl_data_report_good(&r); continue; }
        char where[32];
        snprintf(where, sizeof where, "[%zu]", index);
        if ((status = fl_data_report_bad(&r, where, fl_last_error()))) break;
        set->n_bad++;
    }
    json_decref(root);
    if (!status && !r.n_good && set->n_dropped) { fl_data_report_free(&r); return 0; } /* all dropped: said by the caller */
    return status ? (fl_data_report_free(&r), status) : fl_data_report_finish(&r, 0, "an empty array");
}

static int load_lines(fl_pref_set *set, const char *path, fl_tokenizer *tok, const fl_pref_options *po,
                      const fl_data_options *d) {
    FILE *f;
    FL_TRY(fl_file_fopen_read(path, FL_FILE_DATASET, &f));
    int status = fl_data_skip_bom(f, path);
    if (status) { fclose(f); return status; }
    fl_data_report r;
    fl_data_report_init(&r, path, d, "line");
    char *buf = NULL;
    size_t cap = 0, len = 0, lineno = 0, dropped_here = 0;
    int too_long, ended, gave_up = 0;
    while (!status && fl_data_read_line(f, &buf, &cap, &len, d->max_line_bytes, &too_long, &ended)) {
        lineno++;
        size_t k = 0;
        while (k < len && (buf[k] == ' ' || buf[k] == '\t')) k++;
        if (!too_long && k == len) continue;
        set->n_rows++;
        r.n_records++;
        int rc;
        if (too_long) {
            rc = fl_input_error("line longer than %zu bytes", d->max_line_bytes);
        } else {
            json_error_t jerr;
            json_t *row = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
            size_t before = set->n_dropped;
            rc = row ? add_row(set, row, tok, po, d) : fl_input_error("invalid JSON: %s (column %d)", jerr.text, jerr.column);
            json_decref(row);
            if (!rc && set->n_dropped > before) { dropped_here++; continue; }
        }
        if (!rc) { fl_data_report_good(&r); continue; }
        char where[32];
        snprintf(where, sizeof where, "%zu", lineno);
        if ((status = fl_data_report_bad(&r, where, fl_last_error()))) break;
        set->n_bad++;
        if (!r.n_good && r.n_bad >= FL_DATA_GIVE_UP) { gave_up = 1; break; }
    }
    if (!status && ferror(f)) status = fl_input_error("%s: read error", path);
    if (!status && !r.n_good && dropped_here && !gave_up) fl_data_report_free(&r); /* all dropped: said by the caller */
    else if (!status) status = fl_data_report_finish(&r, gave_up, lineno ? "only blank lines" : "empty file");
    else fl_data_report_free(&r);
    free(buf);
    fclose(f);
    return status;
}

int fl_pref_set_load(fl_pref_set *set, const char *spec, fl_tokenizer *tok, const fl_pref_options *po,
                     const fl_data_options *d) {
    char **paths;
    size_t n_paths;
    FL_TRY(fl_data_paths(spec, &paths, &n_paths));
    int status = 0;
    for (size_t i = 0; i < n_paths && !status; i++)
        status = first_char_is_bracket(paths[i]) ? load_array(set, paths[i], tok, po, d)
                                                 : load_lines(set, paths[i], tok, po, d);
    fl_data_paths_free(paths, n_paths);
    return status;
}

void fl_pref_set_free(fl_pref_set *set) {
    for (size_t i = 0; i < set->n; i++) fl_pref_pair_free(&set->pairs[i]);
    free(set->pairs);
    memset(set, 0, sizeof *set);
}

uint64_t fl_pref_set_digest(const fl_pref_set *set, uint64_t h) {
    if (!h) h = 1469598103934665603ull;
    for (size_t i = 0; i < set->n; i++)
        for (int s = 0; s < 2; s++) {
            const fl_pref_pair *p = &set->pairs[i];
            int32_t head[2] = {p->n[s], p->prompt_len[s]};
            const unsigned char *b = (const unsigned char *)head;
            for (size_t k = 0; k < sizeof head; k++) h = (h ^ b[k]) * 1099511628211ull;
            b = (const unsigned char *)p->ids[s];
            for (size_t k = 0; k < sizeof(int32_t) * (size_t)p->n[s]; k++) h = (h ^ b[k]) * 1099511628211ull;
        }
    return h ? h : 1;
}
