/* test_rope_parity.c — RoPE frequencies and cos/sin factors against transformers: every case of
 * tests/fixtures/rope/cases.json (tools/make_rope_fixtures.py: yarn in both spellings with its betas,
 * truncate, mscale pairs, attention_factor, a null factor, a missing pretraining length, a factor below
 * one, clamped correction dims and partial rotary; default, linear, llama3, Phi-3's longrope with
 * its short and long rows, OLMo 3's full and sliding layers' RoPEs) loaded with fl_config_load; the yarn fields' bad input, each one line; and
 * the yarn GGUF keys, or the one-line refusal where llama.cpp cannot say it. The whole-model numerics
 * are test_hf_fixtures.c's (qwen3_yarn). */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"
#include "engine/model.h"
#include "export/export.h"
#include "export/gguf_reader.h"
#include "model/config.h"
#include "test.h"

#include "config_test_util.h"
#include "export_test_util.h"

#define ROPE_CASES "tests/fixtures/rope/cases.json"

/* Tolerance, in units of 2^-23 relative: torch's f32 pow (Sleef, <= 1 ulp) and ours (glibc powf, < 1 ulp)
 * differ by up to 2 ulp in base^(2j/RD); the reciprocal, the factor product and yarn's blend of two
 * positive terms (no cancellation) add at most 4 roundings of 0.5 ulp each. */
#define FREQ_ULPS 8.0

static void check_freqs(const char *name, const char *row, json_t *want, const float *got, int n) {
    CHECK_MSG(json_is_array(want) && (int)json_array_size(want) == n, "%s %s: %d pairs here, %zu in the fixture", name,
              row, n, json_array_size(want));
    if ((int)json_array_size(want) != n) return;
    double worst = 0;
    for (int j = 0; j < n; j++) {
        double w = json_number_value(json_array_get(want, (size_t)j));
        double ulps = fabs(got[j] - w) / (fabs(w) * 0x1p-23);
        if (ulps > worst) worst = ulps;
        CHECK_MSG(ulps <= FREQ_ULPS, "%s %s pair %d: %.9g, transformers %.9g (%.1f ulp)", name, row, j, got[j], w, ulps);
    }
    printf("    %-36s %-5s %2d pairs, worst %.1f ulp\n", name, row, n, worst);
}

TEST(rope_inv_freq_and_attention_factor_match_transformers) {
    json_error_t jerr;
    json_t *root = json_load_file(ROPE_CASES, 0, &jerr);
    CHECK_MSG(root != NULL, "%s: %s", ROPE_CASES, jerr.text);
    if (!root) return;
    json_t *cases = json_object_get(root, "cases");
    CHECK(json_array_size(cases) >= 24);
    size_t i;
    json_t *c;
    json_array_foreach(cases, i, c) {
        const char *name = json_string_value(json_object_get(c, "name"));
        char *text = json_dumps(json_object_get(c, "config"), JSON_COMPACT), dir[64];
        fl_model_config cfg;
        int rc = config_test_load_json(&cfg, text, dir);
        free(text);
        config_test_remove_dir(dir);
        CHECK_MSG(rc == 0, "%s: %s", name, fl_last_error());
        if (rc) continue;
        int half = fl_config_rotary_dim(&cfg) / 2;
        float got[FL_MAX_HEAD_DIM / 2];
        fl_rope_inv_freq_set(&cfg, 0, got);
        check_freqs(name, "short", json_object_get(c, "inv_freq"), got, half);
        json_t *lng = json_object_get(c, "inv_freq_long");
        CHECK_EQ_INT(cfg.rope_longrope, lng != NULL);
        if (lng) {
            fl_rope_inv_freq_set(&cfg, 1, got);
            check_freqs(name, "long", lng, got, half);
        }
        json_t *local = json_object_get(c, "inv_freq_local");   /* OLMo 3's sliding layers */
        CHECK_EQ_INT(cfg.rope_local_theta > 0, local != NULL);
        if (local) {
            fl_rope_inv_freq_local(&cfg, got);
            check_freqs(name, "local", local, got, half);
            CHECK(json_number_value(json_object_get(c, "attention_factor_local")) == 1.0);   /* fl_model_rope_factor */
            CHECK(cfg.olmo3 && cfg.sliding_window > 0 && cfg.window_global_every == 4);
        }
        /* cos and sin are multiplied by it in f32: the factor as a float, to 1 ulp (ours in f64, then rounded) */
        double want = json_number_value(json_object_get(c, "attention_factor"));
        float have = fl_config_rope_attention_factor(&cfg);
        CHECK_MSG(fabs(have - want) <= want * 0x1p-23, "%s: attention factor %.9g, transformers %.9g", name, have, want);
    }
    json_decref(root);
}

/* A small Qwen3 config with yarn; the refusals below edit its rope_parameters. */
static const char *yarn_config =
    "{\"architectures\": [\"Qwen3ForCausalLM\"], \"model_type\": \"qwen3\", \"vocab_size\": 64, \"hidden_size\": 32,"
    " \"intermediate_size\": 40, \"num_hidden_layers\": 2, \"num_attention_heads\": 2, \"num_key_value_heads\": 1,"
    " \"head_dim\": 16, \"max_position_embeddings\": 256, \"rms_norm_eps\": 1e-6, \"tie_word_embeddings\": true,"
    " \"rope_parameters\": {\"rope_type\": \"yarn\", \"rope_theta\": 100.0, \"factor\": 4.0, \"beta_fast\": 4,"
    " \"original_max_position_embeddings\": 64}}";

TEST(rope_yarn_bad_fields_are_one_line) {
    fl_model_config cfg;
    char dir[64];
    CHECK_EQ_INT(config_test_load_json(&cfg, yarn_config, dir), 0);
    config_test_remove_dir(dir);
    CHECK(cfg.rope_yarn && cfg.rope_yarn_truncate && cfg.rope_yarn_beta_fast == 4 && cfg.rope_yarn_beta_slow == 1);
    CHECK_EQ_INT(cfg.rope_original_max_position, 64);
    config_test_refused_edit(yarn_config, "\"factor\": 4.0, ", "", "factor");            /* required */
    config_test_refused_edit(yarn_config, "\"factor\": 4.0", "\"factor\": -2", "factor");
    config_test_refused_edit(yarn_config, "\"factor\": 4.0", "\"factor\": \"4\"", "factor");
    config_test_refused_edit(yarn_config, "\"beta_fast\": 4", "\"beta_fast\": -4", "beta_fast");
    config_test_refused_edit(yarn_config, "\"beta_fast\": 4", "\"beta_slow\": -1", "beta_slow");
    config_test_refused_edit(yarn_config, "\"rope_theta\": 100.0", "\"rope_theta\": 1.0", "rope_theta");
    config_test_refused_edit(yarn_config, "\"beta_fast\": 4", "\"truncate\": 0", "truncate");
    config_test_refused_edit(yarn_config, "\"beta_fast\": 4", "\"attention_factor\": -1.0", "attention_factor");
    config_test_refused_edit(yarn_config, "\"beta_fast\": 4", "\"mscale\": 1, \"mscale_all_dim\": -7.3", "mscale");
    config_test_refused_edit(yarn_config, "\"original_max_position_embeddings\": 64",
                             "\"original_max_position_embeddings\": 0", "original_max_position_embeddings");
    config_test_refused_edit(yarn_config, "\"yarn\"", "\"dynamic\"", "rope_type");
}

/* A copy of the qwen3_yarn fixture folder with `extra` ("key": value) added to rope_parameters. */
static char *yarn_copy(const char *extra) {
    char *dir = temp_dir(), cmd[256], path[128];
    snprintf(cmd, sizeof cmd, "cp " FIX "qwen3_yarn/model/* '%s'/", dir);
    if (system(cmd) != 0) return NULL;
    snprintf(path, sizeof path, "%s/config.json", dir);
    json_t *root = json_load_file(path, 0, NULL);
    char obj[128];
    snprintf(obj, sizeof obj, "{%s}", extra);
    json_t *add = json_loads(obj, 0, NULL);
    json_object_update(json_object_get(root, "rope_parameters"), add);
    json_dump_file(root, path, JSON_INDENT(2));
    json_decref(add);
    json_decref(root);
    return dir;
}

/* llama.cpp's keys for YaRN (its converter's: type, factor, pretraining length; the betas when not
 * llama.cpp's 32 and 1), and a yarn it cannot express refused in one line with no file left. */
TEST(rope_yarn_gguf_keys_and_refusals) {
    char *dir = temp_dir(), out[128];
    snprintf(out, sizeof out, "%s/y.gguf", dir);
    CHECK(export_to(out, FIX "qwen3_yarn/model", NULL, FL_EXPORT_F32, 0, 1) == 0);
    fl_gguf_file g;
    if (fl_gguf_open(&g, out) == 0) {
        check_str_kv(&g, "qwen3.rope.scaling.type", "yarn");
        float f = 0;
        CHECK(fl_gguf_get_f32(&g, "qwen3.rope.scaling.factor", &f) == 0 && f == 4.0f);
        CHECK(fl_gguf_get_f32(&g, "qwen3.rope.scaling.yarn_beta_fast", &f) == 0 && f == 4.0f);
        CHECK(fl_gguf_find_kv(&g, "qwen3.rope.scaling.yarn_beta_slow") == NULL);
        CHECK_EQ_INT(get_u32(&g, "qwen3.rope.scaling.original_context_length"), 64);
        CHECK(fl_gguf_get_f32(&g, "qwen3.rope.freq_base", &f) == 0 && f == 100.0f);
        fl_gguf_close(&g);
    } else {
        CHECK(0);
    }
    rm_rf(dir);
    const char *cannot[][2] = {{"\"truncate\": false", "truncate false"},
                               {"\"attention_factor\": 1.5", "attention factor"},
                               {"\"mscale\": 1, \"mscale_all_dim\": 0.5", "attention factor"}};
    for (int k = 0; k < 3; k++) {
        char *model = yarn_copy(cannot[k][0]);
        CHECK(model != NULL);
        if (!model) continue;
        char m[64];
        snprintf(m, sizeof m, "%s", model);
        char *od = temp_dir();
        snprintf(out, sizeof out, "%s/y.gguf", od);
        fl_export_options o = {.out_path = out, .model_dir = m, .type = FL_EXPORT_F32, .no_tokenizer = 1, .force = 1};
        int n = 0;
        CHECK_EQ_INT(fl_export_gguf(&o, &n), FL_ERR_INPUT);
        CHECK_STR_CONTAINS(fl_last_error(), cannot[k][1]);
        CHECK(strchr(fl_last_error(), '\n') == NULL);
        CHECK(access(out, F_OK) != 0);
        rm_rf(od);
        rm_rf(m);
    }
}
