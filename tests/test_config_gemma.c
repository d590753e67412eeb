/* test_config_gemma.c — Gemma (1) / Gemma 2 / Gemma 3 config.json parsing (model/config.c: parse_gemma): the
 * real gemma-3-1b-it config (transformers 4.52 spelling: rope_theta, rope_local_base_freq,
 * sliding_window_pattern) and its 5.x spelling (layer_types, rope_parameters per layer type) give the
 * preset; Gemma 2's defaults; every unsupported field refused in one line naming the file and the
 * field; Gemma 1's google/gemma-7b config and the fields of the later Gemmas refused on it; which layers slide (config.h's window rule, as transformers builds layer_types); the presets'
 * parameter counts; the activation
 * table's sandwich-norm entries. Not the numerics (test_hf_fixtures.c, test_gradcheck.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"
#include "engine/activations.h"
#include "model/config.h"
#include "test.h"

#include "config_test_util.h"

/* google/gemma-3-1b-it's config.json (transformers 4.52.4), as quoted publicly */
static const char *gemma3_1b_4x =
    "{\"architectures\": [\"Gemma3ForCausalLM\"], \"attention_bias\": false, \"attention_dropout\": 0.0,"
    " \"attn_logit_softcapping\": null, \"bos_token_id\": 2, \"cache_implementation\": \"hybrid\","
    " \"eos_token_id\": [1, 106], \"final_logit_softcapping\": null, \"head_dim\": 256,"
    " \"hidden_activation\": \"gelu_pytorch_tanh\", \"hidden_size\": 1152, \"initializer_range\": 0.02,"
    " \"intermediate_size\": 6912, \"max_position_embeddings\": 32768, \"model_type\": \"gemma3_text\","
    " \"num_attention_heads\": 4, \"num_hidden_layers\": 26, \"num_key_value_heads\": 1, \"pad_token_id\": 0,"
    " \"query_pre_attn_scalar\": 256, \"rms_norm_eps\": 1e-06, \"rope_local_base_freq\": 10000,"
    " \"rope_scaling\": null, \"rope_theta\": 1000000, \"sliding_window\": 512, \"sliding_window_pattern\": 6,"
    " \"torch_dtype\": \"bfloat16\", \"transformers_version\": \"4.52.4\", \"use_cache\": true,"
    " \"vocab_size\": 262144}";

/* Writes `json` to a fresh config.json and loads it (the folder removed after); returns fl_config_load's status. */
static int load_json(fl_model_config *cfg, const char *json) {
    char dir[64];
    int rc = config_test_load_json(cfg, json, dir);
    config_test_remove_dir(dir);
    return rc;
}

/* `base` with the text `from` replaced by `to` (one occurrence; the caller frees). */
static char *edit(const char *base, const char *from, const char *to) {
    const char *at = strstr(base, from);
    if (!at) return NULL;
    size_t n = strlen(base) - strlen(from) + strlen(to) + 1;
    char *out = malloc(n);
    snprintf(out, n, "%.*s%s%s", (int)(at - base), base, to, at + strlen(from));
    return out;
}

static void check_gemma_fields_equal(const fl_model_config *got, const fl_model_config *want) {
    check_config_core_equal(got, want);
    CHECK_EQ_INT(got->max_position_embeddings, want->max_position_embeddings);
    CHECK_CLOSE(got->rope_local_theta, want->rope_local_theta, 0, 1e-12);
    CHECK(got->rope_linear_factor == want->rope_linear_factor);
    CHECK_EQ_INT(got->qk_norm, want->qk_norm);
    CHECK(got->norm_weight_offset == want->norm_weight_offset);
    CHECK(got->attn_logit_softcapping == want->attn_logit_softcapping);
    CHECK_EQ_INT(got->sandwich_norms, want->sandwich_norms);
    CHECK_EQ_INT(got->act, want->act);
    CHECK_CLOSE(got->embed_scale, want->embed_scale, 0, 1e-12);
    CHECK_EQ_INT(got->query_pre_attn_scalar, want->query_pre_attn_scalar);
    CHECK(got->final_logit_softcapping == want->final_logit_softcapping);
    CHECK_EQ_INT(got->sliding_window, want->sliding_window);
    CHECK_EQ_INT(got->window_first_layer, want->window_first_layer);
    CHECK_EQ_INT(got->window_global_every, want->window_global_every);
    for (int l = 0; l < got->n_layers; l++) CHECK_EQ_INT(fl_config_layer_window(got, l), fl_config_layer_window(want, l));
    CHECK_EQ_INT(got->bos_token_id, want->bos_token_id);
    CHECK_EQ_INT(got->eos_token_id, want->eos_token_id);
    CHECK_EQ_INT(fl_config_total_params(got), fl_config_total_params(want));
}

TEST(config_gemma3_1b_4x_spelling_is_the_preset) {
    fl_model_config got, want;
    CHECK_MSG(load_json(&got, gemma3_1b_4x) == 0, "%s", fl_last_error());
    CHECK(fl_config_preset(&want, "gemma-3-1b") == 0);
    check_gemma_fields_equal(&got, &want);
    /* every 6th layer global: 5, 11, 17, 23 */
    for (int l = 0; l < 26; l++) CHECK_EQ_INT(fl_config_layer_window(&got, l), l % 6 != 5 ? 512 : 0);
}

TEST(config_gemma3_5x_spelling_layer_types_rope_parameters) {
    char types[26 * 24 + 8] = "[";
    for (int l = 0; l < 26; l++)
        strcat(types, l % 6 == 5 ? "\"full_attention\"," : "\"sliding_attention\",");
    types[strlen(types) - 1] = ']';
    char lt[sizeof types + 32];
    snprintf(lt, sizeof lt, "\"layer_types\": %s", types);
    char *c = edit(gemma3_1b_4x, "\"sliding_window_pattern\": 6", lt);
    char *d = edit(c, "\"rope_local_base_freq\": 10000, \"rope_scaling\": null, \"rope_theta\": 1000000,",
                   "\"rope_parameters\": {\"sliding_attention\": {\"rope_type\": \"default\", \"rope_theta\": 10000.0},"
                   " \"full_attention\": {\"rope_type\": \"default\", \"rope_theta\": 1000000.0}},");
    fl_model_config got, want;
    CHECK_MSG(d && load_json(&got, d) == 0, "%s", fl_last_error());
    CHECK(fl_config_preset(&want, "gemma-3-1b") == 0);
    check_gemma_fields_equal(&got, &want);
    /* Gemma-3-4b+: linear factor 8 on the global layers, in either spelling */
    char *lin4 = edit(gemma3_1b_4x, "\"rope_scaling\": null", "\"rope_scaling\": {\"rope_type\": \"linear\", \"factor\": 8.0}");
    CHECK(load_json(&got, lin4) == 0 && got.rope_linear_factor == 8.0 && got.rope_local_theta == 1e4);
    char *lin5 = edit(d, "\"full_attention\": {\"rope_type\": \"default\"", "\"full_attention\": {\"rope_type\": \"linear\", \"factor\": 8.0");
    CHECK(load_json(&got, lin5) == 0 && got.rope_linear_factor == 8.0 && got.rope_theta == 1e6);
    free(c); free(d); free(lin4); free(lin5);
}

/* one line naming the file and the field, exit code 2 (FL_ERR_INPUT) */
static void refused(const char *json, const char *field) {
    fl_model_config cfg;
    CHECK_EQ_INT(load_json(&cfg, json), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "config.json");
    CHECK_STR_CONTAINS(fl_last_error(), field);
    CHECK(strchr(fl_last_error(), '\n') == NULL);
}

/* Each case {from, to, field}: `base` edited from -> to is refused naming the field. */
static void refuse_each(const char *base, const char *const cases[][3], size_t n) {
    for (size_t i = 0; i < n; i++) {
        char *j = edit(base, cases[i][0], cases[i][1]);
        CHECK_MSG(j != NULL, "case %zu", i);
        if (j) refused(j, cases[i][2]);
        free(j);
    }
}

TEST(config_gemma_unsupported_fields_refused) {
    const char *cases[][3] = {
        {"\"attn_logit_softcapping\": null", "\"attn_logit_softcapping\": 0", "attn_logit_softcapping"},
        {"\"attn_logit_softcapping\": null", "\"attn_logit_softcapping\": -50.0", "attn_logit_softcapping"},
        {"\"attn_logit_softcapping\": null", "\"attn_logit_softcapping\": \"50\"", "attn_logit_softcapping"},
        {"\"hidden_activation\": \"gelu_pytorch_tanh\"", "\"hidden_activation\": \"gelu\"", "hidden_activation"},
        {"\"rope_scaling\": null", "\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 8.0}", "rope_scaling.rope_type"},
        {"\"use_cache\": true", "\"use_cache\": true, \"use_bidirectional_attention\": true", "use_bidirectional_attention"},
        {"\"use_cache\": true", "\"use_cache\": true, \"num_experts\": 8", "num_experts"},
        {"\"sliding_window_pattern\": 6", "\"layer_types\": [\"full_attention\"]", "layer_types"},
        {"\"query_pre_attn_scalar\": 256", "\"query_pre_attn_scalar\": 0", "query_pre_attn_scalar"},
        {"\"attention_bias\": false", "\"attention_bias\": true", "attention_bias"},
    };
    refuse_each(gemma3_1b_4x, cases, sizeof cases / sizeof cases[0]);
    /* the 5.x rope_parameters: an unknown layer type, and a linear RoPE on the sliding layers */
    char *p = edit(gemma3_1b_4x, "\"rope_scaling\": null,", "\"rope_parameters\": {\"chunked_attention\": {}},");
    refused(p, "rope_parameters.chunked_attention");
    free(p);
    p = edit(gemma3_1b_4x, "\"rope_scaling\": null,",
             "\"rope_parameters\": {\"sliding_attention\": {\"rope_type\": \"linear\", \"factor\": 2.0}},");
    refused(p, "rope_parameters.sliding_attention.rope_type");
    free(p);
}

/* google/gemma-7b's config.json (transformers 4.38, as recalled from the public file): the legacy
 * hidden_act "gelu" that GemmaConfig reads as the tanh GELU; the same as the preset. */
static const char *gemma_7b =
    "{\"architectures\": [\"GemmaForCausalLM\"], \"attention_bias\": false, \"attention_dropout\": 0.0,"
    " \"bos_token_id\": 2, \"eos_token_id\": 1, \"head_dim\": 256, \"hidden_act\": \"gelu\", \"hidden_size\": 3072,"
    " \"initializer_range\": 0.02, \"intermediate_size\": 24576, \"max_position_embeddings\": 8192,"
    " \"model_type\": \"gemma\", \"num_attention_heads\": 16, \"num_hidden_layers\": 28, \"num_key_value_heads\": 16,"
    " \"pad_token_id\": 0, \"rms_norm_eps\": 1e-06, \"rope_scaling\": null, \"rope_theta\": 10000.0,"
    " \"torch_dtype\": \"bfloat16\", \"transformers_version\": \"4.38.0.dev0\", \"use_cache\": true, \"vocab_size\": 256000}";

TEST(config_gemma1_7b_is_the_preset_and_later_fields_refused) {
    fl_model_config got, want;
    CHECK_MSG(load_json(&got, gemma_7b) == 0, "%s", fl_last_error());
    CHECK(fl_config_preset(&want, "gemma-7b") == 0);
    check_gemma_fields_equal(&got, &want);
    CHECK(got.arch == FL_ARCH_GEMMA && got.act == FL_ACT_GELU_TANH && !got.sandwich_norms && !got.qk_norm);
    CHECK(got.norm_weight_offset == 1.0f && got.embed_scale == sqrt(3072.0) && got.query_pre_attn_scalar == 0);
    CHECK(got.sliding_window == 0 && got.attn_logit_softcapping == 0 && got.final_logit_softcapping == 0);
    /* the 5.x spelling, no architectures: model_type alone; hidden_act absent is GemmaConfig's tanh GELU */
    char *five = edit(gemma_7b, "\"architectures\": [\"GemmaForCausalLM\"], ", "");
    char *five2 = edit(five, "\"hidden_act\": \"gelu\", ", "");
    char *five3 = edit(five2, "\"rope_scaling\": null, \"rope_theta\": 10000.0,",
                       "\"rope_parameters\": {\"rope_type\": \"default\", \"rope_theta\": 10000.0},");
    CHECK_MSG(five3 && load_json(&got, five3) == 0, "%s", fl_last_error());
    check_gemma_fields_equal(&got, &want);
    free(five); free(five2); free(five3);
    const char *cases[][3] = {
        {"\"hidden_act\": \"gelu\"", "\"hidden_act\": \"silu\"", "hidden_act"},
        {"\"use_cache\": true", "\"use_cache\": true, \"query_pre_attn_scalar\": 256", "query_pre_attn_scalar"},
        {"\"use_cache\": true", "\"use_cache\": true, \"attn_logit_softcapping\": 50.0", "attn_logit_softcapping"},
        {"\"use_cache\": true", "\"use_cache\": true, \"final_logit_softcapping\": 30.0", "final_logit_softcapping"},
        {"\"use_cache\": true", "\"use_cache\": true, \"sliding_window\": 4096", "sliding_window"},
        {"\"use_cache\": true", "\"use_cache\": true, \"layer_types\": [\"full_attention\"]", "layer_types"},
        {"\"use_cache\": true", "\"use_cache\": true, \"use_bidirectional_attention\": true", "use_bidirectional_attention"},
        {"\"attention_bias\": false", "\"attention_bias\": true", "attention_bias"},
        {"\"rope_scaling\": null", "\"rope_scaling\": {\"rope_type\": \"proportional\"}", "rope_scaling.rope_type"},
    };
    refuse_each(gemma_7b, cases, sizeof cases / sizeof cases[0]);
}

/* Gemma 2: attn_logit_softcapping defaults to 50.0 (Gemma2Config), so a config without it caps at
 * 50 as one that says 50.0, and matches the preset; null is no cap; another positive value is
 * taken as it is; final_logit_softcapping the same with 30.0. Gemma 3 (Gemma3TextConfig's None) has none unless its config sets one. */
TEST(config_gemma2_attn_softcap_default_null_value) {
    const char *g2 =
        "{\"architectures\": [\"Gemma2ForCausalLM\"], \"model_type\": \"gemma2\", \"hidden_size\": 2304,"
        " \"intermediate_size\": 9216, \"num_hidden_layers\": 26, \"num_attention_heads\": 8,"
        " \"num_key_value_heads\": 4, \"vocab_size\": 256000, \"max_position_embeddings\": 8192,"
        " \"bos_token_id\": 2, \"eos_token_id\": 1, \"hidden_act\": \"gelu_pytorch_tanh\"}";
    fl_model_config got, want;
    CHECK(fl_config_preset(&want, "gemma-2-2b") == 0);
    CHECK(want.attn_logit_softcapping == 50.0f);
    CHECK_MSG(load_json(&got, g2) == 0, "%s", fl_last_error());
    check_gemma_fields_equal(&got, &want);
    for (int l = 0; l < 26; l++) CHECK_EQ_INT(fl_config_layer_window(&got, l), l % 2 == 0 ? 4096 : 0);   /* sliding first */
    char *with = edit(g2, "\"hidden_act\"", "\"attn_logit_softcapping\": 50.0, \"hidden_act\"");
    CHECK_MSG(load_json(&got, with) == 0, "%s", fl_last_error());
    check_gemma_fields_equal(&got, &want);
    char *other = edit(g2, "\"hidden_act\"", "\"attn_logit_softcapping\": 1.5, \"hidden_act\"");
    CHECK_MSG(load_json(&got, other) == 0 && got.attn_logit_softcapping == 1.5f, "%s", fl_last_error());
    char *null = edit(g2, "\"hidden_act\"", "\"attn_logit_softcapping\": null, \"hidden_act\"");
    CHECK_MSG(load_json(&got, null) == 0 && got.attn_logit_softcapping == 0.0f, "%s", fl_last_error());
    char *zero = edit(g2, "\"hidden_act\"", "\"attn_logit_softcapping\": 0.0, \"hidden_act\"");
    refused(zero, "attn_logit_softcapping");
    char *g3 = edit(gemma3_1b_4x, "\"attn_logit_softcapping\": null", "\"attn_logit_softcapping\": 20.0");
    CHECK_MSG(load_json(&got, g3) == 0 && got.attn_logit_softcapping == 20.0f, "%s", fl_last_error());
    /* final_logit_softcapping likewise: absent 30.0 (the preset's), null none, a value as it is */
    CHECK(want.final_logit_softcapping == 30.0f);
    char *fnull = edit(g2, "\"hidden_act\"", "\"final_logit_softcapping\": null, \"hidden_act\"");
    CHECK_MSG(load_json(&got, fnull) == 0 && got.final_logit_softcapping == 0.0f, "%s", fl_last_error());
    char *fval = edit(g2, "\"hidden_act\"", "\"final_logit_softcapping\": 3.0, \"hidden_act\"");
    CHECK_MSG(load_json(&got, fval) == 0 && got.final_logit_softcapping == 3.0f, "%s", fl_last_error());
    free(with); free(other); free(null); free(zero); free(g3); free(fnull); free(fval);
}

/* The sliding layers are real windows (no bound on the sequence): sliding_window_pattern 1 makes every
 * layer global; a listed layer_types becomes config.h's rule when it can (Gemma 2's alternation, a
 * first full layer), and one it cannot say, or sliding layers with a null window, are refused */
TEST(config_gemma_sliding_layers_are_windows) {
    fl_model_config cfg;
    CHECK(fl_config_preset(&cfg, "gemma-3-1b") == 0);
    CHECK(cfg.sliding_window == 512 && cfg.window_first_layer == 0 && cfg.window_global_every == 6);
    char *all_global = edit(gemma3_1b_4x, "\"sliding_window_pattern\": 6", "\"sliding_window_pattern\": 1");
    CHECK(load_json(&cfg, all_global) == 0 && cfg.sliding_window == 0);
    for (int l = 0; l < 26; l++) CHECK_EQ_INT(fl_config_layer_window(&cfg, l), 0);
    free(all_global);
    char *pat2 = edit(gemma3_1b_4x, "\"sliding_window_pattern\": 6", "\"sliding_window_pattern\": 2");
    CHECK(load_json(&cfg, pat2) == 0 && cfg.window_global_every == 2);
    free(pat2);
    char *null_window = edit(gemma3_1b_4x, "\"sliding_window\": 512", "\"sliding_window\": null");
    refused(null_window, "sliding_window");
    free(null_window);
    /* listed: layer 0 full, then sliding with every 3rd (counting from 1) full */
    char types[26 * 24 + 8] = "[";
    for (int l = 0; l < 26; l++)
        strcat(types, l == 0 || (l + 1) % 3 == 0 ? "\"full_attention\"," : "\"sliding_attention\",");
    types[strlen(types) - 1] = ']';
    char lt[sizeof types + 32];
    snprintf(lt, sizeof lt, "\"layer_types\": %s", types);
    char *listed = edit(gemma3_1b_4x, "\"sliding_window_pattern\": 6", lt);
    CHECK_MSG(load_json(&cfg, listed) == 0, "%s", fl_last_error());
    for (int l = 0; l < 26; l++) CHECK_EQ_INT(fl_config_layer_window(&cfg, l), l == 0 || (l + 1) % 3 == 0 ? 0 : 512);
    free(listed);
    /* irregular: only layer 7 slides but 9 too */
    char odd[26 * 24 + 8] = "[";
    for (int l = 0; l < 26; l++) strcat(odd, l == 7 || l == 9 ? "\"sliding_attention\"," : "\"full_attention\",");
    odd[strlen(odd) - 1] = ']';
    snprintf(lt, sizeof lt, "\"layer_types\": %s", odd);
    char *irregular = edit(gemma3_1b_4x, "\"sliding_window_pattern\": 6", lt);
    refused(irregular, "layer_types");
    free(irregular);
}

/* Gemma's post-attention and post-feedforward norms keep o's and down's outputs (C each) and two
 * rstd per token and layer — one layer's worth with recompute — plus one (N, C) backward buffer */
TEST(activation_table_counts_sandwich_norms) {
    fl_model_config g, plain;
    CHECK(fl_config_preset(&g, "gemma-3-1b") == 0 && g.sandwich_norms);
    plain = g;
    plain.sandwich_norms = 0;
    size_t N = 2 * 128, C = (size_t)g.hidden_size;
    for (int rc = 0; rc < 2; rc++) {
        size_t LS = rc ? 1 : (size_t)g.n_layers;
        size_t want = LS * (2 * N * C * 2 + 2 * N * 4) + N * C * 2;   /* bf16 acts, f32 rstd */
        size_t got = fl_activations_bytes(&g, 16, 2, 128, 2, rc) - fl_activations_bytes(&plain, 16, 2, 128, 2, rc);
        CHECK_EQ_INT(got, want);
    }
}

TEST(presets_gemma_parameter_counts) {
    fl_model_config cfg;
    /* 999,885,952: Gemma 3 1B's published count (the card's 1B); 2,614,341,888: Gemma 2 2B's (2.6B) */
    CHECK(fl_config_preset(&cfg, "gemma-3-1b") == 0);
    CHECK_EQ_INT(fl_config_total_params(&cfg), 999885952LL);
    CHECK(fl_config_preset(&cfg, "gemma-2-2b") == 0);
    CHECK_EQ_INT(fl_config_total_params(&cfg), 2614341888LL);
    /* Gemma 1 2B and 7B: 2,506,172,416 and 8,537,680,896 (the cards' 2B and 7B, 2.51B and 8.54B) */
    CHECK(fl_config_preset(&cfg, "gemma-2b") == 0 && cfg.n_kv_heads == 1 && !cfg.sandwich_norms);
    CHECK_EQ_INT(fl_config_total_params(&cfg), 2506172416LL);
    CHECK(fl_config_preset(&cfg, "gemma-7b") == 0);
    CHECK_EQ_INT(fl_config_total_params(&cfg), 8537680896LL);
    CHECK_STR_CONTAINS(fl_config_preset_hf_name("gemma-3-1b"), "google/gemma-3-1b");
}

/* Gemma3ForConditionalGeneration as google's gemma-3-4b-it config.json gives it: text_config holds
 * only what differs from Gemma3TextConfig's defaults (vocab 262208, 8 heads, 4 kv heads, head_dim
 * 256, query_pre_attn_scalar 256, RoPE 1e6 global with the linear factor, 1e4 local, pattern 6);
 * the language model's tensors then live under language_model.model., its PEFT modules under
 * model.language_model.; a text_config that is not an object is refused in one line. */
TEST(config_gemma3_vision_language_text_config) {
    const char *g4 =
        "{\"architectures\": [\"Gemma3ForConditionalGeneration\"], \"boi_token_index\": 255999,"
        " \"eoi_token_index\": 256000, \"eos_token_id\": [1, 106], \"image_token_index\": 262144,"
        " \"mm_tokens_per_image\": 256, \"model_type\": \"gemma3\","
        " \"text_config\": {\"hidden_size\": 2560, \"intermediate_size\": 10240, \"model_type\": \"gemma3_text\","
        " \"num_hidden_layers\": 34, \"rope_scaling\": {\"factor\": 8.0, \"rope_type\": \"linear\"},"
        " \"sliding_window\": 1024}, \"torch_dtype\": \"bfloat16\","
        " \"vision_config\": {\"hidden_size\": 1152, \"image_size\": 896, \"intermediate_size\": 4304,"
        " \"model_type\": \"siglip_vision_model\", \"num_attention_heads\": 16, \"num_hidden_layers\": 27,"
        " \"patch_size\": 14, \"vision_use_head\": false}}";
    fl_model_config c;
    CHECK_MSG(load_json(&c, g4) == 0, "%s", fl_last_error());
    CHECK(c.arch == FL_ARCH_GEMMA3 && c.multimodal == 1);
    CHECK(c.vocab_size == 262208 && c.hidden_size == 2560 && c.intermediate_size == 10240 && c.n_layers == 34);
    CHECK(c.n_heads == 8 && c.n_kv_heads == 4 && c.head_dim == 256 && c.query_pre_attn_scalar == 256);
    CHECK(c.tie_word_embeddings == 1 && c.qk_norm == 1 && c.sandwich_norms == 1);
    CHECK(c.rope_theta == 1e6 && c.rope_linear_factor == 8.0 && c.rope_local_theta == 1e4);
    CHECK(c.sliding_window == 1024 && c.window_global_every == 6);
    for (int l = 0; l < 34; l++) CHECK_EQ_INT(fl_config_layer_window(&c, l), (l + 1) % 6 ? 1024 : 0);
    CHECK(!strcmp(fl_config_tensor_prefix(&c), "language_model.model.") &&
          !strcmp(fl_config_module_prefix(&c), "model.language_model."));
    /* the preset gemma-3-4b is this config; 3,880,263,168 parameters in the language model (the card's
     * 4B counts the 0.4B vision tower too) */
    fl_model_config want;
    CHECK(fl_config_preset(&want, "gemma-3-4b") == 0);
    check_gemma_fields_equal(&c, &want);
    CHECK_EQ_INT(want.multimodal, 1);
    CHECK_MSG(fl_config_total_params(&c) == 3880263168LL, "%lld parameters", (long long)fl_config_total_params(&c));
    char *bad = edit(g4, "\"text_config\": {", "\"text_config\": 7, \"x\": {");
    refused(bad, "text_config");
    char *untied = edit(g4, "\"sliding_window\": 1024}", "\"sliding_window\": 1024, \"tie_word_embeddings\": false}");
    refused(untied, "tie_word_embeddings");
    free(bad);
    free(untied);
}
