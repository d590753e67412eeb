/* test_config_and_loading.c — config.json parsing against the real files of the target models,
 * the presets' parameter counts against the published figures (../shared/docs/formats.md §1),
 * and weight loading: sharded checkpoints and BF16/F16 tensors give the same model. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"
#include "engine/model.h"
#include "io/file_util.h"
#include "io/safetensors.h"
#include "test.h"

#include "config_test_util.h"

static void compare_with_preset(const char *folder, const char *preset) {
    const char *shared = fl_test_shared_dir();
    if (!shared) { fl_test_skip("../shared is absent"); return; }
    char path[512];
    snprintf(path, sizeof path, "%s/models/%s/config.json", shared, folder);
    fl_model_config got, want;
    CHECK_MSG(fl_config_load(&got, path) == 0, "%s", fl_last_error());
    CHECK(fl_config_preset(&want, preset) == 0);
    check_config_core_equal(&got, &want);
    CHECK_EQ_INT(got.rope_llama3, want.rope_llama3);
    CHECK_CLOSE(got.rope_factor, want.rope_factor, 0, 1e-12);
    CHECK_EQ_INT(got.rope_original_max_position, want.rope_original_max_position);
    CHECK_EQ_INT(got.qkv_bias, want.qkv_bias);
}

/* transformers 4.x spelling: rope_theta + rope_scaling (llama3), torch_dtype, explicit head_dim */
TEST(config_llama32_1b_old_spelling_llama3_rope) { compare_with_preset("Llama-3.2-1B", "llama-3.2-1b"); }
/* transformers 5.x spelling: rope_parameters, dtype */
TEST(config_smollm2_135m_new_spelling) { compare_with_preset("SmolLM2-135M", "smollm2-135m"); }
TEST(config_smollm2_360m) { compare_with_preset("SmolLM2-360M-Instruct", "smollm2-360m"); }
/* Qwen2: q/k/v bias implied by model_type, no head_dim */
TEST(config_qwen25_05b_bias_implied) { compare_with_preset("Qwen2.5-0.5B", "qwen2.5-0.5b"); }
TEST(config_tinyllama_untied) { compare_with_preset("TinyLlama-1.1B-Chat-v1.0", "tinyllama-1.1b"); }

/* formats.md §1: total parameters (computed there, matching the published figures) */
TEST(presets_parameter_counts) {
    const struct { const char *name; long long total; } expected[] = {
        {"qwen2.5-0.5b", 494032768LL},  {"qwen2.5-1.5b", 1543714304LL}, {"qwen2.5-7b", 7615616512LL},
        {"smollm2-135m", 134515008LL},  {"smollm2-360m", 361821120LL},  {"smollm2-1.7b", 1711376384LL},
        {"tinyllama-1.1b", 1100048384LL}, {"llama-3.2-1b", 1235814400LL},
        /* Qwen3-0.6B's card: 0.6B, 0.44B non-embedding (155,582,464 embedding; q_norm, k_norm per layer) */
        {"qwen3-0.6b", 596049920LL},
        /* Qwen3 cards (1.7B / 1.4B non-embedding, 4.0B / 3.6B, 8.2B / 6.95B) and the Hub's safetensors
         * totals, which for 1.7B also count the tied lm_head stored in the files: 2,031,739,904 -
         * 151936 x 2048; 4,022,468,096 (4B stores no lm_head); 8,190,735,360 */
        {"qwen3-1.7b", 1720574976LL}, {"qwen3-4b", 4022468096LL}, {"qwen3-8b", 8190735360LL},
        /* the Hub's safetensors totals (cards: 7.25B, 12.2B, 23.6B params) */
        {"mistral-7b-v0.3", 7248023552LL}, {"mistral-nemo-12b", 12247782400LL}, {"mistral-small-24b", 23572403200LL},
        /* the Hub's safetensors totals (cards: 8.03B, 3.21B params) */
        {"llama-3.1-8b", 8030261248LL}, {"llama-3.2-3b", 3212749824LL},
        /* the cards' 3.8B: Phi-3.5-mini 3,821,079,552 (untied 32064 vocab), Phi-4-mini 3,836,021,760 (tied 200064) */
        {"phi-3.5-mini", 3821079552LL}, {"phi-4-mini", 3836021760LL},
        /* the cards' 2.53B and 8.17B (tied, vocab 49159) */
        {"granite-3.3-2b", 2533539840LL}, {"granite-3.3-8b", 8170864640LL},
    };
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++) {
        fl_model_config cfg;
        CHECK(fl_config_preset(&cfg, expected[i].name) == 0);
        CHECK_MSG(fl_config_total_params(&cfg) == expected[i].total, "%s: %lld params, expected %lld",
                  expected[i].name, (long long)fl_config_total_params(&cfg), expected[i].total);
    }
    /* the cards' rounded figures: total, and without the embedding (Qwen3's "non-embedding") */
    const struct { const char *name; double total, round, non_embedding, round_ne; } card[] = {
        {"qwen3-1.7b", 1.7e9, 0.1e9, 1.4e9, 0.1e9}, {"qwen3-4b", 4.0e9, 0.1e9, 3.6e9, 0.1e9},
        {"qwen3-8b", 8.2e9, 0.1e9, 6.95e9, 0.01e9}, {"mistral-7b-v0.3", 7.25e9, 0.01e9, 0, 0},
        {"mistral-nemo-12b", 12.2e9, 0.1e9, 0, 0}, {"mistral-small-24b", 23.6e9, 0.1e9, 0, 0},
        {"llama-3.1-8b", 8.03e9, 0.01e9, 0, 0}, {"llama-3.2-3b", 3.21e9, 0.01e9, 0, 0},
        {"granite-3.3-2b", 2.53e9, 0.01e9, 0, 0}, {"granite-3.3-8b", 8.17e9, 0.01e9, 0, 0},
    };
    for (size_t i = 0; i < sizeof card / sizeof card[0]; i++) {
        fl_model_config cfg;
        CHECK(fl_config_preset(&cfg, card[i].name) == 0);
        double total = (double)fl_config_total_params(&cfg);
        double embed = (double)cfg.vocab_size * cfg.hidden_size * (cfg.tie_word_embeddings ? 1 : 2);
        CHECK_MSG(fabs(total - card[i].total) <= card[i].round / 2, "%s: %.0f params, card %.3g", card[i].name, total,
                  card[i].total);
        if (card[i].non_embedding > 0)
            CHECK_MSG(fabs(total - embed - card[i].non_embedding) <= card[i].round_ne / 2, "%s: %.0f non-embedding, card %.3g",
                      card[i].name, total - embed, card[i].non_embedding);
    }
    fl_model_config cfg;
    CHECK_EQ_INT(fl_config_preset(&cfg, "gpt-2"), 2);
    CHECK_STR_CONTAINS(fl_last_error(), "smollm2-135m");
    CHECK_STR_CONTAINS(fl_config_preset_names(), "mistral-nemo-12b");
    /* the fields that differ between the new presets */
    CHECK(fl_config_preset(&cfg, "llama-3.1-8b") == 0);
    CHECK(cfg.rope_llama3 && cfg.rope_factor == 8.0 && cfg.rope_low_freq_factor == 1.0 && cfg.rope_high_freq_factor == 4.0 &&
          cfg.rope_original_max_position == 8192 && !cfg.tie_word_embeddings);
    CHECK(fl_config_preset(&cfg, "llama-3.2-3b") == 0);
    CHECK(cfg.rope_llama3 && cfg.rope_factor == 32.0 && cfg.tie_word_embeddings && cfg.head_dim == 128);
    CHECK(fl_config_preset(&cfg, "mistral-small-24b") == 0);
    CHECK(cfg.arch == FL_ARCH_LLAMA && !cfg.rope_llama3 && cfg.rope_theta == 1e8 && cfg.sliding_window == 0 &&
          fl_config_q_dim(&cfg) == 4096 && cfg.hidden_size == 5120);
    CHECK(fl_config_preset(&cfg, "qwen3-8b") == 0);
    CHECK(cfg.qk_norm && !cfg.qkv_bias && !cfg.tie_word_embeddings && cfg.sliding_window == 0);
    CHECK_EQ_INT(strcmp(fl_config_preset_for_hf_name("mistralai/Mistral-Nemo-Base-2407"), "mistral-nemo-12b"), 0);
}

/* PEFT's init: lora_a ~ U(-1/sqrt(in), 1/sqrt(in)), lora_b = 0 */
TEST(lora_init_matches_peft_kaiming_uniform) {
    fl_model_config cfg;
    CHECK(fl_config_preset(&cfg, "smollm2-135m") == 0);
    cfg.n_layers = 1;
    fl_lora_config lc = fl_lora_config_default();
    fl_lora_buffer buf;
    fl_lora_buffer_init(&buf, &cfg, &lc, fl_backend_cpu());
    fl_lora_init_peft(&buf, &cfg, &lc);
    int in, out;
    fl_proj_dims(&cfg, FL_PROJ_DOWN, &in, &out);
    const float *a = buf.layers[0].a[FL_PROJ_DOWN], *b = buf.layers[0].b[FL_PROJ_DOWN];
    double bound = 1.0 / sqrt(in), max = 0, mean = 0, var = 0;
    size_t n = (size_t)lc.rank * in;
    for (size_t i = 0; i < n; i++) { max = fabs(a[i]) > max ? fabs(a[i]) : max; mean += a[i]; }
    mean /= n;
    for (size_t i = 0; i < n; i++) var += (a[i] - mean) * (a[i] - mean);
    var /= n;
    CHECK(max <= bound);
    CHECK(max > 0.95 * bound);
    CHECK_CLOSE(var, bound * bound / 3.0, 0, 0.05); /* variance of U(-b, b) is b²/3 */
    for (size_t i = 0; i < (size_t)out * lc.rank; i++) CHECK(b[i] == 0.0f);
    fl_lora_buffer_free(&buf);
}

/* Writes the fixture's tensors as `dtype` into `dir`, split over `shards` files with an index. */
static void rewrite_model(const char *src_dir, const char *dir, fl_dtype dtype, int shards) {
    char path[512];
    snprintf(path, sizeof path, "%s/model.safetensors", src_dir);
    fl_safetensors st;
    CHECK(fl_safetensors_open(&st, path) == 0);
    fl_st_write_tensor *tensors = calloc((size_t)st.n_tensors, sizeof *tensors);
    void **buffers = calloc((size_t)st.n_tensors, sizeof(void *));
    for (int i = 0; i < st.n_tensors; i++) {
        const fl_st_tensor *t = &st.tensors[i];
        tensors[i].name = t->name;
        tensors[i].dtype = dtype;
        tensors[i].ndim = t->ndim;
        memcpy(tensors[i].shape, t->shape, sizeof t->shape);
        uint16_t *half = malloc(t->numel * 2 + 2);
        const float *f = t->data;
        for (size_t k = 0; k < t->numel; k++) half[k] = dtype == FL_BF16 ? fl_f32_to_bf16(f[k]) : fl_f32_to_f16(f[k]);
        buffers[i] = half;
        tensors[i].data = dtype == FL_F32 ? t->data : half;
    }
    FILE *index = NULL;
    if (shards > 1) {
        snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
        index = fopen(path, "w");
        fprintf(index, "{\"metadata\": {\"total_size\": 0}, \"weight_map\": {");
    }
    int per = (st.n_tensors + shards - 1) / shards;
    for (int s = 0; s < shards; s++) {
        int begin = s * per, end = begin + per < st.n_tensors ? begin + per : st.n_tensors;
        char name[128];
        if (shards > 1) snprintf(name, sizeof name, "model-%05d-of-%05d.safetensors", s + 1, shards);
        else snprintf(name, sizeof name, "model.safetensors");
        snprintf(path, sizeof path, "%s/%s", dir, name);
        CHECK(fl_safetensors_write(path, tensors + begin, end - begin, NULL, 0) == 0);
        for (int i = begin; index && i < end; i++) fprintf(index, "%s\"%s\": \"%s\"", i ? ", " : "", tensors[i].name, name);
    }
    if (index) { fprintf(index, "}}\n"); fclose(index); }
    for (int i = 0; i < st.n_tensors; i++) free(buffers[i]);
    free(buffers);
    free(tensors);
    fl_safetensors_close(&st);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "cp %s/config.json %s/", src_dir, dir);
    CHECK(system(cmd) == 0);
}

static double max_logit_diff(const char *dir_a, const char *dir_b) {
    fl_lora_config lc = fl_lora_config_default();
    fl_model a, b;
    CHECK(fl_model_init_dir(&a, dir_a, fl_backend_cpu(), &lc) == 0);
    CHECK(fl_model_init_dir(&b, dir_b, fl_backend_cpu(), &lc) == 0);
    int32_t ids[8] = {1, 2, 3, 50, 99, 150, 7, 0};
    size_t n = 8 * (size_t)a.cfg.vocab_size;
    float *la = malloc(n * 4), *lb = malloc(n * 4);
    fl_model_logits(&a, ids, 1, 8, la);
    fl_model_logits(&b, ids, 1, 8, lb);
    double worst = 0;
    for (size_t i = 0; i < n; i++) worst = fabs(la[i] - lb[i]) > worst ? fabs(la[i] - lb[i]) : worst;
    free(la);
    free(lb);
    fl_model_free(&a);
    fl_model_free(&b);
    return worst;
}

#define SRC "tests/fixtures/hf/llama_gqa/model"

TEST(loading_sharded_checkpoint_gives_same_model) {
    char dir[] = "/tmp/fastlora-shards-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    rewrite_model(SRC, dir, FL_F32, 3);
    CHECK(max_logit_diff(SRC, dir) == 0.0);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

/* Rounding every weight to bf16 (8 bits of mantissa, relative error 2^-9) perturbs logits of
 * magnitude ~6 by well under 0.1; the point is that BF16/F16 files load and decode correctly
 * (a wrong conversion gives garbage, not a 1% change). */
TEST(loading_bf16_and_f16_tensors) {
    char dir[] = "/tmp/fastlora-bf16-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    rewrite_model(SRC, dir, FL_BF16, 1);
    double d = max_logit_diff(SRC, dir);
    CHECK_MSG(d > 0 && d < 0.1, "bf16 model logits differ by %g", d);
    rewrite_model(SRC, dir, FL_F16, 1);
    d = max_logit_diff(SRC, dir);
    CHECK_MSG(d > 0 && d < 0.02, "f16 model logits differ by %g", d);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

TEST(dtype_conversions_round_trip) {
    /* bf16: round to nearest even; f16: exact for representable values, subnormals, inf */
    CHECK(fl_bf16_to_f32(fl_f32_to_bf16(1.0f)) == 1.0f);
    CHECK(fl_f32_to_bf16(1.00390625f) == 0x3f80);             /* tie -> even */
    CHECK(fl_f32_to_bf16(1.01171875f) == 0x3f82);             /* tie -> even (up) */
    CHECK(fl_f16_to_f32(fl_f32_to_f16(0.333251953125f)) == 0.333251953125f);
    CHECK(fl_f16_to_f32(0x0001) == 5.9604644775390625e-08f);  /* smallest subnormal */
    CHECK(fl_f32_to_f16(65520.0f) == 0x7c00);                 /* rounds to inf */
    CHECK(fl_f16_to_f32(fl_f32_to_f16(-2.5f)) == -2.5f);
    CHECK(isnan(fl_bf16_to_f32(fl_f32_to_bf16(NAN))));
}
