/* preference_step.c — a preference step's gradients and an evaluation over pairs
 * (preference_step.h has the layout and the rules). */
#include "train/preference_step.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"

int fl_pref_trainer_init(fl_pref_trainer *t, fl_model *m, const fl_pref_loss_config *loss, double cpo_alpha,
                         const char *ref_adapter, int B, int T, int packing) {
    memset(t, 0, sizeof *t);
    t->packing = packing;
    t->row_of = fl_malloc(sizeof(int) * 2 * (size_t)B);
    t->offset_of = fl_malloc(sizeof(int) * 2 * (size_t)B);
    t->row_fill = fl_malloc(sizeof(int) * 2 * (size_t)B);
    t->loss = *loss;
    t->cpo_alpha = cpo_alpha;
    t->B = B;
    t->T = T;
    size_t N = 2 * (size_t)B * (size_t)T, n = m->lora.n;
    t->buf = fl_malloc(4 * N * sizeof(int32_t));
    t->token_loss = fl_malloc(N * sizeof(float));
    t->weight = fl_malloc(N * sizeof(float));
    if (!fl_pref_needs_reference(loss->objective)) return 0;
    t->ref_lora = fl_calloc(n + 1, sizeof(float));
    t->policy_lora = fl_malloc((n + 1) * sizeof(float));
    if (ref_adapter && !strcmp(ref_adapter, "none")) return 0; /* zeros: every LoRA branch adds nothing */
    m->be->download(t->ref_lora, m->lora.data, n * sizeof(float));
    if (!ref_adapter) return 0;
    /* the given adapter through the same loader as --adapter, then the policy back */
    memcpy(t->policy_lora, t->ref_lora, n * sizeof(float));
    int rc = fl_model_load_adapter(m, ref_adapter);
    if (!rc) m->be->download(t->ref_lora, m->lora.data, n * sizeof(float));
    m->be->upload(m->lora.data, t->policy_lora, n * sizeof(float));
    fl_model_sync_lora(m);
    if (rc) {
        char why[600];
        snprintf(why, sizeof why, "%s", fl_last_error());
        fl_pref_trainer_free(t);
        return fl_input_error("--ref-adapter %s: %s", ref_adapter, why);
    }
    return 0;
}

void fl_pref_trainer_free(fl_pref_trainer *t) {
    free(t->row_of);
    free(t->offset_of);
    free(t->row_fill);
    free(t->buf);
    free(t->token_loss);
    free(t->weight);
    free(t->ref_lora);
    free(t->policy_lora);
    memset(t, 0, sizeof *t);
}

void fl_pref_ref_cache_init(fl_pref_ref_cache *c, size_t n_pairs) {
    c->logp = fl_calloc(2 * n_pairs + 1, sizeof(double));
    c->have = fl_calloc(n_pairs + 1, 1);
}

void fl_pref_ref_cache_free(fl_pref_ref_cache *c) {
    free(c->logp);
    free(c->have);
    memset(c, 0, sizeof *c);
}

/* ---- one micro-batch's rows ---- */

/* The NLL term's weight: orpo 1 (every token of prompt + chosen), simpo cpo_alpha (chosen completion). */
static double nll_weight(const fl_pref_trainer *t) {
    return t->loss.objective == FL_PREF_ORPO ? 1.0 : t->loss.objective == FL_PREF_SIMPO ? t->cpo_alpha : 0.0;
}

/* Whether token t of side s (a target: it is predicted at position t - 1) is in the NLL term. */
static int in_nll(const fl_pref_trainer *t, const fl_pref_pair *p, int s, int tok) {
    if (s != 0 || nll_weight(t) == 0) return 0;
    return t->loss.objective == FL_PREF_ORPO ? tok >= 1 : tok >= p->prompt_len[0];
}

/* Where sequence (s, j) starts in the batch's token layout: row x T + offset. */
static size_t seq_at(const fl_pref_trainer *t, int s, int j) {
    int k = s * t->B + j;
    return (size_t)t->row_of[k] * (size_t)t->T + (size_t)t->offset_of[k];
}

/* The 2b sequences of b pairs into rows of T: packed (first fit, in order chosen 0, rejected 0,
 * chosen 1, ...: each sequence from position 0, attending within itself only), or one per row. */
static fl_batch fill_batch(fl_pref_trainer *t, const fl_pref_set *set, const uint32_t *idx, int b) {
    int B = t->B, T = t->T, rows = 0;
    int *used = t->row_fill; /* (2B) positions taken in each row */
    for (int j = 0; j < b; j++)
        for (int s = 0; s < 2; s++) {
            int n = set->pairs[idx[j]].n[s], r = 0;
            if (t->packing)
                while (r < rows && used[r] + n > T) r++;
            else
                r = rows;
            if (r == rows) used[rows++] = 0;
            t->row_of[s * B + j] = r;
            t->offset_of[s * B + j] = used[r];
            used[r] += n;
        }
    size_t N = (size_t)rows * (size_t)T, cap = 2 * (size_t)B * (size_t)T;
    int32_t *ids = t->buf, *targets = t->buf + cap, *pos = t->buf + 2 * cap, *seg = t->buf + 3 * cap;
    for (size_t k = 0; k < N; k++) { /* padding: sees itself only, no target */
        ids[k] = 0;
        targets[k] = -100;
        pos[k] = 0;
        seg[k] = (int32_t)(k % (size_t)T);
    }
    for (int j = 0; j < b; j++)
        for (int s = 0; s < 2; s++) {
            const fl_pref_pair *p = &set->pairs[idx[j]];
            size_t at = seq_at(t, s, j);
            int start = t->offset_of[s * B + j];
            for (int k = 0; k < p->n[s]; k++) {
                ids[at + k] = p->ids[s][k];
                pos[at + k] = k;
                seg[at + k] = start;
                int next = k + 1;
                int target = next < p->n[s] && (next >= p->prompt_len[s] || in_nll(t, p, s, next));
                targets[at + k] = target ? p->ids[s][next] : -100;
            }
        }
    return (fl_batch){.B = rows, .T = T, .ids = ids, .targets = targets, .pos = pos, .seg_start = seg};
}

/* Σ log p of side s's completion tokens of pair j of the micro-batch, from the token losses. */
static double completion_logp(const fl_pref_trainer *t, const fl_pref_pair *p, int s, int j) {
    double sum = 0;
    const float *l = t->token_loss + seq_at(t, s, j);
    for (int k = p->prompt_len[s]; k < p->n[s]; k++) sum -= l[k - 1];
    return sum;
}

static int completion_tokens(const fl_pref_pair *p, int s) { return p->n[s] - p->prompt_len[s]; }

/* Reference log-probs of the pairs idx[0..n) that have none yet: the reference's LoRA parameters in,
 * evaluation forwards of B pairs at a time, the policy's back. */
static void fill_reference(fl_pref_trainer *t, fl_model *m, const fl_pref_set *set, fl_pref_ref_cache *ref,
                           const uint32_t *idx, size_t n) {
    if (!t->ref_lora) return;
    uint32_t *need = fl_malloc((n + 1) * sizeof *need);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        int dup = 0;
        for (size_t j = 0; j < k; j++) dup |= need[j] == idx[i];
        if (!ref->have[idx[i]] && !dup) need[k++] = idx[i];
    }
    if (k) {
        size_t bytes = m->lora.n * sizeof(float);
        m->be->download(t->policy_lora, m->lora.data, bytes);
        m->be->upload(m->lora.data, t->ref_lora, bytes);
        fl_model_sync_lora(m);
        for (size_t at = 0; at < k; at += (size_t)t->B) {
            int b = k - at < (size_t)t->B ? (int)(k - at) : t->B;
            fl_batch batch = fill_batch(t, set, need + at, b);
            fl_model_eval_token_losses(m, &batch, t->token_loss);
            for (int j = 0; j < b; j++)
                for (int s = 0; s < 2; s++)
                    ref->logp[2 * need[at + j] + s] = completion_logp(t, &set->pairs[need[at + j]], s, j);
            for (int j = 0; j < b; j++) ref->have[need[at + j]] = 1;
        }
        m->be->upload(m->lora.data, t->policy_lora, bytes);
        fl_model_sync_lora(m);
    }
    free(need);
}

/* One micro-batch of b pairs after its forward: its metrics (means over its pairs) into *mb and, when
 * w is not NULL, each token's d(loss)/d(token loss) x scale into w. */
static void micro_batch_loss(fl_pref_trainer *t, const fl_pref_set *set, const fl_pref_ref_cache *ref,
                             const uint32_t *idx, int b, float *w, double scale, fl_pref_metrics *mb) {
    int B = t->B, T = t->T;
    memset(mb, 0, sizeof *mb);
    if (w) memset(w, 0, 2 * (size_t)B * T * sizeof(float));
    const float *chosen_loss;
    /* the NLL term, pooled over the chosen rows' tokens */
    double nll_sum = 0;
    size_t nll_n = 0;
    for (int j = 0; j < b; j++) {
        const fl_pref_pair *p = &set->pairs[idx[j]];
        chosen_loss = t->token_loss + seq_at(t, 0, j);
        for (int k = 1; k < p->n[0]; k++)
            if (in_nll(t, p, 0, k)) { nll_sum += chosen_loss[k - 1]; nll_n++; }
    }
    double coef = nll_weight(t);
    if (coef != 0) mb->nll = nll_n ? nll_sum / (double)nll_n : 0;
    for (int j = 0; j < b; j++) {
        const fl_pref_pair *p = &set->pairs[idx[j]];
        fl_pref_logps in;
        memset(&in, 0, sizeof in);
        for (int s = 0; s < 2; s++) {
            in.logp[s] = completion_logp(t, p, s, j);
            in.n_tokens[s] = completion_tokens(p, s);
            if (t->ref_lora) in.ref_logp[s] = ref->logp[2 * idx[j] + s];
            mb->n_tokens += (size_t)p->n[s];
        }
        fl_pref_pair_loss pl;
        fl_pref_pair_loss_eval(&t->loss, &in, &pl);
        int mean_logps = t->loss.objective == FL_PREF_ORPO || t->loss.objective == FL_PREF_SIMPO;
        mb->loss += pl.loss / b;
        for (int s = 0; s < 2; s++) {
            mb->reward[s] += pl.reward[s] / b;
            double n_s = in.n_tokens[s] > 1 ? in.n_tokens[s] : 1;
            mb->logp[s] += (mean_logps ? in.logp[s] / n_s : in.logp[s]) / b;
        }
        mb->accuracy += (pl.reward[0] > pl.reward[1]) / (double)b;
        mb->margin += (pl.reward[0] - pl.reward[1]) / b;
        if (t->loss.objective == FL_PREF_ORPO) {
            mb->log_odds_ratio += pl.log_sigmoid_odds / b;
            mb->log_odds_chosen += pl.log_odds / b;
        }
        if (!w) continue;
        /* token loss l = −log p: d(pair loss)/dl = −d(pair loss)/d(logp) on each completion token */
        for (int s = 0; s < 2; s++) {
            float *ws = w + seq_at(t, s, j);
            for (int k = p->prompt_len[s]; k < p->n[s]; k++) ws[k - 1] += (float)(-pl.dloss[s] / b * scale);
        }
        if (coef != 0 && nll_n)
            for (int k = 1; k < p->n[0]; k++)
                if (in_nll(t, p, 0, k)) w[seq_at(t, 0, j) + k - 1] += (float)(coef / (double)nll_n * scale);
    }
    mb->loss += coef * mb->nll;
    mb->n_pairs = (size_t)b;
}

/* out += x·mb for the averaged numbers, counts summed */
static void add_scaled(fl_pref_metrics *out, const fl_pref_metrics *mb, double x) {
    out->loss += x * mb->loss;
    out->accuracy += x * mb->accuracy;
    out->margin += x * mb->margin;
    out->nll += x * mb->nll;
    out->log_odds_ratio += x * mb->log_odds_ratio;
    out->log_odds_chosen += x * mb->log_odds_chosen;
    for (int s = 0; s < 2; s++) {
        out->reward[s] += x * mb->reward[s];
        out->logp[s] += x * mb->logp[s];
    }
    out->n_pairs += mb->n_pairs;
    out->n_tokens += mb->n_tokens;
}

void fl_pref_trainer_step(fl_pref_trainer *t, fl_model *m, const fl_pref_set *set, fl_pref_ref_cache *ref,
                          const uint32_t *idx, size_t n, fl_pref_metrics *out) {
    memset(out, 0, sizeof *out);
    fill_reference(t, m, set, ref, idx, n);
    size_t n_micro = (n + (size_t)t->B - 1) / (size_t)t->B;
    for (size_t i = 0; i < n_micro; i++) {
        size_t at = i * (size_t)t->B;
        int b = n - at < (size_t)t->B ? (int)(n - at) : t->B;
        fl_batch batch = fill_batch(t, set, idx + at, b);
        fl_model_forward_token_losses(m, &batch, t->token_loss);
        fl_pref_metrics mb;
        micro_batch_loss(t, set, ref, idx + at, b, t->weight, 1.0 / (double)n_micro, &mb);
        fl_model_weight_tokens(m, t->weight);
        fl_model_backward(m);
        add_scaled(out, &mb, 1.0 / (double)n_micro);
    }
}

void fl_pref_trainer_eval(fl_pref_trainer *t, fl_model *m, const fl_pref_set *set, fl_pref_ref_cache *ref,
                          const uint32_t *idx, size_t n, fl_pref_metrics *out) {
    memset(out, 0, sizeof *out);
    if (!n) return;
    fill_reference(t, m, set, ref, idx, n);
    for (size_t at = 0; at < n; at += (size_t)t->B) {
        int b = n - at < (size_t)t->B ? (int)(n - at) : t->B;
        fl_batch batch = fill_batch(t, set, idx + at, b);
        fl_model_eval_token_losses(m, &batch, t->token_loss);
        fl_pref_metrics mb;
        micro_batch_loss(t, set, ref, idx + at, b, NULL, 0, &mb);
        add_scaled(out, &mb, (double)b / (double)n);
    }
}
