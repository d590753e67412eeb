/* test_fused.c — the fused projections (one GEMM for q/k/v and one for gate/up, LoRA
 * K-concatenated into them, engine/projection.c) against every projection run alone (m->fused = 0, the
 * sequence the HF fixtures and finite differences check), on both CPU backends.
 *
 * Two models with the same seed take the same steps: the loss and every LoRA gradient must agree
 * at each step, and two optimizer steps run in between so that a LoRA B compute copy that is not
 * refreshed after AdamW (the fused path keeps s·B inside the frozen weight) shows up. Configs cover
 * GQA, q/k/v biases, rsLoRA (a scale that is not a power of two), partly adapted groups (q and v
 * without k, up without gate) and dropout.
 *
 * Tolerances (relative L2 error over all gradients, and the loss), f32 backend: derived, not
 * measured (f32_paths_bound below). The two paths compute the same sums in other orders (K-
 * concatenation; s multiplied into B before the product), and a sum of n f32 terms taken in any
 * order is within γ_n ≈ n·u (u = 2^-24) of the exact one, relative to the sum of the terms' sizes.
 * Along one gradient the forward and backward pass chain such sums; to first order their relative
 * errors add, so each path is within u·Σn of the exact gradient, the sum running over the reduction
 * lengths on the longest chain from the input to the LoRA gradients and back, and the two paths are
 * within twice that of each other. For the config here Σn ≈ 1,200: a bound of 1.5e-4, where a
 * stale s·B copy or a wrong block gives > 1e-2 and the paths measure 2e-7–1e-6 on every kernel
 * level (FASTLORA_CPU_ISA) and build (-O3, the sanitizer's -O1). The bound assumes no cancellation
 * amplifies the rounding (condition ~1); the relative L2 norm weighs each gradient by its size, so
 * the elements that do cancel (small ones) barely move it.
 *
 * The optimizer steps between the compared steps use AdamW with ε = 1 (above every |g| here):
 * with the default ε = 1e-8 the first update is lr·g/(|g| + ε), a sign function of g, and a
 * gradient element near zero whose sign the rounding decides moves its parameter by ±lr in one
 * model and not the other — a difference no rounding bound covers (measured: 1e-5 at the next step
 * with dropout, 30 times the first step's). With ε = 1 the update is Lipschitz in g (constant
 * lr/ε), so the parameters stay within rounding of each other and each step's gradients are held
 * to the same bound; lr = 0.5 moves B by ~10%, so a B copy not refreshed after the step still
 * shows at O(1e-2).
 *
 * bf16 backend 5e-2 — each path is ~1% away from the f32
 * reference (bf16 keeps 8 bits of every GEMM operand: the fused path rounds s·B where the unfused
 * rounds B, K-concatenation changes the summation order; measured 0.5–0.9% between the two at the
 * first step), within the bound test_cpu_bf16.c uses against f32. The bf16 run compares one step
 * only: after an AdamW step the two models' parameters differ by that noise and drift apart
 * (measured 1–6% by the third step); it checks the bf16 ops' row strides, whose errors are O(1),
 * and the f32 run checks the steps.
 *
 * On the CUDA backend (skipped without a device) head_dim is 64, so attention runs the tensor-core
 * forward and backward through the interface's ld_qkv views of the fused q|k|v rows; the fused
 * CUDA model is compared with the unfused CPU f32 model (the spec) and with the unfused CUDA model,
 * one step, within 5e-2 (the CUDA fixture tests' bound for LoRA gradients through two bf16 layers;
 * a wrong stride or block is O(1)). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef FL_HAVE_CUDA
#include "backend/cuda/cuda_info.h"
#endif
#include "common/error.h"
#include "common/rng.h"
#include "engine/model.h"
#include "io/file_util.h"
#include "io/safetensors.h"
#include "test.h"
#include "train/checkpoint.h"

static double rel_l2(const float *a, const float *b, size_t n) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        if (a[i] != a[i] || b[i] != b[i]) return INFINITY;
        double d = (double)a[i] - b[i];
        num += d * d;
        den += (double)b[i] * b[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* The f32 bound (header comment): 2·u·Σn over the longest forward + backward chain of reductions
 * of a model with config c, LoRA rank R, B×T tokens. Forward per layer: RMSNorm (C), q|k|v with
 * the LoRA columns (C + 3R), scores (head_dim), softmax and P·V (T each), o (QD + R), RMSNorm (C),
 * gate|up (C + 2R), down (FF + R); the head: logits (C) and log-sum-exp (V). The backward pass runs
 * the transposed reductions (the output widths: QD + 2·KVD, C, 2·FF, C, the attention's T and
 * head_dim, the norms' C) and the weight gradients' B·T; Qwen3's q/k norms add a reduction of head_dim
 * each way. */
static double f32_paths_bound(const fl_model_config *c, int R, int B, int T) {
    double C = c->hidden_size, FF = c->intermediate_size, HS = c->head_dim, QD = c->n_heads * HS,
           KVD = c->n_kv_heads * HS;
    double qk = c->qk_norm ? HS : 0;
    double fwd = C + (C + 3 * R) + qk + HS + 2.0 * T + (QD + R) + C + (C + 2 * R) + (FF + R);
    double bwd = (QD + 2 * KVD + R) + C + 2.0 * T + HS + qk + C + (2 * FF + R) + (C + R) + C;
    double n = c->n_layers * (fwd + bwd) + 2 * (C + c->vocab_size) + (double)B * T;
    return 2.0 * n * 0x1p-24;
}

typedef struct {
    int qwen;           /* 1: q/k/v bias, tied embeddings, rsLoRA; 2: Qwen3's q/k norms, tied; 3: Phi-3's fused
                           modules (one LoRA over q|k|v and one over gate|up), partial rotary, longrope */
    unsigned targets;   /* LoRA target mask */
    float dropout;
    int head_dim, T;    /* 0: 8 and 7 */
} fused_case;

/* The fused model on `be` against the unfused one on `ref` (== be, or the CPU f32 spec): same seed,
 * same steps, loss and LoRA gradients within tol (relative; <= 0: the f32 bound) at every step. */
static void compare_fused(const fl_backend *be, const fl_backend *ref, const fused_case *fc, int steps, double tol) {
    int HS = fc->head_dim ? fc->head_dim : 8;
    fl_model_config cfg = {.arch = fc->qwen == 2 ? FL_ARCH_QWEN3 : fc->qwen ? FL_ARCH_QWEN2 : FL_ARCH_LLAMA,
                           .vocab_size = 50, .hidden_size = 32, .intermediate_size = 48, .n_layers = 2, .n_heads = 4,
                           .n_kv_heads = 2, .head_dim = HS, .max_position_embeddings = 128, .rope_theta = 10000.0,
                           .rms_norm_eps = 1e-5f, .tie_word_embeddings = fc->qwen != 0, .qkv_bias = fc->qwen == 1,
                           .qk_norm = fc->qwen == 2};
    if (fc->qwen == 3) {   /* RD 6 of HS 8, the long factors (T 7 > 4) and an attention factor */
        cfg.arch = FL_ARCH_PHI3;
        cfg.fused_modules = 1;
        cfg.rotary_dim = 6;
        cfg.rope_longrope = 1;
        cfg.rope_original_max_position = 4;
        cfg.rope_attention_factor = 1.2;
        for (int j = 0; j < 3; j++) { cfg.rope_short_factor[j] = 1.0f + j; cfg.rope_long_factor[j] = 1.5f + 2 * j; }
    }
    fl_lora_config lc = fl_lora_config_default();
    lc.rank = 4;
    lc.alpha = 7;
    lc.use_rslora = fc->qwen == 1;
    lc.dropout = fc->dropout;
    lc.target_mask = fc->targets;
    fl_model fused, alone;
    fl_model_init_random(&fused, &cfg, 3, be, &lc);
    fl_model_init_random(&alone, &cfg, 3, ref, &lc);
    alone.fused = 0;
    /* non-zero B (PEFT's init has B = 0, which would hide the B half of the LoRA terms) */
    float *host = malloc(sizeof(float) * fused.lora.n);
    fl_rng_fill_uniform(host, fused.lora.n, fl_rng_stream(11, 1, 2, 3), -0.2f, 0.2f);
    be->upload(fused.lora.data, host, sizeof(float) * fused.lora.n);
    ref->upload(alone.lora.data, host, sizeof(float) * fused.lora.n);
    fl_model_sync_lora(&fused);
    fl_model_sync_lora(&alone);
    int B = 2, T = fc->T ? fc->T : 7;
    int32_t *ids = malloc(sizeof(int32_t) * B * T), *targets = malloc(sizeof(int32_t) * B * T);
    for (int i = 0; i < B * T; i++) {
        ids[i] = (i * 17 + 3) % cfg.vocab_size;
        targets[i] = i % 5 == 4 ? -100 : (i * 29 + 1) % cfg.vocab_size;
    }
    fl_batch batch = {.B = B, .T = T, .ids = ids, .targets = targets};
    if (tol <= 0) tol = f32_paths_bound(&cfg, lc.rank, B, T);
    fl_adamw_config opt = fl_adamw_config_default();
    opt.lr = 0.5f; /* with ε = 1: updates Lipschitz in g (header comment) */
    opt.eps = 1.0f;
    float *g_fused = malloc(sizeof(float) * fused.grads.n), *g_alone = malloc(sizeof(float) * fused.grads.n);
    for (int step = 0; step < steps; step++) {
        fl_step_stats a = fl_model_forward(&fused, &batch, 0.0f), b = fl_model_forward(&alone, &batch, 0.0f);
        CHECK_MSG(fabs(a.loss - b.loss) <= tol * fabs(b.loss), "step %d: loss fused %.9g vs alone %.9g", step, a.loss,
                  b.loss);
        fl_model_backward(&fused);
        fl_model_backward(&alone);
        be->download(g_fused, fused.grads.data, sizeof(float) * fused.grads.n);
        ref->download(g_alone, alone.grads.data, sizeof(float) * fused.grads.n);
        double e = rel_l2(g_fused, g_alone, fused.grads.n);
        CHECK_MSG(e <= tol, "%s step %d: LoRA gradients differ, relative L2 %.3g > %.3g", be->name, step, e, tol);
        double n_fused = fl_model_optimizer_step(&fused, &opt), n_alone = fl_model_optimizer_step(&alone, &opt);
        CHECK(n_alone > 0 && fabs(n_fused - n_alone) <= tol * n_alone);
    }
    free(host);
    free(ids);
    free(targets);
    free(g_fused);
    free(g_alone);
    fl_model_free(&fused);
    fl_model_free(&alone);
}

#define ALL ((1u << FL_N_PROJ) - 1)
#define PARTIAL ((1u << FL_PROJ_Q) | (1u << FL_PROJ_V) | (1u << FL_PROJ_O) | (1u << FL_PROJ_UP) | (1u << FL_PROJ_DOWN))

static void both_backends(const fused_case *fc) {
    compare_fused(fl_backend_cpu(), fl_backend_cpu(), fc, 3, 0);
    compare_fused(fl_backend_cpu_bf16(), fl_backend_cpu_bf16(), fc, 1, 5e-2);
}

TEST(fused_projections_match_unfused_llama_all) { both_backends(&(fused_case){0, ALL, 0.0f, 0, 0}); }
TEST(fused_projections_match_unfused_qwen_partial_rslora) { both_backends(&(fused_case){1, PARTIAL, 0.0f, 0, 0}); }
TEST(fused_projections_match_unfused_qwen3_qk_norm) { both_backends(&(fused_case){2, ALL, 0.0f, 12, 0}); }
/* Phi-3: the fused modules' one LoRA each (B spanning the group's rows), with and without dropout */
TEST(fused_projections_match_unfused_phi3_fused_modules) {
    both_backends(&(fused_case){3, ALL, 0.0f, 0, 0});
    both_backends(&(fused_case){3, ALL, 0.2f, 0, 0});
}
TEST(fused_projections_match_unfused_dropout) {
    both_backends(&(fused_case){0, ALL, 0.2f, 0, 0});
    both_backends(&(fused_case){1, PARTIAL, 0.2f, 0, 0});
}

#ifdef FL_HAVE_CUDA
/* GQA 2:1 at head_dim 64 (the tensor-core attention both ways), T = 70 (a ragged second tile),
 * q/k/v biases on the K-concatenated GEMM, partial groups. */
TEST(fused_projections_match_unfused_cuda_mma_attention) {
    const fl_backend *cu = fl_backend_cuda();
    if (!cu) SKIP("no CUDA device");
    fl_cuda_set_attention_variant("mma");
    const fused_case cases[2] = {{0, ALL, 0.0f, 64, 70}, {1, PARTIAL, 0.0f, 64, 70}};
    for (int i = 0; i < 2; i++) {
        compare_fused(cu, fl_backend_cpu(), &cases[i], 1, 5e-2);
        compare_fused(cu, cu, &cases[i], 1, 5e-2);
    }
    fl_cuda_set_attention_variant(getenv("FL_CUDA_ATTN"));
}
#endif

/* A checkpoint whose optimizer.safetensors lacks the parameter-order name (an older build's) is
 * an input error naming the order, not moments silently loaded into the wrong parameters. */
TEST(checkpoint_refuses_moments_of_another_param_order) {
    fl_model m;
    fl_lora_config lc = fl_lora_config_default();
    lc.rank = 2;
    fl_model_config cfg = {.arch = FL_ARCH_LLAMA, .vocab_size = 40, .hidden_size = 16, .intermediate_size = 24,
                           .n_layers = 1, .n_heads = 2, .n_kv_heads = 1, .head_dim = 8,
                           .max_position_embeddings = 32, .rope_theta = 10000.0, .rms_norm_eps = 1e-5f};
    fl_model_init_random(&m, &cfg, 1, fl_backend_cpu(), &lc);
    char root[] = "/tmp/fastlora-order-XXXXXX";
    CHECK(mkdtemp(root) != NULL);
    fl_train_state st = {.step = 3, .adam_step = 3, .n_params = m.lora.n, .seed = 1};
    char *saved = NULL;
    CHECK_EQ_INT(fl_checkpoint_save(root, &m, &st, "base", 2, 0, &saved), 0);
    fl_train_state back;
    CHECK_EQ_INT(fl_checkpoint_load(saved, &m, &back), 0); /* this build's own checkpoint loads */
    /* rewrite the moments without the name, as builds before the grouped order wrote them */
    char *path = fl_path_join(saved, "optimizer.safetensors");
    float *zeros = calloc(m.lora.n, sizeof(float));
    fl_st_write_tensor t[2] = {{.name = "adam_m", .dtype = FL_F32, .ndim = 1, .shape = {(int64_t)m.lora.n}, .data = zeros},
                               {.name = "adam_v", .dtype = FL_F32, .ndim = 1, .shape = {(int64_t)m.lora.n}, .data = zeros}};
    CHECK_EQ_INT(fl_safetensors_write(path, t, 2, NULL, 0), 0);
    CHECK_EQ_INT(fl_checkpoint_load(saved, &m, &back), 2);
    CHECK_STR_CONTAINS(fl_last_error(), "parameter order");
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    CHECK(system(cmd) == 0);
    free(zeros);
    free(path);
    free(saved);
    fl_model_free(&m);
}
