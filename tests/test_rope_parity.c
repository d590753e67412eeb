/* test_rope_parity.c — RoPE frequencies and cos/sin factors against transformers: every case of
 * tests/fixtures/rope/cases.json (tools/make_rope_fixtures.py: yarn in both spellings with its betas,
 * truncate, mscale pairs, attention_factor, a null factor, a missing pretraining length, a factor below
 * one, clamped correction dims and partial rotary; default, linear, llama3, Phi-3's longrope with
 * its short and long rows, dynamic NTK at init in both spellings, OLMo 3's full and sliding layers' RoPEs)
 * loaded with fl_config_load; the yarn and dynamic fields' bad input, each one line; the length past which a
 * dynamic model is refused; and
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

#include "cli_run.h"
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
    CHECK(json_array_size(cases) >= 30);
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
        CHECK_EQ_INT(cfg.rope_dynamic, strstr(name, "dynamic") != NULL);
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
    config_test_refused_edit(yarn_config, "\"yarn\"", "\"ntk\"", "rope_type");
}

/* The yarn config as dynamic NTK: the fields it reads and their bad input, one line each. */
TEST(rope_dynamic_bad_fields_are_one_line) {
    char dynamic_config[1024];
    const char *t = strstr(yarn_config, "\"yarn\"");   /* "yarn" -> "dynamic"; the betas are not read */
    snprintf(dynamic_config, sizeof dynamic_config, "%.*s\"dynamic\"%s", (int)(t - yarn_config), yarn_config, t + 6);
    fl_model_config cfg;
    char dir[64];
    CHECK_EQ_INT(config_test_load_json(&cfg, dynamic_config, dir), 0);
    config_test_remove_dir(dir);
    CHECK(cfg.rope_dynamic && !cfg.rope_yarn && cfg.rope_factor == 4.0);
    CHECK(fl_config_rope_base(&cfg) == 100.0);   /* 4·256/256 − 3 is exactly 1 */
    config_test_refused_edit(dynamic_config, "\"factor\": 4.0, ", "", "factor");   /* required */
    config_test_refused_edit(dynamic_config, "\"factor\": 4.0", "\"factor\": 0.5", "factor");
    config_test_refused_edit(dynamic_config, "\"factor\": 4.0", "\"factor\": null", "factor");
    config_test_refused_edit(dynamic_config, "\"factor\": 4.0", "\"factor\": \"4\"", "factor");
    /* 1e17·256/256 − (1e17 − 1) cancels to 0 in double (as in Python): no base */
    config_test_refused_edit(dynamic_config, "\"factor\": 4.0", "\"factor\": 1e17", "factor");
    config_test_refused_edit(dynamic_config, "\"head_dim\": 16", "\"head_dim\": 2", "rotary dimension");
}

/* Within max_position_embeddings transformers keeps its init frequencies; past it they depend on the
 * longest forward its module has seen, so fastlora refuses a length past it, naming what asked. */
TEST(rope_dynamic_refuses_length_past_max_position) {
    fl_model m;
    memset(&m, 0, sizeof m);
    m.cfg.max_position_embeddings = 256;
    CHECK_EQ_INT(fl_model_check_length(&m, 4096, "--seq"), 0);   /* not dynamic: no limit here */
    m.cfg.rope_dynamic = 1;
    CHECK_EQ_INT(fl_model_check_length(&m, 256, "--seq"), 0);
    CHECK_EQ_INT(fl_model_check_length(&m, 257, "--seq"), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "--seq");
    CHECK_STR_CONTAINS(fl_last_error(), "max_position_embeddings (256)");
    CHECK(strchr(fl_last_error(), '\n') == NULL);
}

/* The same refusal from each command that runs a forward, before any work or output: the dynamic
 * fixture's max_position_embeddings is 12. Within it each runs; GGUF export refuses dynamic NTK. */
TEST(rope_dynamic_length_refused_by_each_command) {
    if (!fl_test_bin()) SKIP("FASTLORA_BIN not set");
    const char *m = FIX "llama_dynamic_ntk/model";
    char out[8192], run[300], gguf[300], *dir = cr_temp_dir(), *data = cr_token_data(dir, "d.tokens", 8, 0);
    snprintf(run, sizeof run, "%s/run", dir);
    snprintf(gguf, sizeof gguf, "%s/m.gguf", dir);
    int rc = fl_test_run_cli(out, sizeof out, "bench --model %s --seq 13 --batch 1 --steps 1 --device cpu", m);
    CHECK_MSG(rc != 0 && strstr(out, "max_position_embeddings (12)"), "bench --seq 13: %s", out);
    rc = fl_test_run_cli(out, sizeof out, "bench --model %s --seq 12 --batch 1 --steps 1 --device cpu", m);
    CHECK_MSG(rc == 0, "bench --seq 12: %s", out);
    rc = fl_test_run_cli(out, sizeof out, "generate --model %s --prompt-ids 1,2,3 --max-tokens 10 --temperature 0 --device cpu", m);
    CHECK_MSG(rc != 0 && strstr(out, "13 positions"), "generate 3 + 10: %s", out);
    rc = fl_test_run_cli(out, sizeof out, "generate --model %s --prompt-ids 1,2,3 --max-tokens 9 --temperature 0 --ids --device cpu", m);
    CHECK_MSG(rc == 0, "generate 3 + 9: %s", out);
    rc = fl_test_run_cli(out, sizeof out, "train --model %s --data %s --out %s --seq 16 --max-steps 1 --device cpu", m, data, run);
    CHECK_MSG(rc != 0 && strstr(out, "--seq: 16 positions"), "train --seq 16: %s", out);
    CHECK(access(run, F_OK) != 0);   /* refused before the run folder */
    rc = fl_test_run_cli(out, sizeof out, "train --model %s --data %s --out %s --seq 12 --max-steps 1 --device cpu", m, data, run);
    CHECK_MSG(rc == 0, "train --seq 12: %s", out);
    rc = fl_test_run_cli(out, sizeof out, "export --model %s --gguf %s --no-tokenizer", m, gguf);
    CHECK_MSG(rc != 0 && strstr(out, "dynamic"), "export gguf: %s", out);
    CHECK(access(gguf, F_OK) != 0);
    cr_remove_tree(dir);
    free(data);
    free(dir);
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

/* llama.cpp's keys for YaRN (its converter's: type, factor, pretraining length; no betas, no
 * attention factor — its qwen3 graph reads neither), and a yarn it cannot express refused in one line
 * with no file left: the qwen3_yarn fixture itself among them (beta_fast 4, which llama.cpp's qwen3
 * loader never reads). tests/fixtures/gguf/models/qwen3_yarn_llama_cpp is that fixture with beta_fast
 * 32, the variant llama.cpp ran with fastlora's logits (tools/llama_cpp_check.py). */
TEST(rope_yarn_gguf_keys_and_refusals) {
    char *dir = temp_dir(), out[128];
    snprintf(out, sizeof out, "%s/y.gguf", dir);
    CHECK(export_to(out, "tests/fixtures/gguf/models/qwen3_yarn_llama_cpp", NULL, FL_EXPORT_F32, 0, 1) == 0);
    fl_gguf_file g;
    if (fl_gguf_open(&g, out) == 0) {
        check_str_kv(&g, "qwen3.rope.scaling.type", "yarn");
        float f = 0;
        CHECK(fl_gguf_get_f32(&g, "qwen3.rope.scaling.factor", &f) == 0 && f == 4.0f);
        CHECK(fl_gguf_find_kv(&g, "qwen3.rope.scaling.yarn_beta_fast") == NULL);
        CHECK(fl_gguf_find_kv(&g, "qwen3.rope.scaling.yarn_beta_slow") == NULL);
        CHECK(fl_gguf_find_kv(&g, "qwen3.rope.scaling.attn_factor") == NULL);
        CHECK_EQ_INT(get_u32(&g, "qwen3.rope.scaling.original_context_length"), 64);
        CHECK(fl_gguf_get_f32(&g, "qwen3.rope.freq_base", &f) == 0 && f == 100.0f);
        fl_gguf_close(&g);
    } else {
        CHECK(0);
    }
    rm_rf(dir);
    const char *cannot[][2] = {{"\"truncate\": false", "truncate false"},
                               {"\"attention_factor\": 1.5", "attention factor"},
                               {"\"mscale\": 1, \"mscale_all_dim\": 0.5", "attention factor"},
                               {"\"rope_type\": \"yarn\"", "beta_fast 4 and beta_slow 1"},
                               {"\"beta_fast\": 32, \"beta_slow\": 2", "beta_fast 32 and beta_slow 2"}};
    for (int k = 0; k < 5; k++) {
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
