/* test_nf4_f32.c — a float32 model saved in 4 bits by transformers + bitsandbytes (issue 21 §2):
 * the pre-quantized folder against fastlora's quantize-at-load of its f32 source, and both against
 * transformers.
 *
 * Fixtures (tools/make_nf4_fixtures.py --only f32): tests/fixtures/nf4/tiny-f32-nf4 is a Llama in f32
 * (hidden 128, FF 256, 2 layers, 4 heads, 2 KV heads, V 96) loaded with BitsAndBytesConfig(load_in_4bit,
 * nf4, double quant, compute float32) on the CPU and saved with save_pretrained before any forward;
 * tiny-f32-nf4-logits holds transformers' logits and eval loss on the reloaded folder in training mode
 * (bitsandbytes' f32 dequantize-then-matmul path). The f32 source (0.8 MB) is not committed: each of its
 * weights is a formula of the tensor name and element index (source_value, mirrored from the script's
 * f32_source_tensor), so write_source_folder rebuilds the exact values bitsandbytes quantized; the float
 * tensors the 4-bit folder stores as they were (embeddings, norms, LM head) must equal them bit for bit,
 * which checks the mirror.
 *
 * Claims: the stored NF4 arrays and their f32 dequantization equal quantize-at-load bit for bit, so the
 * two folders give the same logits and eval loss bit for bit on either CPU backend and through the CLI;
 * those equal transformers' to f32 rounding.
 *
 * Tolerance (`cpu` backend vs transformers, both f32 on the same dequantized weights code·scale): only the
 * order of f32 sums and the transcendental functions differ. A dot product of K ≤ 256 terms in another
 * order moves by ~√K·2^-24 of its magnitude (~1e-6 relative); through the ~10 such ops of 2 layers
 * and the LM head (K = 128, |logit| ≤ 1.52 here) that stays within ~1e-5 relative, so 1e-5 absolute on
 * the logits (measured 1.0e-6). The loss is an average of logsumexp(z) − z_target, each term moving by at
 * most 2·max|Δz|: 2e-5 absolute (measured 4.6e-7, 1.0e-7 relative, part of it transformers' own f32
 * mean). The CLI prints the eval loss with 6 decimals: +5e-7.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"
#include "common/rng.h"
#include "engine/model.h"
#include "io/file_util.h"
#include "io/safetensors.h"
#include "model/config.h"
#include "model/weights_nf4.h"
#include "test.h"

#define NF4_DIR "tests/fixtures/nf4/"
#define F32_NF4 NF4_DIR "tiny-f32-nf4"
#define LOGIT_TOL 1e-5
#define LOSS_TOL 2e-5

/* ---- the f32 source ------------------------------------------------------------------------------ */

static uint64_t fnv1a64(const char *s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
    return h;
}

/* Element i (row-major) of the source tensor `name` with `cols` columns (0: a vector): u in [0, 1) with 24
 * random bits; a norm weight is 1 + (u − 1/2)/4, a matrix row r is (u − 1/2)·2^-(3 + r % 5). */
static float source_value(uint64_t stream, int64_t i, int64_t cols) {
    float c = fl_rng_uniform(stream, (uint64_t)i) - 0.5f;
    if (!cols) return 1.0f + c * 0.25f;
    return c * ldexpf(1.0f, -(3 + (int)((i / cols) % 5)));
}

typedef struct {
    char name[96];
    int64_t rows, cols;   /* cols 0: a vector of rows values */
} source_tensor;

/* The HF tensors of a Llama config, in the order the safetensors file lists them (any order works). */
static int source_tensors(const fl_model_config *c, source_tensor *t) {
    int n = 0;
    int64_t C = c->hidden_size, QD = fl_config_q_dim(c), KVD = fl_config_kv_dim(c), FF = c->intermediate_size;
    #define ADD(r, cl, ...) do { snprintf(t[n].name, sizeof t[n].name, __VA_ARGS__); t[n].rows = (r); t[n].cols = (cl); n++; } while (0)
    ADD(c->vocab_size, C, "model.embed_tokens.weight");
    ADD(c->vocab_size, C, "lm_head.weight");
    ADD(C, 0, "model.norm.weight");
    for (int l = 0; l < c->n_layers; l++) {
        ADD(C, 0, "model.layers.%d.input_layernorm.weight", l);
        ADD(C, 0, "model.layers.%d.post_attention_layernorm.weight", l);
        ADD(QD, C, "model.layers.%d.self_attn.q_proj.weight", l);
        ADD(KVD, C, "model.layers.%d.self_attn.k_proj.weight", l);
        ADD(KVD, C, "model.layers.%d.self_attn.v_proj.weight", l);
        ADD(C, QD, "model.layers.%d.self_attn.o_proj.weight", l);
        ADD(FF, C, "model.layers.%d.mlp.gate_proj.weight", l);
        ADD(FF, C, "model.layers.%d.mlp.up_proj.weight", l);
        ADD(C, FF, "model.layers.%d.mlp.down_proj.weight", l);
    }
    #undef ADD
    return n;
}

/* dir/config.json (the 4-bit folder's without quantization_config: the script checked that this is the
 * source's) and dir/model.safetensors with the source values. */
static int write_source_folder(const char *dir, fl_model_config *cfg) {
    FL_TRY(fl_config_load(cfg, F32_NF4 "/config.json"));
    json_t *root;
    FL_TRY(fl_file_load_json(F32_NF4 "/config.json", FL_FILE_CONFIG, 0, &root));
    json_object_del(root, "quantization_config");
    char *text = json_dumps(root, JSON_INDENT(2) | JSON_SORT_KEYS);
    json_decref(root);
    char *path = fl_path_join(dir, "config.json");
    int status = fl_write_file_atomic(path, text, strlen(text));
    free(path);
    free(text);
    source_tensor t[3 + 9 * 8];
    if (!status && cfg->n_layers > 8) status = fl_input_error("%s: more layers than the test expects", F32_NF4);
    int n = status ? 0 : source_tensors(cfg, t);
    fl_st_write_tensor w[3 + 9 * 8];
    for (int i = 0; i < n; i++) {
        int64_t count = t[i].rows * (t[i].cols ? t[i].cols : 1);
        float *v = malloc(sizeof(float) * (size_t)count);
        uint64_t stream = fl_hash64(fnv1a64(t[i].name));
        for (int64_t e = 0; e < count; e++) v[e] = source_value(stream, e, t[i].cols);
        w[i] = (fl_st_write_tensor){.name = t[i].name, .dtype = FL_F32, .ndim = t[i].cols ? 2 : 1,
                                    .shape = {t[i].rows, t[i].cols}, .data = v};
    }
    const char *meta[] = {"format", "pt"};
    path = fl_path_join(dir, "model.safetensors");
    if (!status) status = fl_safetensors_write(path, w, n, meta, 1);
    free(path);
    for (int i = 0; i < n; i++) free((void *)w[i].data);
    return status;
}

/* A fresh folder holding the source, or NULL (and a failure). */
static char *make_source(fl_model_config *cfg) {
    static char dir[64];
    snprintf(dir, sizeof dir, "/tmp/fastlora-nf4f32-XXXXXX");
    if (!mkdtemp(dir) || write_source_folder(dir, cfg)) {
        fl_test_fail(__FILE__, __LINE__, "cannot write the f32 source: %s", fl_last_error());
        return NULL;
    }
    return dir;
}

static void remove_dir(const char *dir) {
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK_EQ_INT(system(cmd), 0);
}

/* ---- bit for bit: the stored NF4 arrays and the float tensors ------------------------------------ */

static int same_nf4(const fl_nf4_weight *a, const fl_nf4_weight *b) {
    if (a->rows != b->rows || a->cols != b->cols || a->dtype != b->dtype || a->double_quant != b->double_quant ||
        !a->double_quant)
        return 0;
    return !memcmp(a->packed, b->packed, (size_t)(a->rows * a->cols + 1) / 2) &&
           !memcmp(a->absmax_q, b->absmax_q, (size_t)a->n_blocks) &&
           !memcmp(a->nested_absmax, b->nested_absmax, (size_t)a->n_groups * 4) &&
           !memcmp(a->nested_map, b->nested_map, 256 * 4) && !memcmp(&a->offset, &b->offset, 4);
}

static int same_dequantized(const fl_nf4_weight *a, const fl_nf4_weight *b) {
    size_t n = (size_t)(a->rows * a->cols);
    float *x = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float));
    fl_nf4_dequantize(a, x, FL_F32);
    fl_nf4_dequantize(b, y, FL_F32);
    int same = !memcmp(x, y, n * sizeof(float));
    free(x);
    free(y);
    return same;
}

TEST(nf4_f32_checkpoint_equals_quantize_at_load) {
    if (!fl_file_exists(F32_NF4 "/model.safetensors")) SKIP("no tiny-f32-nf4 fixture");
    fl_model_config cfg, cfg4;
    char *src = make_source(&cfg);
    if (!src) return;
    /* what config.json says: an f32 model, NF4 with double quantization and f32 compute */
    fl_quant_config qc;
    CHECK_EQ_INT(fl_quant_config_load(&qc, F32_NF4 "/config.json"), 0);
    CHECK(qc.nf4 && qc.double_quant && qc.compute_dtype == FL_F32);
    CHECK_EQ_INT(fl_config_load(&cfg4, F32_NF4 "/config.json"), 0);
    CHECK(cfg.dtype == FL_F32 && cfg4.dtype == FL_F32 && cfg4.hidden_size == 128 && cfg4.n_layers == 2);
    for (int l = 0; l < cfg.n_layers; l++) {
        fl_nf4_layer stored, ours;
        int s1 = fl_nf4_load_layer(&stored, F32_NF4, &cfg, l, FL_NF4_STORED);
        CHECK_MSG(s1 == 0, "%s", fl_last_error());
        int s2 = fl_nf4_load_layer(&ours, src, &cfg, l, FL_NF4_QUANTIZE);
        CHECK_MSG(s2 == 0, "%s", fl_last_error());
        if (s1 || s2) break;
        for (int p = 0; p < FL_N_PROJ; p++) {
            CHECK_MSG(stored.proj[p].dtype == FL_F32, "layer %d %s: quant_state dtype is not float32", l, fl_proj_names[p]);
            CHECK_MSG(same_nf4(&stored.proj[p], &ours.proj[p]), "layer %d %s: NF4 arrays differ", l, fl_proj_names[p]);
            CHECK_MSG(same_dequantized(&stored.proj[p], &ours.proj[p]), "layer %d %s: dequantized f32 differs", l,
                      fl_proj_names[p]);
        }
        /* gate, up and down have 512 blocks: two nested groups */
        CHECK_EQ_INT(stored.proj[FL_PROJ_DOWN].n_groups, 2);
        fl_nf4_layer_free(&stored);
        fl_nf4_layer_free(&ours);
    }
    /* the tensors that stay float: stored as F32 with the source's bits */
    fl_safetensors a, b;
    char *path = fl_path_join(src, "model.safetensors");
    CHECK_EQ_INT(fl_safetensors_open(&a, F32_NF4 "/model.safetensors"), 0);
    CHECK_EQ_INT(fl_safetensors_open(&b, path), 0);
    int floats = 0;
    for (int i = 0; i < b.n_tensors; i++) {
        const fl_st_tensor *want = &b.tensors[i], *got = fl_safetensors_find(&a, want->name);
        if (strstr(want->name, "_proj.")) continue;
        floats++;
        CHECK_MSG(got && got->dtype == FL_F32 && got->nbytes == want->nbytes && !memcmp(got->data, want->data, want->nbytes),
                  "%s: the 4-bit folder's tensor is not the f32 source's", want->name);
    }
    CHECK_EQ_INT(floats, 3 + 2 * cfg.n_layers);
    fl_safetensors_close(&a);
    fl_safetensors_close(&b);
    free(path);
    remove_dir(src);
}

/* ---- the engine: logits and eval loss ---------------------------------------------------------------- */

typedef struct {
    float *logits;   /* (2, 16, V) */
    double eval_loss;
} engine_out;

static int run_engine(const char *dir, fl_quant quant, const fl_backend *be, const fl_st_tensor *ids,
                      const fl_st_tensor *eval_ids, engine_out *out) {
    fl_lora_config lc = fl_lora_config_default();
    fl_model m;
    if (fl_model_init_dir_quant(&m, dir, be, &lc, quant)) {
        fl_test_fail(__FILE__, __LINE__, "%s: %s", dir, fl_last_error());
        return -1;
    }
    CHECK_EQ_INT(m.base.quant, FL_QUANT_NF4);
    int B = (int)ids->shape[0], T = (int)ids->shape[1];
    out->logits = malloc(sizeof(float) * (size_t)B * T * m.cfg.vocab_size);
    fl_model_logits(&m, ids->data, B, T, out->logits);
    /* eval rows (8, 33): inputs 0..31, targets 1..32, as fastlora train --truncate --seq 32 makes them */
    int EB = (int)eval_ids->shape[0], ET = (int)eval_ids->shape[1] - 1;
    int32_t *in = malloc(sizeof(int32_t) * (size_t)EB * ET), *tg = malloc(sizeof(int32_t) * (size_t)EB * ET);
    const int32_t *e = eval_ids->data;
    for (int r = 0; r < EB; r++)
        for (int t = 0; t < ET; t++) {
            in[r * ET + t] = e[r * (ET + 1) + t];
            tg[r * ET + t] = e[r * (ET + 1) + t + 1];
        }
    fl_batch batch = {.B = EB, .T = ET, .ids = in, .targets = tg};
    out->eval_loss = fl_model_eval_loss(&m, &batch).loss;
    free(in);
    free(tg);
    fl_model_free(&m);
    return 0;
}

static double max_abs_diff(const float *a, const float *b, size_t n) {
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        if (!(d <= worst)) worst = d;   /* NaN wins */
    }
    return worst;
}

TEST(nf4_f32_engine_prequantized_equals_quantize_at_load_and_transformers) {
    fl_safetensors f;
    if (fl_safetensors_open(&f, NF4_DIR "tiny-f32-nf4-logits.safetensors")) SKIP("no tiny-f32-nf4 fixture");
    const fl_st_tensor *ids = fl_safetensors_find(&f, "input_ids"), *want = fl_safetensors_find(&f, "logits");
    const fl_st_tensor *eval_ids = fl_safetensors_find(&f, "eval_ids"), *eval_loss = fl_safetensors_find(&f, "eval_loss");
    CHECK(ids && want && eval_ids && eval_loss);
    fl_model_config cfg;
    char *src = ids && want && eval_ids && eval_loss ? make_source(&cfg) : NULL;
    for (int b = 0; src && b < 2; b++) {
        const fl_backend *be = b ? fl_backend_cpu_bf16() : fl_backend_cpu();
        engine_out stored = {0}, quantized = {0};
        if (!run_engine(F32_NF4, FL_QUANT_NONE, be, ids, eval_ids, &stored) &&
            !run_engine(src, FL_QUANT_NF4, be, ids, eval_ids, &quantized)) {
            CHECK_MSG(!memcmp(stored.logits, quantized.logits, want->nbytes), "%s: logits differ between the folders",
                      be->name);
            CHECK_MSG(stored.eval_loss == quantized.eval_loss, "%s: eval loss %.9f (4-bit folder) vs %.9f (f32 folder)",
                      be->name, stored.eval_loss, quantized.eval_loss);
            if (!b) {   /* f32 compute: transformers + bitsandbytes to f32 rounding (header) */
                double d = max_abs_diff(stored.logits, want->data, want->numel);
                CHECK_MSG(d <= LOGIT_TOL, "logits vs transformers: max |diff| %.3g > %g", d, LOGIT_TOL);
                CHECK_CLOSE(stored.eval_loss, ((const float *)eval_loss->data)[0], LOSS_TOL, 0);
            }
        }
        free(stored.logits);
        free(quantized.logits);
    }
    if (src) remove_dir(src);
    fl_safetensors_close(&f);
}

/* ---- the CLI, as the issue ran it ---------------------------------------------------------------- */

/* The eval rows as a fastlora tokens file (docs/TRAINING.md): one document per row. */
static int write_tokens(const char *path, const fl_st_tensor *rows) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    uint64_t n_docs = (uint64_t)rows->shape[0], len = (uint64_t)rows->shape[1], n_tok = n_docs * len;
    fwrite("FLTOKv1", 1, 8, f);
    fwrite(&n_docs, 8, 1, f);
    fwrite(&n_tok, 8, 1, f);
    for (uint64_t d = 1; d <= n_docs; d++) {
        uint64_t end = d * len;
        fwrite(&end, 8, 1, f);
    }
    const int32_t *ids = rows->data;
    for (uint64_t i = 0; i < n_tok; i++) {
        uint32_t id = (uint32_t)ids[i];
        fwrite(&id, 4, 1, f);
    }
    return fclose(f);
}

/* The first eval_loss line of run/metrics.jsonl, or NAN. */
static double first_eval_loss(const char *run, char *line, size_t cap) {
    char path[256];
    snprintf(path, sizeof path, "%s/metrics.jsonl", run);
    FILE *f = fopen(path, "r");
    line[0] = 0;
    double loss = NAN;
    while (f && fgets(line, (int)cap, f)) {
        const char *p = strstr(line, "\"eval_loss\": ");
        if (p) { loss = strtod(p + 13, NULL); break; }
    }
    if (f) fclose(f);
    return loss;
}

TEST(nf4_f32_cli_eval_loss_both_folders) {
    if (!fl_test_bin()) SKIP("FASTLORA_BIN not set");
    fl_safetensors f;
    if (fl_safetensors_open(&f, NF4_DIR "tiny-f32-nf4-logits.safetensors")) SKIP("no tiny-f32-nf4 fixture");
    const fl_st_tensor *eval_ids = fl_safetensors_find(&f, "eval_ids");
    double want = ((const float *)fl_safetensors_find(&f, "eval_loss")->data)[0];
    fl_model_config cfg;
    char *src = make_source(&cfg);
    char data[128], out[4096], line[2][256], run[2][128];
    if (src) {
        snprintf(data, sizeof data, "%s/eval.tokens", src);
        CHECK_EQ_INT(write_tokens(data, eval_ids), 0);
    }
    double loss[2] = {NAN, NAN};
    for (int i = 0; src && i < 2; i++) {
        snprintf(run[i], sizeof run[i], "%s/run%d", src, i);
        int rc = fl_test_run_cli(out, sizeof out,
                                 "train --model %s --data %s --eval-data %s --out %s --seq 32 --batch 8 --max-steps 1 "
                                 "--lr 0 --no-shuffle --no-packing --truncate --quant nf4 --dtype f32 --device cpu "
                                 "--save-every 0", i ? src : F32_NF4, data, data, run[i]);
        CHECK_MSG(rc == 0, "train on %s: exit %d: %s", i ? src : F32_NF4, rc, out);
        loss[i] = first_eval_loss(run[i], line[i], sizeof line[i]);
    }
    if (src) {
        CHECK_MSG(!strcmp(line[0], line[1]), "eval lines differ: 4-bit folder %s f32 folder %s", line[0], line[1]);
        CHECK_STR_CONTAINS(line[0], "\"eval_tokens\": 256");
        CHECK_CLOSE(loss[0], want, LOSS_TOL + 5e-7, 0);
        remove_dir(src);
    }
    fl_safetensors_close(&f);
}
