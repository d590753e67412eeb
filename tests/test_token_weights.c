/* test_token_weights.c — per-token losses and weights through the engine (model.h:
 * fl_model_forward_token_losses / fl_model_weight_tokens), the path preference objectives take, on
 * the CPU reference backend (f32) and the bf16 one:
 *   - the token losses sum to the step's loss sum, 0 on ignored targets, equal in the eval variant;
 *   - weights 1/n on the counted tokens give the plain mean-loss gradient (the LM head's factor
 *     applied after instead of inside: f32 rounding of one product per dlogit, bound 1e-5 relative);
 *   - a DPO loss over two pairs (four sequences, as rows; reference log-probabilities fixed) has the
 *     gradient fl_pref_pair_loss_eval's derivatives give, checked by central differences on every
 *     3rd LoRA parameter (h = 1e-3; the same budget as the whole-model checks of test_gradcheck.c:
 *     1e-2 of the largest entry).
 */
#include "test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/rng.h"
#include "engine/model.h"
#include "train/preference_loss.h"

static void scale(float *x, size_t n, float s) {
    for (size_t i = 0; i < n; i++) x[i] *= s;
}

/* A tiny Llama with the weights scaled so that gradients are O(1e-2..1) (as test_gradcheck.c). */
static void tiny(fl_model *m, const fl_backend *be) {
    fl_model_config cfg = {.arch = FL_ARCH_LLAMA, .vocab_size = 23, .hidden_size = 12, .intermediate_size = 20,
                           .n_layers = 2, .n_heads = 4, .n_kv_heads = 2, .head_dim = 4, .max_position_embeddings = 64,
                           .rope_theta = 10000.0, .rms_norm_eps = 1e-5f};
    fl_lora_config lc = fl_lora_config_default();
    lc.rank = 3;
    lc.alpha = 5;
    fl_model_init_random(m, &cfg, 7, be, &lc);
    fl_rng_fill_uniform(m->lora.data, m->lora.n, fl_rng_stream(3, 1, 4, 1), -0.3f, 0.3f);
    if (be == fl_backend_cpu()) {
        scale(m->base.embed, (size_t)cfg.vocab_size * cfg.hidden_size, 5.0f);
        scale(m->base.lm_head, (size_t)cfg.vocab_size * cfg.hidden_size, 5.0f);
    }
    fl_model_sync_lora(m);
}

/* 4 rows of 6: (prompt | completion) for chosen/rejected of 2 pairs; targets only on completions */
enum { B = 4, T = 6, N = B * T };
static const int32_t IDS[N] = {1, 5, 7, 22, 3, 3, 1, 5, 7, 9, 0, 2, 4, 14, 2, 8, 19, 6, 4, 14, 11, 12, 13, 6};
static const int32_t TGT[N] = {-100, -100, 22, 3, 3, 10, -100, -100, 9, 0, 2, -100, -100, -100, 8, 19, 6, 1,
                               -100, -100, 12, 13, -100, -100};

static fl_batch batch(void) { return (fl_batch){.B = B, .T = T, .ids = IDS, .targets = TGT}; }

static void backend_checks(const fl_backend *be, const char *name) {
    fl_model m;
    tiny(&m, be);
    fl_batch b = batch();
    float tl[N], tl_eval[N], w[N];
    fl_step_stats st = fl_model_forward_token_losses(&m, &b, tl);
    double sum = 0;
    int counted = 0;
    for (int t = 0; t < N; t++) {
        sum += tl[t];
        counted += TGT[t] >= 0;
        if (TGT[t] < 0) CHECK_MSG(tl[t] == 0.0f, "%s: token %d ignored but its loss is %g", name, t, tl[t]);
    }
    CHECK_EQ_INT(st.n_counted, counted);
    CHECK_MSG(fabs(sum - st.loss_sum) <= 1e-6 * st.loss_sum, "%s: token losses sum to %.9g, the step's loss sum %.9g", name,
              sum, st.loss_sum);
    for (int t = 0; t < N; t++) w[t] = TGT[t] >= 0 ? 1.0f / (float)counted : 0.0f;
    fl_model_weight_tokens(&m, w);
    fl_model_backward(&m);
    float *g = malloc(sizeof(float) * m.grads.n);
    memcpy(g, m.grads.data, sizeof(float) * m.grads.n);
    fl_model_zero_grads(&m);
    fl_model_eval_token_losses(&m, &b, tl_eval);
    for (int t = 0; t < N; t++) CHECK_MSG(tl_eval[t] == tl[t], "%s: eval token %d loss %g, train %g (no dropout)", name, t, tl_eval[t], tl[t]);
    fl_model_forward(&m, &b, 0.0f);
    fl_model_backward(&m);
    double diff = 0, top = 0;
    for (size_t i = 0; i < m.grads.n; i++) {
        diff = fmax(diff, fabs((double)g[i] - m.grads.data[i]));
        top = fmax(top, fabs((double)m.grads.data[i]));
    }
    double bound = be == fl_backend_cpu() ? 1e-5 : 2e-2; /* bf16: the input gradient rounds to bf16 once more */
    CHECK_MSG(top > 0 && diff <= bound * top, "%s: weighted-token gradient differs from the mean-loss one by %.3g of %.3g", name,
              diff, top);
    free(g);
    fl_model_free(&m);
}

TEST(token_losses_and_weights_equal_the_mean_loss_path) {
    backend_checks(fl_backend_cpu(), "cpu");
    backend_checks(fl_backend_cpu_bf16(), "cpu-bf16");
}

/* The DPO loss of the 2 pairs (rows 0/1 and 2/3 chosen/rejected), mean over pairs. */
static const double REF[4] = {-9.5, -11.0, -8.0, -7.25};

static double dpo_loss(fl_model *m, float *w /* NULL: loss only */) {
    fl_batch b = batch();
    float tl[N];
    if (w) fl_model_forward_token_losses(m, &b, tl);
    else fl_model_eval_token_losses(m, &b, tl);
    fl_pref_loss_config cfg = {.objective = FL_PREF_DPO, .beta = 0.5};
    double loss = 0;
    for (int p = 0; p < 2; p++) {
        fl_pref_logps in = {.ref_logp = {REF[2 * p], REF[2 * p + 1]}};
        for (int s = 0; s < 2; s++) {
            int row = 2 * p + s;
            for (int t = 0; t < T; t++) {
                in.logp[s] -= tl[row * T + t];
                in.n_tokens[s] += TGT[row * T + t] >= 0;
            }
        }
        fl_pref_pair_loss out;
        fl_pref_pair_loss_eval(&cfg, &in, &out);
        loss += out.loss / 2;
        for (int s = 0; s < 2 && w; s++)
            for (int t = 0; t < T; t++) /* ∂loss/∂tokenloss = −∂loss/∂logp, over the 2 pairs' mean */
                w[(2 * p + s) * T + t] = TGT[(2 * p + s) * T + t] >= 0 ? (float)(-out.dloss[s] / 2) : 0.0f;
    }
    return loss;
}

TEST(token_weights_give_the_dpo_gradient_finite_differences) {
    fl_model m;
    tiny(&m, fl_backend_cpu());
    float w[N];
    dpo_loss(&m, w);
    fl_model_weight_tokens(&m, w);
    fl_model_backward(&m);
    float *g = malloc(sizeof(float) * m.grads.n);
    memcpy(g, m.grads.data, sizeof(float) * m.grads.n);
    double top = 0, worst = 0;
    for (size_t i = 0; i < m.grads.n; i++) top = fmax(top, fabs((double)g[i]));
    const float h = 1e-3f;
    int checked = 0;
    for (size_t i = 0; i < m.lora.n; i += 3, checked++) {
        float x = m.lora.data[i];
        m.lora.data[i] = x + h;
        fl_model_sync_lora(&m);
        double up = dpo_loss(&m, NULL);
        m.lora.data[i] = x - h;
        fl_model_sync_lora(&m);
        double down = dpo_loss(&m, NULL);
        m.lora.data[i] = x;
        worst = fmax(worst, fabs((up - down) / (2.0 * h) - g[i]));
    }
    fl_model_sync_lora(&m);
    printf("    %d parameters: worst |fd - grad| %.3g of the largest entry %.3g\n", checked, worst, top);
    CHECK_MSG(top > 1e-4 && worst <= 1e-2 * top, "DPO gradient off by %.3g (largest entry %.3g)", worst, top);
    free(g);
    fl_model_free(&m);
}
