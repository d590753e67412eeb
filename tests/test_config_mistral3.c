/* test_config_mistral3.c — Mistral3ForConditionalGeneration's config.json (model/config.c:
 * parse_vision_language): Mistral Small 3.1's file gives the preset mistral-small-3.1-24b, its
 * language model read as MistralForCausalLM with the tensors under language_model.model. and the
 * PEFT modules under model.language_model.; MistralConfig's defaults for what text_config leaves out
 * (a window of 4096 when the key is absent, none when null); no text_config: Mistral3Config's own
 * default (the same model); the head's tying rule (tie_if_head_missing, from the top-level
 * tie_word_embeddings, true by default); a text model other than mistral refused in one line. Not
 * the numerics (test_hf_fixtures.c: mistral3_vlm) and not the loader's resolution of the head
 * (test_adapter_io.c). */
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "model/config.h"
#include "test.h"

#include "config_test_util.h"

/* mistralai/Mistral-Small-3.1-24B-Instruct-2503's config.json (transformers 4.50 spelling; its
 * text_config is what transformers' Mistral3Config gives by default, configuration_mistral3.py),
 * vision_config shortened to what a vision tower needs to be named */
static const char *small31 =
    "{\"architectures\": [\"Mistral3ForConditionalGeneration\"], \"image_token_index\": 10,"
    " \"model_type\": \"mistral3\", \"multimodal_projector_bias\": false, \"projector_hidden_act\": \"gelu\","
    " \"spatial_merge_size\": 2,"
    " \"text_config\": {\"attention_dropout\": 0.0, \"head_dim\": 128, \"hidden_act\": \"silu\", \"hidden_size\": 5120,"
    " \"initializer_range\": 0.02, \"intermediate_size\": 32768, \"max_position_embeddings\": 131072,"
    " \"model_type\": \"mistral\", \"num_attention_heads\": 32, \"num_hidden_layers\": 40, \"num_key_value_heads\": 8,"
    " \"rms_norm_eps\": 1e-05, \"rope_theta\": 1000000000.0, \"sliding_window\": null, \"use_cache\": true,"
    " \"vocab_size\": 131072},"
    " \"torch_dtype\": \"bfloat16\", \"transformers_version\": \"4.50.0.dev0\","
    " \"vision_config\": {\"head_dim\": 64, \"hidden_act\": \"gelu\", \"hidden_size\": 1024, \"image_size\": 1540,"
    " \"model_type\": \"pixtral\", \"num_attention_heads\": 16, \"num_hidden_layers\": 24, \"patch_size\": 14,"
    " \"rope_theta\": 10000.0}, \"vision_feature_layer\": -1}";

static int load(fl_model_config *c, const char *json) {
    char dir[64];
    int status = config_test_load_json(c, json, dir);
    config_test_remove_dir(dir);
    return status;
}

static char *edit(const char *base, const char *from, const char *to) {
    const char *at = strstr(base, from);
    if (!at) return NULL;
    size_t n = strlen(base) - strlen(from) + strlen(to) + 1;
    char *s = malloc(n);
    snprintf(s, n, "%.*s%s%s", (int)(at - base), base, to, at + strlen(from));
    return s;
}

TEST(config_mistral3_small_31_is_the_preset) {
    fl_model_config c, want;
    CHECK_MSG(load(&c, small31) == 0, "%s", fl_last_error());
    CHECK(fl_config_preset(&want, "mistral-small-3.1-24b") == 0);
    check_config_core_equal(&c, &want);
    CHECK_EQ_INT(c.max_position_embeddings, want.max_position_embeddings);
    CHECK_EQ_INT(c.bos_token_id, 1);
    CHECK_EQ_INT(c.eos_token_id, 2);
    CHECK(c.multimodal == 1 && want.multimodal == 1);
    CHECK(c.tie_word_embeddings == 0 && c.tie_if_head_missing == 1); /* the top level's default: true */
    CHECK(c.rope_theta == 1e9 && c.rotary_dim == 128 && !c.rope_yarn && !c.rope_llama3 && !c.qkv_bias);
    for (int l = 0; l < c.n_layers; l++) CHECK_EQ_INT(fl_config_layer_window(&c, l), 0);
    CHECK(!strcmp(fl_config_tensor_prefix(&c), "language_model.model.") &&
          !strcmp(fl_config_module_prefix(&c), "model.language_model.") &&
          !strcmp(fl_config_lm_head_name(&c), "language_model.lm_head.weight"));
    /* 23,572,403,200 parameters: Mistral Small 3's language model (the Hub's total for the 2501 base) */
    CHECK_MSG(fl_config_total_params(&c) == 23572403200LL, "%lld", (long long)fl_config_total_params(&c));
    CHECK_MSG(fl_config_total_params(&want) == 23572403200LL, "%lld", (long long)fl_config_total_params(&want));
    /* found by model_type alone too */
    char *by_type = edit(small31, "\"architectures\": [\"Mistral3ForConditionalGeneration\"], ", "");
    fl_model_config t;
    CHECK_MSG(load(&t, by_type) == 0, "%s", fl_last_error());
    check_config_core_equal(&t, &want);
    CHECK(t.multimodal == 1);
    free(by_type);
}

TEST(config_mistral3_defaults_and_tying) {
    fl_model_config c, want;
    CHECK(fl_config_preset(&want, "mistral-small-3.1-24b") == 0);
    /* no text_config: Mistral3Config's default, Mistral Small 3.1's language model */
    CHECK_MSG(load(&c, "{\"architectures\": [\"Mistral3ForConditionalGeneration\"], \"model_type\": \"mistral3\"}") == 0,
              "%s", fl_last_error());
    check_config_core_equal(&c, &want);
    CHECK_EQ_INT(c.max_position_embeddings, 131072);
    CHECK_EQ_INT(fl_config_layer_window(&c, 0), 0);
    /* a text_config that leaves keys out takes MistralConfig's defaults: 32000 vocab, 4096 wide, 32
     * layers, 32 / 8 heads, FF 14336, window 4096 (absent, not null), rms_norm_eps 1e-6, theta 1e4 */
    CHECK_MSG(load(&c, "{\"architectures\": [\"Mistral3ForConditionalGeneration\"], \"text_config\": {}}") == 0, "%s",
              fl_last_error());
    CHECK(c.vocab_size == 32000 && c.hidden_size == 4096 && c.n_layers == 32 && c.n_heads == 32 && c.n_kv_heads == 8);
    CHECK(c.intermediate_size == 14336 && c.head_dim == 128 && c.rope_theta == 1e4 && c.rms_norm_eps == 1e-6f);
    CHECK_EQ_INT(fl_config_layer_window(&c, 0), 4096);
    CHECK_EQ_INT(fl_config_layer_window(&c, 31), 4096);
    CHECK(c.bos_token_id == 1 && c.eos_token_id == 2);
    /* tying: the top-level flag decides whether a folder without a head ties; text_config's is not read */
    char *untie = edit(small31, "\"spatial_merge_size\": 2,", "\"spatial_merge_size\": 2, \"tie_word_embeddings\": false,");
    CHECK_MSG(load(&c, untie) == 0, "%s", fl_last_error());
    CHECK(c.tie_word_embeddings == 0 && c.tie_if_head_missing == 0);
    char *text_tie = edit(small31, "\"use_cache\": true,", "\"use_cache\": true, \"tie_word_embeddings\": true,");
    CHECK_MSG(load(&c, text_tie) == 0, "%s", fl_last_error());
    CHECK(c.tie_word_embeddings == 0 && c.tie_if_head_missing == 1);
    free(untie);
    free(text_tie);
}

TEST(config_mistral3_refuses_other_text_models) {
    config_test_refused_edit(small31, "\"model_type\": \"mistral\",", "\"model_type\": \"mistral4\",",
                             "text_config.model_type");
    config_test_refused_edit(small31, "\"model_type\": \"mistral\",", "\"model_type\": 3,", "text_config.model_type");
    config_test_refused_edit(small31, "\"text_config\": {", "\"text_config\": [], \"x\": {", "text_config");
    config_test_refused_edit(small31, "\"spatial_merge_size\": 2,", "\"tie_word_embeddings\": 1,", "tie_word_embeddings");
    /* the text model's own fields keep their checks, named under text_config */
    config_test_refused_edit(small31, "\"rms_norm_eps\": 1e-05", "\"rms_norm_eps\": -1", "text_config");
}

/* Ministral 3 (Ministral3ForCausalLM, ministral3; the language model of Ministral 3 and Devstral 2's
 * Mistral3ForConditionalGeneration): Mistral's layers, Ministral3Config's defaults (head_dim 128, the
 * default RoPE: yarn factor 16 over 16384 with attention factor 1, llama_4_scaling_beta 0.1), the
 * q factor's beta and period read from rope_parameters (both required: transformers reads them), the
 * preset ministral-3-8b equal to the defaults. */
static const char *ministral3 =
    "{\"architectures\": [\"Ministral3ForCausalLM\"], \"hidden_size\": 4096, \"intermediate_size\": 14336,"
    " \"model_type\": \"ministral3\", \"num_attention_heads\": 32, \"num_hidden_layers\": 34,"
    " \"num_key_value_heads\": 8, \"vocab_size\": 131072,"
    " \"rope_parameters\": {\"rope_type\": \"yarn\", \"rope_theta\": 1000000.0, \"factor\": 16.0,"
    " \"original_max_position_embeddings\": 16384, \"max_position_embeddings\": 262144, \"beta_fast\": 32.0,"
    " \"beta_slow\": 1.0, \"mscale_all_dim\": 1.0, \"mscale\": 1.0, \"llama_4_scaling_beta\": 0.1}}";

TEST(config_ministral3_defaults_and_attention_scaling) {
    fl_model_config c, want;
    CHECK_MSG(load(&c, ministral3) == 0, "%s", fl_last_error());
    CHECK(fl_config_preset(&want, "ministral-3-8b") == 0);
    check_config_core_equal(&c, &want);
    CHECK(c.arch == FL_ARCH_LLAMA && c.head_dim == 128 && c.max_position_embeddings == 262144 && !c.multimodal);
    CHECK(c.rms_norm_eps == 1e-5f && c.tie_word_embeddings == 0);
    CHECK(c.rope_yarn == 1 && c.rope_factor == 16.0 && c.rope_original_max_position == 16384);
    CHECK(c.rope_yarn_beta_fast == 32.0 && c.rope_yarn_beta_slow == 1.0 && fl_config_rope_attention_factor(&c) == 1.0f);
    CHECK(c.rope_llama4_beta == 0.1 && c.rope_llama4_original == 16384);
    CHECK(want.rope_yarn == 1 && want.rope_factor == 16.0 && want.rope_original_max_position == 16384);
    CHECK(want.rope_yarn_beta_fast == 32.0 && fl_config_rope_attention_factor(&want) == 1.0f);
    CHECK(want.rope_llama4_beta == 0.1 && want.rope_llama4_original == 16384);
    for (int l = 0; l < c.n_layers; l++) CHECK_EQ_INT(fl_config_layer_window(&c, l), 0);
    /* no RoPE fields at all: Ministral3Config's default rope_parameters, the same */
    char *bare = edit(ministral3, "\"rope_parameters\": {", "\"x\": {");
    fl_model_config d;
    CHECK_MSG(bare && load(&d, bare) == 0, "%s", fl_last_error());
    CHECK(d.rope_yarn == 1 && d.rope_factor == 16.0 && d.rope_original_max_position == 16384 && d.rope_theta == 1e6);
    CHECK(d.rope_llama4_beta == 0.1 && d.rope_llama4_original == 16384 && fl_config_rope_attention_factor(&d) == 1.0f);
    free(bare);
    /* inside Mistral3ForConditionalGeneration (Ministral 3, Devstral 2): the same language model */
    char vlm[2048];
    snprintf(vlm, sizeof vlm, "{\"architectures\": [\"Mistral3ForConditionalGeneration\"], \"model_type\": \"mistral3\","
                              " \"text_config\": %s}", ministral3);
    CHECK_MSG(load(&d, vlm) == 0, "%s", fl_last_error());
    check_config_core_equal(&d, &want);
    CHECK(d.multimodal == 1 && d.rope_llama4_beta == 0.1 && d.rope_factor == 16.0);
    CHECK(d.bos_token_id == 1 && d.eos_token_id == 2);
    /* what transformers needs to run it, and a beta it would not */
    config_test_refused_edit(ministral3, ", \"llama_4_scaling_beta\": 0.1", "", "llama_4_scaling_beta");
    config_test_refused_edit(ministral3, "\"llama_4_scaling_beta\": 0.1", "\"llama_4_scaling_beta\": -1",
                             "llama_4_scaling_beta");
    config_test_refused_edit(ministral3, "\"original_max_position_embeddings\": 16384, ", "",
                             "original_max_position_embeddings");
}
