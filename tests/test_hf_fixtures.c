/* test_hf_fixtures.c — the model against Hugging Face transformers + PEFT.
 *
 * Fixtures (tests/fixtures/hf/<name>/, made by tools/make_hf_fixtures.py; layout in its README):
 * real HF model folders and PEFT adapters with non-zero B, and the logits, loss, every LoRA
 * gradient and the adapter after 3 clipped AdamW steps as computed by torch in f32.
 *
 * Tolerances: both sides are f32 with different summation orders (BLAS blocking, our attention
 * loop), so agreement is ~1e-6 relative per op, compounding through 2 layers to ~1e-5. We check
 * logits to 1e-4 absolute (values up to ~8), the loss to 1e-5 relative, gradients to 1e-4 of the
 * tensor's largest entry, and the 3-step adapter to 1e-4 absolute (Adam's update is ~lr·sign(g),
 * so a gradient that agrees to 1e-5 relative moves the parameter identically to ~lr·1e-4). */
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "common/error.h"
#include "engine/model.h"
#include "io/safetensors.h"
#include "lora/adapter_io.h"
#include "test.h"

#define FIXTURE_DIR "tests/fixtures/hf/"

typedef struct {
    fl_model model;
    fl_safetensors expected;
    fl_batch batch;
    int32_t *targets;
} fixture;

static int recompute; /* the fixture model runs with activation recompute (engine/model.c) */

static int fixture_open(fixture *f, const char *name) {
    char model_dir[256], adapter_dir[256], expected_path[256];
    snprintf(model_dir, sizeof model_dir, FIXTURE_DIR "%s/model", name);
    snprintf(adapter_dir, sizeof adapter_dir, FIXTURE_DIR "%s/adapter", name);
    snprintf(expected_path, sizeof expected_path, FIXTURE_DIR "%s/expected.safetensors", name);
    fl_lora_config lc;
    memset(f, 0, sizeof *f);
    if (fl_adapter_load_config(adapter_dir, &lc) || fl_model_init_dir(&f->model, model_dir, fl_backend_cpu(), &lc) ||
        fl_model_load_adapter(&f->model, adapter_dir) ||
        fl_safetensors_open(&f->expected, expected_path)) {
        fl_test_fail(__FILE__, __LINE__, "fixture %s: %s", name, fl_last_error());
        return 1;
    }
    f->model.recompute = recompute;
    const fl_st_tensor *ids = fl_safetensors_find(&f->expected, "input_ids");
    const fl_st_tensor *labels = fl_safetensors_find(&f->expected, "labels");
    int B = (int)ids->shape[0], T = (int)ids->shape[1];
    /* transformers' ForCausalLMLoss: target[t] = labels[t+1], the last position ignored */
    f->targets = malloc(sizeof(int32_t) * (size_t)B * T);
    const int32_t *lab = labels->data;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) f->targets[b * T + t] = t + 1 < T ? lab[b * T + t + 1] : -100;
    f->batch = (fl_batch){.B = B, .T = T, .ids = ids->data, .targets = f->targets};
    return 0;
}

static void fixture_close(fixture *f) {
    fl_model_free(&f->model);
    fl_safetensors_close(&f->expected);
    free(f->targets);
}

static double max_abs(const float *x, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) m = fabs(x[i]) > m ? fabs(x[i]) : m;
    return m;
}

/* Compares every LoRA tensor of `buf` with the expected tensors named prefix + PEFT key. */
static void compare_lora(fixture *f, const fl_lora_buffer *buf, const char *prefix, double rel_of_max, double atol) {
    const fl_model_config *cfg = &f->model.cfg;
    for (int l = 0; l < cfg->n_layers; l++)
        for (int p = 0; p < FL_N_PROJ; p++) {
            if (!buf->layers[l].a[p]) continue;
            for (int which = 0; which < 2; which++) {
                char key[160], name[200];
                fl_adapter_tensor_name(key, sizeof key, cfg, l, (fl_proj)p, which ? 'B' : 'A');
                snprintf(name, sizeof name, "%s%s", prefix, key);
                const fl_st_tensor *t = fl_safetensors_find(&f->expected, name);
                CHECK_MSG(t != NULL, "expected tensor %s missing", name);
                if (!t) continue;
                const float *got = which ? buf->layers[l].b[p] : buf->layers[l].a[p];
                const float *want = t->data;
                double tol = atol + rel_of_max * max_abs(want, t->numel), worst = 0;
                size_t worst_i = 0;
                for (size_t i = 0; i < t->numel; i++)
                    if (fabs(got[i] - want[i]) > worst) { worst = fabs(got[i] - want[i]); worst_i = i; }
                CHECK_MSG(worst <= tol, "%s[%zu]: %.8g vs %.8g (|diff| %.3g > tol %.3g)", name, worst_i, got[worst_i],
                          want[worst_i], worst, tol);
            }
        }
}

static void check_logits(const char *name) {
    fixture f;
    if (fixture_open(&f, name)) return;
    const fl_st_tensor *want = fl_safetensors_find(&f.expected, "logits");
    float *logits = malloc(want->nbytes);
    fl_model_logits(&f.model, f.batch.ids, f.batch.B, f.batch.T, logits);
    const float *w = want->data;
    double worst = 0;
    for (size_t i = 0; i < want->numel; i++) worst = fabs(logits[i] - w[i]) > worst ? fabs(logits[i] - w[i]) : worst;
    CHECK_MSG(worst <= 1e-4, "%s: max |logit diff| %.3g > 1e-4", name, worst);
    free(logits);
    fixture_close(&f);
}

static void check_loss_and_grads(const char *name) {
    fixture f;
    if (fixture_open(&f, name)) return;
    fl_step_stats st = fl_model_forward(&f.model, &f.batch, 0.0f);
    fl_model_backward(&f.model);
    const float *want_loss = fl_safetensors_find(&f.expected, "loss")->data;
    CHECK_CLOSE(st.loss, want_loss[0], 0.0, 1e-5);
    compare_lora(&f, &f.model.grads, "grad.", 1e-4, 1e-7);
    fixture_close(&f);
}

/* The fixture's B rows packed into ONE row of B·T positions, each document from position 0 with its
 * own segment start (as train's packing lays them out): the loss is the same mean over the same
 * tokens and the gradients the same sums, so they must match transformers running each row alone.
 * With a sliding window this proves the window is measured within the document. */
static void check_packed_loss_and_grads(const char *name) {
    fixture f;
    if (fixture_open(&f, name)) return;
    int B = f.batch.B, T = f.batch.T, N = B * T;
    int32_t *pos = malloc(sizeof(int32_t) * (size_t)N), *seg = malloc(sizeof(int32_t) * (size_t)N);
    for (int n = 0; n < N; n++) {
        pos[n] = n % T;
        seg[n] = n / T * T;
    }
    fl_batch packed = {.B = 1, .T = N, .ids = f.batch.ids, .targets = f.targets, .pos = pos, .seg_start = seg};
    fl_step_stats st = fl_model_forward(&f.model, &packed, 0.0f);
    fl_model_backward(&f.model);
    const float *want_loss = fl_safetensors_find(&f.expected, "loss")->data;
    CHECK_CLOSE(st.loss, want_loss[0], 0.0, 1e-5);
    compare_lora(&f, &f.model.grads, "grad.", 1e-4, 1e-7);
    free(pos);
    free(seg);
    fixture_close(&f);
}

static float meta_float(const fixture *f, const char *key) {
    const char *v = fl_safetensors_metadata(&f->expected, key);
    CHECK_MSG(v != NULL, "metadata %s missing", key);
    return v ? strtof(v, NULL) : 0.0f;
}

static void check_three_steps(const char *name) {
    fixture f;
    if (fixture_open(&f, name)) return;
    fl_adamw_config opt = {.lr = meta_float(&f, "lr"), .beta1 = meta_float(&f, "beta1"), .beta2 = meta_float(&f, "beta2"),
                           .eps = meta_float(&f, "eps"), .weight_decay = meta_float(&f, "weight_decay"),
                           .max_grad_norm = meta_float(&f, "max_grad_norm")};
    const float *want_loss = fl_safetensors_find(&f.expected, "step3.loss")->data;
    const float *want_norm = fl_safetensors_find(&f.expected, "step3.grad_norm")->data;
    for (int step = 0; step < 3; step++) {
        fl_step_stats st = fl_model_forward(&f.model, &f.batch, 0.0f);
        fl_model_backward(&f.model);
        double norm = fl_model_optimizer_step(&f.model, &opt);
        CHECK_CLOSE(st.loss, want_loss[step], 0.0, 2e-5);
        CHECK_CLOSE(norm, want_norm[step], 0.0, 1e-4);
    }
    compare_lora(&f, &f.model.lora, "step3.", 0.0, 1e-4);
    fixture_close(&f);
}

TEST(hf_llama_gqa_logits) { check_logits("llama_gqa"); }
TEST(hf_llama_gqa_loss_and_grads) { check_loss_and_grads("llama_gqa"); }
TEST(hf_llama_gqa_three_adamw_steps) { check_three_steps("llama_gqa"); }
TEST(hf_qwen2_bias_tied_logits) { check_logits("qwen2_bias_tied"); }
TEST(hf_qwen2_bias_tied_loss_and_grads) { check_loss_and_grads("qwen2_bias_tied"); }
TEST(hf_qwen2_bias_tied_three_clipped_steps) { check_three_steps("qwen2_bias_tied"); }
TEST(hf_llama3_rope_logits) { check_logits("llama3_rope"); }
TEST(hf_llama3_rope_loss_and_grads) { check_loss_and_grads("llama3_rope"); }
TEST(hf_llama3_rope_three_clipped_steps) { check_three_steps("llama3_rope"); }
TEST(hf_llama_dynamic_ntk_logits) { check_logits("llama_dynamic_ntk"); }
TEST(hf_llama_dynamic_ntk_loss_and_grads) { check_loss_and_grads("llama_dynamic_ntk"); }
TEST(hf_llama_dynamic_ntk_three_clipped_steps) { check_three_steps("llama_dynamic_ntk"); }
/* MistralForCausalLM: Llama's layers (MQA, explicit head_dim, theta 1e6) with a sliding_window longer
 * than the sequence, so the window does not bind */
TEST(hf_mistral_window_logits) { check_logits("mistral_window"); }
TEST(hf_mistral_window_loss_and_grads) { check_loss_and_grads("mistral_window"); }
TEST(hf_mistral_window_three_clipped_steps) { check_three_steps("mistral_window"); }
/* MistralForCausalLM with a window that binds: sliding_window 5 over 16 positions (GQA 4/2, head_dim
 * 12 != hidden / heads): each query sees its last 5 positions (transformers' sliding_window_overlay);
 * the fixture script checks that full causal attention would move the later logits. Also with the
 * two rows packed into one (the window within each document) and with activation recompute. */
TEST(hf_mistral_swa_logits) { check_logits("mistral_swa"); }
TEST(hf_mistral_swa_loss_and_grads) { check_loss_and_grads("mistral_swa"); }
TEST(hf_mistral_swa_three_clipped_steps) { check_three_steps("mistral_swa"); }
TEST(hf_mistral_swa_packed_loss_and_grads) { check_packed_loss_and_grads("mistral_swa"); }
TEST(hf_mistral_swa_three_clipped_steps_recompute) { recompute = 1; check_three_steps("mistral_swa"); recompute = 0; }
/* Qwen3ForCausalLM: per-head q_norm/k_norm (random weights) between q/k_proj (LoRA on both) and RoPE,
 * GQA, explicit head_dim 12 (q dim 48 != hidden 24), tied embeddings */
TEST(hf_qwen3_qk_norm_logits) { check_logits("qwen3_qk_norm"); }
TEST(hf_qwen3_qk_norm_loss_and_grads) { check_loss_and_grads("qwen3_qk_norm"); }
TEST(hf_qwen3_qk_norm_three_clipped_steps) { check_three_steps("qwen3_qk_norm"); }
/* Qwen3ForCausalLM with use_sliding_window: sliding_window 4 over 12 positions, max_window_layers 1, so
 * layer 0 is full causal and layers 1, 2 slide (Qwen3Config's layer_types, written to config.json); the
 * fixture script checks that all-full or all-sliding layers would move the later logits. Also packed
 * and with activation recompute. */
TEST(hf_qwen3_swa_logits) { check_logits("qwen3_swa"); }
TEST(hf_qwen3_swa_loss_and_grads) { check_loss_and_grads("qwen3_swa"); }
TEST(hf_qwen3_swa_three_clipped_steps) { check_three_steps("qwen3_swa"); }
TEST(hf_qwen3_swa_packed_loss_and_grads) { check_packed_loss_and_grads("qwen3_swa"); }
TEST(hf_qwen3_swa_three_clipped_steps_recompute) { recompute = 1; check_three_steps("qwen3_swa"); recompute = 0; }
/* Qwen3ForCausalLM with rope_parameters yarn: factor 4, original 64, theta 100 and beta_fast 4, so pairs
 * 0-1 keep the default frequency, 2-4 blend and 5-7 are divided by 4 (the fixture script checks all three
 * are present); cos and sin times 0.1 ln 4 + 1. Also packed and with recompute */
TEST(hf_qwen3_yarn_logits) { check_logits("qwen3_yarn"); }
TEST(hf_qwen3_yarn_loss_and_grads) { check_loss_and_grads("qwen3_yarn"); }
TEST(hf_qwen3_yarn_three_clipped_steps) { check_three_steps("qwen3_yarn"); }
TEST(hf_qwen3_yarn_packed_loss_and_grads) { check_packed_loss_and_grads("qwen3_yarn"); }
TEST(hf_qwen3_yarn_three_clipped_steps_recompute) { recompute = 1; check_three_steps("qwen3_yarn"); recompute = 0; }
/* Olmo3ForCausalLM: OLMo 2's layers; layers 0-2 slide (window 5 over 16 positions; the fixture script
 * checks full causal attention would move the later logits) on a default RoPE of base 1000, layer 3 is
 * full with YaRN (theta 100, factor 4) and its cos/sin factor, which the sliding layers do not take.
 * GQA, untied, LoRA on all seven; also packed and with recompute */
TEST(hf_olmo3_sliding_yarn_logits) { check_logits("olmo3_sliding_yarn"); }
TEST(hf_olmo3_sliding_yarn_loss_and_grads) { check_loss_and_grads("olmo3_sliding_yarn"); }
TEST(hf_olmo3_sliding_yarn_three_clipped_steps) { check_three_steps("olmo3_sliding_yarn"); }
TEST(hf_olmo3_sliding_yarn_packed_loss_and_grads) { check_packed_loss_and_grads("olmo3_sliding_yarn"); }
TEST(hf_olmo3_sliding_yarn_three_clipped_steps_recompute) { recompute = 1; check_three_steps("olmo3_sliding_yarn"); recompute = 0; }
/* Phi3ForCausalLM: fused checkpoint modules qkv_proj and gate_up_proj, one LoRA over each (PEFT's
 * target_modules qkv_proj, o_proj, gate_up_proj, down_proj), GQA, partial rotary 0.75 (RD 6 of HS 8)
 * and longrope with T 12 past original_max_position_embeddings 8: the long factors and the attention
 * factor sqrt(2) on cos/sin, as transformers 5.x picks them per forward; sliding_window 64 on every layer,
 * longer than T here (test_generate.c runs it where it binds) */
TEST(hf_phi3_longrope_logits) { check_logits("phi3_longrope"); }
TEST(hf_phi3_longrope_loss_and_grads) { check_loss_and_grads("phi3_longrope"); }
TEST(hf_phi3_longrope_three_clipped_steps) { check_three_steps("phi3_longrope"); }
/* the same fixtures with activation recompute: same tolerances (test_recompute.c holds the
 * gradients equal bit for bit to the run without it) */
TEST(hf_llama_gqa_loss_and_grads_recompute) { recompute = 1; check_loss_and_grads("llama_gqa"); recompute = 0; }
TEST(hf_qwen2_bias_tied_three_clipped_steps_recompute) { recompute = 1; check_three_steps("qwen2_bias_tied"); recompute = 0; }
TEST(hf_llama3_rope_loss_and_grads_recompute) { recompute = 1; check_loss_and_grads("llama3_rope"); recompute = 0; }
TEST(hf_qwen3_qk_norm_three_clipped_steps_recompute) { recompute = 1; check_three_steps("qwen3_qk_norm"); recompute = 0; }
TEST(hf_phi3_longrope_three_clipped_steps_recompute) { recompute = 1; check_three_steps("phi3_longrope"); recompute = 0; }
/* Olmo2ForCausalLM: no pre-norms (attention and MLP read the residual stream), post_attention_layernorm
 * and post_feedforward_layernorm before each residual add, q_norm/k_norm over the whole q (32) and k (16)
 * rows (GQA: one norm per token, widths differ; random weights), LoRA on all seven, untied; also packed
 * and with activation recompute */
TEST(hf_olmo2_post_norms_logits) { check_logits("olmo2_post_norms"); }
TEST(hf_olmo2_post_norms_loss_and_grads) { check_loss_and_grads("olmo2_post_norms"); }
TEST(hf_olmo2_post_norms_packed_loss_and_grads) { check_packed_loss_and_grads("olmo2_post_norms"); }
TEST(hf_olmo2_post_norms_three_clipped_steps) { check_three_steps("olmo2_post_norms"); }
TEST(hf_olmo2_post_norms_loss_and_grads_recompute) { recompute = 1; check_loss_and_grads("olmo2_post_norms"); recompute = 0; }
TEST(hf_olmo2_post_norms_three_clipped_steps_recompute) { recompute = 1; check_three_steps("olmo2_post_norms"); recompute = 0; }
/* Gemma3ForCausalLM (gemma3_text): the (1 + w) norms (random offsets), sandwich norms, GeGLU-tanh,
 * embeddings times sqrt(C), query_pre_attn_scalar 20 != head_dim 12, q_norm/k_norm, one sliding layer
 * (window 5 over 12 positions, RoPE base 1e4) and one global (full causal, 1e6, linear factor 4): the
 * windows and the per-layer RoPE together; the fixture script checks that full causal attention would
 * move the later logits. Tied embeddings, GQA, LoRA on all seven; also packed and with recompute */
TEST(hf_gemma3_sandwich_logits) { check_logits("gemma3_sandwich"); }
TEST(hf_gemma3_sandwich_packed_loss_and_grads) { check_packed_loss_and_grads("gemma3_sandwich"); }
TEST(hf_gemma3_sandwich_loss_and_grads) { check_loss_and_grads("gemma3_sandwich"); }
TEST(hf_gemma3_sandwich_three_clipped_steps) { check_three_steps("gemma3_sandwich"); }
TEST(hf_gemma3_sandwich_loss_and_grads_recompute) { recompute = 1; check_loss_and_grads("gemma3_sandwich"); recompute = 0; }
TEST(hf_gemma3_sandwich_three_clipped_steps_recompute) { recompute = 1; check_three_steps("gemma3_sandwich"); recompute = 0; }
/* SmolLM3ForCausalLM: Llama's layers, layer 3 of 4 without RoPE (no_rope_layers [1, 1, 1, 0]; the
 * fixture script checks that rotating it too would move the logits by 0.18), RoPE base 5e6 */
TEST(hf_smollm3_nope_logits) { check_logits("smollm3_nope"); }
TEST(hf_smollm3_nope_packed_loss_and_grads) { check_packed_loss_and_grads("smollm3_nope"); }
TEST(hf_smollm3_nope_loss_and_grads) { check_loss_and_grads("smollm3_nope"); }
TEST(hf_smollm3_nope_three_clipped_steps) { check_three_steps("smollm3_nope"); }
TEST(hf_smollm3_nope_three_clipped_steps_recompute) { recompute = 1; check_three_steps("smollm3_nope"); recompute = 0; }
/* GraniteForCausalLM: Llama's layers with embedding_multiplier 3, attention_multiplier 0.2 (not
 * 6^-0.5), residual_multiplier 0.5 on both branches, logits_scaling 4; tied embeddings (the head reads
 * the unscaled table), GQA, LoRA on all seven. The fixture script checks that setting any one scalar
 * to 1 would move the logits (by 0.30, 0.046, 0.15, 4.5); also packed and with recompute */
TEST(hf_granite_multipliers_logits) { check_logits("granite_multipliers"); }
TEST(hf_granite_multipliers_packed_loss_and_grads) { check_packed_loss_and_grads("granite_multipliers"); }
TEST(hf_granite_multipliers_loss_and_grads) { check_loss_and_grads("granite_multipliers"); }
TEST(hf_granite_multipliers_three_clipped_steps) { check_three_steps("granite_multipliers"); }
TEST(hf_granite_multipliers_loss_and_grads_recompute) { recompute = 1; check_loss_and_grads("granite_multipliers"); recompute = 0; }
TEST(hf_granite_multipliers_three_clipped_steps_recompute) { recompute = 1; check_three_steps("granite_multipliers"); recompute = 0; }
/* Gemma3ForConditionalGeneration (Gemma 3 4B-27B): the language model of text_config, its tensors as
 * language_model.model.* beside a vision tower and projector that text-only input never runs; the
 * PEFT adapter (target_modules PEFT's regex over model.language_model.layers, so the vision tower's
 * q/k/v_proj are not adapted) under base_model.model.model.language_model.layers.* */
TEST(hf_gemma3_vlm_logits) { check_logits("gemma3_vlm"); }
TEST(hf_gemma3_vlm_loss_and_grads) { check_loss_and_grads("gemma3_vlm"); }
TEST(hf_gemma3_vlm_three_clipped_steps) { check_three_steps("gemma3_vlm"); }
/* Mistral3ForConditionalGeneration (Mistral Small 3.1 / 3.2): a Mistral language model as text_config,
 * its tensors as language_model.model.* and an untied language_model.lm_head beside a Pixtral vision
 * tower and projector; the adapter under base_model.model.model.language_model.layers.* (PEFT's regex
 * target_modules over the language model) */
TEST(hf_mistral3_vlm_logits) { check_logits("mistral3_vlm"); }
TEST(hf_mistral3_vlm_loss_and_grads) { check_loss_and_grads("mistral3_vlm"); }
TEST(hf_mistral3_vlm_three_clipped_steps) { check_three_steps("mistral3_vlm"); }
/* Ministral3ForCausalLM: YaRN with attention factor 1 and q times 1 + 0.5·ln 2 at positions 32-39 of 40
 * (llama_4_scaling_beta, period 32); packed, the factor follows each document's own positions */
TEST(hf_ministral3_llama4_logits) { check_logits("ministral3_llama4"); }
TEST(hf_ministral3_llama4_loss_and_grads) { check_loss_and_grads("ministral3_llama4"); }
TEST(hf_ministral3_llama4_packed_loss_and_grads) { check_packed_loss_and_grads("ministral3_llama4"); }
TEST(hf_ministral3_llama4_three_clipped_steps) { check_three_steps("ministral3_llama4"); }
TEST(hf_ministral3_llama4_loss_and_grads_recompute) { recompute = 1; check_loss_and_grads("ministral3_llama4"); recompute = 0; }
/* GemmaForCausalLM (Gemma 1): Llama's layer with Gemma's (1 + w) norms, GeGLU, embeddings × √hidden and a
 * tied, unscaled head; multi-query */
TEST(hf_gemma_geglu_logits) { check_logits("gemma_geglu"); }
TEST(hf_gemma_geglu_loss_and_grads) { check_loss_and_grads("gemma_geglu"); }
TEST(hf_gemma_geglu_three_clipped_steps) { check_three_steps("gemma_geglu"); }
TEST(hf_gemma_geglu_three_clipped_steps_recompute) { recompute = 1; check_three_steps("gemma_geglu"); recompute = 0; }
TEST(hf_gemma_geglu_packed_loss_and_grads) { check_packed_loss_and_grads("gemma_geglu"); }
/* Gemma2ForCausalLM: Gemma 3's layers without q_norm/k_norm, one RoPE for every layer, and
 * final_logit_softcapping 3.0 (|logits| ~ 3-4: on tanh's curve) in the loss, its gradient and the
 * logits; attn_logit_softcapping null */
TEST(hf_gemma2_softcap_logits) { check_logits("gemma2_softcap"); }
TEST(hf_gemma2_softcap_loss_and_grads) { check_loss_and_grads("gemma2_softcap"); }
TEST(hf_gemma2_softcap_three_clipped_steps) { check_three_steps("gemma2_softcap"); }
TEST(hf_gemma2_softcap_three_clipped_steps_recompute) { recompute = 1; check_three_steps("gemma2_softcap"); recompute = 0; }
/* Gemma 2's attention soft-cap: attn_logit_softcapping 0.2 (without it transformers' logits move by
 * ~0.47) over a sliding window of 5 on layer 0 (T 12), with final_logit_softcapping 3.0 */
TEST(hf_gemma2_attn_softcap_logits) { check_logits("gemma2_attn_softcap"); }
TEST(hf_gemma2_attn_softcap_loss_and_grads) { check_loss_and_grads("gemma2_attn_softcap"); }
TEST(hf_gemma2_attn_softcap_three_clipped_steps) { check_three_steps("gemma2_attn_softcap"); }
TEST(hf_gemma2_attn_softcap_loss_and_grads_recompute) { recompute = 1; check_loss_and_grads("gemma2_attn_softcap"); recompute = 0; }
TEST(hf_gemma2_attn_softcap_three_clipped_steps_recompute) { recompute = 1; check_three_steps("gemma2_attn_softcap"); recompute = 0; }
