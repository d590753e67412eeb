/* preference_step.h — one optimizer step's gradients, and an evaluation, of a preference objective
 * (dpo, ipo, orpo, simpo) over pairs, through the engine's per-token losses (engine/model.h:
 * fl_model_forward_token_losses, fl_model_weight_tokens):
 *
 *   a micro-batch of b <= B pairs is its 2b sequences packed into rows of T (first fit, in the
 *   order chosen 0, rejected 0, chosen 1, ...; at most 2b rows; packing 0: one per row), each from
 *   position 0 and attending within itself only (the packed SFT rows' segments: exact), targets
 *   the completion tokens (ORPO's chosen: every token after the first, its NLL term); the forward
 *   gives each token's loss;
 *   the host sums them into completion log-probs, evaluates the pair losses
 *   (train/preference_loss.h), and hands each token d(step loss)/d(its loss) back to the backward.
 *
 * The loss of a micro-batch is the mean of its pairs' losses (+ orpo: the NLL of its chosen rows,
 * pooled over their tokens; + simpo: cpo_alpha x the NLL of its chosen completions, pooled); the
 * step's loss and metrics are the means of its micro-batches' (TRL's Trainer under accumulation).
 * Reference log-probs (dpo, ipo) are computed once per pair, the first time a step or an
 * evaluation needs them, with the reference LoRA parameters swapped in (no dropout); they are the
 * same frozen base with another (or no) LoRA branch, never a second copy of the base weights.
 * Not the loop, data order, optimizer or metrics file (train/trainer.c).
 */
#ifndef FL_TRAIN_PREFERENCE_STEP_H
#define FL_TRAIN_PREFERENCE_STEP_H

#include <stddef.h>
#include <stdint.h>

#include "engine/model.h"
#include "train/preference_data.h"
#include "train/preference_loss.h"

typedef struct {
    double loss;
    double reward[2];       // rewards/chosen, rewards/rejected
    double accuracy;        // rewards/accuracies: r_c > r_r, strict
    double margin;          // rewards/margins
    double logp[2];         // logps/chosen, logps/rejected: sums (dpo, ipo) or per-token means (orpo, simpo), as TRL
    double nll;             // orpo, simpo: nll_loss (the pooled NLL term before its weight)
    double log_odds_ratio;  // orpo: mean logsigmoid(log-odds)
    double log_odds_chosen; // orpo: mean log-odds
    size_t n_pairs;
    size_t n_tokens;        // positions holding a real token (prompt + completion, both sides)
} fl_pref_metrics;

/* Reference log-probs of a set's pairs, filled on first use (dpo, ipo). */
typedef struct {
    double *logp;   // (2n): chosen, rejected of each pair
    uint8_t *have;  // (n)
} fl_pref_ref_cache;

typedef struct {
    fl_pref_loss_config loss;
    double cpo_alpha;       // simpo: the chosen completions' NLL weight
    int B, T;               // pairs per micro-batch, positions per row
    int packing;            // several sequences per row (else one)
    int *row_of, *offset_of, *row_fill; // (2B) the micro-batch's placement: sequence s·B + j at row, offset
    int32_t *buf;           // ids | targets | pos | seg_start, each (2B·T)
    float *token_loss, *weight; // (2B·T)
    float *ref_lora;        // host (lora.n): the reference's LoRA parameters (dpo, ipo), else NULL
    float *policy_lora;     // host (lora.n): the policy's, kept while the reference is in
} fl_pref_trainer;

/* objective, beta, simpo_gamma, cpo_alpha from the caller; the reference (dpo, ipo): ref_adapter NULL
 * = m's LoRA parameters now (the starting adapter, frozen), "none" = the base alone (zeros), else
 * that PEFT adapter folder (its shape must be m's). One line naming the folder on failure. */
int fl_pref_trainer_init(fl_pref_trainer *t, fl_model *m, const fl_pref_loss_config *loss, double cpo_alpha,
                         const char *ref_adapter, int B, int T, int packing);
void fl_pref_trainer_free(fl_pref_trainer *t);

void fl_pref_ref_cache_init(fl_pref_ref_cache *c, size_t n_pairs);
void fl_pref_ref_cache_free(fl_pref_ref_cache *c);

/* Forward + backward of the pairs idx[0..n) of set (ceil(n / B) micro-batches, in order): LoRA
 * gradients += d(step loss)/d(params); *out the step's loss and metrics. The optimizer step is the
 * caller's. */
void fl_pref_trainer_step(fl_pref_trainer *t, fl_model *m, const fl_pref_set *set, fl_pref_ref_cache *ref,
                          const uint32_t *idx, size_t n, fl_pref_metrics *out);
/* The same without gradients or dropout; every number the mean over the pairs idx[0..n). */
void fl_pref_trainer_eval(fl_pref_trainer *t, fl_model *m, const fl_pref_set *set, fl_pref_ref_cache *ref,
                          const uint32_t *idx, size_t n, fl_pref_metrics *out);

#endif
