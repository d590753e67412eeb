/* test_export.c — `fastlora export --gguf` read back with the GGUF reader: every tensor of the HF
 * fixtures lands under llama.cpp's name with HF's values (llama q/k rows in the interleaved order,
 * undone here by the permutation written out independently), the merged matrices equal W + s·B·A
 * computed in double, llama3's rope_freqs reproduce the engine's (HF-verified) frequencies, the
 * LoRA file has convert_lora_to_gguf.py's names/orientation and llama.cpp's alpha convention, and
 * every bad input is one line, exit 2, with no file left behind. The comparison with llama.cpp
 * itself is test_export_llama_cpp.c. */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/dtype.h"
#include "common/error.h"
#include "engine/model.h"
#include "export/export.h"
#include "export/gguf_quant.h"
#include "export/gguf_reader.h"
#include "io/safetensors.h"
#include "lora/adapter_io.h"
#include "model/config.h"
#include "test.h"

#include "export_test_util.h"

TEST(export_llama_f32_tensors_and_metadata) {
    char *dir = temp_dir(), out[128];
    snprintf(out, sizeof out, "%s/m.gguf", dir);
    CHECK(export_to(out, FIX "llama_gqa/model", NULL, FL_EXPORT_F32, 0, 1) == 0);
    fl_gguf_file g;
    fl_safetensors st;
    CHECK(fl_gguf_open(&g, out) == 0);
    CHECK(fl_safetensors_open(&st, FIX "llama_gqa/model/model.safetensors") == 0);
    const char *s;
    size_t len;
    CHECK(fl_gguf_get_str(&g, "general.architecture", &s, &len) == 0 && len == 5 && !memcmp(s, "llama", 5));
    CHECK(fl_gguf_get_str(&g, "general.type", &s, &len) == 0 && len == 5 && !memcmp(s, "model", 5));
    CHECK_EQ_INT(get_u32(&g, "llama.block_count"), 2);
    CHECK_EQ_INT(get_u32(&g, "llama.embedding_length"), 64);
    CHECK_EQ_INT(get_u32(&g, "llama.feed_forward_length"), 112);
    CHECK_EQ_INT(get_u32(&g, "llama.attention.head_count"), 4);
    CHECK_EQ_INT(get_u32(&g, "llama.attention.head_count_kv"), 2);
    CHECK_EQ_INT(get_u32(&g, "llama.vocab_size"), 200);
    CHECK_EQ_INT(get_u32(&g, "llama.rope.dimension_count"), 16);
    CHECK_EQ_INT(get_u32(&g, "general.file_type"), 0);
    CHECK(fl_gguf_find_kv(&g, "llama.attention.key_length") == NULL); /* head size = 64 / 4: implied */
    float f;
    CHECK(fl_gguf_get_f32(&g, "llama.rope.freq_base", &f) == 0 && f == 10000.0f);
    CHECK(fl_gguf_get_f32(&g, "llama.attention.layer_norm_rms_epsilon", &f) == 0 && f == 1e-5f);
    check_str_kv(&g, "tokenizer.ggml.model", "none"); /* --no-tokenizer: llama.cpp's "no vocab" model */
    CHECK_EQ_INT(g.n_tensors, 1 + 2 * 9 + 2);                     /* embd, 2 x (2 norms + 7), norm, output */
    check_tensor(&g, &st, "token_embd.weight", "model.embed_tokens.weight", 0, NULL, NULL, 0, 0, 0);
    check_tensor(&g, &st, "output.weight", "lm_head.weight", 0, NULL, NULL, 0, 0, 0);
    check_tensor(&g, &st, "output_norm.weight", "model.norm.weight", 0, NULL, NULL, 0, 0, 0);
    check_tensor(&g, &st, "blk.1.attn_norm.weight", "model.layers.1.input_layernorm.weight", 0, NULL, NULL, 0, 0, 0);
    check_tensor(&g, &st, "blk.1.ffn_norm.weight", "model.layers.1.post_attention_layernorm.weight", 0, NULL, NULL, 0, 0, 0);
    check_tensor(&g, &st, "blk.0.attn_q.weight", "model.layers.0.self_attn.q_proj.weight", 4, NULL, NULL, 0, 0, 0);
    check_tensor(&g, &st, "blk.1.attn_k.weight", "model.layers.1.self_attn.k_proj.weight", 2, NULL, NULL, 0, 0, 0);
    check_tensor(&g, &st, "blk.1.attn_v.weight", "model.layers.1.self_attn.v_proj.weight", 0, NULL, NULL, 0, 0, 0);
    check_tensor(&g, &st, "blk.0.attn_output.weight", "model.layers.0.self_attn.o_proj.weight", 0, NULL, NULL, 0, 0, 0);
    check_tensor(&g, &st, "blk.0.ffn_gate.weight", "model.layers.0.mlp.gate_proj.weight", 0, NULL, NULL, 0, 0, 0);
    check_tensor(&g, &st, "blk.0.ffn_up.weight", "model.layers.0.mlp.up_proj.weight", 0, NULL, NULL, 0, 0, 0);
    check_tensor(&g, &st, "blk.1.ffn_down.weight", "model.layers.1.mlp.down_proj.weight", 0, NULL, NULL, 0, 0, 0);
    fl_safetensors_close(&st);
    fl_gguf_close(&g);
    rm_rf(dir);
}

/* The merged model: W + s·B·A (double reference), then stored as f32 / f16 / bf16 / q8_0. */
TEST(export_merged_adapter_all_types) {
    fl_lora_config lc;
    fl_model_config cfg;
    CHECK(fl_config_load(&cfg, FIX "llama_gqa/model/config.json") == 0);
    CHECK(fl_adapter_load_config(FIX "llama_gqa/adapter", &lc) == 0);
    fl_lora_buffer lora;
    fl_lora_buffer_init(&lora, &cfg, &lc, fl_backend_cpu());
    CHECK(fl_adapter_load_weights(FIX "llama_gqa/adapter", &lora, &cfg, &lc) == 0);
    double s = fl_lora_scale(&lc);
    fl_safetensors st;
    CHECK(fl_safetensors_open(&st, FIX "llama_gqa/model/model.safetensors") == 0);
    const fl_export_type types[] = {FL_EXPORT_F32, FL_EXPORT_F16, FL_EXPORT_BF16, FL_EXPORT_Q8_0};
    /* relative error of the stored type: f32 sums in another order, f16 2^-11, bf16 2^-8, Q8_0 up to
     * amax/254 of a block (~3 sigma of N(0, 1) weights / 127 / 2 relative to a typical |w| of 1 sigma,
     * so only bounded loosely per value: we check its block bound separately in test_gguf_writer.c) */
    const double tol[] = {1e-5, 1.0 / 2048 * 1.01, 1.0 / 256 * 1.01, 0.6};
    const char *tname[] = {"f32", "f16", "bf16", "q8_0"};
    char *dir = temp_dir(), out[128];
    for (int k = 0; k < 4; k++) {
        snprintf(out, sizeof out, "%s/%s.gguf", dir, tname[k]);
        CHECK(export_to(out, FIX "llama_gqa/model", FIX "llama_gqa/adapter", types[k], 0, 1) == 0);
        fl_gguf_file g;
        if (fl_gguf_open(&g, out)) { CHECK(0); continue; }
        const fl_lora_layer *L = &lora.layers[1];
        check_tensor(&g, &st, "blk.1.attn_q.weight", "model.layers.1.self_attn.q_proj.weight", 4, L->b[FL_PROJ_Q], L->a[FL_PROJ_Q], lc.rank, s, tol[k]);
        check_tensor(&g, &st, "blk.1.attn_k.weight", "model.layers.1.self_attn.k_proj.weight", 2, L->b[FL_PROJ_K], L->a[FL_PROJ_K], lc.rank, s, tol[k]);
        check_tensor(&g, &st, "blk.1.attn_v.weight", "model.layers.1.self_attn.v_proj.weight", 0, L->b[FL_PROJ_V], L->a[FL_PROJ_V], lc.rank, s, tol[k]);
        check_tensor(&g, &st, "blk.1.ffn_up.weight", "model.layers.1.mlp.up_proj.weight", 0, L->b[FL_PROJ_UP], L->a[FL_PROJ_UP], lc.rank, s, tol[k]);
        const fl_gguf_tensor *down = fl_gguf_find_tensor(&g, "blk.0.ffn_down.weight"), *norm = fl_gguf_find_tensor(&g, "blk.0.attn_norm.weight");
        const fl_gguf_tensor *embd = fl_gguf_find_tensor(&g, "token_embd.weight");
        CHECK(norm && norm->type == FL_GGML_F32); /* norms stay f32 */
        uint32_t want_type = k == 0 ? FL_GGML_F32 : k == 1 ? FL_GGML_F16 : k == 2 ? FL_GGML_BF16 : FL_GGML_Q8_0;
        CHECK(embd && embd->type == want_type);
        /* ffn_down rows hold FF = 112 values: not a multiple of 32, so q8_0 falls back to f16 */
        CHECK(down && down->type == (k == 3 ? FL_GGML_F16 : want_type));
        static const uint32_t file_types[] = {0, 1, 32, 7}; /* llama.cpp's LLAMA_FTYPE_ALL_F32, MOSTLY_F16, _BF16, _Q8_0 */
        CHECK_EQ_INT(get_u32(&g, "general.file_type"), file_types[k]);
        fl_gguf_close(&g);
    }
    fl_safetensors_close(&st);
    fl_lora_buffer_free(&lora);
    rm_rf(dir);
}

/* qwen2: q/k/v biases kept (f32, not permuted: llama.cpp runs qwen2 with NEOX RoPE on HF's layout),
 * tied embeddings (no output tensor), no llama-only keys. */
TEST(export_qwen2_biases_tied) {
    char *dir = temp_dir(), out[128];
    snprintf(out, sizeof out, "%s/q.gguf", dir);
    CHECK(export_to(out, FIX "qwen2_bias_tied/model", NULL, FL_EXPORT_AUTO, 0, 1) == 0);
    fl_gguf_file g;
    fl_safetensors st;
    CHECK(fl_gguf_open(&g, out) == 0);
    CHECK(fl_safetensors_open(&st, FIX "qwen2_bias_tied/model/model.safetensors") == 0);
    CHECK(fl_gguf_find_tensor(&g, "output.weight") == NULL);
    CHECK_EQ_INT(get_u32(&g, "qwen2.vocab_size"), 160); /* no tokenizer: llama.cpp sizes its vocabulary from this */
    CHECK_EQ_INT(get_u32(&g, "qwen2.attention.head_count"), 6);
    const fl_gguf_tensor *qb = fl_gguf_find_tensor(&g, "blk.0.attn_q.bias"), *q = fl_gguf_find_tensor(&g, "blk.0.attn_q.weight");
    CHECK(qb && qb->type == FL_GGML_F32 && qb->n_dims == 1);
    CHECK(q && q->type == FL_GGML_F16); /* auto: f32 weights -> f16, as the converter's "auto" */
    check_tensor(&g, &st, "blk.0.attn_q.bias", "model.layers.0.self_attn.q_proj.bias", 0, NULL, NULL, 0, 0, 0);
    check_tensor(&g, &st, "blk.1.attn_k.bias", "model.layers.1.self_attn.k_proj.bias", 0, NULL, NULL, 0, 0, 0);
    check_tensor(&g, &st, "blk.1.attn_v.bias", "model.layers.1.self_attn.v_proj.bias", 0, NULL, NULL, 0, 0, 0);
    check_tensor(&g, &st, "blk.0.attn_q.weight", "model.layers.0.self_attn.q_proj.weight", 0, NULL, NULL, 0, 0, 1.0 / 2048 * 1.01);
    fl_safetensors_close(&st);
    fl_gguf_close(&g);
    rm_rf(dir);
}

/* Qwen3 as llama.cpp's qwen3: the per-head norms as blk.N.attn_q_norm / attn_k_norm (f32, HS values),
 * q/k rows in HF's order (NEOX RoPE), the head size written (q dim 48 != hidden 24), tied output. */
TEST(export_qwen3_qk_norms_and_head_dim) {
    char *dir = temp_dir(), out[128];
    snprintf(out, sizeof out, "%s/q3.gguf", dir);
    CHECK(export_to(out, FIX "qwen3_qk_norm/model", NULL, FL_EXPORT_F32, 0, 1) == 0);
    fl_gguf_file g;
    fl_safetensors st;
    CHECK(fl_gguf_open(&g, out) == 0);
    CHECK(fl_safetensors_open(&st, FIX "qwen3_qk_norm/model/model.safetensors") == 0);
    check_str_kv(&g, "general.architecture", "qwen3");
    CHECK_EQ_INT(get_u32(&g, "qwen3.attention.head_count"), 4);
    CHECK_EQ_INT(get_u32(&g, "qwen3.attention.head_count_kv"), 2);
    CHECK_EQ_INT(get_u32(&g, "qwen3.attention.key_length"), 12);
    CHECK_EQ_INT(get_u32(&g, "qwen3.attention.value_length"), 12);
    CHECK_EQ_INT(get_u32(&g, "qwen3.vocab_size"), 96);
    CHECK(fl_gguf_find_tensor(&g, "output.weight") == NULL);
    for (int l = 0; l < 2; l++)
        for (int k = 0; k < 2; k++) {
            char name[64], hf[96];
            snprintf(name, sizeof name, "blk.%d.attn_%s_norm.weight", l, k ? "k" : "q");
            snprintf(hf, sizeof hf, "model.layers.%d.self_attn.%s_norm.weight", l, k ? "k" : "q");
            const fl_gguf_tensor *t = fl_gguf_find_tensor(&g, name);
            CHECK_MSG(t && t->type == FL_GGML_F32 && t->n_dims == 1 && t->ne[0] == 12, "%s", name);
            check_tensor(&g, &st, name, hf, 0, NULL, NULL, 0, 0, 0);
        }
    check_tensor(&g, &st, "blk.1.attn_q.weight", "model.layers.1.self_attn.q_proj.weight", 0, NULL, NULL, 0, 0, 0);
    check_tensor(&g, &st, "blk.0.attn_k.weight", "model.layers.0.self_attn.k_proj.weight", 0, NULL, NULL, 0, 0, 0);
    fl_safetensors_close(&st);
    fl_gguf_close(&g);
    rm_rf(dir);
}

/* llama3 RoPE: llama.cpp divides each frequency θ_i = base^(-2i/d) by rope_freqs[i]; the engine's
 * inv_freq (checked against transformers by the HF fixtures) must equal θ_i / rope_freqs[i]. */
TEST(export_llama3_rope_freqs_and_head_dim) {
    char *dir = temp_dir(), out[128];
    snprintf(out, sizeof out, "%s/r.gguf", dir);
    CHECK(export_to(out, FIX "llama3_rope/model", NULL, FL_EXPORT_F32, 0, 1) == 0);
    fl_gguf_file g;
    CHECK(fl_gguf_open(&g, out) == 0);
    fl_model_config cfg;
    CHECK(fl_config_load(&cfg, FIX "llama3_rope/model/config.json") == 0);
    const fl_gguf_tensor *rf = fl_gguf_find_tensor(&g, "rope_freqs.weight");
    CHECK(rf && rf->type == FL_GGML_F32 && rf->n_dims == 1 && rf->ne[0] == cfg.head_dim / 2);
    if (rf) {
        float inv[FL_MAX_HEAD_DIM / 2];
        fl_rope_inv_freq(&cfg, inv);
        const float *ff = rf->data;
        for (int i = 0; i < cfg.head_dim / 2; i++) {
            double theta = pow(cfg.rope_theta, -2.0 * i / cfg.head_dim);
            CHECK_CLOSE(theta / ff[i], inv[i], 0, 2e-6);
        }
        CHECK(ff[0] == 1.0f && ff[cfg.head_dim / 2 - 1] == 8.0f); /* unscaled and fully scaled ends */
    }
    /* head_dim 16 with 4 heads and hidden 48: llama.cpp must be told */
    CHECK_EQ_INT(get_u32(&g, "llama.attention.key_length"), 16);
    CHECK_EQ_INT(get_u32(&g, "llama.attention.value_length"), 16);
    CHECK(fl_gguf_find_tensor(&g, "output.weight") == NULL); /* tied */
    fl_gguf_close(&g);
    rm_rf(dir);
}

/* The adapter alone: names <base>.lora_a / .lora_b, lora_a = A (R, IC) as ne [IC, R], lora_b = B
 * (OC, R) as ne [R, OC] with llama q/k rows permuted; llama.cpp's scale alpha/R equals PEFT's. Gemma's
 * adapters as llama.cpp's gemma3 / gemma2 (HF row order, as qwen: NEOX RoPE; written as
 * convert_lora_to_gguf.py lays them out, not run in llama.cpp here). */
TEST(export_lora_only_layout_and_alpha) {
    const char *names[4] = {"llama_gqa", "qwen2_bias_tied", "gemma3_sandwich", "gemma2_softcap"};
    const char *archs[4] = {"llama", "qwen2", "gemma3", "gemma2"};
    char *dir = temp_dir(), out[128], path[128];
    for (int m = 0; m < 4; m++) {
        char model[96], adapter[96];
        snprintf(model, sizeof model, FIX "%s/model", names[m]);
        snprintf(adapter, sizeof adapter, FIX "%s/adapter", names[m]);
        snprintf(out, sizeof out, "%s/%s.gguf", dir, names[m]);
        CHECK(export_to(out, model, adapter, FL_EXPORT_AUTO, 1, 0) == 0);
        fl_model_config cfg;
        fl_lora_config lc;
        snprintf(path, sizeof path, "%s/config.json", model);
        CHECK(fl_config_load(&cfg, path) == 0 && fl_adapter_load_config(adapter, &lc) == 0);
        fl_lora_buffer lora;
        fl_lora_buffer_init(&lora, &cfg, &lc, fl_backend_cpu());
        CHECK(fl_adapter_load_weights(adapter, &lora, &cfg, &lc) == 0);
        fl_gguf_file g;
        if (fl_gguf_open(&g, out)) { CHECK(0); fl_lora_buffer_free(&lora); continue; }
        const char *s;
        size_t len;
        CHECK(fl_gguf_get_str(&g, "general.type", &s, &len) == 0 && len == 7 && !memcmp(s, "adapter", 7));
        CHECK(fl_gguf_get_str(&g, "adapter.type", &s, &len) == 0 && len == 4 && !memcmp(s, "lora", 4));
        check_str_kv(&g, "general.architecture", archs[m]);
        float alpha = 0;
        CHECK(fl_gguf_get_f32(&g, "adapter.lora.alpha", &alpha) == 0);
        CHECK_CLOSE(alpha / lc.rank, fl_lora_scale(&lc), 0, 1e-6); /* llama.cpp: scale = alpha / rank */
        int n_expect = 0;
        for (int l = 0; l < cfg.n_layers; l++)
            for (int p = 0; p < FL_N_PROJ; p++) {
                if (!lora.layers[l].a[p]) continue;
                n_expect += 2;
                int in, oc;
                fl_proj_dims(&cfg, (fl_proj)p, &in, &oc);
                static const char *const gp[] = {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"};
                char an[64], bn[64];
                snprintf(an, sizeof an, "blk.%d.%s.weight.lora_a", l, gp[p]);
                snprintf(bn, sizeof bn, "blk.%d.%s.weight.lora_b", l, gp[p]);
                const fl_gguf_tensor *ta = fl_gguf_find_tensor(&g, an), *tb = fl_gguf_find_tensor(&g, bn);
                CHECK_MSG(ta && tb, "%s / %s missing", an, bn);
                if (!ta || !tb) continue;
                CHECK(ta->type == FL_GGML_F32 && ta->ne[0] == in && ta->ne[1] == lc.rank);
                CHECK(tb->type == FL_GGML_F32 && tb->ne[0] == lc.rank && tb->ne[1] == oc);
                CHECK(!memcmp(ta->data, lora.layers[l].a[p], sizeof(float) * (size_t)in * (size_t)lc.rank));
                int heads = cfg.arch == FL_ARCH_LLAMA ? (p == FL_PROJ_Q ? cfg.n_heads : p == FL_PROJ_K ? cfg.n_kv_heads : 0) : 0;
                const float *gb = tb->data, *hb = lora.layers[l].b[p];
                int same = 1;
                for (int64_t r = 0; r < oc; r++)
                    same &= !memcmp(gb + r * lc.rank, hb + (heads ? hf_row(r, heads, oc) : r) * lc.rank, sizeof(float) * (size_t)lc.rank);
                CHECK_MSG(same, "%s: rows differ from lora_B%s", bn, heads ? " (permuted)" : "");
            }
        CHECK_EQ_INT(g.n_tensors, n_expect);
        fl_gguf_close(&g);
        fl_lora_buffer_free(&lora);
    }
    /* q8_0: lora_a rows (IC = 64) quantize; lora_b rows (R = 4) are not a multiple of 32: f16 */
    snprintf(out, sizeof out, "%s/q8.gguf", dir);
    CHECK(export_to(out, FIX "llama_gqa/model", FIX "llama_gqa/adapter", FL_EXPORT_Q8_0, 1, 0) == 0);
    fl_gguf_file g;
    if (fl_gguf_open(&g, out) == 0) {
        const fl_gguf_tensor *ta = fl_gguf_find_tensor(&g, "blk.0.attn_q.weight.lora_a"), *tb = fl_gguf_find_tensor(&g, "blk.0.attn_q.weight.lora_b");
        CHECK(ta && ta->type == FL_GGML_Q8_0);
        CHECK(tb && tb->type == FL_GGML_F16);
        fl_gguf_close(&g);
    }
    rm_rf(dir);
}

TEST(export_alignment_option) {
    char *dir = temp_dir(), out[128];
    snprintf(out, sizeof out, "%s/a.gguf", dir);
    fl_export_options o = {.out_path = out, .model_dir = FIX "llama_gqa/model", .type = FL_EXPORT_Q8_0, .no_tokenizer = 1, .alignment = 64};
    CHECK(fl_export_gguf(&o, NULL) == 0);
    fl_gguf_file g;
    CHECK(fl_gguf_open(&g, out) == 0);
    CHECK_EQ_INT(g.alignment, 64);
    CHECK_EQ_INT(get_u32(&g, "general.alignment"), 64);
    for (uint64_t i = 0; i < g.n_tensors; i++) CHECK(g.tensors[i].offset % 64 == 0);
    fl_gguf_close(&g);
    rm_rf(dir);
}

/* An F16 copy of llama_gqa sharded over two files (tensors alternate), written here: the export reads
 * every shard, keeps F16 as is (auto type), and merges an adapter into F16 weights. */
static void write_f16_shards(const char *dst) {
    fl_safetensors st;
    CHECK(fl_safetensors_open(&st, FIX "llama_gqa/model/model.safetensors") == 0);
    fl_st_write_tensor *t = calloc((size_t)st.n_tensors, sizeof *t);
    uint16_t **h = calloc((size_t)st.n_tensors, sizeof *h);
    int n[2] = {0, 0};
    fl_st_write_tensor *part[2] = {calloc((size_t)st.n_tensors, sizeof *t), calloc((size_t)st.n_tensors, sizeof *t)};
    char index[8192] = "{\"weight_map\": {", path[256];
    for (int i = 0; i < st.n_tensors; i++) {
        const fl_st_tensor *x = &st.tensors[i];
        h[i] = malloc(x->numel * 2);
        for (size_t k = 0; k < x->numel; k++) h[i][k] = fl_f32_to_f16(((const float *)x->data)[k]);
        fl_st_write_tensor w = {.name = x->name, .dtype = FL_F16, .ndim = x->ndim, .data = h[i]};
        memcpy(w.shape, x->shape, sizeof w.shape);
        part[i % 2][n[i % 2]++] = w;
        snprintf(index + strlen(index), sizeof index - strlen(index), "%s\"%s\": \"part-%d.safetensors\"", i ? ", " : "", x->name, i % 2);
    }
    strcat(index, "}}");
    for (int k = 0; k < 2; k++) {
        snprintf(path, sizeof path, "%s/part-%d.safetensors", dst, k);
        CHECK(fl_safetensors_write(path, part[k], n[k], NULL, 0) == 0);
    }
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dst);
    FILE *f = fopen(path, "w");
    fputs(index, f);
    fclose(f);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "cp " FIX "llama_gqa/model/config.json '%s'/", dst);
    CHECK(system(cmd) == 0);
    for (int i = 0; i < st.n_tensors; i++) free(h[i]);
    free(h);
    free(t);
    free(part[0]);
    free(part[1]);
    fl_safetensors_close(&st);
}

TEST(export_sharded_f16_model) {
    char *dir = temp_dir(), model[128], out[160];
    snprintf(model, sizeof model, "%s/model", dir);
    CHECK(mkdir(model, 0755) == 0);
    write_f16_shards(model);
    snprintf(out, sizeof out, "%s/m.gguf", dir);
    CHECK(export_to(out, model, FIX "llama_gqa/adapter", FL_EXPORT_AUTO, 0, 1) == 0);
    fl_gguf_file g;
    fl_safetensors st[2];
    CHECK(fl_gguf_open(&g, out) == 0);
    for (int k = 0; k < 2; k++) {
        snprintf(out, sizeof out, "%s/part-%d.safetensors", model, k);
        CHECK(fl_safetensors_open(&st[k], out) == 0);
    }
    const char *embd = "model.embed_tokens.weight", *hf = "model.layers.0.self_attn.q_proj.weight";
    const fl_safetensors *se = fl_safetensors_find(&st[0], embd) ? &st[0] : &st[1], *sq = fl_safetensors_find(&st[0], hf) ? &st[0] : &st[1];
    const fl_gguf_tensor *e = fl_gguf_find_tensor(&g, "token_embd.weight");
    const fl_st_tensor *te = fl_safetensors_find(se, embd);
    CHECK(e && te && e->type == FL_GGML_F16 && e->nbytes == te->nbytes && !memcmp(e->data, te->data, te->nbytes)); /* F16 kept bit for bit */
    CHECK_EQ_INT(g.n_tensors, 21); /* every tensor found across the two shards */
    fl_lora_config lc;
    fl_model_config cfg;
    CHECK(fl_config_load(&cfg, FIX "llama_gqa/model/config.json") == 0 && fl_adapter_load_config(FIX "llama_gqa/adapter", &lc) == 0);
    fl_lora_buffer lora;
    fl_lora_buffer_init(&lora, &cfg, &lc, fl_backend_cpu());
    CHECK(fl_adapter_load_weights(FIX "llama_gqa/adapter", &lora, &cfg, &lc) == 0);
    check_tensor(&g, sq, "blk.0.attn_q.weight", hf, 4, lora.layers[0].b[FL_PROJ_Q], lora.layers[0].a[FL_PROJ_Q], lc.rank,
                 fl_lora_scale(&lc), 1.0 / 2048 * 1.01);
    fl_lora_buffer_free(&lora);
    fl_safetensors_close(&st[0]);
    fl_safetensors_close(&st[1]);
    fl_gguf_close(&g);
    rm_rf(dir);
}

/* `generate --logits`, the fastlora side of the llama.cpp comparison: the file holds (T, V) f32 equal
 * to the engine's logits of base + adapter; an id outside the vocabulary is a clean error. */
TEST(export_generate_logits_option) {
    const char *bin = getenv("FASTLORA_BIN") ? getenv("FASTLORA_BIN") : "build/fastlora";
    char *dir = temp_dir(), path[128], cmd[1024];
    snprintf(path, sizeof path, "%s/l.f32", dir);
    snprintf(cmd, sizeof cmd, "%s generate --model " FIX "llama_gqa/model --adapter " FIX "llama_gqa/adapter --prompt-ids '5 17 199 3' "
             "--logits %s --dtype f32 >/dev/null", bin, path);
    CHECK(system(cmd) == 0);
    fl_lora_config lc;
    fl_model m;
    CHECK(fl_adapter_load_config(FIX "llama_gqa/adapter", &lc) == 0);
    CHECK(fl_model_init_dir(&m, FIX "llama_gqa/model", fl_backend_cpu(), &lc) == 0 && fl_model_load_adapter(&m, FIX "llama_gqa/adapter") == 0);
    int32_t ids[4] = {5, 17, 199, 3};
    float want[4 * 200], got[4 * 200 + 1];
    fl_model_logits(&m, ids, 1, 4, want);
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(got, sizeof(float), 4 * 200 + 1, f) : 0;
    if (f) fclose(f);
    CHECK_EQ_INT(n, 4 * 200);
    CHECK(n == 4 * 200 && !memcmp(got, want, sizeof want));
    fl_model_free(&m);
    snprintf(cmd, sizeof cmd, "%s generate --model " FIX "llama_gqa/model --prompt-ids '5 200' --logits %s --dtype f32 2>/dev/null", bin, path);
    int rc = system(cmd);
    CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 2);
    rm_rf(dir);
}

/* ---- bad input: one line, exit 2, nothing written ------------------------------------------- */

static int run_export(const char *args, char *err, size_t cap) {
    const char *bin = getenv("FASTLORA_BIN") ? getenv("FASTLORA_BIN") : "build/fastlora";
    char cmd[1024], err_path[96];
    snprintf(err_path, sizeof err_path, "/tmp/fastlora-export-%d.stderr", (int)getpid());
    snprintf(cmd, sizeof cmd, "%s export %s >/dev/null 2>'%s'", bin, args, err_path);
    int rc = system(cmd);
    FILE *f = fopen(err_path, "rb");
    size_t n = f ? fread(err, 1, cap - 1, f) : 0;
    err[n] = 0;
    if (f) fclose(f);
    unlink(err_path);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
}

static int dir_is_empty(const char *dir) {
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    while (d && (e = readdir(d))) n += e->d_name[0] != '.';
    if (d) closedir(d);
    return n == 0;
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

/* A copy of a fixture model folder (config.json possibly replaced) under `dir`. */
static void copy_model(const char *dir, const char *fixture, const char *config_from, const char *config_to) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s' && cp " FIX "%s/model/* '%s'/", dir, fixture, dir);
    CHECK(system(cmd) == 0);
    if (!config_from) return;
    char path[256];
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "rb");
    char text[8192];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    char *at = strstr(text, config_from), out[8192];
    CHECK(at != NULL);
    if (!at) return;
    snprintf(out, sizeof out, "%.*s%s%s", (int)(at - text), text, config_to, at + strlen(config_from));
    write_text(path, out);
}

static void expect_error(const char *outdir, const char *args, const char *needle) {
    char err[4096];
    CHECK_EQ_INT(run_export(args, err, sizeof err), 2);
    CHECK_STR_CONTAINS(err, needle);
    char *nl = strchr(err, '\n');
    CHECK_MSG(nl && nl[1] == 0, "expected one line on stderr, got: %s", err);
    CHECK_MSG(dir_is_empty(outdir), "a failed export left files in %s", outdir);
}

TEST(bad_input_export) {
    char *work = temp_dir();
    char outdir[128], out[160], args[1024], model[160];
    snprintf(outdir, sizeof outdir, "%s/out", work);
    mkdir(outdir, 0755);
    snprintf(out, sizeof out, "%s/x.gguf", outdir);
    /* unknown architecture */
    snprintf(model, sizeof model, "%s/gpt2", work);
    copy_model(model, "llama_gqa", "LlamaForCausalLM", "GPT2LMHeadModel");
    snprintf(args, sizeof args, "--gguf %s --model %s --no-tokenizer", out, model);
    expect_error(outdir, args, "GPT2LMHeadModel");
    /* no tokenizer in the folder */
    snprintf(args, sizeof args, "--gguf %s --model " FIX "llama_gqa/model", out);
    expect_error(outdir, args, "--no-tokenizer");
    /* an adapter made for another model */
    snprintf(args, sizeof args, "--gguf %s --model " FIX "llama_gqa/model --adapter " FIX "qwen2_bias_tied/adapter --no-tokenizer", out);
    expect_error(outdir, args, "adapter_model.safetensors");
    snprintf(args, sizeof args, "--gguf %s --model " FIX "llama_gqa/model --adapter " FIX "qwen2_bias_tied/adapter --lora-only", out);
    expect_error(outdir, args, "adapter_model.safetensors");
    /* --lora-only without an adapter; a type we do not write */
    snprintf(args, sizeof args, "--gguf %s --model " FIX "llama_gqa/model --lora-only", out);
    expect_error(outdir, args, "--adapter");
    snprintf(args, sizeof args, "--gguf %s --model " FIX "llama_gqa/model --type q4_0 --no-tokenizer", out);
    expect_error(outdir, args, "q4_0");
    snprintf(args, sizeof args, "--gguf %s --model " FIX "llama_gqa/model --alignment 48 --no-tokenizer", out);
    expect_error(outdir, args, "--alignment");
    /* qwen2 whose heads x head_dim is not hidden_size: llama.cpp's qwen2 cannot hold it */
    snprintf(model, sizeof model, "%s/qwen_hd", work);
    copy_model(model, "qwen2_bias_tied", "\"num_attention_heads\": 6", "\"head_dim\": 16, \"num_attention_heads\": 6");
    snprintf(args, sizeof args, "--gguf %s --model %s --no-tokenizer", out, model);
    expect_error(outdir, args, "hidden_size");
    /* a tensor in a dtype export does not read: an I32 tensor in place of a weight */
    snprintf(model, sizeof model, "%s/i32", work);
    copy_model(model, "llama_gqa", NULL, NULL);
    {
        fl_safetensors st;
        char path[256];
        snprintf(path, sizeof path, "%s/model.safetensors", model);
        CHECK(fl_safetensors_open(&st, FIX "llama_gqa/model/model.safetensors") == 0);
        fl_st_write_tensor *t = calloc((size_t)st.n_tensors, sizeof *t);
        for (int i = 0; i < st.n_tensors; i++) {
            t[i] = (fl_st_write_tensor){.name = st.tensors[i].name, .dtype = st.tensors[i].dtype, .ndim = st.tensors[i].ndim, .data = st.tensors[i].data};
            memcpy(t[i].shape, st.tensors[i].shape, sizeof t[i].shape);
            if (!strcmp(t[i].name, "model.norm.weight")) t[i].dtype = FL_I32; /* same byte count as F32 */
        }
        CHECK(fl_safetensors_write(path, t, st.n_tensors, NULL, 0) == 0);
        free(t);
        fl_safetensors_close(&st);
    }
    snprintf(args, sizeof args, "--gguf %s --model %s --no-tokenizer", out, model);
    expect_error(outdir, args, "I32");
    /* an existing file is not replaced without --force (and is left as it was) */
    write_text(out, "keep me");
    snprintf(args, sizeof args, "--gguf %s --model " FIX "llama_gqa/model --no-tokenizer", out);
    char err[1024];
    CHECK_EQ_INT(run_export(args, err, sizeof err), 2);
    CHECK_STR_CONTAINS(err, "--force");
    FILE *f = fopen(out, "rb");
    char back[16] = {0};
    CHECK(f && fread(back, 1, sizeof back - 1, f) == 7 && !strcmp(back, "keep me"));
    if (f) fclose(f);
    snprintf(args, sizeof args, "--gguf %s --model " FIX "llama_gqa/model --no-tokenizer --force", out);
    CHECK_EQ_INT(run_export(args, err, sizeof err), 0);
    fl_gguf_file g;
    if (fl_gguf_open(&g, out) == 0) fl_gguf_close(&g);
    else CHECK_MSG(0, "%s", fl_last_error());
    rm_rf(work);
}

/* Phi-3 as llama.cpp's phi3 (convert_hf_to_gguf.py's Phi3MiniModel): the fused modules stay fused
 * (blk.N.attn_qkv ((QD + 2·KVD), C), blk.N.ffn_up (2·FF, C), HF row order: NEOX RoPE), longrope's
 * factor lists as rope_factors_long / rope_factors_short (f32, RD/2, written first), the rotary
 * dimension count RD = 6 of HS 8, the pretraining length, the window and the attention factor; merged
 * with the adapter each fused matrix is W + s·B·A over all its rows (f32: 1e-5 as the llama test);
 * --lora-only writes one lora_a / lora_b pair per module under the fused names. Not run through
 * llama.cpp here (tools/llama_cpp_check.py covers llama and qwen2). */
TEST(export_phi3_fused_modules_longrope_partial_rotary) {
    const char *model = FIX "phi3_longrope/model", *adapter = FIX "phi3_longrope/adapter";
    char *dir = temp_dir(), out[128];
    snprintf(out, sizeof out, "%s/phi3.gguf", dir);
    CHECK(export_to(out, model, adapter, FL_EXPORT_F32, 0, 1) == 0);
    fl_model_config cfg;
    fl_lora_config lc;
    CHECK(fl_config_load(&cfg, FIX "phi3_longrope/model/config.json") == 0 && fl_adapter_load_config(adapter, &lc) == 0);
    fl_lora_buffer lora;
    fl_lora_buffer_init(&lora, &cfg, &lc, fl_backend_cpu());
    CHECK(fl_adapter_load_weights(adapter, &lora, &cfg, &lc) == 0);
    fl_gguf_file g;
    fl_safetensors st;
    CHECK(fl_gguf_open(&g, out) == 0);
    CHECK(fl_safetensors_open(&st, FIX "phi3_longrope/model/model.safetensors") == 0);
    check_str_kv(&g, "general.architecture", "phi3");
    CHECK_EQ_INT(get_u32(&g, "phi3.rope.dimension_count"), 6);
    CHECK_EQ_INT(get_u32(&g, "phi3.rope.scaling.original_context_length"), 8);
    CHECK_EQ_INT(get_u32(&g, "phi3.attention.sliding_window"), 64);
    CHECK_EQ_INT(get_u32(&g, "phi3.attention.head_count_kv"), 2);
    CHECK_EQ_INT(get_u32(&g, "phi3.vocab_size"), 64);
    float af = 0;
    CHECK(fl_gguf_get_f32(&g, "phi3.rope.scaling.attn_factor", &af) == 0 && fabs(af - sqrt(2.0)) < 1e-6);
    CHECK(g.n_tensors > 1 && g.tensors[0].name_len == 24 && !memcmp(g.tensors[0].name, "rope_factors_long.weight", 24) &&
          g.tensors[1].name_len == 25 && !memcmp(g.tensors[1].name, "rope_factors_short.weight", 25));
    const fl_gguf_tensor *fl = fl_gguf_find_tensor(&g, "rope_factors_long.weight"),
                         *fs = fl_gguf_find_tensor(&g, "rope_factors_short.weight");
    CHECK(fl && fs && fl->type == FL_GGML_F32 && fl->n_dims == 1 && fl->ne[0] == 3 && fs->ne[0] == 3);
    if (fl && fs) {
        CHECK(!memcmp(fl->data, cfg.rope_long_factor, 3 * sizeof(float)));
        CHECK(!memcmp(fs->data, cfg.rope_short_factor, 3 * sizeof(float)));
    }
    CHECK(fl_gguf_find_tensor(&g, "blk.0.attn_q.weight") == NULL && fl_gguf_find_tensor(&g, "blk.0.ffn_gate.weight") == NULL);
    double s = fl_lora_scale(&lc);
    for (int l = 0; l < 2; l++) {
        const fl_lora_layer *L = &lora.layers[l];
        char name[64], hf[96];
        static const struct { const char *gguf, *hf; fl_proj p; } mods[] = {
            {"attn_qkv", "self_attn.qkv_proj", FL_PROJ_Q}, {"attn_output", "self_attn.o_proj", FL_PROJ_O},
            {"ffn_up", "mlp.gate_up_proj", FL_PROJ_GATE}, {"ffn_down", "mlp.down_proj", FL_PROJ_DOWN}};
        for (int k = 0; k < 4; k++) {
            snprintf(name, sizeof name, "blk.%d.%s.weight", l, mods[k].gguf);
            snprintf(hf, sizeof hf, "model.layers.%d.%s.weight", l, mods[k].hf);
            check_tensor(&g, &st, name, hf, 0, L->b[mods[k].p], L->a[mods[k].p], lc.rank, s, 1e-5);
        }
    }
    fl_gguf_close(&g);
    /* the adapter alone: the module names, B over the fused rows */
    snprintf(out, sizeof out, "%s/phi3-lora.gguf", dir);
    CHECK(export_to(out, model, adapter, FL_EXPORT_AUTO, 1, 0) == 0);
    if (fl_gguf_open(&g, out) == 0) {
        CHECK_EQ_INT(g.n_tensors, 2 * 2 * 4);
        const fl_gguf_tensor *ta = fl_gguf_find_tensor(&g, "blk.1.attn_qkv.weight.lora_a"),
                             *tb = fl_gguf_find_tensor(&g, "blk.1.attn_qkv.weight.lora_b"),
                             *tu = fl_gguf_find_tensor(&g, "blk.0.ffn_up.weight.lora_b");
        CHECK(ta && tb && tu && ta->ne[0] == 32 && ta->ne[1] == 4 && tb->ne[0] == 4 && tb->ne[1] == 32 + 2 * 16 &&
              tu->ne[1] == 2 * 24);
        if (tb) CHECK(!memcmp(tb->data, lora.layers[1].b[FL_PROJ_Q], sizeof(float) * 64 * 4));
        fl_gguf_close(&g);
    }
    fl_safetensors_close(&st);
    fl_lora_buffer_free(&lora);
    rm_rf(dir);
}
