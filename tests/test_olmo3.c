/* test_olmo3.c — OLMo 3 (Olmo3ForCausalLM): its config.json read as OLMo 2's layout with Olmo3Config's
 * sliding layers (layer_types, else all but every 4th; window default 4096) and its two RoPEs (the full
 * layers' theta and scaling, yarn on the released models; the sliding layers' own default RoPE), what
 * the engine cannot say refused in one line, and the GGUF export as the converter writes it (Olmo2Model:
 * arch olmo2, the window and a per-layer bool pattern, yarn's keys with its attention factor). The
 * frequencies against transformers are test_rope_parity.c's; the numerics the HF fixture
 * olmo3_sliding_yarn (test_hf_fixtures.c, test_cpu_bf16.c, test_generate.c, test_cuda_model.c). */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"
#include "export/export.h"
#include "export/gguf_reader.h"
#include "model/config.h"
#include "test.h"

#include "config_test_util.h"
#include "export_test_util.h"

#define OLMO3_FIX FIX "olmo3_sliding_yarn/model"

/* allenai/Olmo-3-1025-7B's fields as its model card gives them (4.x spelling: rope_scaling yarn over a
 * top-level rope_theta; no layer_types, so Olmo3Config's pattern; not fetched here). */
static const char *olmo3_7b =
    "{\"architectures\": [\"Olmo3ForCausalLM\"], \"model_type\": \"olmo3\", \"attention_bias\": false,"
    " \"hidden_act\": \"silu\", \"hidden_size\": 4096, \"intermediate_size\": 11008, \"max_position_embeddings\": 65536,"
    " \"num_attention_heads\": 32, \"num_hidden_layers\": 32, \"num_key_value_heads\": 32, \"rms_norm_eps\": 1e-06,"
    " \"rope_scaling\": {\"attention_factor\": 1.2079441541679836, \"beta_fast\": 32, \"beta_slow\": 1, \"factor\": 8.0,"
    " \"original_max_position_embeddings\": 8192, \"rope_type\": \"yarn\"}, \"rope_theta\": 500000,"
    " \"sliding_window\": 4096, \"tie_word_embeddings\": false, \"vocab_size\": 100278}";

TEST(config_olmo3_7b_layers_and_ropes) {
    fl_model_config cfg;
    char dir[64];
    CHECK_MSG(config_test_load_json(&cfg, olmo3_7b, dir) == 0, "%s", fl_last_error());
    config_test_remove_dir(dir);
    CHECK(cfg.arch == FL_ARCH_OLMO2 && cfg.olmo3 && cfg.qk_norm_full && cfg.no_pre_norms && cfg.sandwich_norms);
    CHECK_EQ_INT(cfg.head_dim, 128);
    for (int l = 0; l < cfg.n_layers; l++)   /* sliding unless (l + 1) % 4 == 0 */
        CHECK_EQ_INT(fl_config_layer_window(&cfg, l), (l + 1) % 4 ? 4096 : 0);
    CHECK(cfg.rope_yarn && cfg.rope_factor == 8.0 && cfg.rope_original_max_position == 8192 && cfg.rope_yarn_truncate);
    CHECK(cfg.rope_theta == 5e5 && cfg.rope_local_theta == 5e5);
    CHECK(fl_config_rope_attention_factor(&cfg) == (float)1.2079441541679836);
    CHECK(!cfg.tie_word_embeddings && cfg.rms_norm_eps == 1e-6f);
}

/* The presets are the config.json files read: olmo-3-7b field for field against olmo3_7b (windows, both
 * RoPEs, yarn's parameters), and the parameter counts (7B: 4·C² + 3·C·FF + whole-row q/k norms 2C + two post
 * norms per layer, untied embedding and head, the final norm; 32B: GQA 40 / 8) */
TEST(config_olmo3_presets_are_the_config_files) {
    fl_model_config got, want;
    char dir[64];
    CHECK_MSG(config_test_load_json(&got, olmo3_7b, dir) == 0, "%s", fl_last_error());
    config_test_remove_dir(dir);
    CHECK(fl_config_preset(&want, "olmo-3-7b") == 0);
    check_config_core_equal(&got, &want);
    CHECK(want.arch == FL_ARCH_OLMO2 && want.olmo3 && want.qk_norm_full && want.no_pre_norms && want.sandwich_norms);
    CHECK_EQ_INT(want.max_position_embeddings, got.max_position_embeddings);
    CHECK_EQ_INT(want.rotary_dim, got.rotary_dim);
    for (int l = 0; l < want.n_layers; l++) CHECK_EQ_INT(fl_config_layer_window(&want, l), fl_config_layer_window(&got, l));
    CHECK(want.rope_yarn == got.rope_yarn && want.rope_yarn_truncate == got.rope_yarn_truncate);
    CHECK(want.rope_factor == got.rope_factor && want.rope_original_max_position == got.rope_original_max_position);
    CHECK(want.rope_yarn_beta_fast == got.rope_yarn_beta_fast && want.rope_yarn_beta_slow == got.rope_yarn_beta_slow);
    CHECK(want.rope_theta == got.rope_theta && want.rope_local_theta == got.rope_local_theta);
    CHECK(fl_config_rope_attention_factor(&want) == fl_config_rope_attention_factor(&got));
    CHECK(!strcmp(fl_config_preset_hf_name("olmo-3-7b"), "allenai/Olmo-3-1025-7B"));
    CHECK_MSG(fl_config_total_params(&want) == 7298011136LL, "%lld", (long long)fl_config_total_params(&want));
    fl_model_config big;
    CHECK(fl_config_preset(&big, "olmo-3-32b") == 0);
    CHECK(big.olmo3 && big.n_kv_heads == 8 && big.head_dim == 128 && fl_config_layer_window(&big, 63) == 0 &&
          fl_config_layer_window(&big, 62) == 4096);
    CHECK_MSG(fl_config_total_params(&big) == 32233522176LL, "%lld", (long long)fl_config_total_params(&big));
}

TEST(config_olmo3_layer_types_and_refusals) {
    fl_model_config cfg;
    CHECK_MSG(fl_config_load(&cfg, OLMO3_FIX "/config.json") == 0, "%s", fl_last_error());
    CHECK(cfg.olmo3 && cfg.sliding_window == 5 && cfg.rope_theta == 100.0 && cfg.rope_local_theta == 1000.0);
    for (int l = 0; l < 4; l++) CHECK_EQ_INT(fl_config_layer_window(&cfg, l), l < 3 ? 5 : 0);
    const char *b = olmo3_7b;
    /* a flat rope_parameters: transformers would ignore it and run the default RoPE */
    config_test_refused_edit(b, "\"rope_theta\": 500000,", "\"rope_parameters\": {\"rope_type\": \"yarn\", \"factor\": 2.0},",
                             "rope_parameters.rope_type");
    config_test_refused_edit(b, "\"rope_theta\": 500000,", "\"rope_parameters\": {\"sliding_attention\": {\"rope_type\":"
                             " \"linear\", \"factor\": 2.0}},", "sliding_attention.rope_type");
    config_test_refused_edit(b, "\"rope_theta\": 500000,", "\"rope_parameters\": {\"full_attention\": 3},",
                             "rope_parameters.full_attention");
    config_test_refused_edit(b, "\"rope_theta\": 500000,", "\"partial_rotary_factor\": 0.5,", "partial_rotary_factor");
    config_test_refused_edit(b, "\"factor\": 8.0", "\"factor\": -8.0", "factor");
    config_test_refused_edit(b, "\"rope_type\": \"yarn\"", "\"rope_type\": \"proportional\"", "rope_type");
    config_test_refused_edit(b, "\"sliding_window\": 4096", "\"sliding_window\": null", "sliding_window");
    config_test_refused_edit(b, "\"rope_theta\": 500000", "\"rope_theta\": -1", "rope_theta");
    /* every layer full: no window needed */
    char json[2048];
    snprintf(json, sizeof json, "%s", b);
    char *at = strstr(json, "\"sliding_window\": 4096");
    snprintf(at, sizeof json - (size_t)(at - json), "\"sliding_window\": null, \"num_hidden_layers\": 2, \"layer_types\":"
             " [\"full_attention\", \"full_attention\"], \"vocab_size\": 100278}");
    /* the later num_hidden_layers wins in jansson's object: 2 layers */
    char dir[64];
    CHECK_MSG(config_test_load_json(&cfg, json, dir) == 0, "%s", fl_last_error());
    config_test_remove_dir(dir);
    CHECK(cfg.sliding_window == 0 && fl_config_layer_window(&cfg, 0) == 0 && fl_config_layer_window(&cfg, 1) == 0);
}

/* The fixture folder copied with its sliding layers' rope_theta set to `theta` and its full layers'
 * yarn beta_fast (4) removed, so 32, the only value llama.cpp's olmo2 graph takes (a static path). */
static char *olmo3_copy(double theta) {
    char *dir = temp_dir(), cmd[256], path[128];
    snprintf(cmd, sizeof cmd, "cp " OLMO3_FIX "/* '%s'/", dir);
    if (system(cmd) != 0) return NULL;
    snprintf(path, sizeof path, "%s/config.json", dir);
    json_t *root = json_load_file(path, 0, NULL);
    json_t *rp = json_object_get(root, "rope_parameters"), *sl = json_object_get(rp, "sliding_attention");
    json_object_del(json_object_get(rp, "full_attention"), "beta_fast");
    json_object_set_new(sl, "rope_theta", json_real(theta));
    json_dump_file(root, path, JSON_INDENT(2));
    json_decref(root);
    return dir;
}

/* As the converter's Olmo2Model writes OLMo 3, less its rope.scaling.attn_factor (gguf_hparams.c): the
 * file llama.cpp ran with fastlora's logits (tests/fixtures/gguf/models/olmo3_llama_cpp). */
TEST(export_olmo3_gguf_keys_llama_cpp_runs) {
    char model[64], out[128];
    char *m = olmo3_copy(100.0);   /* one base for both layer types: what the converter can write */
    CHECK(m != NULL);
    if (!m) return;
    snprintf(model, sizeof model, "%s", m);
    snprintf(out, sizeof out, "%s/o3.gguf", model);
    CHECK(export_to(out, model, NULL, FL_EXPORT_F32, 0, 1) == 0);
    fl_gguf_file g;
    if (fl_gguf_open(&g, out) == 0) {
        check_str_kv(&g, "general.architecture", "olmo2");
        check_str_kv(&g, "olmo2.rope.scaling.type", "yarn");
        float f = 0;
        CHECK(fl_gguf_get_f32(&g, "olmo2.rope.scaling.factor", &f) == 0 && f == 4.0f);
        /* no attention factor: llama.cpp multiplies its own 0.1·ln(factor) + 1 by it (gguf_hparams.c) */
        CHECK(fl_gguf_find_kv(&g, "olmo2.rope.scaling.attn_factor") == NULL);
        CHECK_EQ_INT(get_u32(&g, "olmo2.rope.scaling.original_context_length"), 64);
        CHECK_EQ_INT(get_u32(&g, "olmo2.attention.sliding_window"), 5);
        const fl_gguf_kv *kv = fl_gguf_find_kv(&g, "olmo2.attention.sliding_window_pattern");
        CHECK(kv != NULL);
        if (kv) {
            CHECK(kv->type == FL_GGUF_ARRAY && kv->elem_type == FL_GGUF_BOOL && kv->n == 4);
            const uint8_t *b = kv->value;
            CHECK(b[0] == 1 && b[1] == 1 && b[2] == 1 && b[3] == 0);
        }
        CHECK(fl_gguf_find_tensor(&g, "blk.3.attn_q_norm.weight") != NULL);
        fl_gguf_close(&g);
    } else {
        CHECK(0);
    }
    rm_rf(model);
    /* the fixture itself: sliding base 1000, full base 100 — one line, no file */
    char *od = temp_dir();
    snprintf(out, sizeof out, "%s/o3.gguf", od);
    fl_export_options o = {.out_path = out, .model_dir = OLMO3_FIX, .type = FL_EXPORT_F32, .no_tokenizer = 1, .force = 1};
    int n = 0;
    CHECK_EQ_INT(fl_export_gguf(&o, &n), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "rope_theta");
    CHECK(strchr(fl_last_error(), '\n') == NULL);
    CHECK(access(out, F_OK) != 0);
    rm_rf(od);
}
