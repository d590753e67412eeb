/* test_export_gemma.c — the whole-model GGUF export of Gemma 3, Gemma 2 and Gemma (1) as llama.cpp's
 * gemma3 / gemma2 / gemma (convert_hf_to_gguf.py's Gemma3Model / Gemma2Model / GemmaModel), read back
 * with the GGUF reader: the
 * keys llama.cpp's loaders read (head size, soft-caps, the window, its layer pattern when it is not
 * llama.cpp's default, the sliding layers' RoPE base, linear RoPE scaling), the four norms per layer
 * (Gemma 1: two) under their names with the +1 Gemma's stored weights lack, the projections unpermuted; Gemma's
 * SentencePiece vocabulary without a dummy prefix; and the configs llama.cpp's graphs cannot run,
 * refused in one line. That llama.cpp computes fastlora's logits from these files is
 * test_export_llama_cpp.c (tests/fixtures/gguf/models: the HF fixtures with llama.cpp's score scale). */
#include <jansson.h>
#include <limits.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "export/export_internal.h"
#include "export_test_util.h"
#include "model/config.h"

#define GGUF_MODELS "tests/fixtures/gguf/models/"

/* dir/config.json = src's config.json with `key` set to the JSON text `value`; dir/model.safetensors
 * links to src's. */
static void config_variant(const char *dir, const char *src, const char *key, const char *value) {
    char path[PATH_MAX], abs_src[PATH_MAX];
    snprintf(path, sizeof path, "%s/config.json", src);
    json_t *cfg = json_load_file(path, 0, NULL);
    CHECK(cfg != NULL);
    if (!cfg) return;
    json_object_set_new(cfg, key, json_loads(value, JSON_DECODE_ANY, NULL));
    snprintf(path, sizeof path, "%s/config.json", dir);
    CHECK(json_dump_file(cfg, path, 0) == 0);
    json_decref(cfg);
    snprintf(path, sizeof path, "%s/model.safetensors", src);
    CHECK(realpath(path, abs_src) != NULL);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    CHECK(symlink(abs_src, path) == 0);
}

static float f32_of(const fl_gguf_file *g, const char *key) {
    float v = -1;
    CHECK_MSG(fl_gguf_get_f32(g, key, &v) == 0, "%s missing", key);
    return v;
}

/* GGUF norm `name` == HF `hf` + 1, value for value (f32: the sum llama.cpp multiplies by). */
static void check_norm_plus_one(const fl_gguf_file *g, const fl_safetensors *st, const char *name, const char *hf) {
    const fl_gguf_tensor *t = fl_gguf_find_tensor(g, name);
    const fl_st_tensor *s = fl_safetensors_find(st, hf);
    CHECK_MSG(t && s && t->type == FL_GGML_F32 && t->n_dims == 1 && s->dtype == FL_F32 && t->ne[0] == s->shape[0],
              "%s / %s", name, hf);
    if (!t || !s || t->ne[0] != s->shape[0]) return;
    const float *got = t->data, *w = s->data;
    int bad = 0;
    for (int64_t i = 0; i < t->ne[0]; i++) bad += got[i] != w[i] + 1.0f;
    CHECK_MSG(bad == 0, "%s: %d values differ from %s + 1", name, bad, hf);
}

/* Every norm of a 2-layer fixture (the sandwich's four, or Gemma 1's two: its post_attention_layernorm is
 * the MLP's pre-norm, llama.cpp's ffn_norm), and the projections copied as they are (HF row order). */
static void check_layers(const fl_gguf_file *g, const fl_safetensors *st, int qk_norm, int sandwich) {
    static const char *const sandwich_norms[4][2] = {{"attn_norm", "input_layernorm"},
                                                     {"post_attention_norm", "post_attention_layernorm"},
                                                     {"ffn_norm", "pre_feedforward_layernorm"},
                                                     {"post_ffw_norm", "post_feedforward_layernorm"}};
    static const char *const llama_norms[4][2] = {{"attn_norm", "input_layernorm"}, {"ffn_norm", "post_attention_layernorm"}};
    const char *const(*norms)[2] = sandwich ? sandwich_norms : llama_norms;
    static const char *const projs[7][2] = {{"attn_q", "self_attn.q_proj"}, {"attn_k", "self_attn.k_proj"},
                                            {"attn_v", "self_attn.v_proj"}, {"attn_output", "self_attn.o_proj"},
                                            {"ffn_gate", "mlp.gate_proj"}, {"ffn_up", "mlp.up_proj"}, {"ffn_down", "mlp.down_proj"}};
    char name[64], hf[96];
    for (int l = 0; l < 2; l++) {
        for (int k = 0; k < (sandwich ? 4 : 2); k++) {
            snprintf(name, sizeof name, "blk.%d.%s.weight", l, norms[k][0]);
            snprintf(hf, sizeof hf, "model.layers.%d.%s.weight", l, norms[k][1]);
            check_norm_plus_one(g, st, name, hf);
        }
        snprintf(name, sizeof name, "blk.%d.post_ffw_norm.weight", l);
        if (!sandwich) CHECK_MSG(fl_gguf_find_tensor(g, name) == NULL, "%s written for Gemma 1", name);
        for (int k = 0; k < 2; k++) {
            snprintf(name, sizeof name, "blk.%d.attn_%s_norm.weight", l, k ? "k" : "q");
            snprintf(hf, sizeof hf, "model.layers.%d.self_attn.%s_norm.weight", l, k ? "k" : "q");
            if (qk_norm) check_norm_plus_one(g, st, name, hf);
            else CHECK_MSG(fl_gguf_find_tensor(g, name) == NULL, "%s written for a model without q/k norms", name);
        }
        for (int k = 0; k < 7; k++) {
            snprintf(name, sizeof name, "blk.%d.%s.weight", l, projs[k][0]);
            snprintf(hf, sizeof hf, "model.layers.%d.%s.weight", l, projs[k][1]);
            check_tensor(g, st, name, hf, 0, NULL, NULL, 0, 0, 0);
        }
    }
    check_norm_plus_one(g, st, "output_norm.weight", "model.norm.weight");
    check_tensor(g, st, "token_embd.weight", "model.embed_tokens.weight", 0, NULL, NULL, 0, 0, 0);
    CHECK(fl_gguf_find_tensor(g, "output.weight") == NULL); /* tied: llama.cpp reuses token_embd */
}

/* Gemma 3: sliding layer 0, global layer 1 (pattern 2, not llama.cpp's default 6), sliding RoPE base
 * 10000, global 1e6 with linear factor 4, no soft-cap. */
TEST(export_gemma3_whole_model_as_llama_cpp_gemma3) {
    char *dir = temp_dir(), out[128];
    snprintf(out, sizeof out, "%s/g3.gguf", dir);
    CHECK(export_to(out, GGUF_MODELS "gemma3_llama_cpp", NULL, FL_EXPORT_F32, 0, 1) == 0);
    fl_gguf_file g;
    fl_safetensors st;
    CHECK(fl_gguf_open(&g, out) == 0);
    CHECK(fl_safetensors_open(&st, GGUF_MODELS "gemma3_llama_cpp/model.safetensors") == 0);
    check_str_kv(&g, "general.architecture", "gemma3");
    CHECK_EQ_INT(get_u32(&g, "gemma3.attention.key_length"), 12);
    CHECK_EQ_INT(get_u32(&g, "gemma3.attention.value_length"), 12);
    CHECK_EQ_INT(get_u32(&g, "gemma3.attention.head_count_kv"), 2);
    CHECK_EQ_INT(get_u32(&g, "gemma3.attention.sliding_window"), 5);
    CHECK_EQ_INT(get_u32(&g, "gemma3.attention.sliding_window_pattern"), 2);
    CHECK(f32_of(&g, "gemma3.rope.freq_base") == 1e6f && f32_of(&g, "gemma3.rope.freq_base_swa") == 1e4f);
    check_str_kv(&g, "gemma3.rope.scaling.type", "linear");
    CHECK(f32_of(&g, "gemma3.rope.scaling.factor") == 4.0f);
    CHECK(fl_gguf_find_kv(&g, "gemma3.final_logit_softcapping") == NULL && fl_gguf_find_kv(&g, "gemma3.attn_logit_softcapping") == NULL);
    check_layers(&g, &st, 1, 1);
    fl_gguf_close(&g);
    fl_safetensors_close(&st);
    rm_rf(dir);
}

/* Gemma 2: both soft-caps, the window; the pattern (sliding, global) is llama.cpp's default, so no
 * pattern key; the sliding layers share rope.freq_base. */
TEST(export_gemma2_whole_model_as_llama_cpp_gemma2) {
    char *dir = temp_dir(), out[128];
    snprintf(out, sizeof out, "%s/g2.gguf", dir);
    CHECK(export_to(out, GGUF_MODELS "gemma2_llama_cpp", NULL, FL_EXPORT_F32, 0, 1) == 0);
    fl_gguf_file g;
    fl_safetensors st;
    CHECK(fl_gguf_open(&g, out) == 0);
    CHECK(fl_safetensors_open(&st, GGUF_MODELS "gemma2_llama_cpp/model.safetensors") == 0);
    check_str_kv(&g, "general.architecture", "gemma2");
    CHECK(f32_of(&g, "gemma2.attn_logit_softcapping") == 0.2f && f32_of(&g, "gemma2.final_logit_softcapping") == 3.0f);
    CHECK_EQ_INT(get_u32(&g, "gemma2.attention.sliding_window"), 5);
    CHECK_EQ_INT(get_u32(&g, "gemma2.attention.key_length"), 12);
    CHECK(fl_gguf_find_kv(&g, "gemma2.attention.sliding_window_pattern") == NULL);
    CHECK(fl_gguf_find_kv(&g, "gemma2.rope.freq_base_swa") == NULL);
    check_layers(&g, &st, 0, 1);
    fl_gguf_close(&g);
    fl_safetensors_close(&st);
    rm_rf(dir);
}

/* Gemma (1): llama.cpp's gemma graph, told the head size; no soft-caps, window or second RoPE base; two
 * norms per layer with the +1; multi-query as the fixture is. */
TEST(export_gemma1_whole_model_as_llama_cpp_gemma) {
    char *dir = temp_dir(), out[128];
    snprintf(out, sizeof out, "%s/g1.gguf", dir);
    CHECK(export_to(out, FIX "gemma_geglu/model", NULL, FL_EXPORT_F32, 0, 1) == 0);
    fl_gguf_file g;
    fl_safetensors st;
    CHECK(fl_gguf_open(&g, out) == 0);
    CHECK(fl_safetensors_open(&st, FIX "gemma_geglu/model/model.safetensors") == 0);
    check_str_kv(&g, "general.architecture", "gemma");
    CHECK_EQ_INT(get_u32(&g, "gemma.attention.key_length"), 12);
    CHECK_EQ_INT(get_u32(&g, "gemma.attention.value_length"), 12);
    CHECK_EQ_INT(get_u32(&g, "gemma.attention.head_count_kv"), 1);
    CHECK_EQ_INT(get_u32(&g, "gemma.feed_forward_length"), 40);
    CHECK(f32_of(&g, "gemma.rope.freq_base") == 1e4f && f32_of(&g, "gemma.attention.layer_norm_rms_epsilon") == 1e-6f);
    CHECK(fl_gguf_find_kv(&g, "gemma.final_logit_softcapping") == NULL && fl_gguf_find_kv(&g, "gemma.attention.sliding_window") == NULL);
    check_layers(&g, &st, 0, 0);
    fl_gguf_close(&g);
    fl_safetensors_close(&st);
    rm_rf(dir);
}

/* What llama.cpp's gemma graphs cannot run: one line naming config.json and the field, exit status
 * 2, no file. The adapter alone still exports (export_lora_only_layout_and_alpha). */
TEST(export_gemma_configs_llama_cpp_cannot_run_refused_in_one_line) {
    static const struct { const char *src, *key, *value, *want; } cases[] = {
        {FIX "gemma3_sandwich/model", NULL, NULL, "query_pre_attn_scalar 20"},
        {GGUF_MODELS "gemma2_llama_cpp", "attn_logit_softcapping", "null", "attn_logit_softcapping"},
        {GGUF_MODELS "gemma2_llama_cpp", "final_logit_softcapping", "null", "final_logit_softcapping"},
        {GGUF_MODELS "gemma2_llama_cpp", "tie_word_embeddings", "false", "tie_word_embeddings"},
        {GGUF_MODELS "gemma3_llama_cpp", "attn_logit_softcapping", "30.0", "attn_logit_softcapping"},
        {FIX "gemma_geglu/model", "tie_word_embeddings", "false", "tie_word_embeddings"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *dir = temp_dir(), out[128], model[128];
        snprintf(model, sizeof model, "%s", cases[i].src);
        if (cases[i].key) {
            snprintf(model, sizeof model, "%s/m", dir);
            CHECK(mkdir(model, 0755) == 0);
            config_variant(model, cases[i].src, cases[i].key, cases[i].value);
        }
        snprintf(out, sizeof out, "%s/g.gguf", dir);
        fl_export_options o = {.out_path = out, .model_dir = model, .type = FL_EXPORT_F32, .no_tokenizer = 1, .force = 1};
        int n = 0;
        CHECK_EQ_INT(fl_export_gguf(&o, &n), FL_ERR_INPUT);
        CHECK_STR_CONTAINS(fl_last_error(), cases[i].want);
        CHECK_STR_CONTAINS(fl_last_error(), "config.json");
        CHECK_STR_CONTAINS(fl_last_error(), "llama.cpp");
        CHECK(strchr(fl_last_error(), '\n') == NULL);
        CHECK(access(out, F_OK) != 0);
        rm_rf(dir);
    }
}

/* Gemma's tokenizer (tests/fixtures/tokenizer/gemma_pipeline: Replace(" ", "▁"), no dummy prefix,
 * byte fallback, <bos> in front) as llama.cpp's SentencePiece model: add_space_prefix false (llama.cpp
 * would prepend "▁" otherwise), add_bos, the byte pieces typed BYTE. */
TEST(export_gemma_vocabulary_without_dummy_prefix) {
    fl_model_config cfg;
    CHECK(fl_config_load(&cfg, GGUF_MODELS "gemma3_llama_cpp/config.json") == 0);
    cfg.vocab_size = 1024 + 8; /* the fixture tokenizer's ids, and [PAD] fillers past them */
    fl_gguf_writer w;
    fl_gguf_writer_init(&w);
    fl_gguf_kv_str(&w, "general.architecture", "gemma3");
    char *dir = temp_dir(), out[128];
    snprintf(out, sizeof out, "%s/v.gguf", dir);
    int rc = fl_gguf_put_tokenizer(&w, "tests/fixtures/tokenizer/gemma_pipeline", &cfg, NULL);
    if (rc) printf("    %s\n", fl_last_error());
    CHECK(rc == 0);
    if (!rc) rc = fl_gguf_writer_begin(&w, out);
    if (!rc) rc = fl_gguf_writer_finish(&w);
    fl_gguf_writer_free(&w);
    fl_gguf_file g;
    CHECK(rc == 0 && fl_gguf_open(&g, out) == 0);
    if (!rc) {
        check_str_kv(&g, "tokenizer.ggml.model", "llama");
        check_str_kv(&g, "tokenizer.ggml.pre", "default");
        int b = -1;
        CHECK(fl_gguf_get_bool(&g, "tokenizer.ggml.add_space_prefix", &b) == 0 && b == 0);
        CHECK(fl_gguf_get_bool(&g, "tokenizer.ggml.add_bos_token", &b) == 0 && b == 1);
        uint32_t type;
        uint64_t n;
        CHECK(fl_gguf_get_arr(&g, "tokenizer.ggml.scores", &type, &n) == 0 && n == 1032);
        fl_gguf_close(&g);
    }
    rm_rf(dir);
}
