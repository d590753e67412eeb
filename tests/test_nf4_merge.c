/* test_nf4_merge.c — merging an adapter into an NF4 base (infer/merge_nf4.h, model/nf4_dequantize.h).
 *
 * On the transformers + bitsandbytes tiny checkpoint (tests/fixtures/nf4/tiny-nf4): the dequantized
 * folder holds every projection as BF16 equal bit for bit to fl_nf4_dequantize of the stored NF4
 * weight (itself equal to bitsandbytes' dequantize_4bit, test_nf4.c), every other tensor byte for
 * byte, no bitsandbytes companion tensor and no quantization_config. The merge of a random adapter
 * then gives W' = bf16(W + s·B·A) against a float64 reference: within half a bf16 ulp of the exact
 * sum plus the f32 summation error, i.e. |W' - ref| <= 2^-8 · |ref| + 1e-30; projections the adapter
 * does not touch stay equal to the dequantized weights.
 */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/backend.h"
#include "common/error.h"
#include "common/rng.h"
#include "infer/merge_nf4.h"
#include "io/file_util.h"
#include "io/safetensors.h"
#include "lora/adapter_io.h"
#include "model/weights_nf4.h"
#include "model/nf4_dequantize.h"
#include "test.h"

#define TINY_NF4 "tests/fixtures/nf4/tiny-nf4"

static void remove_dir(const char *dir, const char *const *files, int n) {
    for (int i = 0; i < n; i++) {
        char *p = fl_path_join(dir, files[i]);
        unlink(p);
        free(p);
    }
    rmdir(dir);
}

/* The stored NF4 weight `name` of tiny-nf4, dequantized to bf16 ((rows, cols) from config). */
static uint16_t *stored_dequant(const fl_safetensors *st, const char *name, int64_t rows, int64_t cols) {
    fl_nf4_weight w;
    if (fl_nf4_load_weight(&w, st, 1, name, rows, cols, FL_NF4_STORED)) return NULL;
    uint16_t *out = malloc(2 * (size_t)(rows * cols));
    fl_nf4_dequantize(&w, out, FL_BF16);
    fl_nf4_free(&w);
    return out;
}

TEST(nf4_dequantize_folder) {
    fl_model_config cfg;
    if (fl_config_load(&cfg, TINY_NF4 "/config.json")) SKIP("no NF4 fixtures");
    char out[] = "/tmp/fastlora-nf4deq-XXXXXX";
    CHECK(mkdtemp(out) != NULL);
    CHECK_EQ_INT(fl_nf4_dequantize_folder(TINY_NF4, out), 0);
    fl_safetensors src, got;
    char *path = fl_path_join(out, "model.safetensors");
    CHECK_EQ_INT(fl_safetensors_open(&src, TINY_NF4 "/model.safetensors"), 0);
    CHECK_EQ_INT(fl_safetensors_open(&got, path), 0);
    int expected = 3 + cfg.n_layers * (2 + FL_N_PROJ);   /* embed, norm, lm_head; 2 norms + 7 projections a layer */
    CHECK_EQ_INT(got.n_tensors, expected);
    for (int i = 0; i < got.n_tensors; i++) {
        const fl_st_tensor *t = &got.tensors[i], *s = fl_safetensors_find(&src, t->name);
        CHECK_MSG(s != NULL && !strstr(t->name, "absmax") && !strstr(t->name, "quant"), "unexpected tensor %s", t->name);
        if (!s) continue;
        int l;
        char proj[64];
        if (sscanf(t->name, "model.layers.%d.%63[a-z_.]", &l, proj) == 2 && strstr(proj, "_proj")) {
            CHECK(t->dtype == FL_BF16 && t->ndim == 2);
            uint16_t *ref = stored_dequant(&src, t->name, t->shape[0], t->shape[1]);
            CHECK(ref && !memcmp(ref, t->data, t->nbytes));
            free(ref);
        } else {
            CHECK(s->dtype == t->dtype && s->nbytes == t->nbytes && !memcmp(s->data, t->data, t->nbytes));
        }
    }
    fl_quant_config qc;
    char *cfg_path = fl_path_join(out, "config.json");
    CHECK_EQ_INT(fl_quant_config_load(&qc, cfg_path), 0);
    CHECK_EQ_INT(qc.nf4, 0);
    fl_model_config cfg2;
    CHECK_EQ_INT(fl_config_load(&cfg2, cfg_path), 0);
    CHECK_EQ_INT(cfg2.n_layers, cfg.n_layers);
    free(cfg_path);
    fl_safetensors_close(&src);
    fl_safetensors_close(&got);
    free(path);
    const char *files[] = {"model.safetensors", "config.json"};
    remove_dir(out, files, 2);
}

TEST(nf4_merge_adapter_into_dequantized_weights) {
    fl_model_config cfg;
    if (fl_config_load(&cfg, TINY_NF4 "/config.json")) SKIP("no NF4 fixtures");
    char root[] = "/tmp/fastlora-nf4merge-XXXXXX";
    CHECK(mkdtemp(root) != NULL);
    char *adapter = fl_path_join(root, "adapter"), *out = fl_path_join(root, "merged");
    fl_lora_config lc = fl_lora_config_default();
    lc.rank = 4;
    lc.alpha = 8.0f;
    CHECK_EQ_INT(fl_lora_parse_targets("q,v,down", &lc.target_mask), 0);
    fl_lora_buffer lora;
    fl_lora_buffer_init(&lora, &cfg, &lc, fl_backend_cpu());
    fl_rng_fill_uniform(lora.data, lora.n, fl_rng_stream(77, 0, 0, 0), -0.2f, 0.2f);
    CHECK_EQ_INT(fl_adapter_save(adapter, &lora, &cfg, &lc, NULL), 0);
    int status = fl_nf4_merge_adapter(TINY_NF4, adapter, out, 0);
    CHECK_MSG(status == 0, "%s", fl_last_error());
    char *tmp_left = malloc(strlen(out) + 40);
    sprintf(tmp_left, "%s.nf4-dequantized.%d", out, (int)getpid());
    struct stat sb;
    CHECK_MSG(stat(tmp_left, &sb) != 0, "the intermediate folder %s was left behind", tmp_left);
    free(tmp_left);

    fl_safetensors src, got;
    char *path = fl_path_join(out, "model.safetensors");
    CHECK_EQ_INT(fl_safetensors_open(&src, TINY_NF4 "/model.safetensors"), 0);
    CHECK_EQ_INT(fl_safetensors_open(&got, path), 0);
    float s = fl_lora_scale(&lc);
    for (int l = 0; l < cfg.n_layers && !status; l++)
        for (int p = 0; p < FL_N_PROJ; p++) {
            char name[128];
            snprintf(name, sizeof name, "model.layers.%d.%s.weight", l, fl_proj_modules[p]);
            int in, oc;
            fl_proj_dims(&cfg, (fl_proj)p, &in, &oc);
            const fl_st_tensor *t = fl_safetensors_find(&got, name);
            uint16_t *deq = stored_dequant(&src, name, oc, in);
            CHECK(t && deq && t->dtype == FL_BF16 && t->numel == (size_t)oc * in);
            if (!t || !deq) { free(deq); continue; }
            const uint16_t *w = t->data;
            const float *A = lora.layers[l].a[p], *B = lora.layers[l].b[p];
            int bad = 0;
            for (int o = 0; o < oc && bad < 3; o++)
                for (int i = 0; i < in && bad < 3; i++) {
                    double ref = fl_bf16_to_f32(deq[(size_t)o * in + i]);
                    if (A)
                        for (int r = 0; r < lc.rank; r++) ref += s * (double)B[(size_t)o * lc.rank + r] * A[(size_t)r * in + i];
                    double v = fl_bf16_to_f32(w[(size_t)o * in + i]);
                    if (!(fabs(v - ref) <= ldexp(fabs(ref), -8) + 1e-30)) {
                        bad++;
                        CHECK_MSG(0, "%s[%d, %d] = %.9g, ref %.9g", name, o, i, v, ref);
                    }
                }
            if (!A) CHECK(!memcmp(w, deq, t->nbytes));
            free(deq);
        }
    fl_safetensors_close(&src);
    fl_safetensors_close(&got);
    free(path);
    fl_lora_buffer_free(&lora);
    const char *merged_files[] = {"model.safetensors", "config.json"};
    const char *adapter_files[] = {"adapter_model.safetensors", "adapter_config.json"};
    remove_dir(out, merged_files, 2);
    remove_dir(adapter, adapter_files, 2);
    rmdir(root);
    free(adapter);
    free(out);
}
