/* test_config_smollm3.c — SmolLM3 (SmolLM3ForCausalLM): its config.json read as Llama's layers with a
 * NoPE layer every no_rope_layer_interval layers (config.h fl_config_layer_rope), the real 3B config
 * equal to the preset smollm3-3b, the fields the engine does not implement refused in one line, and
 * its GGUF export as llama.cpp's smollm3 (which hard-codes a NoPE layer every 4th). The numerics are
 * the HF fixture smollm3_nope (test_hf_fixtures.c, test_generate.c, test_cpu_bf16.c). */
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
#include "model/config.h"
#include "test.h"

#include "config_test_util.h"

/* HuggingFaceTB/SmolLM3-3B's config.json, as public copies quote it */
static const char *smollm3_3b =
    "{\"architectures\": [\"SmolLM3ForCausalLM\"], \"attention_bias\": false, \"attention_dropout\": 0.0,"
    " \"bos_token_id\": 128000, \"eos_token_id\": 128012, \"hidden_act\": \"silu\", \"hidden_size\": 2048,"
    " \"initializer_range\": 0.02, \"intermediate_size\": 11008, \"max_position_embeddings\": 65536,"
    " \"mlp_bias\": false, \"model_type\": \"smollm3\", \"no_rope_layer_interval\": 4,"
    " \"no_rope_layers\": [1,1,1,0,1,1,1,0,1,1,1,0,1,1,1,0,1,1,1,0,1,1,1,0,1,1,1,0,1,1,1,0,1,1,1,0],"
    " \"num_attention_heads\": 16, \"num_hidden_layers\": 36, \"num_key_value_heads\": 4, \"pad_token_id\": 128004,"
    " \"rms_norm_eps\": 1e-06, \"rope_scaling\": null, \"rope_theta\": 5000000.0, \"sliding_window\": null,"
    " \"tie_word_embeddings\": true, \"torch_dtype\": \"bfloat16\", \"use_cache\": false,"
    " \"use_sliding_window\": false, \"vocab_size\": 128256}";

static int load_json(fl_model_config *cfg, const char *json, char *dir) { return config_test_load_json(cfg, json, dir); }
static void remove_dir(const char *dir) { config_test_remove_dir(dir); }
/* `from` in the 3B config replaced by `to`, loaded: refused in one line naming config.json and `field` */
static void refused(const char *from, const char *to, const char *field) { config_test_refused_edit(smollm3_3b, from, to, field); }

TEST(config_smollm3_3b_is_the_preset) {
    fl_model_config got, want;
    char dir[64];
    CHECK_MSG(load_json(&got, smollm3_3b, dir) == 0, "%s", fl_last_error());
    remove_dir(dir);
    CHECK(fl_config_preset(&want, "smollm3-3b") == 0);
    CHECK(got.arch == FL_ARCH_LLAMA);
    check_config_core_equal(&got, &want);
    CHECK_EQ_INT(got.max_position_embeddings, want.max_position_embeddings);
    CHECK_EQ_INT(got.eos_token_id, want.eos_token_id);
    CHECK_EQ_INT(got.nope_every, 4);
    CHECK_EQ_INT(want.nope_every, 4);
    CHECK_EQ_INT(got.sliding_window, 0);
    for (int l = 0; l < 36; l++) CHECK_EQ_INT(fl_config_layer_rope(&got, l), l % 4 != 3);
    CHECK_MSG(fl_config_total_params(&want) == 3075098624LL, "%lld", (long long)fl_config_total_params(&want));
    /* no_rope_layers absent: the interval builds the same layers (SmolLM3Config.__post_init__) */
    const char *list = strstr(smollm3_3b, " \"no_rope_layers\"");
    const char *end = strstr(list, "],") + 2;
    char *without = malloc(strlen(smollm3_3b) + 1);
    snprintf(without, strlen(smollm3_3b) + 1, "%.*s%s", (int)(list - smollm3_3b), smollm3_3b, end);
    CHECK_MSG(load_json(&got, without, dir) == 0, "%s", fl_last_error());
    remove_dir(dir);
    CHECK_EQ_INT(got.nope_every, 4);
    free(without);
}

TEST(config_smollm3_unsupported_fields_refused) {
    refused("[1,1,1,0,1,1,1,0,1,1,1,0,1,1,1,0,1,1,1,0,1,1,1,0,1,1,1,0,1,1,1,0,1,1,1,0]",
            "[1,1,1,0,1,1,0,1,1,1,1,0,1,1,1,0,1,1,1,0,1,1,1,0,1,1,1,0,1,1,1,0,1,1,1,0]", "no_rope_layers");
    refused("[1,1,1,0,1,1,1,0,1,1,1,0,1,1,1,0,1,1,1,0,1,1,1,0,1,1,1,0,1,1,1,0,1,1,1,0]", "[1,1,1,0]", "no_rope_layers");
    refused("\"use_sliding_window\": false", "\"use_sliding_window\": true", "use_sliding_window");
    refused("\"attention_bias\": false", "\"attention_bias\": true", "attention_bias");
    refused("\"mlp_bias\": false", "\"mlp_bias\": true", "mlp_bias");
}

/* The fixture as llama.cpp's smollm3 (its SmolLM3Model is LlamaModel: llama's keys, q/k rows
 * permuted); a NoPE period other than llama.cpp's fixed 4 is refused in one line. */
TEST(export_smollm3_as_llama_cpp_smollm3) {
    char dir[] = "/tmp/fastlora-smollm3-gguf-XXXXXX", out[128];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(out, sizeof out, "%s/s.gguf", dir);
    fl_export_options o = {.out_path = out, .model_dir = "tests/fixtures/hf/smollm3_nope/model", .type = FL_EXPORT_F32,
                           .no_tokenizer = 1, .force = 1};
    int n = 0;
    CHECK_MSG(fl_export_gguf(&o, &n) == 0, "%s", fl_last_error());
    fl_gguf_file g;
    CHECK(fl_gguf_open(&g, out) == 0);
    const char *s;
    size_t len;
    CHECK(fl_gguf_get_str(&g, "general.architecture", &s, &len) == 0 && len == 7 && !memcmp(s, "smollm3", 7));
    uint32_t v = 0;
    CHECK(fl_gguf_get_u32(&g, "smollm3.block_count", &v) == 0 && v == 4);
    CHECK(fl_gguf_get_u32(&g, "smollm3.vocab_size", &v) == 0 && v == 88);
    CHECK(fl_gguf_get_u32(&g, "smollm3.rope.dimension_count", &v) == 0 && v == 6);
    fl_gguf_close(&g);
    /* every 2nd layer without RoPE: llama.cpp cannot run it */
    char model[128], path[160];
    snprintf(model, sizeof model, "%s/m", dir);
    CHECK(mkdir(model, 0755) == 0);
    json_t *cfg = json_load_file("tests/fixtures/hf/smollm3_nope/model/config.json", 0, NULL);
    CHECK(cfg != NULL);
    json_object_set_new(cfg, "no_rope_layers", json_loads("[1, 0, 1, 0]", 0, NULL));
    snprintf(path, sizeof path, "%s/config.json", model);
    CHECK(json_dump_file(cfg, path, 0) == 0);
    json_decref(cfg);
    snprintf(path, sizeof path, "%s/model.safetensors", model);
    char abs[PATH_MAX];
    CHECK(realpath("tests/fixtures/hf/smollm3_nope/model/model.safetensors", abs) != NULL);
    CHECK(symlink(abs, path) == 0);
    o.model_dir = model;
    snprintf(out, sizeof out, "%s/t.gguf", dir);
    CHECK_EQ_INT(fl_export_gguf(&o, &n), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "NoPE layer every 2");
    CHECK_STR_CONTAINS(fl_last_error(), "config.json");
    CHECK(access(out, F_OK) != 0);
    remove_dir(dir);
}
