/* step.c — the optimizer step (global-norm clip, AdamW, the compute copies refreshed) and whole
 * training steps: a step's micro-batches staged, accumulated and updated with nothing read back
 * inside, recorded once per shape where the backend records (CUDA graphs) and replayed after.
 * Not the forward or backward themselves (model.c) and not the staging (staging.c). */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/error.h"
#include "engine/model_internal.h"

/* ---- optimizer ----------------------------------------------------------------------------- */

void fl_model_zero_grads(fl_model *m) {
    m->be->zero(m->grads.data, m->grads.n * sizeof(float));
    m->grad_norm_valid = 0;
}

double fl_model_grad_norm(fl_model *m) {
    if (!m->grad_norm_valid) {
        m->be->sum_squares(&m->sc->grad_sumsq, m->grads.data, m->grads.n);
        fl_step_scalars sc;
        read_scalars(m, &sc);
        m->grad_norm = sqrt(sc.grad_sumsq);
        m->grad_norm_valid = 1;
    }
    return m->grad_norm;
}

/* AdamW's factors of step t into the staged scalars (torch.optim.AdamW's bias corrections, in double
 * as torch computes them on the host, rounded to f32). */
static void stage_adamw(fl_model *m, const fl_adamw_config *opt, int t) {
    fl_step_scalars *h = staged_scalars(m);
    double bias1 = 1.0 - pow(opt->beta1, t), bias2 = 1.0 - pow(opt->beta2, t);
    h->lr = opt->lr;
    h->adam_step_size = (float)(opt->lr / bias1);
    h->adam_bias2_sqrt = (float)sqrt(bias2);
}

/* The update on the backend, from the staged inputs already uploaded: the clip factor from Σg²
 * (computed here unless `have_sumsq`), AdamW, the compute copies, zeroed gradients. */
static void update_ops(fl_model *m, const fl_adamw_config *opt, int have_sumsq) {
    const fl_backend *be = m->be;
    if (!have_sumsq) be->sum_squares(&m->sc->grad_sumsq, m->grads.data, m->grads.n);
    be->grad_clip_scale(m->sc, opt->max_grad_norm);
    void *lora_w = m->lora_w == (void *)m->lora.data ? NULL : m->lora_w;
    be->adamw_update(m->lora.data, lora_w, m->adam_m.data, m->adam_v.data, m->grads.data, m->sc, opt->beta1, opt->beta2,
                     opt->eps, opt->weight_decay, m->lora.n);
    refresh_lora_copies(m, 0); /* adamw_update wrote the flat copy */
    be->zero(m->grads.data, m->grads.n * sizeof(float));
}

double fl_model_optimizer_step(fl_model *m, const fl_adamw_config *opt) {
    if (!m->runner->host) ensure_staging(m, 1, 1);
    stage_begin(m);
    int had_norm = m->grad_norm_valid;
    stage_adamw(m, opt, m->adam_step + 1);
    upload_scalars(m, offsetof(fl_step_scalars, clip_scale));
    update_ops(m, opt, had_norm);
    m->adam_step++;
    double norm = m->grad_norm;
    if (!had_norm) {
        fl_step_scalars sc;
        read_scalars(m, &sc);
        norm = sqrt(sc.grad_sumsq);
    }
    m->grad_norm_valid = 0;
    return norm;
}

/* ---- whole steps ----------------------------------------------------------------------------- */

fl_step_stats fl_model_step_stats(fl_model *m) {
    fl_step_scalars sc;
    read_scalars(m, &sc);
    return stats_of(&sc);
}

/* Stages the micro-batches of this rank's share of a step (slot i = micro-batch i) and the LM head's
 * grad_scale; the key says which run. */
static step_key stage_step(fl_model *m, const fl_batch *micro, int n_micro, int rank, int ranks) {
    step_key key;
    memset(&key, 0, sizeof key); /* padding takes part in memcmp */
    key.B = micro[0].B;
    key.T = micro[0].T;
    key.n_micro = n_micro;
    key.training = m->training;
    key.fused = m->fused;
    ensure_activations(m, key.B, key.T);
    ensure_staging(m, n_micro, (size_t)key.B * key.T);
    struct fl_step_runner *r = m->runner;
    size_t total = 0;
    for (int i = 0; i < n_micro; i++) total += counted_tokens(&micro[i]);
    fl_step_scalars *h = staged_scalars(m);
    h->grad_scale = total ? 1.0f / (float)total : 0.0f;
    for (int i = 0; i < n_micro; i++) {
        if (micro[i].B != key.B || micro[i].T != key.T) fl_die("the micro-batches of one step differ in shape");
        /* a micro-batch with no counted token has nothing to contribute */
        r->active[i] = i % ranks == rank && counted_tokens(&micro[i]) > 0;
        if (!r->active[i]) continue;
        stage_batch(m, i, &micro[i], m->micro_step + (uint64_t)i + 1);
        if (i < 64) {
            key.active |= 1ull << i;
            if (fl_model_rope_long(m, r->seq[i])) key.long_rope |= 1ull << i;
        } else {
            key.n_micro = -1; /* too many to name: never recorded */
        }
        /* Ministral 3 past its scaling period: q's factors follow this batch's positions, op by op */
        if (m->cfg.rope_llama4_beta > 0 && r->seq[i] > m->cfg.rope_llama4_original) key.n_micro = -1;
    }
    return key;
}

/* Forward, LM head and backward of staged micro-batch i (the loss accumulates in m->sc). */
static void micro_ops(fl_model *m, int i) {
    upload_slot(m, i);
    forward_layers(m, m->act.B, m->act.T);
    fl_model_lm_head_loss(m, m->act.dx_final, NULL, NULL, m->sc, m->act.x_final, m->act.targets,
                          (size_t)m->act.B * m->act.T);
    m->have_forward = 1;
    fl_model_backward(m);
}

/* The staged inputs up (the loss sums zeroed), then every staged micro-batch. */
static void accumulate_ops(fl_model *m, int n_micro) {
    upload_scalars(m, offsetof(fl_step_scalars, grad_sumsq));
    for (int i = 0; i < n_micro; i++)
        if (m->runner->active[i]) micro_ops(m, i);
}

void fl_model_accumulate(fl_model *m, const fl_batch *micro, int n_micro, int rank, int ranks) {
    if (n_micro < 1) return;
    stage_step(m, micro, n_micro, rank, ranks);
    accumulate_ops(m, n_micro);
    m->micro_step += (uint64_t)n_micro;
}

/* Every op of a staged step, in order: what a recording holds. */
static void step_ops(fl_model *m, int n_micro, const fl_adamw_config *opt) {
    accumulate_ops(m, n_micro);
    update_ops(m, opt, 0);
}

/* Records the step just run (same key, same staged addresses) for later steps to replay. */
static void record_step(fl_model *m, const step_key *key, int n_micro, const fl_adamw_config *opt) {
    struct fl_step_runner *r = m->runner;
    const fl_backend *be = m->be;
    if (!m->graphs || !be->capture_begin || r->record_failed || r->n_recordings == MAX_RECORDINGS || key->n_micro < 0)
        return;
    if (be->capture_begin() != 0) return;
    step_ops(m, n_micro, opt);
    void *rec = be->capture_end();
    if (!rec) {
        r->record_failed = 1;
        fprintf(stderr, "fastlora: recording a training step failed; every step runs op by op\n");
        return;
    }
    r->keys[r->n_recordings] = *key;
    r->recordings[r->n_recordings++] = rec;
}

fl_step_stats fl_model_train_step(fl_model *m, const fl_batch *micro, int n_micro, const fl_adamw_config *opt,
                                  double *grad_norm) {
    struct fl_step_runner *r = m->runner;
    if (n_micro < 1) fl_die("fl_model_train_step: a step needs at least one micro-batch");
    step_key key = stage_step(m, micro, n_micro, 0, 1);
    key.beta1 = opt->beta1;
    key.beta2 = opt->beta2;
    key.eps = opt->eps;
    key.weight_decay = opt->weight_decay;
    key.max_grad_norm = opt->max_grad_norm;
    stage_adamw(m, opt, m->adam_step + 1);
    void *rec = NULL;
    for (int i = 0; i < r->n_recordings && !rec; i++)
        if (!memcmp(&r->keys[i], &key, sizeof key)) rec = r->recordings[i];
    if (rec && m->be->capture_replay(rec) != 0) {
        /* stale: a backend buffer it points at was freed since it was recorded; every recording
         * made before is too. Drop them all; this step runs op by op and is recorded afresh */
        fprintf(stderr, "fastlora: a recorded step went stale (backend scratch memory grew); re-recording\n");
        drop_recordings(m);
        rec = NULL;
    } else if (rec) {
        r->pending = 1;
        r->replayed++;
    }
    if (!rec) {
        step_ops(m, n_micro, opt);
        record_step(m, &key, n_micro, opt);
    }
    m->micro_step += (uint64_t)n_micro;
    m->adam_step++;
    m->grad_norm_valid = 0;
    m->have_forward = 0;
    fl_step_scalars sc;
    read_scalars(m, &sc);
    if (grad_norm) *grad_norm = sqrt(sc.grad_sumsq);
    return stats_of(&sc);
}

int fl_model_replayed_steps(const fl_model *m) { return m->runner ? m->runner->replayed : 0; }

