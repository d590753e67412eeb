/* options.c — the training options table: defaults, JSON config files, argv, validation.
 * YAML files (ours and Axolotl's) are read by config_yaml.c through fl_train_options_set_text. */
#include "train/options.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/args.h"
#include "common/error.h"
#include "io/file_util.h"
#include "lora/lora.h"
#include "model/weights.h"
#include "train/config_yaml.h"
#include "train/data.h"
#include "train/preference_loss.h"

/* The most positions one optimizer step may hold (batch x seq x grad-accum): its token buffers
 * (16 bytes a position) stay within 4 GiB. */
#define MAX_STEP_TOKENS (1 << 28)

/* Each numeric option's range (common/args.h bounds). The command line, config files and
 * fl_train_options_validate all check against it; options not listed take any value of their type. */
static const struct {
    const char *name;
    unsigned bounds;
    double lo, hi;
} ranges[] = {
    {"eval-frac", FL_MIN | FL_MAX_OPEN, 0, 1},
    {"beta", FL_ABOVE(0)},
    {"simpo-gamma", FL_MIN | FL_MAX, -1e6, 1e6},
    {"cpo-alpha", FL_AT_LEAST(0)},
    {"seq", FL_RANGE(2, FL_MAX_SEQ)},
    {"batch", FL_RANGE(1, FL_MAX_BATCH)},
    {"grad-accum", FL_RANGE(1, 65536)},
    {"epochs", FL_MIN_OPEN | FL_MAX_OPEN, 0, 1e6},
    {"max-steps", FL_RANGE(0, FL_TRAIN_MAX_STEPS)},
    {"lr", FL_MIN | FL_MAX_OPEN, 0, 10}, /* 0 is allowed: no update (e.g. to evaluate an --adapter) */
    {"warmup", FL_RANGE(0, FL_TRAIN_MAX_STEPS)},
    {"warmup-ratio", FL_RANGE(0, 1)},
    {"min-lr-ratio", FL_RANGE(0, 1)},
    {"weight-decay", FL_AT_LEAST(0)},
    {"beta1", FL_MIN | FL_MAX_OPEN, 0, 1},
    {"beta2", FL_MIN | FL_MAX_OPEN, 0, 1},
    {"adam-eps", FL_ABOVE(0)},
    {"clip", FL_AT_LEAST(0)},
    {"rank", FL_RANGE(1, FL_MAX_RANK)},
    {"alpha", FL_ABOVE(0)},
    {"dropout", FL_MIN | FL_MAX_OPEN, 0, 1},
    {"eval-every", FL_AT_LEAST(0)},
    {"eval-max-rows", FL_AT_LEAST(0)},
    {"save-every", FL_AT_LEAST(0)},
    {"keep", FL_AT_LEAST(1)},
    {"log-every", FL_AT_LEAST(0)},
};

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
#define X(name_, kind_, field, def, help_) \
    rows[i++] = (fl_option){.name = name_, .kind = FL_OPT_##kind_, .dest = (void *)&o->field, .help = help_};
    FL_TRAIN_OPTIONS(X)
#undef X
    for (int k = 0; k < i; k++)
        for (size_t r = 0; r < sizeof ranges / sizeof ranges[0]; r++)
            if (!strcmp(rows[k].name, ranges[r].name)) {
                rows[k].bounds = ranges[r].bounds;
                rows[k].lo = ranges[r].lo;
                rows[k].hi = ranges[r].hi;
            }
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
        case FL_OPT_U64: /* a JSON integer is signed 64-bit: larger seeds are written as decimal strings */
            if (json_is_integer(v) && json_integer_value(v) >= 0) *(uint64_t *)opt->dest = (uint64_t)json_integer_value(v);
            else if (!json_is_string(v) || fl_option_set(opt, json_string_value(v)))
                status = fl_input_error("%s: %s: expected an integer in 0..18446744073709551615 (past 2^63 - 1 as a "
                                        "decimal string)", path, key);
            break;
        default: {
            char where[600];
            snprintf(where, sizeof where, "%s: %s", path, key);
            if (opt->kind == FL_OPT_INT && !json_is_integer(v)) status = fl_input_error("%s: expected an integer", where);
            else if (!json_is_number(v)) status = fl_input_error("%s: expected a number", where);
            else status = fl_option_check(opt, json_number_value(v), where);
            if (status) break;
            if (opt->kind == FL_OPT_INT) *(int *)opt->dest = (int)json_integer_value(v);
            else *(double *)opt->dest = json_number_value(v);
        }
        }
        if (status) break;
    }
    json_decref(root);
    return status;
}

int fl_train_options_set_text(fl_train_options *o, const char *name, const char *text, const char *where) {
    fl_option rows[N_OPTIONS];
    option_rows(o, rows);
    const fl_option *opt = NULL;
    for (int i = 0; i < N_OPTIONS && !opt; i++)
        if (key_matches(name, rows[i].name)) opt = &rows[i];
    if (!opt) return -1;
    switch (opt->kind) {
    case FL_OPT_STRING:
        if (o->n_owned == 64) return fl_input_error("%s: too many string options", where);
        o->owned[o->n_owned] = strdup(text);
        *(const char **)opt->dest = o->owned[o->n_owned++];
        break;
    case FL_OPT_FLAG:
        if (strcmp(text, "true") && strcmp(text, "false")) return fl_input_error("%s: expected true or false, got '%s'", where, text);
        *(int *)opt->dest = !strcmp(text, "true");
        break;
    default:
        if (fl_option_set(opt, text)) {
            char why[512];
            snprintf(why, sizeof why, "%s", fl_last_error());
            return fl_input_error("%s: %s", where, why);
        }
    }
    o->given |= 1ull << (opt - rows);
    return 0;
}

/* .yaml / .yml: config_yaml.c (our option names, or an Axolotl config); anything else: JSON */
static int load_config(fl_train_options *o, const char *path) {
    size_t n = strlen(path);
    if ((n > 5 && !strcmp(path + n - 5, ".yaml")) || (n > 4 && !strcmp(path + n - 4, ".yml")))
        return fl_train_options_load_yaml(o, path);
    return fl_train_options_load_json(o, path);
}

int fl_train_options_parse_args(fl_train_options *o, int argc, char **argv, const char *usage) {
    for (int i = 0; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--config") && load_config(o, argv[i + 1])) {
            fprintf(stderr, "fastlora train: %s\n", fl_last_error());
            return 2;
        }
    const char *config_seen = NULL;
    fl_option rows[N_OPTIONS + 2];
    option_rows(o, rows);
    rows[N_OPTIONS + 1] = (fl_option){"print-config", FL_OPT_FLAG, (void *)&o->print_config,
                                      "print the resolved options as JSON (train_config.json's form) and exit", FL_NO_RANGE};
    rows[N_OPTIONS] = (fl_option){"config", FL_OPT_STRING, (void *)&config_seen,
                                  "JSON or YAML (.yaml/.yml) file of options, ours or an Axolotl config; the command line wins", FL_NO_RANGE};
    int rc = fl_args_parse("train", argc, argv, rows, N_OPTIONS + 2, usage);
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

/* The shortest "%.Ng" that reads back as the same double: 0.01 is written 0.01, not 0.01000000000000000021.
 * -0.0 is written 0: JSON's "-0" reads back as the integer 0, so the file would not read back the same. */
static void format_double(char *buf, size_t cap, double v) {
    if (!isfinite(v)) { snprintf(buf, cap, "null"); return; }
    if (v == 0.0) { snprintf(buf, cap, "0"); return; }
    for (int precision = 1; precision <= 17; precision++) {
        snprintf(buf, cap, "%.*g", precision, v);
        if (strtod(buf, NULL) == v) return;
    }
}

/* The resolved options as JSON text (malloc'd, *len bytes). */
static char *options_json_n(const fl_train_options *o, size_t *len_out) {
    fl_option rows[N_OPTIONS];
    option_rows((fl_train_options *)o, rows);
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    if (!out) fl_die("out of memory (options)");
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
        case FL_OPT_U64: { /* past a JSON integer's range: as a decimal string, which load_json reads back */
            unsigned long long v = *(uint64_t *)r->dest;
            fprintf(out, v <= INT64_MAX ? "%llu" : "\"%llu\"", v);
            break;
        }
        default: format_double(num, sizeof num, *(double *)r->dest); fputs(num, out);
        }
    }
    fputs("\n}\n", out);
    fclose(out);
    *len_out = len;
    return text;
}

int fl_train_options_save_json(const fl_train_options *o, const char *path) {
    size_t len;
    char *text = options_json_n(o, &len);
    int status = fl_write_file_atomic(path, text, len);
    free(text);
    return status;
}

char *fl_train_options_json(const fl_train_options *o) {
    size_t len;
    return options_json_n(o, &len);
}

void fl_train_options_print(const fl_train_options *o, FILE *out) {
    size_t len;
    char *text = options_json_n(o, &len);
    fwrite(text, 1, len, out);
    free(text);
}

/* --objective and the options that belong to it. A preference micro-batch holds 2 x --batch rows
 * (each pair's chosen and rejected). An option of another objective is refused when it is set to
 * anything but its default (a saved train_config.json records every option at its value). */
static int check_objective(const fl_train_options *o) {
    fl_train_options d;
    fl_train_options_default(&d);
    int sft = !strcmp(o->objective, "sft"), objective = sft ? -1 : fl_pref_objective_from_name(o->objective);
    if (!sft && objective < 0) return fl_input_error("--objective: '%s' (expected sft, dpo, ipo, orpo or simpo)", o->objective);
    const char *wrong = sft && o->beta != d.beta                                       ? "beta"
                        : (sft || objective != FL_PREF_SIMPO) && o->simpo_gamma != d.simpo_gamma ? "simpo-gamma"
                        : (sft || objective != FL_PREF_SIMPO) && o->cpo_alpha != d.cpo_alpha     ? "cpo-alpha"
                        : sft && o->ref_adapter                                              ? "ref-adapter"
                                                                                             : NULL;
    if (wrong && sft)
        return fl_input_error("--%s: a preference-tuning option; give --objective dpo, ipo, orpo or simpo with it", wrong);
    if (wrong) return fl_input_error("--%s: a simpo option (--objective is %s)", wrong, o->objective);
    if (sft) return 0;
    if (o->ref_adapter && !fl_pref_needs_reference(objective))
        return fl_input_error("--ref-adapter: %s has no reference model (dpo and ipo have one)", o->objective);
    if (strcmp(o->format, "auto"))
        return fl_input_error("--format %s: preference data has its own format (rows {\"prompt\", \"chosen\", "
                              "\"rejected\"}, strings or messages); leave --format out with --objective %s",
                              o->format, o->objective);
    if (2 * (int64_t)o->batch * o->seq > FL_MAX_MICRO_TOKENS)
        return fl_input_error("--batch %d x --seq %d: a preference micro-batch is 2 x --batch rows (chosen and "
                              "rejected), over %d positions", o->batch, o->seq, FL_MAX_MICRO_TOKENS);
    return 0;
}

int fl_train_options_validate(const fl_train_options *o) {
    if (!o->data) return fl_input_error("--data: required (a JSONL, plain-text or tokens file)");
    if (!o->out) return fl_input_error("--out: required (the output folder)");
    fl_option rows[N_OPTIONS];
    option_rows((fl_train_options *)o, rows);
    for (int i = 0; i < N_OPTIONS; i++)
        if (rows[i].kind != FL_OPT_STRING && rows[i].kind != FL_OPT_FLAG)
            FL_TRY(fl_option_check(&rows[i], fl_option_value(&rows[i]), NULL));
    if ((int64_t)o->batch * o->seq > FL_MAX_MICRO_TOKENS)
        return fl_input_error("--batch %d x --seq %d: over %d positions per micro-batch", o->batch, o->seq,
                              FL_MAX_MICRO_TOKENS);
    if ((int64_t)o->batch * o->seq * o->grad_accum > MAX_STEP_TOKENS)
        return fl_input_error("--batch %d x --seq %d x --grad-accum %d: over %d positions per step", o->batch, o->seq,
                              o->grad_accum, MAX_STEP_TOKENS);
    if (strcmp(o->schedule, "cosine") && strcmp(o->schedule, "linear") && strcmp(o->schedule, "constant"))
        return fl_input_error("--schedule: '%s' (expected cosine, linear or constant)", o->schedule);
    if (strcmp(o->report_to, "none") && strcmp(o->report_to, "tensorboard"))
        return fl_input_error("--report-to: '%s' (expected tensorboard or none)", o->report_to);
    unsigned mask;
    FL_TRY(fl_lora_parse_targets(o->targets, &mask));
    fl_quant quant;
    FL_TRY(fl_quant_parse(o->quant, &quant));
    fl_data_format f;
    FL_TRY(fl_data_format_parse(o->format, &f));
    /* the eval split takes whole documents, and a text-file is one */
    if (o->eval_frac > 0 && !o->eval_data && fl_data_detect_format(o->data, f) == FL_DATA_TEXT_FILE)
        return fl_input_error("--eval-frac: %s is read as ONE document (plain text, --format text-file) and the split "
                              "takes whole documents; give --eval-data FILE, or --format text-paragraphs", o->data);
    return check_objective(o);
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
