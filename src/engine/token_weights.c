/* token_weights.c — per-token losses out of the LM head and per-token weights into its gradient,
 * for objectives defined on whole sequences (model.h: fl_model_forward_token_losses): the LM head
 * runs with grad_scale 1 and also writes each token's loss; the host reduces them to sequence
 * log-probabilities and back to one weight per token; scale_rows multiplies each row of the LM
 * head's input gradient by its weight; the backward is the usual one. The weights are a gradient
 * of the caller's loss, so the result is that loss's gradient exactly (dlogits are linear in the
 * per-token factor). Not here: the objectives (train/preference_loss.h), the layer walk (model.c).
 */
#include "engine/model_internal.h"

#include "common/error.h"

/* token losses (N) | token weights (N), backend memory, for the activations' B·T */
static float *token_buffers(fl_model *m, size_t N) {
    if (m->token_f32_n < N) {
        if (m->token_f32) m->be->free(m->token_f32);
        m->token_f32 = m->be->alloc(2 * N * sizeof(float));
        m->token_f32_n = N;
    }
    return m->token_f32;
}

static fl_step_stats token_losses(fl_model *m, const fl_batch *batch, float *token_loss, int train) {
    size_t N = (size_t)batch->B * batch->T;
    float *dev = token_buffers(m, N);
    int was_training = m->training;
    if (train) m->micro_step++;
    else m->training = 0;
    load_batch(m, batch, 1.0f);
    forward_layers(m, batch->B, batch->T);
    fl_model_lm_head_loss(m, train ? m->act.dx_final : NULL, NULL, dev, m->sc, m->act.x_final, m->act.targets, N);
    m->be->download(token_loss, dev, N * sizeof(float));
    m->training = was_training;
    m->have_forward = train;
    return fl_model_step_stats(m);
}

fl_step_stats fl_model_forward_token_losses(fl_model *m, const fl_batch *batch, float *token_loss) {
    return token_losses(m, batch, token_loss, 1);
}

fl_step_stats fl_model_eval_token_losses(fl_model *m, const fl_batch *batch, float *token_loss) {
    return token_losses(m, batch, token_loss, 0);
}

void fl_model_weight_tokens(fl_model *m, const float *w) {
    if (!m->have_forward) fl_die("fl_model_weight_tokens: no forward_token_losses before it");
    size_t N = (size_t)m->act.B * m->act.T;
    float *dev = token_buffers(m, N) + m->token_f32_n;
    m->be->upload(dev, w, N * sizeof(float));
    m->be->scale_rows(m->act.dx_final, dev, N, m->cfg.hidden_size);
}
