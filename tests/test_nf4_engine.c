/* test_nf4_engine.c — QLoRA in the engine: an NF4 frozen base (model/weights.h, the backend's
 * matmul_nf4 ops, engine/model.c) against transformers + bitsandbytes + PEFT.
 *
 * Fixtures (tests/fixtures/nf4/): tiny-nf4 is a tiny Llama saved by transformers + bitsandbytes in
 * 4-bit NF4 with double quantization (tools/make_nf4_fixtures.py), tiny-nf4-logits its logits in
 * transformers (compute dtype bfloat16); tiny-nf4-adapter an adapter fastlora trained on tiny-nf4
 * and tiny-nf4-peft-logits the logits PEFT computes with it on the bitsandbytes model, in f32 and
 * bf16 compute (tools/make_nf4_peft_fixture.py).
 *
 * Tolerances. `cpu` backend vs bitsandbytes with compute dtype float32: both multiply the same f32
 * dequantized values (code · scale) with f32 activations; only summation orders differ (~1e-7
 * relative per op through 2 layers), so 2e-5 absolute on logits of magnitude < 1 (measured 1.5e-7).
 * `cpu-bf16` vs transformers' bf16 model: transformers keeps every activation in bf16 (8 bits: each
 * op's output rounded by up to 2^-9 relative, some ten roundings per layer), fastlora keeps them in
 * f32 with bf16 GEMM operands; 1e-2 absolute on logits up to ~0.6 (measured 2e-3 to 3.5e-3). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/error.h"
#include "common/rng.h"
#include "engine/model.h"
#include "io/file_util.h"
#include "io/safetensors.h"
#include "lora/adapter_io.h"
#include "model/weights.h"
#include "model/weights_nf4.h"
#include "test.h"

#define NF4_DIR "tests/fixtures/nf4/"

static double max_abs_diff(const float *a, const float *b, size_t n) {
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        if (!(d <= worst)) worst = d;   /* NaN wins */
    }
    return worst;
}

/* Logits of model_dir (+ adapter_dir) on ids (B, T) with backend be; NULL (and a failure) on error. */
static float *engine_logits(const char *model_dir, const char *adapter_dir, fl_quant quant, const fl_backend *be,
                            const int32_t *ids, int B, int T) {
    fl_lora_config lc = fl_lora_config_default();
    fl_model m;
    if ((adapter_dir && fl_adapter_load_config(adapter_dir, &lc)) || fl_model_init_dir_quant(&m, model_dir, be, &lc, quant)) {
        fl_test_fail(__FILE__, __LINE__, "%s: %s", model_dir, fl_last_error());
        return NULL;
    }
    float *logits = NULL;
    if (adapter_dir && fl_model_load_adapter(&m, adapter_dir)) {
        fl_test_fail(__FILE__, __LINE__, "%s: %s", adapter_dir, fl_last_error());
    } else {
        CHECK_EQ_INT(m.base.quant, FL_QUANT_NF4);
        logits = malloc(sizeof(float) * (size_t)B * T * m.cfg.vocab_size);
        fl_model_logits(&m, ids, B, T, logits);
    }
    fl_model_free(&m);
    return logits;
}

/* The 4-bit checkpoint as transformers + bitsandbytes compute it (bf16). */
TEST(nf4_engine_logits_match_bitsandbytes) {
    fl_safetensors f;
    CHECK(fl_safetensors_open(&f, NF4_DIR "tiny-nf4-logits.safetensors") == 0);
    const fl_st_tensor *ids = fl_safetensors_find(&f, "input_ids"), *want = fl_safetensors_find(&f, "logits");
    int T = (int)ids->shape[1];
    float *got = engine_logits(NF4_DIR "tiny-nf4", NULL, FL_QUANT_NONE, fl_backend_cpu_bf16(), ids->data, 1, T);
    if (got) {
        double d = max_abs_diff(got, want->data, want->numel);
        CHECK_MSG(d <= 1e-2, "cpu-bf16 NF4 logits vs transformers + bitsandbytes: max |diff| %.3g > 1e-2", d);
    }
    free(got);
    fl_safetensors_close(&f);
}

/* --quant nf4 on the bf16 source quantizes exactly as bitsandbytes did when it saved tiny-nf4: the
 * engine's logits are the same bits either way. */
TEST(nf4_engine_quantize_at_load_equals_prequantized) {
    int32_t ids[10] = {1, 5, 9, 30, 2, 77, 95, 0, 14, 3};
    for (int b = 0; b < 2; b++) {
        const fl_backend *be = b ? fl_backend_cpu_bf16() : fl_backend_cpu();
        float *stored = engine_logits(NF4_DIR "tiny-nf4", NULL, FL_QUANT_NONE, be, ids, 2, 5);
        float *quantized = engine_logits(NF4_DIR "tiny-bf16", NULL, FL_QUANT_NF4, be, ids, 2, 5);
        if (stored && quantized) CHECK_MSG(!memcmp(stored, quantized, sizeof(float) * 10 * 96), "%s: logits differ", be->name);
        free(stored);
        free(quantized);
    }
}

/* fastlora's logits with `adapter` on tiny-nf4 against PEFT's on the bitsandbytes model: f32
 * compute on the `cpu` backend, and (want_bf16 not NULL) bf16 compute on `cpu-bf16`. */
static void check_peft_logits(const char *adapter, const int32_t *ids, int B, int T, const float *want_f32,
                              const float *want_bf16) {
    size_t n = (size_t)B * T * 96;
    for (int b = 0; b < 2; b++) {
        const float *want = b ? want_bf16 : want_f32;
        if (!want) continue;
        const fl_backend *be = b ? fl_backend_cpu_bf16() : fl_backend_cpu();
        double tol = b ? 1e-2 : 2e-5;
        float *got = engine_logits(NF4_DIR "tiny-nf4", adapter, FL_QUANT_NONE, be, ids, B, T);
        if (got) {
            double d = max_abs_diff(got, want, n);
            CHECK_MSG(d <= tol, "%s + %s vs PEFT on bitsandbytes (%s compute): max |diff| %.3g > %g", be->name, adapter,
                      b ? "bf16" : "f32", d, tol);
        }
        free(got);
    }
}

/* The adapter fastlora trained on the 4-bit base, loaded by PEFT on the bitsandbytes model: the same
 * logits (committed fixture; the live version below retrains and reruns PEFT). */
TEST(nf4_engine_adapter_matches_peft_on_bitsandbytes) {
    fl_safetensors f;
    CHECK(fl_safetensors_open(&f, NF4_DIR "tiny-nf4-peft-logits.safetensors") == 0);
    const fl_st_tensor *ids = fl_safetensors_find(&f, "input_ids"), *want = fl_safetensors_find(&f, "logits_f32");
    int B = (int)ids->shape[0], T = (int)ids->shape[1];
    check_peft_logits(NF4_DIR "tiny-nf4-adapter", ids->data, B, T, want->data,
                      fl_safetensors_find(&f, "logits_bf16")->data);
    /* the adapter is not a no-op: without it the logits move by far more than the tolerance */
    float *base = engine_logits(NF4_DIR "tiny-nf4", NULL, FL_QUANT_NONE, fl_backend_cpu(), ids->data, B, T);
    if (base) CHECK(max_abs_diff(base, want->data, want->numel) > 1e-3);
    free(base);
    fl_safetensors_close(&f);
}

/* Little-endian tokens file (docs/TRAINING.md): 12 documents of 30 seeded ids below 96. */
static int write_tokens(const char *path) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    uint64_t n_docs = 12, n_tok = 12 * 30, ends[12];
    for (int d = 0; d < 12; d++) ends[d] = (uint64_t)(d + 1) * 30;
    fwrite("FLTOKv1", 1, 8, f);
    fwrite(&n_docs, 8, 1, f);
    fwrite(&n_tok, 8, 1, f);
    fwrite(ends, 8, 12, f);
    for (uint64_t i = 0; i < n_tok; i++) {
        uint32_t id = (uint32_t)(fl_hash64(0x4e46 + i) % 96);
        fwrite(&id, 4, 1, f);
    }
    return fclose(f);
}

/* Live: train with the CLI on the 4-bit checkpoint, load the adapter with PEFT on bitsandbytes
 * (tools/peft_roundtrip.py, f32 compute), compare. Needs torch, transformers, peft and bitsandbytes
 * (looked up without importing them); skipped without them. */
TEST(nf4_engine_peft_roundtrip_live) {
    const char *bin = getenv("FASTLORA_BIN");
    if (!bin || access(bin, X_OK) != 0) SKIP("FASTLORA_BIN not set");
    if (system("python3 -c \"import importlib.util as u, sys; sys.exit(any(u.find_spec(m) is None for m in "
               "('torch', 'transformers', 'peft', 'bitsandbytes')))\" >/dev/null 2>&1") != 0)
        SKIP("torch, transformers, peft or bitsandbytes not installed");
    char dir[] = "/tmp/fastlora-nf4-peft-XXXXXX", cmd[2048], path[256];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/train.tokens", dir);
    CHECK(write_tokens(path) == 0);
    snprintf(cmd, sizeof cmd, "%s train --model " NF4_DIR "tiny-nf4 --data %s --out %s/run --seq 16 --batch 4 "
             "--max-steps 8 --lr 1e-2 --rank 4 --alpha 8 --dtype f32 --device cpu --save-every 0 --eval-every 0 "
             ">%s/log.txt 2>&1", bin, path, dir, dir);
    int rc = system(cmd);
    CHECK_MSG(rc == 0, "%s failed (see %s/log.txt)", cmd, dir);
    int32_t ids[24];
    for (int i = 0; i < 24; i++) ids[i] = (int32_t)(fl_hash64(0x1d5 + (uint64_t)i) % 96);
    fl_st_write_tensor t = {.name = "input_ids", .dtype = FL_I32, .ndim = 2, .shape = {2, 12}, .data = ids};
    snprintf(path, sizeof path, "%s/ids.safetensors", dir);
    if (!rc) rc = fl_safetensors_write(path, &t, 1, NULL, 0);
    if (!rc) {
        snprintf(cmd, sizeof cmd, "python3 tools/peft_roundtrip.py --model " NF4_DIR "tiny-nf4 --adapter %s/run --ids %s "
                 "--out %s/peft.safetensors --bnb-compute float32 --threads 1 >>%s/log.txt 2>&1", dir, path, dir, dir);
        rc = system(cmd);
        CHECK_MSG(rc == 0, "%s failed (see %s/log.txt)", cmd, dir);
    }
    fl_safetensors f;
    snprintf(path, sizeof path, "%s/peft.safetensors", dir);
    if (!rc && fl_safetensors_open(&f, path) == 0) {
        char adapter[256];
        snprintf(adapter, sizeof adapter, "%s/run", dir);
        check_peft_logits(adapter, ids, 2, 12, fl_safetensors_find(&f, "logits")->data, NULL);
        fl_safetensors_close(&f);
    }
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (!rc && system(cmd) != 0) fl_test_fail(__FILE__, __LINE__, "cannot remove %s", dir);
}

/* `fastlora merge` on the 4-bit base (the documented choice, docs/QUANT.md): a float model whose weights are
 * the dequantized NF4 plus the adapter, rounded once to bf16; its logits equal the NF4 model's with
 * the adapter to bf16 weight rounding (2^-9 relative per weight: 1e-2 absolute on logits < 1,
 * measured 3.7e-3). --out may not be the model folder, even with --force, nor be reached from a
 * file of it through a link; a killed merge's intermediate folder is removed by the next one. */
TEST(nf4_engine_merge_cli_dequantizes) {
    const char *bin = getenv("FASTLORA_BIN");
    if (!bin || access(bin, X_OK) != 0) SKIP("FASTLORA_BIN not set");
    char dir[] = "/tmp/fastlora-nf4-merge-XXXXXX", cmd[1024], path[256];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(cmd, sizeof cmd, "%s merge --model " NF4_DIR "tiny-nf4 --adapter " NF4_DIR "tiny-nf4-adapter --out %s/merged "
             ">%s/out.txt 2>&1", bin, dir, dir);
    CHECK_EQ_INT(system(cmd), 0);
    snprintf(path, sizeof path, "%s/out.txt", dir);
    char *text = NULL;
    size_t len = 0;
    CHECK(fl_file_read_all(path, FL_FILE_CONFIG, &text, &len) == 0);
    CHECK_STR_CONTAINS(text, "NF4 base");
    free(text);
    snprintf(path, sizeof path, "%s/merged/config.json", dir);
    CHECK(fl_file_read_all(path, FL_FILE_CONFIG, &text, &len) == 0);
    CHECK(text && !strstr(text, "quantization_config"));
    free(text);
    int32_t ids[10] = {4, 8, 15, 16, 23, 42, 7, 77, 1, 60};
    float *nf4 = engine_logits(NF4_DIR "tiny-nf4", NF4_DIR "tiny-nf4-adapter", FL_QUANT_NONE, fl_backend_cpu(), ids, 2, 5);
    fl_lora_config lc = fl_lora_config_default();
    fl_model m;
    snprintf(path, sizeof path, "%s/merged", dir);
    CHECK(fl_model_init_dir(&m, path, fl_backend_cpu(), &lc) == 0);
    CHECK_EQ_INT(m.base.quant, FL_QUANT_NONE);
    float *merged = malloc(sizeof(float) * 10 * 96);
    fl_model_logits(&m, ids, 2, 5, merged);
    if (nf4) {
        double d = max_abs_diff(merged, nf4, 10 * 96);
        CHECK_MSG(d <= 1e-2, "merged float model vs NF4 + adapter: max |diff| %.3g > 1e-2", d);
    }
    fl_model_free(&m);
    free(nf4);
    free(merged);
    /* --out is the (4-bit) model folder: refused before anything is written */
    snprintf(cmd, sizeof cmd, "cp -r " NF4_DIR "tiny-nf4 %s/model && %s merge --model %s/model --adapter " NF4_DIR
             "tiny-nf4-adapter --out %s/model/ --force >%s/out.txt 2>&1", dir, bin, dir, dir, dir);
    int rc = system(cmd);
    CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 2);
    snprintf(path, sizeof path, "%s/out.txt", dir);
    CHECK(fl_file_read_all(path, FL_FILE_CONFIG, &text, &len) == 0);
    CHECK_STR_CONTAINS(text, "is the model folder");
    free(text);
    /* the 4-bit weights reached through a link into --out: refused, the file it points at untouched */
    snprintf(cmd, sizeof cmd, "mkdir %s/out2 && cp " NF4_DIR "tiny-nf4/model.safetensors %s/out2/ && cp -r " NF4_DIR
             "tiny-nf4 %s/model2 && ln -sf ../out2/model.safetensors %s/model2/model.safetensors && %s merge --model "
             "%s/model2 --adapter " NF4_DIR "tiny-nf4-adapter --out %s/out2 --force >%s/out.txt 2>&1",
             dir, dir, dir, dir, bin, dir, dir, dir);
    rc = system(cmd);
    CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 2);
    CHECK(fl_file_read_all(path, FL_FILE_CONFIG, &text, &len) == 0);
    CHECK_STR_CONTAINS(text, "(through a link)");
    free(text);
    snprintf(cmd, sizeof cmd, "cmp -s " NF4_DIR "tiny-nf4/model.safetensors %s/out2/model.safetensors", dir);
    CHECK_EQ_INT(system(cmd), 0);
    /* a killed merge's intermediate folder (a pid no longer running) is removed by the next merge */
    pid_t dead = fork();
    if (dead == 0) _exit(0);
    waitpid(dead, NULL, 0);
    snprintf(cmd, sizeof cmd, "mkdir %s/merged3.nf4-dequantized.%d && %s merge --model " NF4_DIR "tiny-nf4 --adapter "
             NF4_DIR "tiny-nf4-adapter --out %s/merged3 >%s/out.txt 2>&1", dir, (int)dead, bin, dir, dir);
    CHECK_EQ_INT(system(cmd), 0);
    CHECK(fl_file_read_all(path, FL_FILE_CONFIG, &text, &len) == 0);
    CHECK_STR_CONTAINS(text, "no longer running");
    free(text);
    snprintf(path, sizeof path, "%s/merged3.nf4-dequantized.%d", dir, (int)dead);
    CHECK(access(path, F_OK) != 0);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK_EQ_INT(system(cmd), 0);
}

/* An NF4 group (q/k/v, gate/up) runs its members' frozen products alone with their LoRA B product
 * at beta = 1 and one stacked x·Aᵀ GEMM; every projection alone (m->fused = 0) must agree: the
 * loss and every LoRA gradient, with dropout (per-member masks), on the f32 backend to 1e-5
 * relative (summation order only, as test_fused.c). */
TEST(nf4_engine_fused_groups_match_unfused) {
    fl_lora_config lc = fl_lora_config_default();
    CHECK(fl_adapter_load_config(NF4_DIR "tiny-nf4-adapter", &lc) == 0);
    lc.dropout = 0.2f;
    fl_model a, b;
    CHECK(fl_model_init_dir(&a, NF4_DIR "tiny-nf4", fl_backend_cpu(), &lc) == 0);
    CHECK(fl_model_init_dir(&b, NF4_DIR "tiny-nf4", fl_backend_cpu(), &lc) == 0);
    CHECK(fl_model_load_adapter(&a, NF4_DIR "tiny-nf4-adapter") == 0 && fl_model_load_adapter(&b, NF4_DIR "tiny-nf4-adapter") == 0);
    b.fused = 0;
    int32_t ids[16], targets[16];
    for (int i = 0; i < 16; i++) {
        ids[i] = (int32_t)(fl_hash64(77 + (uint64_t)i) % 96);
        targets[i] = (int32_t)(fl_hash64(99 + (uint64_t)i) % 96);
    }
    fl_batch batch = {.B = 2, .T = 8, .ids = ids, .targets = targets};
    fl_step_stats sa = fl_model_forward(&a, &batch, 0.0f), sb = fl_model_forward(&b, &batch, 0.0f);
    fl_model_backward(&a);
    fl_model_backward(&b);
    CHECK_CLOSE(sa.loss, sb.loss, 0, 1e-6);
    double num = 0, den = 0;
    for (size_t i = 0; i < a.grads.n; i++) {
        num += ((double)a.grads.data[i] - b.grads.data[i]) * ((double)a.grads.data[i] - b.grads.data[i]);
        den += (double)b.grads.data[i] * b.grads.data[i];
    }
    CHECK_MSG(den > 0 && sqrt(num / den) < 1e-5, "fused vs unfused NF4 gradients: relative L2 %.3g", sqrt(num / den));
    fl_model_free(&a);
    fl_model_free(&b);
}

/* Bad input: a 4-bit checkpoint with one projection stored in float (a module bitsandbytes was told
 * to skip) is an error naming the tensor, unless --quant nf4 asks to quantize it; an unknown
 * --quant is one line naming the flag. */
TEST(nf4_engine_bad_input_float_projection_in_4bit_checkpoint) {
    char dir[] = "/tmp/fastlora-nf4-bad-XXXXXX", path[256], cmd[512];
    CHECK(mkdtemp(dir) != NULL);
    fl_safetensors src;
    CHECK(fl_safetensors_open(&src, NF4_DIR "tiny-nf4/model.safetensors") == 0);
    const char *victim = "model.layers.1.mlp.down_proj.weight";
    fl_st_write_tensor *out = calloc((size_t)src.n_tensors + 1, sizeof *out);
    uint16_t *dense = calloc(64 * 128, sizeof(uint16_t));
    for (int i = 0; i < 64 * 128; i++) dense[i] = fl_f32_to_bf16(0.01f * (float)((i % 13) - 6));
    int n = 0;
    for (int i = 0; i < src.n_tensors; i++) {
        const fl_st_tensor *t = &src.tensors[i];
        if (!strncmp(t->name, victim, strlen(victim)) && strcmp(t->name, victim)) continue;   /* its companions */
        out[n] = (fl_st_write_tensor){.name = t->name, .dtype = t->dtype, .ndim = t->ndim, .data = t->data};
        memcpy(out[n].shape, t->shape, sizeof t->shape);
        if (!strcmp(t->name, victim))
            out[n] = (fl_st_write_tensor){.name = victim, .dtype = FL_BF16, .ndim = 2, .shape = {64, 128}, .data = dense};
        n++;
    }
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    const char *meta[] = {"format", "pt"};
    CHECK(fl_safetensors_write(path, out, n, meta, 1) == 0);
    fl_safetensors_close(&src);
    free(out);
    free(dense);
    snprintf(cmd, sizeof cmd, "cp " NF4_DIR "tiny-nf4/config.json %s/", dir);
    CHECK_EQ_INT(system(cmd), 0);
    fl_lora_config lc = fl_lora_config_default();
    fl_model m;
    CHECK(fl_model_init_dir(&m, dir, fl_backend_cpu(), &lc) == FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), victim);
    CHECK_STR_CONTAINS(fl_last_error(), "not NF4");
    fl_clear_error();
    CHECK(fl_model_init_dir_quant(&m, dir, fl_backend_cpu(), &lc, FL_QUANT_NF4) == 0);
    CHECK(m.base.nf4[1 * FL_N_PROJ + FL_PROJ_DOWN].rows == 64);
    fl_model_free(&m);
    fl_quant q;
    CHECK(fl_quant_parse("int4", &q) == FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "--quant: 'int4' (expected nf4 or none)");
    fl_clear_error();
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK_EQ_INT(system(cmd), 0);
}

/* A 4-bit checkpoint without double quantization (BitsAndBytesConfig(bnb_4bit_use_double_quant=False):
 * config.json says false; each projection has F32 `.absmax` (n_blocks), `.quant_map` and a JSON without
 * the nested fields — the layout bitsandbytes 0.50 saves, checked on a real save) loads into the engine.
 * It is made here from the 4-bit folder `from` with each block's f32 scale as its absmax, so its
 * dequantized weights, and the logits, equal those of `from` bit for bit. The engine used to size every
 * NF4 slot for double quantization and refused any projection of more than ~340 blocks, where f32 absmax
 * outweighs the codes plus the 1 KB dynamic map (tiny-f32-nf4's gate: "NF4 without double quantization
 * takes 18432 bytes where 17984 were planned"). */
static int write_without_double_quant(const char *dir, const char *from, const fl_model_config *cfg) {
    fl_nf4_layer layers[2];
    char path_in[256];
    int status = cfg->n_layers == 2 ? 0 : fl_input_error("%s has %d layers (expected 2)", from, cfg->n_layers);
    for (int l = 0; l < 2 && !status; l++) status = fl_nf4_load_layer(&layers[l], from, cfg, l, FL_NF4_STORED);
    fl_safetensors src;
    snprintf(path_in, sizeof path_in, "%s/model.safetensors", from);
    if (!status) status = fl_safetensors_open(&src, path_in);
    if (status) return status;
    fl_st_write_tensor *out = calloc((size_t)src.n_tensors, sizeof *out);
    char (*json)[160] = calloc(2 * FL_N_PROJ, sizeof *json);
    float *scales[2 * FL_N_PROJ] = {0};
    int n = 0;
    for (int i = 0; i < src.n_tensors; i++) {
        const fl_st_tensor *t = &src.tensors[i];
        if (strstr(t->name, ".nested_")) continue;   /* nested_absmax, nested_quant_map */
        out[n] = (fl_st_write_tensor){.name = t->name, .dtype = t->dtype, .ndim = t->ndim, .data = t->data};
        memcpy(out[n].shape, t->shape, sizeof t->shape);
        for (int l = 0; l < 2; l++)
            for (int p = 0; p < FL_N_PROJ; p++) {
                char base[128];
                const fl_nf4_weight *w = &layers[l].proj[p];
                int k = l * FL_N_PROJ + p, len = snprintf(base, sizeof base, "model.layers.%d.%s.weight.", l, fl_proj_modules[p]);
                if (strncmp(t->name, base, (size_t)len)) continue;
                if (!strcmp(t->name + len, "absmax")) {
                    scales[k] = malloc(sizeof(float) * (size_t)w->n_blocks);
                    fl_nf4_block_scales(w, scales[k]);
                    out[n] = (fl_st_write_tensor){.name = t->name, .dtype = FL_F32, .ndim = 1, .shape = {w->n_blocks},
                                                  .data = scales[k]};
                } else if (!strcmp(t->name + len, "quant_state.bitsandbytes__nf4")) {
                    snprintf(json[k], sizeof json[k], "{\"quant_type\": \"nf4\", \"blocksize\": 64, \"dtype\": "
                             "\"%s\", \"shape\": [%lld, %lld]}", w->dtype == FL_F32 ? "float32" : "bfloat16",
                             (long long)w->rows, (long long)w->cols);
                    out[n].shape[0] = (int64_t)strlen(json[k]);
                    out[n].data = json[k];
                }
            }
        n++;
    }
    /* F32 tensors first, U8 after them, so every F32 tensor is 4-byte aligned as in Python's files */
    fl_st_write_tensor *ordered = calloc((size_t)n, sizeof *ordered);
    int at = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < n; i++)
            if ((out[i].dtype == FL_U8) == pass) ordered[at++] = out[i];
    char *path = fl_path_join(dir, "model.safetensors");
    const char *meta[] = {"format", "pt"};
    status = fl_safetensors_write(path, ordered, n, meta, 1);
    free(path);
    free(ordered);
    json_t *root = NULL;
    snprintf(path_in, sizeof path_in, "%s/config.json", from);
    if (!status) status = fl_file_load_json(path_in, FL_FILE_CONFIG, 0, &root);
    if (!status) {
        json_object_set_new(json_object_get(root, "quantization_config"), "bnb_4bit_use_double_quant", json_false());
        char *text = json_dumps(root, JSON_INDENT(2));
        path = fl_path_join(dir, "config.json");
        status = fl_write_file_atomic(path, text, strlen(text));
        free(path);
        free(text);
        json_decref(root);
    }
    for (int k = 0; k < 2 * FL_N_PROJ; k++) free(scales[k]);
    free(json);
    free(out);
    fl_safetensors_close(&src);
    for (int l = 0; l < 2; l++) fl_nf4_layer_free(&layers[l]);
    return status;
}

TEST(nf4_engine_checkpoint_without_double_quant) {
    fl_model_config cfg;
    if (fl_config_load(&cfg, NF4_DIR "tiny-f32-nf4/config.json")) SKIP("no tiny-f32-nf4 fixture");
    char dir[] = "/tmp/fastlora-nf4-nodq-XXXXXX", cmd[128];
    CHECK(mkdtemp(dir) != NULL);
    int status = write_without_double_quant(dir, NF4_DIR "tiny-f32-nf4", &cfg);
    CHECK_MSG(status == 0, "%s", fl_last_error());
    fl_quant_config qc;
    char *config = fl_path_join(dir, "config.json");
    CHECK(!status && fl_quant_config_load(&qc, config) == 0 && qc.nf4 && !qc.double_quant);
    free(config);
    int32_t ids[10] = {3, 14, 15, 92, 65, 35, 89, 79, 32, 38};
    for (int b = 0; !status && b < 2; b++) {
        const fl_backend *be = b ? fl_backend_cpu_bf16() : fl_backend_cpu();
        float *want = engine_logits(NF4_DIR "tiny-f32-nf4", NULL, FL_QUANT_NONE, be, ids, 2, 5);
        float *got = engine_logits(dir, NULL, FL_QUANT_NONE, be, ids, 2, 5);
        if (want && got) CHECK_MSG(!memcmp(want, got, sizeof(float) * 10 * 96), "%s: logits differ", be->name);
        free(want);
        free(got);
    }
    fl_lora_config lc = fl_lora_config_default();
    fl_model m;
    if (!status && fl_model_init_dir(&m, dir, fl_backend_cpu(), &lc) == 0) {
        CHECK(!m.base.nf4[0].double_quant && m.base.nf4[0].absmax != NULL);
        fl_model_free(&m);
    }
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK_EQ_INT(system(cmd), 0);
}
