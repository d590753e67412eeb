/* checkpoint.c — atomic training checkpoints (see checkpoint.h). */
#include "train/checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"
#include "io/file_util.h"
#include "io/safetensors.h"
#include "lora/adapter_io.h"
#include "train/options.h"

/* Removes a folder of plain files (checkpoints have no subfolders). crash_test: SIGKILL after the
 * first file (tests). */
static void remove_flat_dir(const char *dir, int crash_test) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char *p = fl_path_join(dir, e->d_name);
        unlink(p);
        free(p);
        if (crash_test) raise(SIGKILL);
    }
    closedir(d);
    rmdir(dir);
}

static void fsync_path(const char *path) {
    int fd = open(path, O_RDONLY | O_DIRECTORY);
    if (fd >= 0) { fsync(fd); close(fd); }
}

static int is_step_name(const char *name) {
    if (strncmp(name, "step-", 5) || !name[5]) return 0;
    for (const char *c = name + 5; *c; c++)
        if (*c < '0' || *c > '9') return 0;
    return 1;
}

/* By step: "step-00000100" < "step-100000000" (zero-padded to 8 digits, steps reach 10) */
static int cmp_step_names(const void *a, const void *b) {
    const char *x = *(char *const *)a, *y = *(char *const *)b;
    size_t nx = strlen(x), ny = strlen(y);
    return nx != ny ? (nx < ny ? -1 : 1) : strcmp(x, y);
}

/* The step-* folder names under root, sorted by step. */
static char **list_steps(const char *root, size_t *n) {
    *n = 0;
    DIR *d = opendir(root);
    if (!d) return NULL;
    size_t cap = 16;
    char **names = fl_malloc(cap * sizeof *names);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!is_step_name(e->d_name)) continue;
        if (*n == cap) { cap *= 2; names = realloc(names, cap * sizeof *names); if (!names) fl_die("out of memory"); }
        names[(*n)++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, *n, sizeof *names, cmp_step_names);
    return names;
}

static void free_names(char **names, size_t n) {
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
}

/* Leftovers of interrupted writes (.tmp-step-*) and removals (.old-step-*): never read by resume,
 * which lists step-* names only; with abandoned_too also the branches a resume moved aside. */
static void remove_temp_dirs(const char *root, int abandoned_too) {
    DIR *d = opendir(root);
    if (!d) return;
    struct dirent *e;
    char *victims[64];
    int nv = 0;
    while ((e = readdir(d)) && nv < 64)
        if (!strncmp(e->d_name, ".tmp-step-", 10) || !strncmp(e->d_name, ".old-step-", 10) ||
            (abandoned_too && !strncmp(e->d_name, ".abandoned-step-", 16)))
            victims[nv++] = fl_path_join(root, e->d_name);
    closedir(d);
    for (int i = 0; i < nv; i++) { remove_flat_dir(victims[i], 0); free(victims[i]); }
}

static int write_state(const char *dir, const fl_train_state *st) {
    json_t *o = json_object();
    json_object_set_new(o, "step", json_integer(st->step));
    json_object_set_new(o, "adam_step", json_integer(st->adam_step));
    json_object_set_new(o, "micro_step", json_integer((json_int_t)st->micro_step));
    json_object_set_new(o, "epoch", json_integer((json_int_t)st->epoch));
    json_object_set_new(o, "row", json_integer((json_int_t)st->row));
    json_object_set_new(o, "tokens", json_integer((json_int_t)st->tokens));
    json_object_set_new(o, "n_params", json_integer((json_int_t)st->n_params));
    /* a JSON integer is signed 64-bit: a seed past it is written as its decimal string */
    json_object_set_new(o, "seed", st->seed <= INT64_MAX ? json_integer((json_int_t)st->seed)
                                                          : json_sprintf("%llu", (unsigned long long)st->seed));
    json_object_set_new(o, "rows_per_step", json_integer((json_int_t)st->rows_per_step));
    json_object_set_new(o, "world_size", json_integer((json_int_t)st->world_size));
    /* what a resume compares (train/run_inputs.h); digests as hex strings (JSON integers are signed) */
    json_object_set_new(o, "data_digest", json_sprintf("%016llx", (unsigned long long)st->data_digest));
    json_object_set_new(o, "weights_digest", json_sprintf("%016llx", (unsigned long long)st->weights_digest));
    json_object_set_new(o, "options", json_string(st->options));
    char *text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(o);
    char *path = fl_path_join(dir, "trainer_state.json");
    int status = fl_write_file_atomic(path, text, strlen(text));
    free(path);
    free(text);
    return status;
}

/* Takes root/name out of the step-* namespace in one rename (to .old-step-*), then deletes it: a
 * kill in the middle leaves a hidden folder that resume ignores and the next save removes, never
 * a partial step-* folder. */
static int retire_step_dir(const char *root, const char *name, int crash_test) {
    char *dir = fl_path_join(root, name);
    size_t cap = strlen(root) + strlen(name) + 8;
    char *old_path = fl_malloc(cap);
    snprintf(old_path, cap, "%s/.old-%s", root, name);
    int status = 0;
    if (rename(dir, old_path) != 0) {
        status = fl_input_error("%s: cannot move aside: %s", dir, strerror(errno));
    } else {
        fsync_path(root);
        remove_flat_dir(old_path, crash_test);
    }
    free(old_path);
    free(dir);
    return status;
}

int fl_checkpoint_save(const char *root, const fl_model *m, const fl_train_state *st, const char *base_name, int keep,
                       int crash_test, char **saved) {
    if (saved) *saved = NULL;
    FL_TRY(fl_mkdir_p(root));
    remove_temp_dirs(root, 0);
    char name[64], tmp_name[96];
    snprintf(name, sizeof name, "step-%08d", st->step);
    snprintf(tmp_name, sizeof tmp_name, ".tmp-%s-%d", name, (int)getpid());
    char *final = fl_path_join(root, name), *tmp = fl_path_join(root, tmp_name);
    int status = fl_mkdir_p(tmp);
    if (!status) status = fl_adapter_save(tmp, &m->lora, &m->cfg, &m->lora_cfg, base_name);
    if (!status) {
        /* AdamW moments, downloaded from backend memory */
        size_t n = m->lora.n;
        float *host = fl_malloc(2 * n * sizeof(float) + 1);
        m->be->download(host, m->adam_m.data, n * sizeof(float));
        m->be->download(host + n, m->adam_v.data, n * sizeof(float));
        fl_st_write_tensor t[2] = {{.name = "adam_m", .dtype = FL_F32, .ndim = 1, .shape = {(int64_t)n}, .data = host},
                                   {.name = "adam_v", .dtype = FL_F32, .ndim = 1, .shape = {(int64_t)n}, .data = host + n}};
        char *path = fl_path_join(tmp, "optimizer.safetensors");
        const char *order[2] = {"param_order", FL_LORA_PARAM_ORDER}; /* the moments' flat layout (lora/lora.h) */
        status = fl_safetensors_write(path, t, 2, order, 1);
        free(path);
        free(host);
    }
    if (!status && crash_test == FL_CKPT_CRASH_IN_WRITE) raise(SIGKILL); /* test hook: a kill -9 in the middle of the write */
    if (!status) status = write_state(tmp, st);
    if (!status) {
        fsync_path(tmp);
        if (fl_file_exists(final)) status = retire_step_dir(root, name, 0); /* the same step again (a resumed run) */
        if (!status && rename(tmp, final) != 0) status = fl_input_error("%s: rename failed: %s", final, strerror(errno));
        fsync_path(root);
    }
    if (status) {
        remove_flat_dir(tmp, 0);
    } else {
        size_t n;
        char **names = list_steps(root, &n);
        for (size_t i = 0; i + (size_t)keep < n; i++) retire_step_dir(root, names[i], crash_test == FL_CKPT_CRASH_IN_ROTATION);
        free_names(names, n);
        if (saved) *saved = strdup(final);
    }
    free(final);
    free(tmp);
    return status;
}

static int get_u64(json_t *o, const char *key, const char *path, uint64_t max, uint64_t *out) {
    json_t *v = json_object_get(o, key);
    if (!v) return fl_input_error("%s: field '%s' is missing (expected an integer)", path, key);
    if (json_is_string(v) && max == UINT64_MAX) { /* a seed past 2^63 - 1 */
        const char *s = json_string_value(v);
        char *end;
        errno = 0;
        *out = strtoull(s, &end, 10);
        if (*s < '0' || *s > '9' || *end || errno)
            return fl_input_error("%s: field '%s' must be an integer in 0..%llu", path, key, (unsigned long long)max);
        return 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) < 0 || (uint64_t)json_integer_value(v) > max)
        return fl_input_error("%s: field '%s' must be an integer in 0..%llu", path, key, (unsigned long long)max);
    *out = (uint64_t)json_integer_value(v);
    return 0;
}

/* An optional 16-hex-digit digest field (0 when absent). */
static int get_digest(json_t *o, const char *key, const char *path, uint64_t *out) {
    json_t *v = json_object_get(o, key);
    *out = 0;
    if (!v) return 0;
    const char *s = json_string_value(v);
    char *end = NULL;
    if (s && strlen(s) == 16) *out = strtoull(s, &end, 16);
    if (!s || strlen(s) != 16 || !end || *end)
        return fl_input_error("%s: field '%s' must be 16 hex digits (a digest)", path, key);
    return 0;
}

/* trainer_state.json into *st: every field present, an integer, in range. */
static int read_state(const char *dir, fl_train_state *st) {
    char *path = fl_path_join(dir, "trainer_state.json");
    json_t *o = NULL;
    int status = fl_file_load_json(path, FL_FILE_CONFIG, JSON_REJECT_DUPLICATES, &o);
    if (!status && !json_is_object(o)) status = fl_input_error("%s: expected a JSON object (the checkpoint's state)", path);
    const uint64_t steps_max = FL_TRAIN_MAX_STEPS, any = INT64_MAX;
    uint64_t step = 0, adam = 0;
    if (!status) status = get_u64(o, "step", path, steps_max, &step);
    if (!status) status = get_u64(o, "adam_step", path, steps_max, &adam);
    if (!status) status = get_u64(o, "micro_step", path, any, &st->micro_step);
    if (!status) status = get_u64(o, "epoch", path, any, &st->epoch);
    if (!status) status = get_u64(o, "row", path, any, &st->row);
    if (!status) status = get_u64(o, "tokens", path, any, &st->tokens);
    if (!status) status = get_u64(o, "n_params", path, any, &st->n_params);
    if (!status) status = get_u64(o, "seed", path, UINT64_MAX, &st->seed);
    /* recorded since data-parallel runs: absent in older checkpoints */
    if (!status && json_object_get(o, "rows_per_step")) status = get_u64(o, "rows_per_step", path, any, &st->rows_per_step);
    if (!status && json_object_get(o, "world_size")) status = get_u64(o, "world_size", path, any, &st->world_size);
    /* recorded since resumes compare their inputs: absent in older checkpoints */
    if (!status) status = get_digest(o, "data_digest", path, &st->data_digest);
    if (!status) status = get_digest(o, "weights_digest", path, &st->weights_digest);
    json_t *opts = json_object_get(o, "options");
    if (!status && opts && (!json_is_string(opts) || json_string_length(opts) >= sizeof st->options))
        status = fl_input_error("%s: field 'options' must be a string of under %zu bytes", path, sizeof st->options);
    if (!status && opts) snprintf(st->options, sizeof st->options, "%s", json_string_value(opts));
    json_decref(o);
    free(path);
    st->step = (int)step;
    st->adam_step = (int)adam;
    return status;
}

/* optimizer.safetensors into the model's AdamW moments: written in this build's flat parameter order
 * (metadata param_order, lora/lora.h), both F32 [n], finite, the second moment >= 0 (a negative or
 * NaN one would turn every update into NaN). */
static int read_moments(const char *dir, fl_model *m) {
    char *path = fl_path_join(dir, "optimizer.safetensors");
    fl_safetensors sf;
    int status = fl_safetensors_open(&sf, path);
    const char *order = status ? NULL : fl_safetensors_metadata(&sf, "param_order");
    if (!status && (!order || strcmp(order, FL_LORA_PARAM_ORDER)))
        status = fl_input_error("%s: the AdamW moments are in parameter order '%s', this build uses '%s' (the "
                                "checkpoint is from another fastlora version; start from its adapter with --adapter)",
                                path, order ? order : "(unnamed, older)", FL_LORA_PARAM_ORDER);
    for (int i = 0; i < 2 && !status; i++) {
        const char *name = i ? "adam_v" : "adam_m";
        const fl_st_tensor *t = fl_safetensors_find(&sf, name);
        if (!t || t->dtype != FL_F32 || t->ndim != 1 || (size_t)t->shape[0] != m->lora.n) {
            status = fl_input_error("%s: tensor '%s' missing or not F32 [%zu] (this run's LoRA parameter count)", path,
                                    name, m->lora.n);
            break;
        }
        float *host = fl_malloc(m->lora.n * sizeof(float) + 1);
        memcpy(host, t->data, m->lora.n * sizeof(float));
        for (size_t k = 0; k < m->lora.n && !status; k++)
            if (!isfinite(host[k]) || (i && host[k] < 0))
                status = fl_input_error("%s: tensor '%s' has %s value %g at index %zu", path, name,
                                        isfinite(host[k]) ? "a negative" : "a non-finite", host[k], k);
        if (!status) m->be->upload(i ? m->adam_v.data : m->adam_m.data, host, m->lora.n * sizeof(float));
        free(host);
    }
    fl_safetensors_close(&sf);
    free(path);
    return status;
}

int fl_checkpoint_load(const char *dir, fl_model *m, fl_train_state *st) {
    memset(st, 0, sizeof *st);
    FL_TRY(read_state(dir, st));
    fl_lora_config lc;
    FL_TRY(fl_adapter_load_config(dir, &lc));
    if (lc.rank != m->lora_cfg.rank || lc.alpha != m->lora_cfg.alpha || lc.target_mask != m->lora_cfg.target_mask ||
        lc.use_rslora != m->lora_cfg.use_rslora || st->n_params != m->lora.n)
        return fl_input_error("%s: the checkpoint's LoRA (r %d, alpha %g, %llu params) differs from this run's "
                              "(r %d, alpha %g, %zu params); resume with the same options",
                              dir, lc.rank, lc.alpha, (unsigned long long)st->n_params, m->lora_cfg.rank,
                              m->lora_cfg.alpha, m->lora.n);
    FL_TRY(fl_model_load_adapter(m, dir));
    FL_TRY(read_moments(dir, m));
    m->adam_step = st->adam_step;
    m->micro_step = st->micro_step;
    fl_model_zero_grads(m);
    return 0;
}

int fl_checkpoint_find(const char *dir, char **out) {
    *out = NULL;
    char *state = fl_path_join(dir, "trainer_state.json");
    int here = fl_file_exists(state);
    free(state);
    if (here) { *out = strdup(dir); return 0; }
    char *root = fl_path_join(dir, "checkpoints");
    size_t n;
    char **names = list_steps(root, &n);
    for (size_t i = n; i-- > 0 && !*out;) {
        char *p = fl_path_join(root, names[i]);
        char *s = fl_path_join(p, "trainer_state.json");
        if (fl_file_exists(s)) *out = p;
        else free(p);
        free(s);
    }
    free_names(names, n);
    free(root);
    if (!*out) return fl_input_error("--resume %s: no checkpoint there (expected a step-* folder with trainer_state.json, or an output folder with checkpoints/)", dir);
    return 0;
}

char *fl_checkpoint_run_dir(const char *ckpt_dir) {
    char *abs = realpath(ckpt_dir, NULL);
    char *slash = abs ? strrchr(abs, '/') : NULL;
    if (slash && is_step_name(slash + 1)) {
        *slash = 0;
        slash = strrchr(abs, '/');
        if (slash && !strcmp(slash + 1, "checkpoints")) {
            *slash = 0;
            if (!abs[0]) strcpy(abs, "/");
            return abs;
        }
    }
    free(abs);
    return NULL;
}

int fl_checkpoint_abandon_after(const char *root, int step, FILE *log) {
    size_t n;
    char **names = list_steps(root, &n);
    int status = 0;
    for (size_t i = 0; i < n && !status; i++) {
        if (strtoll(names[i] + 5, NULL, 10) <= step) continue;
        char *from = fl_path_join(root, names[i]);
        size_t cap = strlen(root) + strlen(names[i]) + 40;
        char *to = fl_malloc(cap);
        snprintf(to, cap, "%s/.abandoned-%s", root, names[i]);
        for (int k = 2; fl_file_exists(to); k++) /* an earlier abandoned branch may hold the same step */
            snprintf(to, cap, "%s/.abandoned-%s.%d", root, names[i], k);
        if (rename(from, to) != 0) status = fl_input_error("%s: cannot move aside: %s", from, strerror(errno));
        else if (log) fprintf(log, "resume: %s is past the resumed step %d: moved aside to %s\n", from, step, to);
        free(from);
        free(to);
    }
    if (n) fsync_path(root);
    free_names(names, n);
    return status;
}

void fl_checkpoint_remove_all(const char *root) {
    remove_temp_dirs(root, 1); /* first: a leftover .old-step-N would block renaming step-N aside */
    size_t n;
    char **names = list_steps(root, &n);
    for (size_t i = 0; i < n; i++) retire_step_dir(root, names[i], 0);
    free_names(names, n);
    rmdir(root);
}
