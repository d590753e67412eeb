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
#include "model/weights.h"
#include "train/data.h"

#define FL_ARGS_STR FL_OPT_STRING
#define FL_ARGS_INT FL_OPT_INT
#define FL_ARGS_FLOAT FL_OPT_DOUBLE
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
_Static_assert(N_OPTIONS <= 64, "fl_train_options.given has one bit per option");

static int option_index(const char *name) {
    int i = 0;
#define X(opt_name, kind, field, def, help) if (!strcmp(name, opt_name)) return i; i++;
    FL_TRAIN_OPTIONS(X)
#undef X
    return -1;
}

int fl_train_options_given(const fl_train_options *o, const char *name) {
    int i = option_index(name);
    return i >= 0 && (o->given >> i & 1);
}

/* "grad_accum" and "grad-accum" are the same key */
static int key_matches(const char *key, const char *name) {
    for (; *key && *name; key++, name++)
        if (*key != *name && !(*key == '_' && *name == '-')) return 0;
    return !*key && !*name;
}

int fl_train_options_load_json(fl_train_options *o, const char *path) {
    json_t *root;
    FL_TRY(fl_file_load_json(path, FL_FILE_CONFIG, JSON_REJECT_DUPLICATES, &root));
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
        o->given |= 1ull << (opt - rows);
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
            if (!json_is_integer(v) || llabs(json_integer_value(v)) > 2147483647LL)
                status = fl_input_error("%s: %s: expected an integer", path, key);
            else *(int *)opt->dest = (int)json_integer_value(v);
            break;
        default:
            if (!json_is_number(v)) status = fl_input_error("%s: %s: expected a number", path, key);
            else *(double *)opt->dest = json_number_value(v);
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
    int rc = fl_args_parse(argc, argv, rows, N_OPTIONS + 1, usage);
    if (rc) return rc;
    /* which options the command line gave (argv is well-formed here: fl_args_parse accepted it) */
    for (int i = 0; i < argc; i++)
        for (int k = 0; k < N_OPTIONS + 1 && !strncmp(argv[i], "--", 2); k++)
            if (!strcmp(argv[i] + 2, rows[k].name)) {
                if (k < N_OPTIONS) o->given |= 1ull << k;
                if (rows[k].kind != FL_OPT_FLAG) i++;
                break;
            }
    return 0;
}

/* The shortest "%.Ng" that reads back as the same double: 0.01 is written 0.01, not 0.01000000000000000021. */
static void format_double(char *buf, size_t cap, double v) {
    if (!isfinite(v)) { snprintf(buf, cap, "null"); return; }
    for (int precision = 1; precision <= 17; precision++) {
        snprintf(buf, cap, "%.*g", precision, v);
        if (strtod(buf, NULL) == v) return;
    }
}

int fl_train_options_save_json(const fl_train_options *o, const char *path) {
    fl_option rows[N_OPTIONS];
    option_rows((fl_train_options *)o, rows);
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    fputs("{", out);
    int first = 1;
    for (int i = 0; i < N_OPTIONS; i++) {
        const fl_option *r = &rows[i];
        if (!strcmp(r->name, "resume") || !strcmp(r->name, "overwrite")) continue;
        fprintf(out, "%s\n  \"%s\": ", first ? "" : ",", r->name);
        first = 0;
        char num[64];
        switch (r->kind) {
        case FL_OPT_STRING: {
            json_t *v = *(const char **)r->dest ? json_string(*(const char **)r->dest) : NULL;
            char *s = v ? json_dumps(v, JSON_ENCODE_ANY) : NULL; /* NULL for a path that is not UTF-8 */
            fputs(s ? s : "null", out);
            free(s);
            json_decref(v);
            break;
        }
        case FL_OPT_FLAG: fputs(*(int *)r->dest ? "true" : "false", out); break;
        case FL_OPT_INT: fprintf(out, "%d", *(int *)r->dest); break;
        default: format_double(num, sizeof num, *(double *)r->dest); fputs(num, out);
        }
    }
    fputs("\n}\n", out);
    fclose(out);
    int status = fl_write_file_atomic(path, text, len);
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
    fl_quant quant;
    FL_TRY(fl_quant_parse(o->quant, &quant));
    fl_data_format f;
    FL_TRY(fl_data_format_parse(o->format, &f));
    return 0;
}

/* ---- starting from an adapter ---------------------------------------------------------------- */

/* A float read from a file as the decimal it was written as (alpha 0.1f -> 0.1, not 0.100000001). */
static double float_as_written(float f) {
    char buf[32];
    for (int precision = 1; precision < 10; precision++) {
        snprintf(buf, sizeof buf, "%.*g", precision, f);
        if ((float)strtod(buf, NULL) == f) break;
    }
    return strtod(buf, NULL);
}

/* "all", or the short names of the mask's projections: "q,v" */
static void targets_text(unsigned mask, char *out, size_t cap) {
    if (mask == (1u << FL_N_PROJ) - 1) { snprintf(out, cap, "all"); return; }
    out[0] = 0;
    for (int p = 0; p < FL_N_PROJ; p++)
        if (mask >> p & 1)
            snprintf(out + strlen(out), cap - strlen(out), "%s%.*s", out[0] ? "," : "",
                     (int)(strlen(fl_proj_names[p]) - strlen("_proj")), fl_proj_names[p]);
}

int fl_train_options_apply_adapter(fl_train_options *o, fl_lora_config *lc, const char *adapter) {
    char want[96], have[96];
    unsigned mask = 0;
    FL_TRY(fl_lora_parse_targets(o->targets, &mask));
    targets_text(mask, want, sizeof want);
    targets_text(lc->target_mask, have, sizeof have);
    const char *file = "adapter_config.json";
    if (fl_train_options_given(o, "rank") && o->rank != lc->rank)
        return fl_input_error("--rank %d contradicts %s/%s (r %d); leave --rank out or give %d", o->rank, adapter, file,
                              lc->rank, lc->rank);
    if (fl_train_options_given(o, "alpha") && (float)o->alpha != lc->alpha)
        return fl_input_error("--alpha %g contradicts %s/%s (lora_alpha %g); leave --alpha out or give %g", o->alpha,
                              adapter, file, lc->alpha, lc->alpha);
    if (fl_train_options_given(o, "targets") && mask != lc->target_mask)
        return fl_input_error("--targets %s contradicts %s/%s (target_modules %s); leave --targets out or give %s",
                              want, adapter, file, have, have);
    if (fl_train_options_given(o, "rslora") && !o->rslora != !lc->use_rslora)
        return fl_input_error("--rslora %s contradicts %s/%s (use_rslora %s); leave --rslora out",
                              o->rslora ? "true" : "false", adapter, file, lc->use_rslora ? "true" : "false");
    if (o->n_owned == 64) return fl_input_error("too many string options");
    o->owned[o->n_owned] = strdup(have);
    o->targets = o->owned[o->n_owned++];
    o->rank = lc->rank;
    o->alpha = float_as_written(lc->alpha);
    o->rslora = lc->use_rslora;
    if (fl_train_options_given(o, "dropout")) lc->dropout = (float)o->dropout;
    else o->dropout = float_as_written(lc->dropout);
    return 0;
}
