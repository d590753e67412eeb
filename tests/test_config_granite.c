/* test_config_granite.c — IBM Granite 3.x (GraniteForCausalLM): its config.json read as Llama's layers
 * with the four Granite scalars (config.h), the real 2B config equal to the preset granite-3.3-2b,
 * GraniteConfig's defaults for absent scalars, what the engine does not run refused in one line, each
 * scalar moving the engine's logits (none silently ignored), and the GGUF export as llama.cpp's granite.
 * The numerics against transformers are the HF fixture granite_multipliers (test_hf_fixtures.c,
 * test_generate.c, test_cpu_bf16.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"
#include "engine/model.h"
#include "lora/adapter_io.h"
#include "model/config.h"
#include "test.h"

#include "config_test_util.h"
#include "export_test_util.h"

/* ibm-granite/granite-3.3-2b-base's config.json, as recalled from the model card's file */
static const char *granite_2b =
    "{\"architectures\": [\"GraniteForCausalLM\"], \"attention_bias\": false, \"attention_dropout\": 0.0,"
    " \"attention_multiplier\": 0.015625, \"bos_token_id\": 0, \"embedding_multiplier\": 12.0, \"eos_token_id\": 0,"
    " \"hidden_act\": \"silu\", \"hidden_size\": 2048, \"initializer_range\": 0.02, \"intermediate_size\": 8192,"
    " \"logits_scaling\": 8.0, \"max_position_embeddings\": 131072, \"mlp_bias\": false, \"model_type\": \"granite\","
    " \"num_attention_heads\": 32, \"num_hidden_layers\": 40, \"num_key_value_heads\": 8, \"pad_token_id\": 0,"
    " \"residual_multiplier\": 0.22, \"rms_norm_eps\": 1e-05, \"rope_scaling\": null, \"rope_theta\": 10000000.0,"
    " \"tie_word_embeddings\": true, \"torch_dtype\": \"bfloat16\", \"use_cache\": true, \"vocab_size\": 49159}";

/* `json` with `from` replaced by `to` (the whole text when from is NULL), loaded from a temp folder */
static int load_edited(fl_model_config *cfg, const char *from, const char *to) {
    const char *at = from ? strstr(granite_2b, from) : NULL;
    CHECK_MSG(!from || at, "'%s' not in the config", from);
    if (from && !at) return -1;
    size_t n = strlen(granite_2b) + (to ? strlen(to) : 0) + 1;
    char *json = malloc(n), *dir = temp_dir(), path[128];
    if (at) snprintf(json, n, "%.*s%s%s", (int)(at - granite_2b), granite_2b, to, at + strlen(from));
    else snprintf(json, n, "%s", granite_2b);
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "w");
    int rc = -1;
    if (f) {
        fputs(json, f);
        fclose(f);
        rc = fl_config_load(cfg, path);
    }
    rm_rf(dir);
    free(json);
    return rc;
}

static void refused(const char *from, const char *to, const char *field) {
    fl_model_config cfg;
    CHECK_EQ_INT(load_edited(&cfg, from, to), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "config.json");
    CHECK_STR_CONTAINS(fl_last_error(), field);
    CHECK(strchr(fl_last_error(), '\n') == NULL);
}

TEST(config_granite_3_3_2b_is_the_preset) {
    fl_model_config got, want;
    CHECK_MSG(load_edited(&got, NULL, NULL) == 0, "%s", fl_last_error());
    CHECK(fl_config_preset(&want, "granite-3.3-2b") == 0);
    CHECK(got.arch == FL_ARCH_LLAMA && fl_config_granite(&got) && fl_config_granite(&want));
    check_config_core_equal(&got, &want);
    CHECK_EQ_INT(got.max_position_embeddings, want.max_position_embeddings);
    CHECK_EQ_INT(got.bos_token_id, want.bos_token_id);
    CHECK_EQ_INT(got.eos_token_id, want.eos_token_id);
    CHECK(got.embedding_multiplier == 12.0 && want.embedding_multiplier == 12.0);
    CHECK(got.attention_multiplier == 0.015625 && want.attention_multiplier == 0.015625);
    CHECK(got.residual_multiplier == 0.22 && want.residual_multiplier == 0.22);
    CHECK(got.logits_scaling == 8.0 && want.logits_scaling == 8.0);
    CHECK(got.embed_scale == 0 && got.query_pre_attn_scalar == 0 && got.nope_every == 0);
    CHECK_MSG(fl_config_total_params(&want) == 2533539840LL, "%lld", (long long)fl_config_total_params(&want));
    CHECK(fl_config_preset(&want, "granite-3.3-8b") == 0);
    CHECK(want.head_dim == 128 && want.attention_multiplier == 0.0078125 && want.logits_scaling == 16.0);
    CHECK_MSG(fl_config_total_params(&want) == 8170864640LL, "%lld", (long long)fl_config_total_params(&want));
    /* the model_type spelling alone (no architectures) */
    CHECK_MSG(load_edited(&got, "\"architectures\": [\"GraniteForCausalLM\"], ", "") == 0, "%s", fl_last_error());
    CHECK(fl_config_granite(&got) && got.residual_multiplier == 0.22);
}

TEST(config_granite_defaults_and_refusals) {
    /* absent scalars: GraniteConfig's 1.0 — still Granite: the score scale is 1.0, not HS^-0.5 */
    fl_model_config cfg;
    CHECK_MSG(load_edited(&cfg, "\"attention_multiplier\": 0.015625, ", "") == 0, "%s", fl_last_error());
    CHECK(cfg.attention_multiplier == 1.0 && fl_config_granite(&cfg));
    CHECK_MSG(fabs(fl_model_q_scale(&cfg) - 8.0) < 1e-6, "%g", fl_model_q_scale(&cfg));   /* sqrt(64) */
    CHECK_MSG(load_edited(&cfg, "\"residual_multiplier\": 0.22, ", "") == 0, "%s", fl_last_error());
    CHECK(cfg.residual_multiplier == 1.0 && !fl_config_residual_scaled(&cfg));
    refused("\"embedding_multiplier\": 12.0", "\"embedding_multiplier\": 0", "embedding_multiplier");
    refused("\"logits_scaling\": 8.0", "\"logits_scaling\": -8.0", "logits_scaling");
    refused("\"residual_multiplier\": 0.22", "\"residual_multiplier\": \"0.22\"", "residual_multiplier");
    refused("\"attention_multiplier\": 0.015625", "\"attention_multiplier\": 1e300", "attention_multiplier");
    refused("\"attention_bias\": false", "\"attention_bias\": true", "attention_bias");
    refused("\"mlp_bias\": false", "\"mlp_bias\": true", "mlp_bias");
    refused("\"hidden_act\": \"silu\"", "\"hidden_act\": \"gelu\"", "hidden_act");
}

/* Each scalar binds in the engine: the fixture's logits with any one set to 1 move by more than the
 * fixture tests' tolerance (the fixture script measures the same in transformers: 0.30, 0.046, 0.15, 4.5). */
TEST(granite_each_multiplier_moves_the_logits) {
    fl_model m;
    fl_lora_config lc;
    const char *model = FIX "granite_multipliers/model", *adapter = FIX "granite_multipliers/adapter";
    int rc = fl_adapter_load_config(adapter, &lc);
    if (!rc) rc = fl_model_init_dir(&m, model, fl_backend_cpu(), &lc);
    if (!rc) rc = fl_model_load_adapter(&m, adapter);
    CHECK_MSG(rc == 0, "%s", fl_last_error());
    if (rc) return;
    enum { T = 12 };
    int V = m.cfg.vocab_size;
    int32_t ids[T];
    for (int t = 0; t < T; t++) ids[t] = (int32_t)((t * 29 + 5) % V);
    float *ref = malloc(sizeof(float) * T * (size_t)V), *got = malloc(sizeof(float) * T * (size_t)V);
    fl_model_logits(&m, ids, 1, T, ref);
    double *fields[] = {&m.cfg.embedding_multiplier, &m.cfg.attention_multiplier, &m.cfg.residual_multiplier,
                        &m.cfg.logits_scaling};
    const char *names[] = {"embedding_multiplier", "attention_multiplier", "residual_multiplier", "logits_scaling"};
    for (int i = 0; i < 4; i++) {
        double keep = *fields[i];
        *fields[i] = 1.0;
        fl_model_logits(&m, ids, 1, T, got);
        *fields[i] = keep;
        double apart = 0;
        for (size_t j = 0; j < (size_t)T * V; j++) apart = fmax(apart, fabs(got[j] - ref[j]));
        printf("    %s %g -> 1: the logits move by %.3g\n", names[i], keep, apart);
        CHECK(apart > 1e-2);
    }
    fl_model_logits(&m, ids, 1, T, got);   /* restored: the same logits again */
    CHECK(memcmp(got, ref, sizeof(float) * T * (size_t)V) == 0);
    free(ref);
    free(got);
    fl_model_free(&m);
}

/* The fixture as llama.cpp's granite (convert_hf_to_gguf.py's GraniteModel is LlamaModel: llama's keys,
 * q/k rows permuted) with the four scalars under llama.cpp's names. */
TEST(export_granite_as_llama_cpp_granite) {
    char *dir = temp_dir(), out[128];
    snprintf(out, sizeof out, "%s/g.gguf", dir);
    CHECK(export_to(out, FIX "granite_multipliers/model", NULL, FL_EXPORT_F32, 0, 1) == 0);
    fl_gguf_file g;
    CHECK(fl_gguf_open(&g, out) == 0);
    check_str_kv(&g, "general.architecture", "granite");
    CHECK(get_u32(&g, "granite.block_count") == 2);
    CHECK(get_u32(&g, "granite.vocab_size") == 80);
    CHECK(get_u32(&g, "granite.rope.dimension_count") == 6);
    static const struct { const char *key; float want; } scales[] = {
        {"granite.embedding_scale", 3.0f}, {"granite.attention.scale", 0.2f}, {"granite.residual_scale", 0.5f},
        {"granite.logit_scale", 4.0f}};
    for (int i = 0; i < 4; i++) {
        float v = 0;
        CHECK_MSG(fl_gguf_get_f32(&g, scales[i].key, &v) == 0 && v == scales[i].want, "%s: %g", scales[i].key, v);
    }
    CHECK(fl_gguf_find_tensor(&g, "output.weight") == NULL);   /* tied: llama.cpp reuses token_embd */
    fl_safetensors st;
    CHECK(fl_safetensors_open(&st, FIX "granite_multipliers/model/model.safetensors") == 0);
    check_tensor(&g, &st, "blk.0.attn_q.weight", "model.layers.0.self_attn.q_proj.weight", 4, NULL, NULL, 0, 0, 0);
    check_tensor(&g, &st, "blk.1.attn_k.weight", "model.layers.1.self_attn.k_proj.weight", 2, NULL, NULL, 0, 0, 0);
    check_tensor(&g, &st, "token_embd.weight", "model.embed_tokens.weight", 0, NULL, NULL, 0, 0, 0);
    fl_safetensors_close(&st);
    fl_gguf_close(&g);
    rm_rf(dir);
}
