/* test_olmo2.c — OLMo 2 (Olmo2ForCausalLM): its config.json read as the OLMo 2 layout (model/config.h:
 * whole-row q/k norms, post norms only, no pre-norms) with Olmo2Config's defaults, the presets
 * olmo-2-1b / olmo-2-7b and their parameter counts, what the engine does not implement refused in one
 * line, and the whole-model and adapter GGUF export as llama.cpp's olmo2 (Olmo2Model in
 * convert_hf_to_gguf.py: NEOX RoPE, so q/k rows unpermuted; post_attention_norm, post_ffw_norm,
 * attn_q_norm (QD) and attn_k_norm (KVD)). The numerics are the HF fixture olmo2_post_norms
 * (test_hf_fixtures.c, test_cpu_bf16.c, test_generate.c, test_merge.c, test_cuda_model.c) and the
 * gradcheck / recompute cases (test_gradcheck.c, test_recompute.c). */
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"
#include "export/export.h"
#include "export/gguf_reader.h"
#include "export_test_util.h"
#include "model/config.h"
#include "test.h"

#include "config_test_util.h"

#define OLMO2_FIX FIX "olmo2_post_norms/model"

/* allenai/OLMo-2-0425-1B's config.json as its model card's values give it (hidden 2048, 16 layers,
 * 16 heads = kv heads, FF 8192, vocab 100352, rope_theta 5e5, untied, rms_norm_eps 1e-6; not fetched
 * here). Olmo2Config has no head_dim: 2048 / 16 = 128. */
static const char *olmo2_1b =
    "{\"architectures\": [\"Olmo2ForCausalLM\"], \"attention_bias\": false, \"attention_dropout\": 0.0,"
    " \"eos_token_id\": 100257, \"hidden_act\": \"silu\", \"hidden_size\": 2048, \"initializer_range\": 0.02,"
    " \"intermediate_size\": 8192, \"max_position_embeddings\": 4096, \"model_type\": \"olmo2\","
    " \"num_attention_heads\": 16, \"num_hidden_layers\": 16, \"num_key_value_heads\": 16, \"pad_token_id\": 100277,"
    " \"rms_norm_eps\": 1e-06, \"rope_scaling\": null, \"rope_theta\": 500000, \"tie_word_embeddings\": false,"
    " \"torch_dtype\": \"float32\", \"use_cache\": true, \"vocab_size\": 100352}";

static int load_json(fl_model_config *cfg, const char *json, char *dir) { return config_test_load_json(cfg, json, dir); }
/* `from` in the 1B config replaced by `to`, loaded: refused in one line naming config.json and `field` */
static void refused(const char *from, const char *to, const char *field) { config_test_refused_edit(olmo2_1b, from, to, field); }

static void check_olmo2_layout(const fl_model_config *c) {
    CHECK(c->arch == FL_ARCH_OLMO2 && c->qk_norm && c->qk_norm_full && c->sandwich_norms && c->no_pre_norms);
    CHECK(!c->qkv_bias && !c->fused_modules && c->norm_weight_offset == 0.0f && c->act == FL_ACT_SILU);
    CHECK(c->embed_scale == 0 && c->sliding_window == 0 && c->query_pre_attn_scalar == 0);
}

TEST(config_olmo2_fixture_reads_the_layout) {
    fl_model_config cfg;
    CHECK_MSG(fl_config_load(&cfg, OLMO2_FIX "/config.json") == 0, "%s", fl_last_error());
    check_olmo2_layout(&cfg);
    CHECK_EQ_INT(cfg.head_dim, 8);   /* 32 / 4: Olmo2Config has no head_dim */
    CHECK_EQ_INT(cfg.n_kv_heads, 2);
    CHECK(!cfg.tie_word_embeddings && cfg.rms_norm_eps == 1e-6f && cfg.rope_theta == 5e5);
    CHECK(!strcmp(fl_arch_name(cfg.arch), "OLMo2"));
}

TEST(config_olmo2_1b_is_the_preset_and_counts_match_the_cards) {
    fl_model_config got, want;
    char dir[64];
    CHECK_MSG(load_json(&got, olmo2_1b, dir) == 0, "%s", fl_last_error());
    rm_rf(dir);
    CHECK(fl_config_preset(&want, "olmo-2-1b") == 0);
    check_olmo2_layout(&got);
    check_olmo2_layout(&want);
    check_config_core_equal(&got, &want);
    CHECK_EQ_INT(got.max_position_embeddings, want.max_position_embeddings);
    CHECK_EQ_INT(got.eos_token_id, want.eos_token_id);
    CHECK(!strcmp(fl_config_preset_hf_name("olmo-2-1b"), "allenai/OLMo-2-0425-1B"));
    /* per layer 4·C² + 3·C·FF + q_norm C + k_norm C + two post norms 2C, no pre-norms; untied embedding
     * and head, the final norm: 1,484,916,736 (the 1B card's 1.48B) */
    CHECK_MSG(fl_config_total_params(&want) == 1484916736LL, "%lld", (long long)fl_config_total_params(&want));
    /* OLMo-2-1124-7B: C 4096, 32 layers, FF 11008: 7,298,617,344 (its card's 7.3B) */
    fl_model_config seven;
    CHECK(fl_config_preset(&seven, "olmo-2-7b") == 0);
    check_olmo2_layout(&seven);
    CHECK(seven.hidden_size == 4096 && seven.n_layers == 32 && seven.n_kv_heads == 32 && seven.head_dim == 128);
    CHECK_MSG(fl_config_total_params(&seven) == 7298617344LL, "%lld", (long long)fl_config_total_params(&seven));
}

/* Olmo2Config's defaults where config.json is silent: rms_norm_eps 1e-5, untied, head_dim C / NH; and
 * a config.json with only model_type "olmo2" */
TEST(config_olmo2_defaults) {
    const char *json = "{\"model_type\": \"olmo2\", \"vocab_size\": 50, \"hidden_size\": 48, \"intermediate_size\": 64,"
                       " \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"num_key_value_heads\": 2}";
    fl_model_config cfg;
    char dir[64];
    CHECK_MSG(load_json(&cfg, json, dir) == 0, "%s", fl_last_error());
    rm_rf(dir);
    check_olmo2_layout(&cfg);
    CHECK(cfg.rms_norm_eps == 1e-5f && !cfg.tie_word_embeddings && cfg.head_dim == 12 && cfg.rope_theta == 10000.0);
}

TEST(config_olmo2_unsupported_fields_refused) {
    refused("\"attention_bias\": false", "\"attention_bias\": true", "attention_bias");   /* o_proj's bias too */
    refused("\"hidden_act\": \"silu\"", "\"hidden_act\": \"gelu\"", "hidden_act");
    refused("\"rope_scaling\": null", "\"rope_scaling\": {\"rope_type\": \"proportional\", \"factor\": 2.0}", "rope_type");
}

/* The fixture as llama.cpp's olmo2: no attn_norm / ffn_norm, the two post norms and the whole-row q/k
 * norms as stored (no offset), q/k rows in HF order (NEOX), the untied head, no key_length (head size
 * = embedding / heads). */
TEST(export_olmo2_whole_model_as_llama_cpp_olmo2) {
    char *dir = temp_dir(), out[128], name[64], hf[96];
    snprintf(out, sizeof out, "%s/o.gguf", dir);
    CHECK(export_to(out, OLMO2_FIX, NULL, FL_EXPORT_F32, 0, 1) == 0);
    fl_gguf_file g;
    fl_safetensors st;
    CHECK(fl_gguf_open(&g, out) == 0);
    CHECK(fl_safetensors_open(&st, OLMO2_FIX "/model.safetensors") == 0);
    check_str_kv(&g, "general.architecture", "olmo2");
    CHECK_EQ_INT(get_u32(&g, "olmo2.block_count"), 2);
    CHECK_EQ_INT(get_u32(&g, "olmo2.attention.head_count_kv"), 2);
    CHECK(fl_gguf_find_kv(&g, "olmo2.attention.key_length") == NULL);
    static const char *const norms[4][2] = {{"post_attention_norm", "post_attention_layernorm"},
                                            {"post_ffw_norm", "post_feedforward_layernorm"},
                                            {"attn_q_norm", "self_attn.q_norm"}, {"attn_k_norm", "self_attn.k_norm"}};
    static const char *const projs[7][2] = {{"attn_q", "self_attn.q_proj"}, {"attn_k", "self_attn.k_proj"},
                                            {"attn_v", "self_attn.v_proj"}, {"attn_output", "self_attn.o_proj"},
                                            {"ffn_gate", "mlp.gate_proj"}, {"ffn_up", "mlp.up_proj"}, {"ffn_down", "mlp.down_proj"}};
    for (int l = 0; l < 2; l++) {
        for (int k = 0; k < 4; k++) {
            snprintf(name, sizeof name, "blk.%d.%s.weight", l, norms[k][0]);
            snprintf(hf, sizeof hf, "model.layers.%d.%s.weight", l, norms[k][1]);
            check_tensor(&g, &st, name, hf, 0, NULL, NULL, 0, 0, 0);
        }
        const fl_gguf_tensor *qn = fl_gguf_find_tensor(&g, "blk.0.attn_q_norm.weight");
        const fl_gguf_tensor *kn = fl_gguf_find_tensor(&g, "blk.0.attn_k_norm.weight");
        CHECK(qn && kn && qn->ne[0] == 32 && kn->ne[0] == 16 && qn->type == FL_GGML_F32);
        for (int k = 0; k < 2; k++) {
            snprintf(name, sizeof name, "blk.%d.%s.weight", l, k ? "ffn_norm" : "attn_norm");
            CHECK_MSG(fl_gguf_find_tensor(&g, name) == NULL, "%s written for a model without pre-norms", name);
        }
        for (int k = 0; k < 7; k++) {
            snprintf(name, sizeof name, "blk.%d.%s.weight", l, projs[k][0]);
            snprintf(hf, sizeof hf, "model.layers.%d.%s.weight", l, projs[k][1]);
            check_tensor(&g, &st, name, hf, 0, NULL, NULL, 0, 0, 0);
        }
    }
    check_tensor(&g, &st, "output_norm.weight", "model.norm.weight", 0, NULL, NULL, 0, 0, 0);
    check_tensor(&g, &st, "output.weight", "lm_head.weight", 0, NULL, NULL, 0, 0, 0);
    fl_gguf_close(&g);
    fl_safetensors_close(&st);
    /* the adapter alone: llama.cpp's olmo2 names, HF row order */
    snprintf(out, sizeof out, "%s/a.gguf", dir);
    CHECK(export_to(out, OLMO2_FIX, FIX "olmo2_post_norms/adapter", FL_EXPORT_F32, 1, 1) == 0);
    CHECK(fl_gguf_open(&g, out) == 0);
    check_str_kv(&g, "general.architecture", "olmo2");
    CHECK(fl_gguf_find_tensor(&g, "blk.1.attn_k.weight.lora_a") != NULL);
    fl_gguf_close(&g);
    rm_rf(dir);
}

/* A head size other than hidden / heads: llama.cpp's olmo2 loader cannot size it — one line, no file */
TEST(export_olmo2_head_dim_llama_cpp_cannot_run_refused) {
    char *dir = temp_dir(), model[128], path[PATH_MAX], abs_src[PATH_MAX], out[160];
    snprintf(model, sizeof model, "%s/m", dir);
    CHECK(mkdir(model, 0755) == 0);
    json_t *cfg = json_load_file(OLMO2_FIX "/config.json", 0, NULL);
    CHECK(cfg != NULL);
    if (!cfg) return;
    json_object_set_new(cfg, "head_dim", json_integer(4));
    snprintf(path, sizeof path, "%s/config.json", model);
    CHECK(json_dump_file(cfg, path, 0) == 0);
    json_decref(cfg);
    CHECK(realpath(OLMO2_FIX "/model.safetensors", abs_src) != NULL);
    snprintf(path, sizeof path, "%s/model.safetensors", model);
    CHECK(symlink(abs_src, path) == 0);
    snprintf(out, sizeof out, "%s/o.gguf", dir);
    fl_export_options o = {.out_path = out, .model_dir = model, .type = FL_EXPORT_F32, .no_tokenizer = 1, .force = 1};
    int n = 0;
    CHECK_EQ_INT(fl_export_gguf(&o, &n), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "config.json");
    CHECK_STR_CONTAINS(fl_last_error(), "llama.cpp");
    CHECK(strchr(fl_last_error(), '\n') == NULL);
    CHECK(access(out, F_OK) != 0);
    rm_rf(dir);
}
