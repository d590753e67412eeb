/* options.c — the training options table: defaults, JSON config files, argv, validation. */
#include "train/options.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "common/error.h"
#include "io/file_util.h"
#include "lora/lora.h"
#include "train/data.h"

#define FL_ARGS_STR FL_OPT_STRING
#define FL_ARGS_INT FL_OPT_INT
#define FL_ARGS_FLOAT FL_OPT_FLOAT
#define FL_ARGS_FLAG FL_OPT_FLAG

void fl_train_options_default(fl_train_options *o) {
    memset(o, 0, sizeof *o);
#define X(name, kind, field, def, help) o->field = def;
    FL_TRAIN_OPTIONS(X)
#undef X
}

void fl_train_options_free(fl_train_options *o) {
    for (int i = 0; i < o->n_owned; i++) free(o->owned[i]);
    o->n_owned = 0;
}

/* The table as (name, kind, pointer into *o, help) rows, so every consumer is one loop. */
#define N_OPTIONS (0 FL_TRAIN_OPTIONS(COUNT_ONE))
#define COUNT_ONE(name, kind, field, def, help) +1
static void option_rows(fl_train_options *o, fl_option *rows) {
    int i = 0;
#define X(name, kind, field, def, help) rows[i++] = (fl_option){name, FL_ARGS_##kind, (void *)&o->field, help};
    FL_TRAIN_OPTIONS(X)
#undef X
}

/* "grad_accum" and "grad-accum" are the same key */
static int key_matches(const char *key, const char *name) {
    for (; *key && *name; key++, name++)
        if (*key != *name && !(*key == '_' && *name == '-')) return 0;
    return !*key && !*name;
}

int fl_train_options_load_json(fl_train_options *o, const char *path) {
    json_error_t jerr;
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) return jerr.line < 1 ? fl_input_error("%s: cannot read: %s", path, jerr.text)
                                    : fl_input_error("%s:%d:%d: invalid JSON: %s", path, jerr.line, jerr.column, jerr.text);
    if (!json_is_object(root)) { json_decref(root); return fl_input_error("%s: expected a JSON object of options", path); }
    fl_option rows[N_OPTIONS];
    option_rows(o, rows);
    const char *key;
    json_t *v;
    int status = 0;
    json_object_foreach(root, key, v) {
        const fl_option *opt = NULL;
        for (int i = 0; i < N_OPTIONS && !opt; i++)
            if (key_matches(key, rows[i].name)) opt = &rows[i];
        if (!opt) { status = fl_input_error("%s: '%s' is not a training option (see fastlora train --help)", path, key); break; }
        if (json_is_null(v)) continue;
        switch (opt->kind) {
        case FL_OPT_STRING:
            if (!json_is_string(v)) { status = fl_input_error("%s: %s: expected a string", path, key); break; }
            if (o->n_owned == 64) { status = fl_input_error("%s: too many string options", path); break; }
            o->owned[o->n_owned] = strdup(json_string_value(v));
            *(const char **)opt->dest = o->owned[o->n_owned++];
            break;
        case FL_OPT_FLAG:
            if (!json_is_boolean(v)) status = fl_input_error("%s: %s: expected true or false", path, key);
            else *(int *)opt->dest = json_is_true(v);
            break;
        case FL_OPT_INT:
            if (!json_is_integer(v) || json_integer_value(v) < -2147483647LL || json_integer_value(v) > 2147483647LL)
                status = fl_input_error("%s: %s: expected an integer", path, key);
            else *(int *)opt->dest = (int)json_integer_value(v);
            break;
        default:
            if (!json_is_number(v)) status = fl_input_error("%s: %s: expected a number", path, key);
            else *(float *)opt->dest = (float)json_number_value(v);
        }
        if (status) break;
    }
    json_decref(root);
    return status;
}

int fl_train_options_parse_args(fl_train_options *o, int argc, char **argv, const char *usage) {
    for (int i = 0; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--config") && fl_train_options_load_json(o, argv[i + 1])) {
            fprintf(stderr, "fastlora train: %s\n", fl_last_error());
            return 2;
        }
    const char *config_seen = NULL;
    fl_option rows[N_OPTIONS + 1];
    option_rows(o, rows);
    rows[N_OPTIONS] = (fl_option){"config", FL_OPT_STRING, (void *)&config_seen,
                                  "JSON file of options (same names as keys); the command line wins"};
    return fl_args_parse(argc, argv, rows, N_OPTIONS + 1, usage);
}

int fl_train_options_save_json(const fl_train_options *o, const char *path) {
    fl_option rows[N_OPTIONS];
    option_rows((fl_train_options *)o, rows);
    json_t *root = json_object();
    for (int i = 0; i < N_OPTIONS; i++) {
        const fl_option *r = &rows[i];
        if (!strcmp(r->name, "resume")) continue;
        json_t *v;
        switch (r->kind) {
        case FL_OPT_STRING: v = *(const char **)r->dest ? json_string(*(const char **)r->dest) : json_null(); break;
        case FL_OPT_FLAG: v = json_boolean(*(int *)r->dest); break;
        case FL_OPT_INT: v = json_integer(*(int *)r->dest); break;
        default: v = json_real(*(float *)r->dest);
        }
        json_object_set_new(root, r->name, v);
    }
    char *text = json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(9) | JSON_PRESERVE_ORDER);
    json_decref(root);
    size_t n = strlen(text);
    text = realloc(text, n + 2);
    text[n] = '\n';
    int status = fl_write_file_atomic(path, text, n + 1);
    free(text);
    return status;
}

int fl_train_options_validate(const fl_train_options *o) {
    if (!o->data) return fl_input_error("--data: required (a JSONL file or a tokens file)");
    if (!o->out) return fl_input_error("--out: required (the output folder)");
    if (o->seq < 2 || o->seq > 1 << 20) return fl_input_error("--seq: expected 2..1048576, got %d", o->seq);
    if (o->batch < 1 || o->batch > 65536) return fl_input_error("--batch: expected >= 1, got %d", o->batch);
    if (o->grad_accum < 1 || o->grad_accum > 65536) return fl_input_error("--grad-accum: expected >= 1, got %d", o->grad_accum);
    if (o->max_steps < 0 || o->max_steps > FL_TRAIN_MAX_STEPS)
        return fl_input_error("--max-steps: expected 0..%d, got %d", FL_TRAIN_MAX_STEPS, o->max_steps);
    if (o->max_steps == 0 && !(o->epochs > 0 && o->epochs < 1e6)) return fl_input_error("--epochs: expected > 0, got %g", o->epochs);
    if (!(o->lr >= 0 && o->lr < 10)) return fl_input_error("--lr: expected 0 <= lr < 10, got %g", o->lr);
    if (strcmp(o->schedule, "cosine") && strcmp(o->schedule, "linear") && strcmp(o->schedule, "constant"))
        return fl_input_error("--schedule: '%s' (expected cosine, linear or constant)", o->schedule);
    if (o->warmup < 0) return fl_input_error("--warmup: expected >= 0, got %d", o->warmup);
    if (!(o->warmup_ratio >= 0 && o->warmup_ratio <= 1)) return fl_input_error("--warmup-ratio: expected 0..1, got %g", o->warmup_ratio);
    if (!(o->min_lr_ratio >= 0 && o->min_lr_ratio <= 1)) return fl_input_error("--min-lr-ratio: expected 0..1, got %g", o->min_lr_ratio);
    if (!(o->eval_frac >= 0 && o->eval_frac < 1)) return fl_input_error("--eval-frac: expected 0 <= x < 1, got %g", o->eval_frac);
    if (!(o->beta1 >= 0 && o->beta1 < 1) || !(o->beta2 >= 0 && o->beta2 < 1))
        return fl_input_error("--beta1/--beta2: expected values in [0, 1)");
    if (!(o->adam_eps > 0)) return fl_input_error("--adam-eps: expected > 0, got %g", o->adam_eps);
    if (!(o->weight_decay >= 0)) return fl_input_error("--weight-decay: expected >= 0, got %g", o->weight_decay);
    if (!(o->clip >= 0)) return fl_input_error("--clip: expected >= 0, got %g", o->clip);
    if (o->rank < 1 || o->rank > 4096) return fl_input_error("--rank: expected 1..4096, got %d", o->rank);
    if (!(o->alpha > 0) || isinf(o->alpha)) return fl_input_error("--alpha: expected a finite number > 0, got %g", o->alpha);
    if (!(o->dropout >= 0 && o->dropout < 1)) return fl_input_error("--dropout: expected 0 <= p < 1, got %g", o->dropout);
    if (o->eval_every < 0 || o->save_every < 0 || o->log_every < 0 || o->eval_max_rows < 0)
        return fl_input_error("--eval-every/--save-every/--log-every/--eval-max-rows: expected >= 0");
    if (o->keep < 1) return fl_input_error("--keep: expected >= 1, got %d", o->keep);
    unsigned mask;
    FL_TRY(fl_lora_parse_targets(o->targets, &mask));
    fl_data_format f;
    FL_TRY(fl_data_format_parse(o->format, &f));
    return 0;
}
