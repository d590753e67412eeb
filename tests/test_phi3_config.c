/* test_phi3_config.c — Phi3ForCausalLM's config and its bad input: the fixture's config read as
 * transformers 5.x writes it (rope_parameters) and as 4.x checkpoints spell it (rope_scaling, a
 * top-level partial_rotary_factor and original_max_position_embeddings) gives the same fields;
 * longrope's attention factor default; an unknown rope type, a factor list of the wrong length, a
 * partial_rotary_factor giving an odd rotary dimension, a missing fused tensor and part of a fused
 * module in --targets are each one line naming the field, tensor or module; the sliding window on
 * every layer, a sequence past it running. The
 * numerics are test_hf_fixtures.c's (phi3_longrope). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/error.h"
#include "io/file_util.h"
#include "io/safetensors.h"
#include "engine/model.h"
#include "lora/adapter_io.h"
#include "lora/lora.h"
#include "model/config.h"
#include "test.h"

#define PHI3 "tests/fixtures/hf/phi3_longrope/model"

/* A copy of the fixture's model folder with `from` replaced by `to` in config.json (static name). */
static const char *phi3_copy(const char *from, const char *to) {
    static char dir[64];
    snprintf(dir, sizeof dir, "/tmp/fastlora-phi3-XXXXXX");
    if (!mkdtemp(dir)) return NULL;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "cp " PHI3 "/* '%s'/", dir);
    if (system(cmd) != 0) return NULL;
    if (!from) return dir;
    char path[128];
    snprintf(path, sizeof path, "%s/config.json", dir);
    char *text = NULL;
    size_t len = 0;
    if (fl_file_read_all(path, FL_FILE_CONFIG, &text, &len)) return NULL;
    char *at = strstr(text, from);
    CHECK_MSG(at != NULL, "config.json has no '%s'", from);
    if (at) {
        FILE *f = fopen(path, "w");
        fprintf(f, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
        fclose(f);
    }
    free(text);
    return dir;
}

static void remove_copy(const char *dir) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) printf("    cannot remove %s\n", dir);
}

static int load_copy(const char *dir, fl_model_config *cfg) {
    char path[128];
    snprintf(path, sizeof path, "%s/config.json", dir);
    return fl_config_load(cfg, path);
}

TEST(phi3_config_fields_both_spellings) {
    fl_model_config a, b;
    CHECK_EQ_INT(fl_config_load(&a, PHI3 "/config.json"), 0);
    CHECK(a.arch == FL_ARCH_PHI3 && a.fused_modules && !a.qkv_bias && !a.qk_norm && !a.tie_word_embeddings);
    CHECK_EQ_INT(a.head_dim, 8);
    CHECK_EQ_INT(fl_config_rotary_dim(&a), 6);   /* int(8 · 0.75) */
    CHECK(a.rope_longrope && a.rope_original_max_position == 8 && a.sliding_window == 64);
    CHECK_CLOSE(a.rope_attention_factor, sqrt(2.0), 0, 1e-12);   /* sqrt(1 + ln(64/8) / ln 8) */
    CHECK(a.rope_short_factor[1] == 1.3f && a.rope_long_factor[2] == 5.3f);
    /* 4.x: rope_scaling {type: longrope, ...}, partial_rotary_factor and original_max at the top level */
    const char *dir = phi3_copy("\"rope_parameters\": {",
                                "\"rope_theta\": 10000.0, \"partial_rotary_factor\": 0.75, \"rope_scaling\": {\"type\": \"longrope\", ");
    CHECK(dir != NULL);
    CHECK_EQ_INT(load_copy(dir, &b), 0);   /* the copy still has rope_parameters' keys inside rope_scaling */
    CHECK(b.rope_longrope && fl_config_rotary_dim(&b) == 6 && b.rope_original_max_position == 8);
    CHECK(b.rope_attention_factor == a.rope_attention_factor && b.rope_long_factor[0] == a.rope_long_factor[0]);
    remove_copy(dir);
    /* "su" is Phi3Config's old name for longrope */
    dir = phi3_copy("\"rope_type\": \"longrope\"", "\"rope_type\": \"su\"");
    CHECK_EQ_INT(load_copy(dir, &b), 0);
    CHECK(b.rope_longrope);
    remove_copy(dir);
    /* an explicit attention_factor wins over the default */
    dir = phi3_copy("\"rope_type\": \"longrope\"", "\"rope_type\": \"longrope\", \"attention_factor\": 1.25");
    CHECK_EQ_INT(load_copy(dir, &b), 0);
    CHECK(b.rope_attention_factor == 1.25);
    remove_copy(dir);
}

/* transformers 5.x's Phi3 masks every layer with config.sliding_window as it stands (the sliding
 * mask keeps keys j > t - W): Phi-3-mini-4k's 2047 is a window of 2047, no layer global, and null
 * means none. A sequence longer than the window slides rather than being refused. */
TEST(phi3_sliding_window_every_layer) {
    fl_model_config a;
    CHECK_EQ_INT(fl_config_load(&a, PHI3 "/config.json"), 0);
    CHECK(a.window_first_layer == 0 && a.window_global_every == 0);
    for (int l = 0; l < a.n_layers; l++) CHECK_EQ_INT(fl_config_layer_window(&a, l), 64);
    const char *dir = phi3_copy("\"sliding_window\": 64", "\"sliding_window\": 2047");
    CHECK_EQ_INT(load_copy(dir, &a), 0);
    for (int l = 0; l < a.n_layers; l++) CHECK_EQ_INT(fl_config_layer_window(&a, l), 2047);
    remove_copy(dir);
    dir = phi3_copy("\"sliding_window\": 64", "\"sliding_window\": null");
    CHECK_EQ_INT(load_copy(dir, &a), 0);
    for (int l = 0; l < a.n_layers; l++) CHECK_EQ_INT(fl_config_layer_window(&a, l), 0);
    remove_copy(dir);
    dir = phi3_copy("\"sliding_window\": 64", "\"sliding_window\": 4");   /* shorter than --seq 12 */
    char out[4096];
    int rc = fl_test_run_cli(out, sizeof out, "bench --model %s --steps 1 --warmup 0 --batch 1 --seq 12 --device cpu", dir);
    CHECK_MSG(rc == 0, "bench with a window of 4 over 12 positions: rc %d: %s", rc, out);
    remove_copy(dir);
}

TEST(phi3_bad_config_one_line_each) {
    const char *cases[][3] = {
        {"\"rope_type\": \"longrope\"", "\"rope_type\": \"dynamic\"", "field 'rope_parameters.rope_type' is 'dynamic'"},
        {"\"rope_type\": \"longrope\"", "\"rope_type\": \"linear\"", "Phi3ForCausalLM supports: default, longrope"},
        {"\"short_factor\": [", "\"short_factor\": [0.5, ", "field 'rope_parameters.short_factor' must be a list of 3 numbers"},
        {"\"long_factor\": [", "\"long_factor\": [0, 1, 2], \"x\": [", "field 'rope_parameters.long_factor[0]' must be a positive number"},
        {"\"partial_rotary_factor\": 0.75", "\"partial_rotary_factor\": 0.625", "field 'partial_rotary_factor' (0.625)"},
        /* far past int's range once multiplied by head_dim: refused, not converted (a fuzz finding) */
        {"\"partial_rotary_factor\": 0.75", "\"partial_rotary_factor\": 8.9e27", "field 'partial_rotary_factor' (8.9e+27)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *dir = phi3_copy(cases[i][0], cases[i][1]);
        fl_model_config cfg;
        CHECK_EQ_INT(load_copy(dir, &cfg), 2);
        CHECK_STR_CONTAINS(fl_last_error(), cases[i][2]);
        CHECK_MSG(!strchr(fl_last_error(), '\n'), "more than one line: %s", fl_last_error());
        remove_copy(dir);
    }
}

/* a fused module is adapted whole: q alone (or gate without up) names the module to give */
TEST(phi3_targets_whole_fused_modules) {
    fl_model_config cfg;
    CHECK_EQ_INT(fl_config_load(&cfg, PHI3 "/config.json"), 0);
    unsigned mask;
    CHECK_EQ_INT(fl_lora_parse_targets("qkv_proj,o_proj,gate_up_proj,down_proj", &mask), 0);
    CHECK_EQ_INT(mask, (1u << FL_N_PROJ) - 1);
    CHECK_EQ_INT(fl_lora_check_targets(&cfg, mask), 0);
    CHECK_EQ_INT(fl_lora_parse_targets("q,o", &mask), 0);
    CHECK_EQ_INT(fl_lora_check_targets(&cfg, mask), 2);
    CHECK_STR_CONTAINS(fl_last_error(), "has no module q_proj (q, k and v are one module, self_attn.qkv_proj): give qkv_proj");
    CHECK_EQ_INT(fl_lora_parse_targets("gate", &mask), 0);
    CHECK_EQ_INT(fl_lora_check_targets(&cfg, mask), 2);
    CHECK_STR_CONTAINS(fl_last_error(), "give gate_up_proj");
    fl_lora_config lc = fl_lora_config_default();
    lc.rank = 4;
    lc.target_mask = (1u << FL_N_PROJ) - 1;
    /* per layer: qkv_proj R·(C + QD + 2·KVD), o R·(QD + C), gate_up R·(C + 2·FF), down R·(FF + C) */
    size_t want = 2 * 4 * ((32 + 64) + (32 + 32) + (32 + 48) + (24 + 32));
    CHECK_EQ_INT((long long)fl_lora_param_count(&cfg, &lc), (long long)want);
    /* a plain Llama config keeps its seven modules: qkv_proj means q, k and v there */
    fl_model_config llama = cfg;
    llama.fused_modules = 0;
    CHECK_EQ_INT(fl_lora_check_targets(&llama, 1u << FL_PROJ_Q), 0);
}

/* the fused checkpoint tensors are what a Phi-3 folder must hold (named when missing) */
TEST(phi3_missing_fused_tensor_named) {
    if (!fl_test_bin()) SKIP("FASTLORA_BIN not set");
    const char *dir = phi3_copy(NULL, NULL);
    fl_safetensors st;
    CHECK(fl_safetensors_open(&st, PHI3 "/model.safetensors") == 0);
    fl_st_write_tensor *keep = calloc((size_t)st.n_tensors, sizeof *keep);
    int n = 0;
    for (int i = 0; i < st.n_tensors; i++)
        if (strcmp(st.tensors[i].name, "model.layers.1.mlp.gate_up_proj.weight") != 0)
            keep[n++] = fl_st_write_tensor_of(&st.tensors[i]);
    char path[128];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    CHECK(fl_safetensors_write(path, keep, n, NULL, 0) == 0);
    free(keep);
    fl_safetensors_close(&st);
    char out[4096];
    int rc = fl_test_run_cli(out, sizeof out, "bench --model %s --steps 1 --warmup 0 --batch 1 --seq 4 --device cpu", dir);
    CHECK_EQ_INT(rc, 2);
    CHECK_STR_CONTAINS(out, "model.layers.1.mlp.gate_up_proj.weight");
    CHECK_MSG(strchr(out, '\n') == strrchr(out, '\n'), "more than one line: %s", out);
    remove_copy(dir);
}

/* the presets carry the checkpoints' longrope lists (config.c cites them) and derive the attention
 * factor as transformers does: sqrt(1 + ln(131072 / 4096) / ln 4096) = sqrt(17 / 12) */
TEST(phi3_presets_longrope) {
    fl_model_config a, b;
    CHECK_EQ_INT(fl_config_preset(&a, "phi-3.5-mini"), 0);
    CHECK_EQ_INT(fl_config_preset(&b, "phi-4-mini"), 0);
    CHECK(a.fused_modules && a.rope_longrope && fl_config_rotary_dim(&a) == 96 && a.head_dim == 96);
    CHECK(b.fused_modules && b.rope_longrope && fl_config_rotary_dim(&b) == 96 && b.head_dim == 128);
    CHECK(a.rope_short_factor[0] == 1.0f && a.rope_long_factor[47] == 64.83999633789062f);
    CHECK(b.rope_short_factor[47] == 1.0f && b.rope_long_factor[47] == 47.77f && b.rope_long_factor[48] == 0.0f);
    CHECK_CLOSE(a.rope_attention_factor, sqrt(17.0 / 12.0), 0, 1e-12);
    CHECK_CLOSE(b.rope_attention_factor, sqrt(17.0 / 12.0), 0, 1e-12);
    CHECK(a.sliding_window == 262144 && b.sliding_window == 262144);
    CHECK(a.rope_original_max_position == 4096 && !a.tie_word_embeddings && b.tie_word_embeddings);
}

/* a Phi-3 adapter written by fastlora is PEFT's: target_modules the module names, one lora_A (R, C)
 * and one lora_B ((QD + 2·KVD), R) per qkv_proj (gate_up_proj: (2·FF), R), and it reads back bit for
 * bit (PeftModel.from_pretrained of such a folder gives fastlora's logits: checked by hand, 1.1e-6) */
TEST(phi3_adapter_round_trip_peft_names) {
    fl_lora_config lc;
    CHECK_EQ_INT(fl_adapter_load_config("tests/fixtures/hf/phi3_longrope/adapter", &lc), 0);
    fl_model m;
    CHECK_EQ_INT(fl_model_init_dir(&m, PHI3, fl_backend_cpu(), &lc), 0);
    CHECK_EQ_INT(fl_model_load_adapter(&m, "tests/fixtures/hf/phi3_longrope/adapter"), 0);
    char dir[] = "/tmp/fastlora-phi3-adapter-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    CHECK_EQ_INT(fl_adapter_save(dir, &m.lora, &m.cfg, &m.lora_cfg, NULL), 0);
    char path[128];
    snprintf(path, sizeof path, "%s/adapter_config.json", dir);
    char *text = NULL;
    size_t len = 0;
    CHECK_EQ_INT(fl_file_read_all(path, FL_FILE_CONFIG, &text, &len), 0);
    CHECK_STR_CONTAINS(text, "\"qkv_proj\",\n    \"o_proj\",\n    \"gate_up_proj\",\n    \"down_proj\"");
    free(text);
    fl_safetensors st;
    snprintf(path, sizeof path, "%s/adapter_model.safetensors", dir);
    CHECK(fl_safetensors_open(&st, path) == 0);
    CHECK_EQ_INT(st.n_tensors, 2 * 4 * 2);
    const fl_st_tensor *b = fl_safetensors_find(&st, "base_model.model.model.layers.1.self_attn.qkv_proj.lora_B.weight");
    const fl_st_tensor *g = fl_safetensors_find(&st, "base_model.model.model.layers.0.mlp.gate_up_proj.lora_B.weight");
    CHECK(b && b->shape[0] == 32 + 2 * 16 && b->shape[1] == 4 && g && g->shape[0] == 48);
    if (b) CHECK(!memcmp(b->data, m.lora.layers[1].b[FL_PROJ_Q], b->nbytes));
    fl_safetensors_close(&st);
    fl_lora_config back;
    CHECK_EQ_INT(fl_adapter_load_config(dir, &back), 0);
    CHECK_EQ_INT(back.target_mask, lc.target_mask);
    remove_copy(dir);
    fl_model_free(&m);
}
