/* test_determinism.c — the same seed gives the bitwise same adapter on the same backend: LoRA
 * init, dropout masks, the optimizer and every reduction are order-fixed. */
#include <stdlib.h>
#include <string.h>

#include "engine/model.h"
#include "test.h"

static float *train_preset_steps(int steps, size_t *n_out) {
    fl_model_config cfg;
    CHECK(fl_config_preset(&cfg, "smollm2-135m") == 0);
    cfg.n_layers = 2;          /* the real widths, two layers: fast */
    cfg.vocab_size = 1000;
    fl_lora_config lc = fl_lora_config_default();
    lc.dropout = 0.1f;
    fl_model m;
    fl_model_init_random(&m, &cfg, 7, fl_backend_cpu(), &lc);
    int B = 2, T = 16;
    int32_t ids[32], targets[32];
    for (int i = 0; i < B * T; i++) { ids[i] = (i * 131 + 5) % 1000; targets[i] = (i * 71 + 9) % 1000; }
    fl_batch batch = {.B = B, .T = T, .ids = ids, .targets = targets};
    fl_adamw_config opt = fl_adamw_config_default();
    opt.lr = 1e-3f;
    for (int s = 0; s < steps; s++) {
        fl_model_forward(&m, &batch, 0.0f);
        fl_model_backward(&m);
        fl_model_optimizer_step(&m, &opt);
    }
    float *out = malloc(sizeof(float) * m.lora.n);
    memcpy(out, m.lora.data, sizeof(float) * m.lora.n);
    *n_out = m.lora.n;
    fl_model_free(&m);
    return out;
}

TEST(determinism_same_seed_bitwise_same_adapter) {
    size_t n1, n2;
    float *a = train_preset_steps(3, &n1), *b = train_preset_steps(3, &n2);
    CHECK_EQ_INT(n1, n2);
    CHECK_MSG(memcmp(a, b, sizeof(float) * n1) == 0, "two identical runs gave different adapters");
    /* and training did move the adapter (B starts at zero) */
    size_t moved = 0;
    for (size_t i = 0; i < n1; i++) moved += a[i] != 0.0f;
    CHECK(moved > n1 / 2);
    free(a);
    free(b);
}
