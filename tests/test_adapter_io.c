/* test_adapter_io.c — PEFT adapter files: what fastlora writes reads back bit for bit, has PEFT's
 * names, shapes and config keys, and (when torch + peft are installed) loads in PEFT with the same
 * logits as fastlora computes (tools/peft_roundtrip.py; skipped in CI, which has no torch). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"
#include "engine/model.h"
#include "io/safetensors.h"
#include "lora/adapter_io.h"
#include "test.h"

#define MODEL "tests/fixtures/hf/llama_gqa/model"
#define ADAPTER "tests/fixtures/hf/llama_gqa/adapter"

/* A model with the fixture adapter, trained 2 steps so the weights are fastlora's own. */
static int trained_model(fl_model *m, fl_lora_config *lc, int rslora) {
    if (fl_adapter_load_config(ADAPTER, lc)) return 1;
    lc->use_rslora = rslora;
    if (fl_model_init_dir(m, MODEL, fl_backend_cpu(), lc) || fl_model_load_adapter(m, ADAPTER)) return 1;
    int32_t ids[16], targets[16];
    for (int i = 0; i < 16; i++) { ids[i] = (i * 37 + 11) % 200; targets[i] = (i * 53 + 7) % 200; }
    fl_batch batch = {.B = 2, .T = 8, .ids = ids, .targets = targets};
    fl_adamw_config opt = fl_adamw_config_default();
    opt.lr = 1e-2f;
    for (int s = 0; s < 2; s++) {
        fl_model_forward(m, &batch, 0.0f);
        fl_model_backward(m);
        fl_model_optimizer_step(m, &opt);
    }
    return 0;
}

static char *temp_dir(void) {
    static char dir[64];
    snprintf(dir, sizeof dir, "/tmp/fastlora-adapter-XXXXXX");
    return mkdtemp(dir);
}

TEST(adapter_save_load_roundtrip_bitwise) {
    fl_model m;
    fl_lora_config lc;
    CHECK(trained_model(&m, &lc, 1) == 0);
    char *dir = temp_dir();
    CHECK(fl_adapter_save(dir, &m.lora, &m.cfg, &lc, "tests/fixtures/hf/llama_gqa/model") == 0);
    fl_lora_config lc2;
    CHECK(fl_adapter_load_config(dir, &lc2) == 0);
    CHECK_EQ_INT(lc2.rank, lc.rank);
    CHECK(lc2.alpha == lc.alpha);
    CHECK_EQ_INT(lc2.use_rslora, 1);
    CHECK_EQ_INT(lc2.target_mask, lc.target_mask);
    fl_lora_buffer back;
    fl_lora_buffer_init(&back, &m.cfg, &lc2, fl_backend_cpu());
    CHECK(fl_adapter_load_weights(dir, &back, &m.cfg, &lc2) == 0);
    CHECK_EQ_INT(back.n, m.lora.n);
    CHECK(memcmp(back.data, m.lora.data, sizeof(float) * back.n) == 0);
    fl_lora_buffer_free(&back);

    /* PEFT's names and shapes, F32, metadata format=pt */
    char path[256];
    snprintf(path, sizeof path, "%s/adapter_model.safetensors", dir);
    fl_safetensors st;
    CHECK(fl_safetensors_open(&st, path) == 0);
    CHECK_EQ_INT(st.n_tensors, 2 * 7 * 2);
    const fl_st_tensor *t = fl_safetensors_find(&st, "base_model.model.model.layers.1.self_attn.k_proj.lora_B.weight");
    CHECK(t && t->dtype == FL_F32 && t->ndim == 2 && t->shape[0] == 32 && t->shape[1] == 4);
    t = fl_safetensors_find(&st, "base_model.model.model.layers.0.mlp.down_proj.lora_A.weight");
    CHECK(t && t->shape[0] == 4 && t->shape[1] == 112);
    CHECK(fl_safetensors_metadata(&st, "format") && !strcmp(fl_safetensors_metadata(&st, "format"), "pt"));
    fl_safetensors_close(&st);

    /* the config keys PEFT needs */
    snprintf(path, sizeof path, "%s/adapter_config.json", dir);
    json_error_t jerr;
    json_t *cfg = json_load_file(path, 0, &jerr);
    CHECK(cfg != NULL);
    CHECK(!strcmp(json_string_value(json_object_get(cfg, "peft_type")), "LORA"));
    CHECK(!strcmp(json_string_value(json_object_get(cfg, "task_type")), "CAUSAL_LM"));
    CHECK(json_integer_value(json_object_get(cfg, "r")) == 4);
    CHECK(json_array_size(json_object_get(cfg, "target_modules")) == 7);
    json_decref(cfg);
    fl_model_free(&m);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

TEST(adapter_loads_in_peft_with_same_logits) {
    if (system("python3 -c 'import torch, transformers, peft' >/dev/null 2>&1") != 0)
        SKIP("torch + transformers + peft not installed (pip install them to run this check)");
    fl_model m;
    fl_lora_config lc;
    CHECK(trained_model(&m, &lc, 0) == 0);
    char *dir = temp_dir();
    CHECK(fl_adapter_save(dir, &m.lora, &m.cfg, &lc, NULL) == 0);
    int B = 2, T = 8, V = m.cfg.vocab_size;
    int32_t ids[16];
    for (int i = 0; i < 16; i++) ids[i] = (i * 29 + 3) % V;
    float *ours = malloc(sizeof(float) * B * T * V);
    fl_model_logits(&m, ids, B, T, ours);
    char ids_path[256], out_path[256], cmd[1024];
    snprintf(ids_path, sizeof ids_path, "%s/ids.safetensors", dir);
    snprintf(out_path, sizeof out_path, "%s/logits.safetensors", dir);
    fl_st_write_tensor t = {.name = "input_ids", .dtype = FL_I32, .ndim = 2, .shape = {B, T}, .data = ids};
    CHECK(fl_safetensors_write(ids_path, &t, 1, NULL, 0) == 0);
    snprintf(cmd, sizeof cmd, "python3 tools/peft_roundtrip.py --model " MODEL " --adapter %s --ids %s --out %s", dir,
             ids_path, out_path);
    CHECK_EQ_INT(system(cmd), 0);
    fl_safetensors st;
    CHECK(fl_safetensors_open(&st, out_path) == 0);
    const fl_st_tensor *logits = fl_safetensors_find(&st, "logits");
    CHECK(logits && logits->numel == (size_t)B * T * V);
    if (logits) {
        const float *theirs = logits->data;
        double worst = 0;
        for (size_t i = 0; i < logits->numel; i++) worst = fabs(theirs[i] - ours[i]) > worst ? fabs(theirs[i] - ours[i]) : worst;
        /* same f32 tolerance as the fixture logits (test_hf_fixtures.c) */
        CHECK_MSG(worst <= 1e-4, "PEFT logits differ from fastlora's by %.3g", worst);
    }
    fl_safetensors_close(&st);
    free(ours);
    fl_model_free(&m);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

TEST(bad_input_adapter_config) {
    char *dir = temp_dir();
    char path[256];
    snprintf(path, sizeof path, "%s/adapter_config.json", dir);
    const char *cases[][2] = {
        {"{\"peft_type\": \"PREFIX_TUNING\", \"r\": 4}", "peft_type"},
        {"{\"peft_type\": \"LORA\", \"r\": 0, \"target_modules\": [\"q_proj\"]}", "'r'"},
        {"{\"peft_type\": \"LORA\", \"r\": 4, \"target_modules\": [\"c_attn\"]}", "c_attn"},
        {"{\"peft_type\": \"LORA\", \"r\": 4, \"use_dora\": true, \"target_modules\": [\"q_proj\"]}", "DoRA"},
        {"{\"peft_type\": \"LORA\", \"r\": 4, \"target_modules\": \"q_proj|v_proj\"}", "target_modules"},
        {"{\"peft_type\": \"LORA\", \"r\": 4,", "invalid JSON"},
        {"{\"peft_type\": \"LORA\", \"r\": 4, \"lora_alpha\": -2, \"target_modules\": [\"q_proj\"]}", "lora_alpha"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        FILE *f = fopen(path, "w");
        fputs(cases[i][0], f);
        fclose(f);
        fl_lora_config lc;
        CHECK_EQ_INT(fl_adapter_load_config(dir, &lc), 2);
        CHECK_STR_CONTAINS(fl_last_error(), "adapter_config.json");
        CHECK_STR_CONTAINS(fl_last_error(), cases[i][1]);
    }
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

/* A Gemma3ForConditionalGeneration model (tests/fixtures/hf/gemma3_vlm): tensors under
 * base_model.model.model.language_model.layers.*, target_modules PEFT's full-match regex over the
 * language model (a list of names would adapt the vision tower's q/k/v_proj too) — read back as the
 * same mask; a regex of another shape is refused in one line naming the field. */
TEST(adapter_vision_language_names_and_regex_targets) {
    const char *vlm_adapter = "tests/fixtures/hf/gemma3_vlm/adapter";
    fl_lora_config lc;
    CHECK(fl_adapter_load_config(vlm_adapter, &lc) == 0); /* PEFT's own file: the same regex form */
    CHECK_EQ_INT(lc.target_mask, (1u << FL_N_PROJ) - 1);
    fl_model m;
    CHECK(fl_model_init_dir(&m, "tests/fixtures/hf/gemma3_vlm/model", fl_backend_cpu(), &lc) == 0);
    CHECK(fl_model_load_adapter(&m, vlm_adapter) == 0);
    lc.target_mask = (1u << FL_PROJ_Q) | (1u << FL_PROJ_V);
    char *dir = temp_dir(), path[256];
    fl_lora_buffer two;
    fl_lora_buffer_init(&two, &m.cfg, &lc, fl_backend_cpu());
    CHECK(fl_adapter_save(dir, &two, &m.cfg, &lc, NULL) == 0);
    snprintf(path, sizeof path, "%s/adapter_config.json", dir);
    json_t *cfg = json_load_file(path, 0, NULL);
    const char *targets = cfg ? json_string_value(json_object_get(cfg, "target_modules")) : NULL;
    CHECK_MSG(targets && !strcmp(targets, "model\\.language_model\\.layers\\.\\d+\\.(self_attn|mlp)\\.(q_proj|v_proj)"),
              "target_modules %s", targets ? targets : "(not a string)");
    fl_lora_config back;
    CHECK(fl_adapter_load_config(dir, &back) == 0);
    CHECK_EQ_INT(back.target_mask, lc.target_mask);
    snprintf(path, sizeof path, "%s/adapter_model.safetensors", dir);
    fl_safetensors st;
    CHECK(fl_safetensors_open(&st, path) == 0);
    CHECK(fl_safetensors_find(&st, "base_model.model.model.language_model.layers.1.self_attn.v_proj.lora_B.weight") != NULL);
    CHECK_EQ_INT(st.n_tensors, 2 * 2 * 2);
    fl_safetensors_close(&st);
    /* another pattern: one line */
    json_object_set_new(cfg, "target_modules", json_string(".*\\.(q_proj|v_proj)"));
    snprintf(path, sizeof path, "%s/adapter_config.json", dir);
    CHECK(json_dump_file(cfg, path, 0) == 0);
    CHECK_EQ_INT(fl_adapter_load_config(dir, &back), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "target_modules");
    CHECK(strchr(fl_last_error(), '\n') == NULL);
    json_decref(cfg);
    fl_lora_buffer_free(&two);
    fl_model_free(&m);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}
