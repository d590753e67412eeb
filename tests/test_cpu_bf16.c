/* test_cpu_bf16.c — the fast CPU backend (bf16 frozen matrices, f32 activations) against the f32
 * reference on the Hugging Face fixtures.
 *
 * Tolerances: bf16 keeps 8 significant bits (relative rounding error ≤ 2^-9 ≈ 0.2%) on the weights
 * and on each GEMM input, attention's tile operands (q, k, v, p, dO, ds) included where the
 * backend runs its bf16 tiles; with f32 accumulation the errors of the dozen or so rounded operands
 * on each path through two layers add at random, ~2^-9·sqrt(12) ≈ 0.7% of the logits' scale times
 * the layers' gain (up to 1.7% measured on these fixtures): logits within 2.5% of the largest
 * |logit|, the loss within 0.5%, gradients within 5% of the tensor's largest entry. A wrong
 * layout, transpose or conversion gives O(1) errors, so these bounds still catch real bugs. */
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "engine/model.h"
#include "lora/adapter_io.h"
#include "test.h"
#include "backend/cpu/gemm_bf16.h"
#include "backend/cpu/gemm_onednn.h"

static double max_abs_diff(const float *a, const float *b, size_t n, double *max_b) {
    double worst = 0, mb = 0;
    for (size_t i = 0; i < n; i++) {
        worst = fabs(a[i] - b[i]) > worst ? fabs(a[i] - b[i]) : worst;
        mb = fabs(b[i]) > mb ? fabs(b[i]) : mb;
    }
    if (max_b) *max_b = mb;
    return worst;
}

static void compare_backends(const char *name) {
    char model_dir[256], adapter_dir[256];
    snprintf(model_dir, sizeof model_dir, "tests/fixtures/hf/%s/model", name);
    snprintf(adapter_dir, sizeof adapter_dir, "tests/fixtures/hf/%s/adapter", name);
    fl_lora_config lc;
    CHECK(fl_adapter_load_config(adapter_dir, &lc) == 0);
    fl_model ref, fast;
    CHECK(fl_model_init_dir(&ref, model_dir, fl_backend_cpu(), &lc) == 0 && fl_model_load_adapter(&ref, adapter_dir) == 0);
    CHECK(fl_model_init_dir(&fast, model_dir, fl_backend_cpu_bf16(), &lc) == 0 &&
          fl_model_load_adapter(&fast, adapter_dir) == 0);
    int B = 2, T = 8, V = ref.cfg.vocab_size;
    int32_t ids[16], targets[16];
    for (int i = 0; i < 16; i++) { ids[i] = (i * 37 + 1) % V; targets[i] = (i * 11 + 5) % V; }
    float *l_ref = malloc(sizeof(float) * B * T * V), *l_fast = malloc(sizeof(float) * B * T * V);
    fl_model_logits(&ref, ids, B, T, l_ref);
    fl_model_logits(&fast, ids, B, T, l_fast);
    double max_l, d = max_abs_diff(l_fast, l_ref, (size_t)B * T * V, &max_l);
    CHECK_MSG(d > 0 && d < 0.025 * max_l, "%s: bf16 logits differ by %g (max |logit| %g)", name, d, max_l);

    fl_batch batch = {.B = B, .T = T, .ids = ids, .targets = targets};
    fl_step_stats s_ref = fl_model_forward(&ref, &batch, 0.0f), s_fast = fl_model_forward(&fast, &batch, 0.0f);
    CHECK_CLOSE(s_fast.loss, s_ref.loss, 0, 5e-3);
    fl_model_backward(&ref);
    fl_model_backward(&fast);
    double max_g;
    double dg = max_abs_diff(fast.grads.data, ref.grads.data, ref.grads.n, &max_g);
    CHECK_MSG(dg <= 0.05 * max_g, "%s: bf16 LoRA grads differ by %g (max |grad| %g)", name, dg, max_g);
    free(l_ref);
    free(l_fast);
    fl_model_free(&ref);
    fl_model_free(&fast);
}

TEST(cpu_bf16_matches_f32_llama_gqa) { compare_backends("llama_gqa"); }
TEST(cpu_bf16_matches_f32_smollm3_nope) { compare_backends("smollm3_nope"); }
TEST(cpu_bf16_matches_f32_granite_multipliers) { compare_backends("granite_multipliers"); }
TEST(cpu_bf16_matches_f32_qwen2_bias_tied) { compare_backends("qwen2_bias_tied"); }
TEST(cpu_bf16_matches_f32_llama3_rope) { compare_backends("llama3_rope"); }
TEST(cpu_bf16_matches_f32_llama_dynamic_ntk) { compare_backends("llama_dynamic_ntk"); }
TEST(cpu_bf16_matches_f32_qwen3_qk_norm) { compare_backends("qwen3_qk_norm"); }
TEST(cpu_bf16_matches_f32_phi3_longrope) { compare_backends("phi3_longrope"); }
TEST(cpu_bf16_matches_f32_gemma3_sandwich) { compare_backends("gemma3_sandwich"); }
TEST(cpu_bf16_matches_f32_gemma_geglu) { compare_backends("gemma_geglu"); }
TEST(cpu_bf16_matches_f32_gemma2_softcap) { compare_backends("gemma2_softcap"); }
TEST(cpu_bf16_matches_f32_olmo2_post_norms) { compare_backends("olmo2_post_norms"); }
TEST(cpu_bf16_matches_f32_gemma2_attn_softcap) { compare_backends("gemma2_attn_softcap"); }
TEST(cpu_bf16_matches_f32_mistral_swa) { compare_backends("mistral_swa"); } /* window 5 < T = 8: binds */
TEST(cpu_bf16_matches_f32_qwen3_yarn) { compare_backends("qwen3_yarn"); }
TEST(cpu_bf16_matches_f32_olmo3_sliding_yarn) { compare_backends("olmo3_sliding_yarn"); }
TEST(cpu_bf16_matches_f32_qwen3_swa) { compare_backends("qwen3_swa"); } /* window 4, layer 0 full */
/* The same comparison with every bf16 GEMM it can take on oneDNN's matmul (gemm_onednn.h): the
 * tolerance is the bf16 backend's, since only the order of the f32 sums differs. */
TEST(cpu_bf16_matches_f32_onednn) {
    if (!fl_onednn_built()) SKIP("this build has no oneDNN (libdnnl-dev)");
    unsigned long before = fl_onednn_bf16_calls(); /* the f32 reference's calls may go there too */
    fl_gemm_bf16_set_provider(FL_GEMM_PROVIDER_ONEDNN);
    compare_backends("llama_gqa");
    compare_backends("gemma2_softcap");
    compare_backends("qwen3_qk_norm");
    fl_gemm_bf16_set_provider(-1);
    if (fl_onednn_bf16_calls() == before) SKIP("oneDNN declined every bf16 call here (no bf16 matmul at its instruction set)");
}

TEST(backend_select_dtypes) {
    const fl_backend *be;
    CHECK(fl_backend_select_dtype("cpu", "f32", &be) == 0 && be == fl_backend_cpu());
    CHECK(fl_backend_select_dtype("cpu", "bf16", &be) == 0 && be == fl_backend_cpu_bf16());
    /* no dtype: the CPU's default (test_cpu_isa.c checks the rule per CPU class) */
    const fl_backend *want = !strcmp(fl_cpu_default_dtype(NULL), "bf16") ? fl_backend_cpu_bf16() : fl_backend_cpu();
    CHECK(fl_backend_select_dtype("cpu", NULL, &be) == 0 && be == want);
    CHECK_EQ_INT(fl_backend_select_dtype("cpu", "fp8", &be), 2);
    CHECK_STR_CONTAINS(fl_last_error(), "fp8");
    CHECK_EQ_INT(fl_backend_select_dtype("tpu", NULL, &be), 2);
    CHECK_STR_CONTAINS(fl_last_error(), "tpu");
}
