/* run_inputs.c — digests and options a resume compares (see run_inputs.h). */
#include "train/run_inputs.h"

#include <inttypes.h>
#include <string.h>

#include "common/error.h"

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

uint64_t fl_run_inputs_data_digest(const fl_dataset *ds, uint64_t h) {
    if (!h) h = 1469598103934665603ull;
    uint64_t n = ds->n_docs;
    h = fnv(h, &n, sizeof n);
    for (size_t d = 0; d < ds->n_docs; d++) {
        const fl_doc *doc = &ds->docs[d];
        h = fnv(h, &doc->n, sizeof doc->n);
        h = fnv(h, doc->ids, sizeof(int32_t) * (size_t)doc->n);
        if (doc->mask) h = fnv(h, doc->mask, (size_t)doc->n);
    }
    return h ? h : 1;
}

/* The options that change what a step computes or which rows it takes. Not the run's length
 * (--max-steps, --epochs: continuing a run for longer is a resume; the schedule follows the new
 * length, and a length below the checkpoint's step is refused in train/trainer.c) nor --batch and
 * --grad-accum (their product with the ranks, rows per step, is checked there). */
static const char *const math_options[] = {"eval-frac", "format", "fields", "objective", "beta", "simpo-gamma",
                                           "cpo-alpha", "ref-adapter", "seq",
                                           "lr", "schedule", "warmup", "warmup-ratio", "min-lr-ratio",
                                           "weight-decay", "beta1", "beta2", "adam-eps", "clip", "dropout",
                                           "no-packing", "truncate", "no-shuffle", "quant", "dtype", NULL};

static int is_math(const char *name) {
    for (int i = 0; math_options[i]; i++)
        if (!strcmp(math_options[i], name)) return 1;
    return 0;
}

#define FMT_STRING(v) snprintf(val, sizeof val, "%s", (v) ? (v) : "")
#define FMT_INT(v) snprintf(val, sizeof val, "%d", (v))
#define FMT_FLAG(v) snprintf(val, sizeof val, "%d", (v))
#define FMT_DOUBLE(v) snprintf(val, sizeof val, "%.16g", (v)) /* 0.1 reads 0.1 */
#define FMT_U64(v) snprintf(val, sizeof val, "%" PRIu64, (uint64_t)(v))

void fl_run_inputs_options(const fl_train_options *o, char *out, size_t cap) {
    size_t used = 0;
    out[0] = 0;
    char val[512];
#define X(name, kind, field, def, help)                                                          \
    if (is_math(name) && used < cap) {                                                           \
        FMT_##kind(o->field);                                                                    \
        used += (size_t)snprintf(out + used, cap - used, "%s=%s\n", name, val);                  \
    }
    FL_TRAIN_OPTIONS(X)
#undef X
}

/* The value of name in "name=value\n" text (into val), or 0 when absent. */
static int lookup(const char *text, const char *name, char *val, size_t cap) {
    size_t n = strlen(name);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (!strncmp(p, name, n) && p[n] == '=') {
            size_t len = strcspn(p + n + 1, "\n");
            snprintf(val, cap, "%.*s", (int)len, p + n + 1);
            return 1;
        }
    return 0;
}

/* Whether name is in the comma-separated list. */
static int listed(const char *list, const char *name) {
    size_t n = strlen(name);
    for (const char *p = list; p && *p; p += strcspn(p, ",") + (p[strcspn(p, ",")] == ',')) {
        const char *q = p[0] == '-' && p[1] == '-' ? p + 2 : p;
        if (!strncmp(q, name, n) && (q[n] == ',' || !q[n])) return 1;
    }
    return 0;
}

int fl_run_inputs_compare(const char *dir, const fl_train_state *was, const fl_train_state *now,
                          const fl_train_options *o, FILE *log) {
    if (was->data_digest && was->data_digest != now->data_digest && !listed(o->allow_changed, "data"))
        return fl_input_error("%s: the checkpoint's run read other data than --data %s%s%s now holds (documents "
                              "changed, cut, reordered or replaced); resume with the data it trained on, or allow it "
                              "with --allow-changed data", dir, o->data, o->eval_data ? " / --eval-data " : "",
                              o->eval_data ? o->eval_data : "");
    if (was->weights_digest && was->weights_digest != now->weights_digest && !listed(o->allow_changed, "model"))
        return fl_input_error("%s: the checkpoint's run trained on other base weights than --model %s holds now; "
                              "resume with the same model, or allow it with --allow-changed model", dir, o->model);
    char changed[1024] = "", val_was[512], val_now[512];
    size_t used = 0;
    for (int i = 0; math_options[i] && was->options[0]; i++) {
        const char *name = math_options[i];
        if (!lookup(was->options, name, val_was, sizeof val_was) || !lookup(now->options, name, val_now, sizeof val_now) ||
            !strcmp(val_was, val_now))
            continue;
        if (listed(o->allow_changed, name)) {
            if (log) fprintf(log, "note: resuming with --%s changed from '%s' to '%s' (--allow-changed)\n", name, val_was, val_now);
        } else if (used < sizeof changed) {
            used += (size_t)snprintf(changed + used, sizeof changed - used, "%s--%s '%s' -> '%s'", used ? ", " : "",
                                     name, val_was, val_now);
        }
    }
    if (changed[0])
        return fl_input_error("%s: options differ from the checkpoint's run: %s; resume with the same options, or allow "
                              "the change with --allow-changed NAME,... (recorded in train_config.json)", dir, changed);
    if (log && was->data_digest && was->data_digest != now->data_digest)
        fprintf(log, "note: resuming on changed data (--allow-changed data)\n");
    if (log && was->weights_digest && was->weights_digest != now->weights_digest)
        fprintf(log, "note: resuming on changed base weights (--allow-changed model)\n");
    return 0;
}
