/* train_test_util.h — what the trainer's tests share (test_train.c, test_train_checkpoints.c): a tiny
 * random model, a tokens data file, a run's options and the run itself, the CLI with its stderr,
 * one-line error checks (folders and file comparison: cli_run.h). Static inline: each test file uses
 * part of it. */
#ifndef FL_TESTS_TRAIN_TEST_UTIL_H
#define FL_TESTS_TRAIN_TEST_UTIL_H


#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/error.h"
#include "common/rng.h"
#include "engine/model.h"
#include "io/file_util.h"
#include "io/safetensors.h"
#include "lora/adapter_io.h"
#include "cli_run.h" /* cr_temp_dir, cr_remove_tree, cr_files_equal, CR_MODEL */
#include "test.h"
#include "train/checkpoint.h"
#include "train/llama2c.h"
#include "train/schedule.h"
#include "train/trainer.h"


static inline fl_model_config tiny_config(void) {
    fl_model_config c;
    memset(&c, 0, sizeof c);
    snprintf(c.name, sizeof c.name, "tiny");
    c.vocab_size = 64;
    c.hidden_size = 32;
    c.intermediate_size = 48;
    c.n_layers = 2;
    c.n_heads = 4;
    c.n_kv_heads = 2;
    c.head_dim = 8;
    c.max_position_embeddings = 128;
    c.rope_theta = 10000.0;
    c.rms_norm_eps = 1e-5f;
    c.bos_token_id = 1;
    c.eos_token_id = 2;
    return c;
}

/* A tiny random model whose LoRA B is non-zero, so every LoRA gradient is non-zero. */
static inline void tiny_model(fl_model *m, float dropout) {
    fl_model_config c = tiny_config();
    fl_lora_config lc = fl_lora_config_default();
    lc.rank = 4;
    lc.alpha = 8;
    lc.dropout = dropout;
    fl_model_init_random(m, &c, 5, fl_backend_cpu(), &lc);
    fl_rng_fill_uniform(m->lora.data, m->lora.n, fl_rng_stream(77, 1, 2, 3), -0.2f, 0.2f);
    fl_model_sync_lora(m);
}

static inline double max_abs_diff(const float *a, const float *b, size_t n, double *max_a) {
    double d = 0, ma = 0;
    for (size_t i = 0; i < n; i++) {
        d = fmax(d, fabs((double)a[i] - b[i]));
        ma = fmax(ma, fabs(a[i]));
    }
    if (max_a) *max_a = ma;
    return d;
}


/* Runs `FASTLORA_BIN args` with stdout discarded; returns the exit status and stderr (malloc'd). */
static inline int run_cli(const char *args, char **err) {
    const char *bin = getenv("FASTLORA_BIN");
    char err_path[] = "/tmp/fastlora-stderr-XXXXXX";
    int fd = mkstemp(err_path);
    close(fd);
    size_t cap = strlen(args) + strlen(bin) + 128;
    char *cmd = malloc(cap);
    snprintf(cmd, cap, "%s %s >/dev/null 2>%s", bin, args, err_path);
    int rc = system(cmd);
    free(cmd);
    FILE *f = fopen(err_path, "rb");
    *err = calloc(1, 65536);
    if (f) { (void)!fread(*err, 1, 65535, f); fclose(f); }
    unlink(err_path);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
}

static inline char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return strdup("");
    char *text = calloc(1, 1 << 20);
    size_t n = fread(text, 1, (1 << 20) - 1, f);
    text[n] = 0;
    fclose(f);
    return text;
}

/* one line on stderr, containing `needle` */
static inline void check_one_line(const char *err, const char *needle) {
    CHECK_STR_CONTAINS(err, needle);
    const char *nl = strchr(err, '\n');
    CHECK_MSG(nl && nl[1] == 0, "expected one line on stderr, got: %s", err);
}


/* ---- whole runs ------------------------------------------------------------------------------ */

/* A tokens file of n_docs documents with varied lengths (ids < 64). */
static inline char *write_token_data(const char *dir, int n_docs) {
    fl_dataset ds = {0};
    for (int d = 0; d < n_docs; d++) {
        int32_t ids[40];
        int n = 3 + (d * 7) % 29;
        for (int i = 0; i < n; i++) ids[i] = (int32_t)((d * 5 + i * i + 3) % 61 + 3);
        fl_dataset_add(&ds, ids, NULL, n);
    }
    char *path = malloc(strlen(dir) + 32);
    sprintf(path, "%s/data.tokens", dir);
    if (fl_tokens_file_write(path, &ds)) printf("    %s\n", fl_last_error());
    fl_dataset_free(&ds);
    return path;
}


static inline void run_options(fl_train_options *o, const char *data, const char *out, FILE *log) {
    fl_train_options_default(o);
    o->data = data;
    o->out = out;
    o->seq = 16;
    o->batch = 2;
    o->grad_accum = 2;
    o->max_steps = 8;
    o->lr = 1e-2;
    o->warmup = 2;
    o->save_every = 4;
    o->eval_every = 4;
    o->eval_frac = 0.1;
    o->rank = 4;
    o->alpha = 8;
    o->dropout = 0.1;
    o->log = log;
}

static inline int run(fl_train_options *o, fl_train_result *res) {
    fl_model m;
    tiny_model(&m, o->dropout);
    fl_rng_fill_uniform(m.lora.data, m.lora.n, fl_rng_stream(9, 9, 9, 9), -0.1f, 0.1f); /* same start every time */
    fl_model_sync_lora(&m);
    int rc = fl_train_run(o, &m, NULL, res);
    fl_model_free(&m);
    return rc;
}

#endif
