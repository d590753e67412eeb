/* test_nf4_phi3.c — QLoRA on Phi-3's fused modules: self_attn.qkv_proj and mlp.gate_up_proj each held as
 * ONE NF4 matrix (as bitsandbytes quantizes each nn.Linear), the engine's q/k/v and gate/up row views of
 * it (fl_nf4_rows_view), against transformers + bitsandbytes + PEFT. Not the NF4 format itself
 * (test_nf4.c) nor the Llama checkpoints (test_nf4_load.c, test_nf4_engine.c).
 *
 * Fixtures (tests/fixtures/nf4/, tools/make_nf4_fixtures.py --only phi3): tiny-phi3-bf16 a random
 * Phi3ForCausalLM (hidden 64, FF 128, 2 layers, GQA 4/2, partial rotary 0.75), tiny-phi3-nf4 the same
 * loaded by transformers with load_in_4bit NF4 + double quantization and saved, tiny-phi3-nf4-adapter a
 * PEFT LoRA on qkv_proj, o_proj, gate_up_proj, down_proj (non-zero B), tiny-phi3-nf4-expected PEFT's QLoRA
 * forward and backward on tiny-phi3-nf4 with f32 compute in training mode.
 *
 * Tolerances. Quantization and views: equal bit for bit. `cpu` backend vs PEFT with f32 compute: both
 * multiply the same dequantized weights (bf16 values, as bitsandbytes dequantizes to the quant_state dtype
 * and casts) with f32 activations; only summation orders differ, ~1e-7 relative per op through 2 layers:
 * logits 2e-5 absolute (as test_nf4_engine.c; measured within it), the loss 1e-5 relative. Gradients:
 * bitsandbytes 0.50.2 on the CPU is not self-consistent here: its forward (gemm_4bit, compute dtype
 * float32) multiplies the f32 products code·scale, as fastlora's `cpu` backend does (logits measured
 * 2.4e-7 apart), but MatMul4Bit.backward multiplies dout by dequantize_4bit(W), which is rounded to the
 * quant_state dtype (bf16) before the cast to f32 (checked on one layer: exactly dout·bf16(W)). The
 * LoRA gradients upstream of each frozen input gradient therefore carry bf16's 2^-9 relative rounding of
 * the weights (~2e-3): 1e-2 of the tensor's largest entry (measured up to 2.7e-3; the last layer's
 * down_proj, before any frozen input gradient, within the f32 1e-4 of test_hf_fixtures.c).
 * Merge: bf16(dequant + s·B·A) within half a bf16 ulp of
 * the float64 sum, |W' - ref| <= 2^-8·|ref| + 1e-30 (as test_nf4_merge.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"
#include "common/rng.h"
#include "engine/model.h"
#include "infer/merge_nf4.h"
#include "io/file_util.h"
#include "io/safetensors.h"
#include "lora/adapter_io.h"
#include "model/weights.h"
#include "model/weights_nf4.h"
#include "test.h"

#define PHI3_DIR "tests/fixtures/nf4/"
#define PHI3_BF16 PHI3_DIR "tiny-phi3-bf16"
#define PHI3_NF4 PHI3_DIR "tiny-phi3-nf4"
#define PHI3_ADAPTER PHI3_DIR "tiny-phi3-nf4-adapter"

/* A module of layer l by its path, shape from the config. */
static void module_name(char *name, size_t size, const fl_model_config *cfg, int l, fl_proj p, int *rows, int *cols) {
    int off;
    fl_module_dims(cfg, p, cols, rows, &off);
    snprintf(name, size, "model.layers.%d.%s.weight", l, fl_module_path(cfg, p));
}

static int same_nf4(const fl_nf4_weight *a, const fl_nf4_weight *b) {
    return a->rows == b->rows && a->cols == b->cols && a->double_quant && b->double_quant && a->offset == b->offset &&
           a->n_blocks == b->n_blocks && a->n_groups == b->n_groups && a->dtype == b->dtype &&
           !memcmp(a->packed, b->packed, (size_t)(a->rows * a->cols / 2)) &&
           !memcmp(a->absmax_q, b->absmax_q, (size_t)a->n_blocks) &&
           !memcmp(a->nested_absmax, b->nested_absmax, sizeof(float) * (size_t)a->n_groups) &&
           !memcmp(a->nested_map, b->nested_map, 256 * sizeof(float));
}

/* (a) --quant nf4 of each fused module of the bf16 source == the module bitsandbytes saved (packed, codes,
 * nested absmax, offset, map); the same bytes as bitsandbytes stores; quantizing q alone is not it. */
TEST(nf4_phi3_quantize_fused_modules_equals_bitsandbytes) {
    fl_model_config cfg;
    if (fl_config_load(&cfg, PHI3_NF4 "/config.json")) SKIP("no tiny-phi3-nf4 fixture");
    CHECK(cfg.fused_modules);
    fl_safetensors src, saved;
    CHECK_EQ_INT(fl_safetensors_open(&src, PHI3_BF16 "/model.safetensors"), 0);
    CHECK_EQ_INT(fl_safetensors_open(&saved, PHI3_NF4 "/model.safetensors"), 0);
    for (int l = 0; l < cfg.n_layers; l++)
        for (int p = 0; p < FL_N_PROJ; p++) {
            if (!fl_is_module(&cfg, (fl_proj)p)) continue;
            char name[128];
            int rows, cols;
            module_name(name, sizeof name, &cfg, l, (fl_proj)p, &rows, &cols);
            fl_nf4_weight ours, theirs;
            CHECK_MSG(fl_nf4_load_weight(&ours, &src, 1, name, rows, cols, FL_NF4_QUANTIZE) == 0, "%s", fl_last_error());
            CHECK_MSG(fl_nf4_load_weight(&theirs, &saved, 1, name, rows, cols, FL_NF4_STORED) == 0, "%s", fl_last_error());
            CHECK_MSG(same_nf4(&ours, &theirs), "%s: --quant nf4 differs from bitsandbytes' saved module", name);
            /* bitsandbytes' bytes for the module: packed, 8-bit codes, nested absmax, dynamic map */
            char comp[160];
            size_t bnb = fl_safetensors_find(&saved, name)->nbytes;
            const char *suffixes[] = {"absmax", "nested_absmax", "nested_quant_map"};
            for (int k = 0; k < 3; k++) {
                snprintf(comp, sizeof comp, "%s.%s", name, suffixes[k]);
                bnb += fl_safetensors_find(&saved, comp)->nbytes;
            }
            size_t packed = (size_t)rows * (size_t)cols / 2, codes = (size_t)theirs.n_blocks;
            size_t nested = sizeof(float) * (size_t)theirs.n_groups;
            CHECK_EQ_INT(bnb, packed + codes + nested + 256 * sizeof(float));
            /* ours: the same arrays, each 64-byte aligned in one allocation */
            CHECK(theirs.bytes >= bnb && theirs.bytes < bnb + 4 * 64);
            if (p == FL_PROJ_Q && l == 0) {   /* q alone gets another offset: why the module is quantized whole */
                fl_nf4_weight q_alone;
                int qd = fl_config_q_dim(&cfg);
                CHECK_EQ_INT(fl_nf4_quantize(&q_alone, fl_safetensors_find(&src, name)->data, FL_BF16, qd, cols, 1, name), 0);
                CHECK(q_alone.offset != theirs.offset);
                fl_nf4_free(&q_alone);
            }
            fl_nf4_free(&ours);
            fl_nf4_free(&theirs);
        }
    fl_safetensors_close(&src);
    fl_safetensors_close(&saved);
}

/* (b) The 4-bit checkpoint in the engine: q, k, v and gate, up are row views of the one module, each
 * dequantizing to exactly its rows of the module's dequantization; --quant nf4 on the bf16 source gives
 * the same logits bit for bit on both CPU backends. */
TEST(nf4_phi3_engine_views_and_quantize_at_load) {
    fl_model_config cfg;
    if (fl_config_load(&cfg, PHI3_NF4 "/config.json")) SKIP("no tiny-phi3-nf4 fixture");
    fl_lora_config lc = fl_lora_config_default();
    fl_model m;
    CHECK_MSG(fl_model_init_dir(&m, PHI3_NF4, fl_backend_cpu(), &lc) == 0, "%s", fl_last_error());
    CHECK_EQ_INT(m.base.quant, FL_QUANT_NF4);
    fl_safetensors saved;
    CHECK_EQ_INT(fl_safetensors_open(&saved, PHI3_NF4 "/model.safetensors"), 0);
    for (int l = 0; l < cfg.n_layers; l++)
        for (int head = 0; head < FL_N_PROJ; head++) {
            if (!fl_is_module(&cfg, (fl_proj)head) || (int)fl_module_last(&cfg, (fl_proj)head) == head) continue;
            char name[128];
            int rows, cols;
            module_name(name, sizeof name, &cfg, l, (fl_proj)head, &rows, &cols);
            fl_nf4_weight whole;
            CHECK_EQ_INT(fl_nf4_load_weight(&whole, &saved, 1, name, rows, cols, FL_NF4_STORED), 0);
            float *ref = malloc(sizeof(float) * (size_t)rows * cols);
            fl_nf4_dequantize(&whole, ref, FL_F32);
            for (int p = head; p <= (int)fl_module_last(&cfg, (fl_proj)head); p++) {
                const fl_nf4_weight *v = &m.base.nf4[(size_t)l * FL_N_PROJ + p];
                int in, oc, r0 = fl_proj_group_offset(&cfg, (fl_proj)p);
                fl_proj_dims(&cfg, (fl_proj)p, &in, &oc);
                CHECK(v->rows == oc && v->cols == cols && v->offset == whole.offset);
                CHECK_EQ_INT(v->block0, (int64_t)r0 * cols / FL_NF4_BLOCK);
                float *got = malloc(sizeof(float) * (size_t)oc * cols);
                fl_nf4_dequantize(v, got, FL_F32);   /* the CPU backend's memory is host memory */
                CHECK_MSG(!memcmp(got, ref + (size_t)r0 * cols, sizeof(float) * (size_t)oc * cols),
                          "%s: rows of member %s differ from the module's", name, fl_proj_names[p]);
                free(got);
            }
            free(ref);
            fl_nf4_free(&whole);
        }
    fl_safetensors_close(&saved);
    fl_model_free(&m);
    int32_t ids[10] = {1, 5, 9, 30, 2, 77, 95, 0, 14, 3};
    size_t n = 10 * (size_t)cfg.vocab_size;
    for (int b = 0; b < 2; b++) {
        const fl_backend *be = b ? fl_backend_cpu_bf16() : fl_backend_cpu();
        fl_model a, q;
        CHECK_EQ_INT(fl_model_init_dir(&a, PHI3_NF4, be, &lc), 0);
        CHECK_MSG(fl_model_init_dir_quant(&q, PHI3_BF16, be, &lc, FL_QUANT_NF4) == 0, "%s", fl_last_error());
        CHECK_EQ_INT(q.base.quant, FL_QUANT_NF4);
        float *la = malloc(sizeof(float) * n), *lq = malloc(sizeof(float) * n);
        fl_model_logits(&a, ids, 2, 5, la);
        fl_model_logits(&q, ids, 2, 5, lq);
        CHECK_MSG(!memcmp(la, lq, sizeof(float) * n), "%s: --quant nf4 logits differ from the 4-bit checkpoint's", be->name);
        CHECK(q.base.bytes == a.base.bytes);
        free(la);
        free(lq);
        fl_model_free(&a);
        fl_model_free(&q);
    }
}

static double max_abs(const float *x, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) m = fabs(x[i]) > m ? fabs(x[i]) : m;
    return m;
}

/* (c) Logits, loss and every LoRA gradient against PEFT's QLoRA on bitsandbytes (f32 compute): the fused
 * and the one-projection-at-a-time paths. */
TEST(nf4_phi3_engine_matches_peft_qlora) {
    fl_safetensors ex;
    if (fl_safetensors_open(&ex, PHI3_DIR "tiny-phi3-nf4-expected.safetensors")) SKIP("no tiny-phi3-nf4 fixture");
    const fl_st_tensor *ids = fl_safetensors_find(&ex, "input_ids"), *labels = fl_safetensors_find(&ex, "labels");
    const fl_st_tensor *want_logits = fl_safetensors_find(&ex, "logits");
    float want_loss = *(const float *)fl_safetensors_find(&ex, "loss")->data;
    int B = (int)ids->shape[0], T = (int)ids->shape[1];
    int32_t *targets = malloc(sizeof(int32_t) * (size_t)B * T);
    const int32_t *lab = labels->data;
    for (int b = 0; b < B; b++)   /* transformers' ForCausalLMLoss: target[t] = labels[t + 1] */
        for (int t = 0; t < T; t++) targets[b * T + t] = t + 1 < T ? lab[b * T + t + 1] : -100;
    fl_batch batch = {.B = B, .T = T, .ids = ids->data, .targets = targets};
    for (int fused = 1; fused >= 0; fused--) {
        fl_lora_config lc;
        fl_model m;
        CHECK_EQ_INT(fl_adapter_load_config(PHI3_ADAPTER, &lc), 0);
        if (fl_model_init_dir(&m, PHI3_NF4, fl_backend_cpu(), &lc) || fl_model_load_adapter(&m, PHI3_ADAPTER)) {
            CHECK_MSG(0, "%s", fl_last_error());
            break;
        }
        m.fused = fused;
        float *logits = malloc(want_logits->nbytes);
        fl_model_logits(&m, ids->data, B, T, logits);
        double worst = 0;
        for (size_t i = 0; i < want_logits->numel; i++)
            worst = fmax(worst, fabs((double)logits[i] - ((const float *)want_logits->data)[i]));
        CHECK_MSG(worst <= 2e-5, "fused %d: max |logit diff| vs PEFT %.3g > 2e-5", fused, worst);
        fl_step_stats st = fl_model_forward(&m, &batch, 0.0f);
        fl_model_backward(&m);
        CHECK_CLOSE(st.loss, want_loss, 0.0, 1e-5);
        int compared = 0;
        for (int l = 0; l < m.cfg.n_layers; l++)
            for (int p = 0; p < FL_N_PROJ; p++) {
                if (!m.grads.layers[l].a[p]) continue;
                for (int which = 0; which < 2; which++) {
                    char key[160], name[200];
                    fl_adapter_tensor_name(key, sizeof key, &m.cfg, l, (fl_proj)p, which ? 'B' : 'A');
                    snprintf(name, sizeof name, "grad.%s", key);
                    const fl_st_tensor *t = fl_safetensors_find(&ex, name);
                    CHECK_MSG(t != NULL, "%s missing", name);
                    if (!t) continue;
                    const float *got = which ? m.grads.layers[l].b[p] : m.grads.layers[l].a[p], *want = t->data;
                    double tol = 1e-7 + 1e-2 * max_abs(want, t->numel), d = 0;
                    for (size_t i = 0; i < t->numel; i++) d = fmax(d, fabs((double)got[i] - want[i]));
                    CHECK_MSG(d <= tol, "fused %d: %s max |diff| %.3g > %.3g", fused, name, d, tol);
                    compared++;
                }
            }
        CHECK_EQ_INT(compared, 2 * 4 * m.cfg.n_layers);   /* A and B of 4 modules a layer */
        free(logits);
        fl_model_free(&m);
    }
    free(targets);
    fl_safetensors_close(&ex);
}

/* (d) merge: each fused module's output is the dequantized fused matrix + s·B·A over all its rows, in
 * the dtype it was quantized from (bf16), against float64. */
TEST(nf4_phi3_merge_fused_modules) {
    fl_model_config cfg;
    if (fl_config_load(&cfg, PHI3_NF4 "/config.json")) SKIP("no tiny-phi3-nf4 fixture");
    char root[] = "/tmp/fastlora-nf4phi3-XXXXXX";
    CHECK(mkdtemp(root) != NULL);
    char *out = fl_path_join(root, "merged");
    int status = fl_nf4_merge_adapter(PHI3_NF4, PHI3_ADAPTER, out, 0);
    CHECK_MSG(status == 0, "%s", fl_last_error());
    fl_lora_config lc;
    fl_model m;   /* the adapter's A and B, read through the engine's loader */
    CHECK_EQ_INT(fl_adapter_load_config(PHI3_ADAPTER, &lc), 0);
    CHECK_EQ_INT(fl_model_init_dir(&m, PHI3_NF4, fl_backend_cpu(), &lc), 0);
    CHECK_EQ_INT(fl_model_load_adapter(&m, PHI3_ADAPTER), 0);
    float s = fl_lora_scale(&lc);
    fl_safetensors saved, got;
    char *path = fl_path_join(out, "model.safetensors");
    CHECK_EQ_INT(fl_safetensors_open(&saved, PHI3_NF4 "/model.safetensors"), 0);
    CHECK(!status && fl_safetensors_open(&got, path) == 0);
    for (int l = 0; l < cfg.n_layers && !status; l++)
        for (int p = 0; p < FL_N_PROJ; p++) {
            if (!fl_is_module(&cfg, (fl_proj)p)) continue;
            char name[128];
            int rows, cols;
            module_name(name, sizeof name, &cfg, l, (fl_proj)p, &rows, &cols);
            fl_nf4_weight w;
            CHECK_EQ_INT(fl_nf4_load_weight(&w, &saved, 1, name, rows, cols, FL_NF4_STORED), 0);
            uint16_t *deq = malloc(2 * (size_t)rows * cols);
            fl_nf4_dequantize(&w, deq, FL_BF16);
            const fl_st_tensor *t = fl_safetensors_find(&got, name);
            CHECK(t && t->dtype == FL_BF16 && t->numel == (size_t)rows * cols);
            const float *A = m.lora.layers[l].a[p], *Bm = m.lora.layers[l].b[p];
            CHECK(A && Bm);
            int bad = 0;
            for (int o = 0; t && A && o < rows && bad < 3; o++)
                for (int i = 0; i < cols && bad < 3; i++) {
                    double ref = fl_bf16_to_f32(deq[(size_t)o * cols + i]);
                    for (int r = 0; r < lc.rank; r++) ref += s * (double)Bm[(size_t)o * lc.rank + r] * A[(size_t)r * cols + i];
                    double v = fl_bf16_to_f32(((const uint16_t *)t->data)[(size_t)o * cols + i]);
                    if (!(fabs(v - ref) <= ldexp(fabs(ref), -8) + 1e-30)) {
                        bad++;
                        CHECK_MSG(0, "%s[%d, %d] = %.9g, ref %.9g", name, o, i, v, ref);
                    }
                }
            free(deq);
            fl_nf4_free(&w);
        }
    fl_safetensors_close(&saved);
    if (!status) fl_safetensors_close(&got);
    fl_model_free(&m);
    free(path);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    CHECK_EQ_INT(system(cmd), 0);
    free(out);
}

/* Bad input: a fused module whose in-features are not a multiple of 64 would have blocks crossing the rows
 * of q/k/v: refused in one line naming config.json's hidden_size, before any weight is read; a row view
 * of such a matrix is refused too. */
TEST(nf4_phi3_bad_input_hidden_not_multiple_of_64) {
    char dir[] = "/tmp/fastlora-nf4phi3-bad-XXXXXX", cmd[512];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(cmd, sizeof cmd, "sed 's/\"hidden_size\": 64/\"hidden_size\": 96/' " PHI3_BF16 "/config.json > %s/config.json && "
             "cp " PHI3_BF16 "/model.safetensors %s/", dir, dir);
    CHECK_EQ_INT(system(cmd), 0);
    fl_lora_config lc = fl_lora_config_default();
    fl_model m;
    CHECK(fl_model_init_dir_quant(&m, dir, fl_backend_cpu(), &lc, FL_QUANT_NF4) == FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "config.json: hidden_size 96 is not a multiple of 64");
    fl_clear_error();
    fl_nf4_weight w, v;
    float x[3 * 100] = {0};
    for (int i = 0; i < 300; i++) x[i] = (float)(i % 7) - 3.0f;
    CHECK_EQ_INT(fl_nf4_quantize(&w, x, FL_F32, 3, 100, 1, "t"), 0);
    CHECK(fl_nf4_rows_view(&v, &w, 1, 2, "t") == FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "multiple of 64");
    fl_clear_error();
    CHECK_EQ_INT(fl_nf4_rows_view(&v, &w, 0, 3, "t"), 0);   /* all of it is the matrix itself */
    fl_nf4_free(&w);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK_EQ_INT(system(cmd), 0);
}


/* A row view past the first nested group (the fixtures' modules hold one 256-block group): rows
 * [300, 600) of a (600, 64) matrix start at block 300, in group 1; its dequantization is those rows of
 * the matrix's, bit for bit, in f32 and bf16, and a view of a view adds the block bases. */
TEST(nf4_phi3_rows_view_across_nested_groups) {
    int64_t rows = 600, cols = 64;
    float *x = malloc(sizeof(float) * (size_t)(rows * cols));
    fl_rng_fill_uniform(x, (size_t)(rows * cols), fl_rng_stream(5, 0, 0, 0), -1.0f, 1.0f);
    for (int64_t r = 0; r < rows; r++)   /* rows of different scales: the groups' nested absmax differ */
        for (int64_t c = 0; c < cols; c++) x[r * cols + c] *= (float)(1 + r % 7);
    fl_nf4_weight w, v, vv;
    CHECK_EQ_INT(fl_nf4_quantize(&w, x, FL_F32, rows, cols, 1, "t"), 0);
    CHECK(w.n_groups == 3 && w.nested_absmax[0] != w.nested_absmax[1]);
    CHECK_EQ_INT(fl_nf4_rows_view(&v, &w, 300, 600, "t"), 0);
    CHECK_EQ_INT(fl_nf4_rows_view(&vv, &v, 100, 300, "t"), 0);   /* rows [400, 600) of w */
    CHECK_EQ_INT(v.block0, 300);
    CHECK_EQ_INT(vv.block0, 400);
    float *all = malloc(sizeof(float) * (size_t)(rows * cols)), *got = malloc(sizeof(float) * 300 * 64);
    uint16_t *all16 = malloc(2 * (size_t)(rows * cols)), *got16 = malloc(2 * 300 * 64);
    fl_nf4_dequantize(&w, all, FL_F32);
    fl_nf4_dequantize(&w, all16, FL_BF16);
    fl_nf4_dequantize(&v, got, FL_F32);
    fl_nf4_dequantize(&v, got16, FL_BF16);
    CHECK(!memcmp(got, all + 300 * 64, sizeof(float) * 300 * 64));
    CHECK(!memcmp(got16, all16 + 300 * 64, 2 * 300 * 64));
    fl_nf4_dequantize(&vv, got, FL_F32);
    CHECK(!memcmp(got, all + 400 * 64, sizeof(float) * 200 * 64));
    free(x);
    free(all);
    free(got);
    free(all16);
    free(got16);
    fl_nf4_free(&w);
}
