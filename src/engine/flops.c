/* flops.c — the training FLOPs of one step (flops.h). */
#include "engine/flops.h"

double fl_attention_mean_keys(int T, int W) {
    if (W <= 0 || W >= T) return 0.5 * T;
    return W - (double)W * W / (2.0 * T);
}

fl_flop_terms fl_model_flop_terms(const fl_model_config *cfg, const fl_lora_config *lc, int B, int T) {
    fl_flop_terms f;
    double tokens = (double)B * T;
    /* frozen matmuls: forward 2N + input gradient 2N per token (no weight gradients) */
    f.dense = 4.0 * (double)fl_config_matmul_params(cfg) * tokens;
    /* causal attention: QKᵀ and PV forward (2 matmuls x 2 FLOPs x T/2 average keys) and 2x that
     * backward: 6·T·NH·HS per token per layer (the brief's formula, causal halving included); a
     * sliding-window layer sees fl_attention_mean_keys(T, W) keys instead of T/2 */
    double keys = 0.0;
    for (int l = 0; l < cfg->n_layers; l++) keys += fl_attention_mean_keys(T, fl_config_layer_window(cfg, l));
    f.attention = 12.0 * keys * (double)cfg->n_heads * cfg->head_dim * tokens;
    /* LoRA: per adapted projection, forward x·Aᵀ and xa·Bᵀ (2R(IC+OC)), backward the input
     * gradient through both and both weight gradients (4R(IC+OC)): 6R(IC+OC) per token */
    f.lora = 0.0;
    for (int p = 0; p < FL_N_PROJ; p++) {
        if (!(lc->target_mask & (1u << p))) continue;
        int in, out;
        fl_proj_dims(cfg, (fl_proj)p, &in, &out);
        f.lora += 6.0 * lc->rank * (double)(in + out);
    }
    f.lora *= (double)cfg->n_layers * tokens;
    f.total = f.dense + f.attention + f.lora;
    return f;
}

double fl_model_flops_per_step(const fl_model_config *cfg, const fl_lora_config *lc, int B, int T) {
    return fl_model_flop_terms(cfg, lc, B, T).total;
}
