/* test_mistral3_vlm.c — a Mistral3ForConditionalGeneration folder (tests/fixtures/hf/mistral3_vlm,
 * written by tools/make_hf_fixtures.py with transformers + PEFT) as the loader and the adapter reader
 * see it: the language model's tensors under language_model.model., the untied head
 * language_model.lm_head.weight read; the same folder without a head ties it when the top-level
 * tie_word_embeddings is true (absent: transformers 5's default) and is refused naming the missing
 * tensor when false; PEFT's adapter under base_model.model.model.language_model.layers.* with its
 * regex target_modules. The numerics against transformers are test_hf_fixtures.c's. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"
#include "engine/model.h"
#include "io/safetensors.h"
#include "lora/adapter_io.h"
#include "test.h"

#define FIXTURE "tests/fixtures/hf/mistral3_vlm"

/* FIXTURE's model with every tensor but the head copied to a fresh folder, its config.json's top-level
 * tie_word_embeddings set to `tie` (or removed when tie < 0). Returns the folder, or NULL. */
static char *headless_copy(int tie) {
    static char dir[64];
    snprintf(dir, sizeof dir, "/tmp/fastlora-mistral3-XXXXXX");
    if (!mkdtemp(dir)) return NULL;
    fl_safetensors st;
    if (fl_safetensors_open(&st, FIXTURE "/model/model.safetensors")) return NULL;
    fl_st_write_tensor *t = calloc((size_t)st.n_tensors, sizeof *t);
    int n = 0;
    for (int i = 0; i < st.n_tensors; i++) {
        const fl_st_tensor *s = &st.tensors[i];
        if (!strcmp(s->name, "language_model.lm_head.weight")) continue;
        t[n] = (fl_st_write_tensor){.name = s->name, .dtype = s->dtype, .ndim = s->ndim, .data = s->data};
        memcpy(t[n].shape, s->shape, sizeof s->shape);
        n++;
    }
    char path[256];
    const char *meta[] = {"format", "pt"};
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    int rc = n == st.n_tensors - 1 ? fl_safetensors_write(path, t, n, meta, 1) : 1;
    free(t);
    fl_safetensors_close(&st);
    json_t *cfg = json_load_file(FIXTURE "/model/config.json", 0, NULL);
    if (!cfg) return NULL;
    if (tie < 0) json_object_del(cfg, "tie_word_embeddings");
    else json_object_set_new(cfg, "tie_word_embeddings", json_boolean(tie));
    snprintf(path, sizeof path, "%s/config.json", dir);
    rc |= json_dump_file(cfg, path, JSON_INDENT(2));
    json_decref(cfg);
    return rc ? NULL : dir;
}

static void remove_dir(const char *dir) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
}

TEST(mistral3_vlm_head_untied_as_stored_tied_when_missing) {
    if (access(FIXTURE "/model/config.json", R_OK)) SKIP("tests/fixtures/hf/mistral3_vlm missing");
    fl_lora_config lc = fl_lora_config_default();
    fl_model m;
    CHECK_MSG(fl_model_init_dir(&m, FIXTURE "/model", fl_backend_cpu(), &lc) == 0, "%s", fl_last_error());
    CHECK(m.cfg.multimodal == 1 && m.cfg.tie_word_embeddings == 0);
    fl_model_free(&m);
    for (int tie = -1; tie <= 1; tie++) {
        char *dir = headless_copy(tie);
        CHECK(dir != NULL);
        if (!dir) continue;
        int status = fl_model_init_dir(&m, dir, fl_backend_cpu(), &lc);
        if (tie != 0) { /* true, or absent (the default): the embedding is the head */
            CHECK_MSG(status == 0, "tie %d: %s", tie, fl_last_error());
            if (!status) {
                CHECK(m.cfg.tie_word_embeddings == 1);
                fl_model_free(&m);
            }
        } else { /* false: a head is required, and named */
            CHECK_EQ_INT(status, FL_ERR_INPUT);
            CHECK_STR_CONTAINS(fl_last_error(), "language_model.lm_head.weight");
            CHECK(strchr(fl_last_error(), '\n') == NULL);
        }
        remove_dir(dir);
    }
}

TEST(mistral3_vlm_adapter_names_and_regex_targets) {
    if (access(FIXTURE "/adapter/adapter_config.json", R_OK)) SKIP("tests/fixtures/hf/mistral3_vlm missing");
    fl_lora_config lc;
    CHECK(fl_adapter_load_config(FIXTURE "/adapter", &lc) == 0); /* PEFT's own file: the regex form */
    CHECK_EQ_INT(lc.target_mask, (1u << FL_N_PROJ) - 1);
    fl_model m;
    CHECK_MSG(fl_model_init_dir(&m, FIXTURE "/model", fl_backend_cpu(), &lc) == 0, "%s", fl_last_error());
    CHECK_MSG(fl_model_load_adapter(&m, FIXTURE "/adapter") == 0, "%s", fl_last_error());
    fl_safetensors st;
    CHECK(fl_safetensors_open(&st, FIXTURE "/adapter/adapter_model.safetensors") == 0);
    CHECK(fl_safetensors_find(&st, "base_model.model.model.language_model.layers.1.mlp.down_proj.lora_A.weight") != NULL);
    CHECK_EQ_INT(st.n_tensors, 2 * 7 * 2); /* two layers, seven modules, A and B: nothing in the vision tower */
    fl_safetensors_close(&st);
    fl_model_free(&m);
}
