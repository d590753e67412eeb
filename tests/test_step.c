/* test_step.c — a whole training step with nothing read back inside it (fl_model_train_step,
 * engine/step.c): the loss, Σg² and the clip factor stay in the step's scalars on the backend,
 * AdamW reads its factors from there, and the step is the same computation as the op-by-op calls it
 * replaces (fl_train_accumulate + fl_model_grad_norm + fl_model_optimizer_step), bit for bit.
 * Recording and replaying the step (CUDA graphs) is checked on a GPU by test_cuda_ops.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_ops.h"
#include "common/rng.h"
#include "engine/model.h"
#include "test.h"
#include "train/trainer.h"

static void tiny_model(fl_model *m, const fl_backend *be) {
    fl_model_config cfg = {.arch = FL_ARCH_QWEN2, .vocab_size = 64, .hidden_size = 32, .intermediate_size = 48,
                           .n_layers = 2, .n_heads = 4, .n_kv_heads = 2, .head_dim = 8, .max_position_embeddings = 64,
                           .rope_theta = 10000.0, .rms_norm_eps = 1e-5f, .qkv_bias = 1};
    fl_lora_config lc = fl_lora_config_default();
    lc.rank = 4;
    lc.dropout = 0.2f;
    fl_model_init_random(m, &cfg, 9, be, &lc);
}

static int same_buffer(const fl_lora_buffer *a, const fl_lora_buffer *b) {
    return a->n == b->n && memcmp(a->data, b->data, sizeof(float) * a->n) == 0;
}

/* 4 steps of 3 micro-batches, the middle one of step 3 without a counted token (skipped, its dropout
 * stream still taken), lr changing every step, clipping active: the step API and the separate calls
 * give the same losses, norms, LoRA parameters and moments, bit for bit, on both CPU backends. */
static void step_equals_separate_calls(const fl_backend *be) {
    fl_model a, b;
    tiny_model(&a, be);
    tiny_model(&b, be);
    enum { B = 2, T = 9, A = 3 };
    int32_t buf[A][2][B * T];
    fl_batch micro[A];
    fl_adamw_config opt = fl_adamw_config_default();
    opt.max_grad_norm = 0.05f;
    for (int step = 0; step < 4; step++) {
        for (int i = 0; i < A; i++) {
            for (int t = 0; t < B * T; t++) {
                buf[i][0][t] = (int32_t)(fl_hash64((uint64_t)(step * 100 + i * 10 + t)) % 64);
                buf[i][1][t] = step == 2 && i == 1 ? -100 : t % 5 == 4 ? -100 : (int32_t)(fl_hash64(t + 7u * step) % 64);
            }
            micro[i] = (fl_batch){.B = B, .T = T, .ids = buf[i][0], .targets = buf[i][1]};
        }
        opt.lr = 1e-2f / (float)(step + 1);
        double norm_a, norm_b;
        fl_step_stats sa = fl_model_train_step(&a, micro, A, &opt, &norm_a);
        fl_step_stats sb = fl_train_accumulate(&b, micro, A);
        norm_b = fl_model_grad_norm(&b);
        double norm_opt = fl_model_optimizer_step(&b, &opt);
        CHECK_MSG(sa.loss_sum == sb.loss_sum && sa.n_counted == sb.n_counted && norm_a == norm_b && norm_opt == norm_b,
                  "%s step %d: loss %.9g (%zu) norm %.9g vs %.9g (%zu) %.9g", be->name, step + 1, sa.loss_sum,
                  sa.n_counted, norm_a, sb.loss_sum, sb.n_counted, norm_b);
        CHECK(norm_a > opt.max_grad_norm); /* the clip factor took part */
    }
    CHECK(a.micro_step == 12 && b.micro_step == 12 && a.adam_step == 4 && b.adam_step == 4);
    CHECK(same_buffer(&a.lora, &b.lora) && same_buffer(&a.adam_m, &b.adam_m) && same_buffer(&a.adam_v, &b.adam_v));
    CHECK_EQ_INT(fl_model_replayed_steps(&a), 0); /* the CPU backends do not record */
    fl_model_free(&a);
    fl_model_free(&b);
}

TEST(step_train_step_equals_separate_calls) {
    step_equals_separate_calls(fl_backend_cpu());
    step_equals_separate_calls(fl_backend_cpu_bf16());
}

/* The clip factor is torch's min(1, max_norm / (norm + 1e-6)); 1 without clipping; NaN when Σg² or
 * the loss is not finite, and then AdamW leaves parameters and moments as they were. */
TEST(step_clip_factor_and_nonfinite_skip) {
    fl_step_scalars sc = {.grad_sumsq = 16.0, .loss_sum = 3.0};
    grad_clip_scale_cpu(&sc, 1.0f);
    CHECK(sc.clip_scale == (float)(1.0 / (4.0 + 1e-6)));
    grad_clip_scale_cpu(&sc, 10.0f);
    CHECK(sc.clip_scale == 1.0f);
    grad_clip_scale_cpu(&sc, 0.0f);
    CHECK(sc.clip_scale == 1.0f);
    float p[3] = {1, 2, 3}, m[3] = {0.1f, 0.2f, 0.3f}, v[3] = {0.01f, 0.02f, 0.03f}, g[3] = {1, -1, 0.5f};
    float p0[3], m0[3], v0[3];
    memcpy(p0, p, sizeof p); memcpy(m0, m, sizeof m); memcpy(v0, v, sizeof v);
    const double bad[2][2] = {{NAN, 1.0}, {4.0, INFINITY}}; /* {Σg², loss} */
    for (int k = 0; k < 2; k++) {
        sc = (fl_step_scalars){.lr = 1e-2f, .adam_step_size = 0.1f, .adam_bias2_sqrt = 0.03f,
                               .grad_sumsq = bad[k][0], .loss_sum = bad[k][1]};
        grad_clip_scale_cpu(&sc, 1.0f);
        CHECK(isnan(sc.clip_scale));
        adamw_update_cpu(p, NULL, m, v, g, &sc, 0.9f, 0.999f, 1e-8f, 0.1f, 3);
        CHECK(!memcmp(p, p0, sizeof p) && !memcmp(m, m0, sizeof m) && !memcmp(v, v0, sizeof v));
    }
    sc.clip_scale = 1.0f; /* and a finite factor does update */
    adamw_update_cpu(p, NULL, m, v, g, &sc, 0.9f, 0.999f, 1e-8f, 0.1f, 3);
    CHECK(memcmp(p, p0, sizeof p) != 0);
}

/* The LM head adds to the scalars (a step's micro-batches sum there) and reads grad_scale from them. */
TEST(step_lm_head_accumulates_into_scalars) {
    int N = 3, C = 4, V = 5;
    float x[12], w[20], dx1[12], dx2[12];
    for (int i = 0; i < 12; i++) x[i] = 0.1f * (float)(i % 7) - 0.3f;
    for (int i = 0; i < 20; i++) w[i] = 0.05f * (float)(i % 9) - 0.2f;
    int32_t tg[3] = {1, -100, 4};
    fl_step_scalars one = {.grad_scale = 1.0f}, two = {.grad_scale = 0.5f, .loss_sum = 1.5, .n_counted = 7};
    lm_head_loss_cpu(dx1, NULL, NULL, &one, x, tg, w, N, C, V);
    lm_head_loss_cpu(dx2, NULL, NULL, &two, x, tg, w, N, C, V);
    CHECK(one.n_counted == 2 && two.n_counted == 9);
    CHECK(two.loss_sum == 1.5 + one.loss_sum);
    for (int i = 0; i < 12; i++) CHECK(dx2[i] == 0.5f * dx1[i]); /* grad_scale a power of two: exact */
}
