/* preference_loss.h — the preference objectives of one pair, as TRL 1.16 computes them, from the
 * completion log-probabilities the model gives (sums over completion tokens), with the derivative
 * of the loss with respect to each sum: a completion token's log-prob gradient is weighted by it.
 *
 *   dpo    -logsigmoid(β·(Δc − Δr)),  Δ = logp − ref_logp          (DPOTrainer, loss_type sigmoid)
 *   ipo    ((Δc/|yc| − Δr/|yr|) − 1/(2β))²                           (DPOTrainer, loss_type ipo)
 *   orpo   −β·logsigmoid((āc − ār) − (log1mexp(āc) − log1mexp(ār))), ā = logp/|y|   (ORPOTrainer,
 *          plus the NLL of prompt + chosen pooled per micro-batch: the caller's)
 *   simpo  −logsigmoid(β·(āc − ār) − γ)                               (CPOTrainer, loss_type simpo,
 *          plus cpo_alpha × the completion NLL of chosen pooled per micro-batch: the caller's)
 * Rewards (TRL's rewards/chosen, rewards/rejected): β·Δ for dpo/ipo, β·ā for orpo/simpo. |y| is
 * clamped at 1 (an empty completion). Arithmetic in double; the log-sigmoid and log1mexp are the
 * stable forms.
 * Not here: the log-probs themselves (the engine), batching, the reference model.
 */
#ifndef FL_TRAIN_PREFERENCE_LOSS_H
#define FL_TRAIN_PREFERENCE_LOSS_H

typedef enum { FL_PREF_DPO, FL_PREF_IPO, FL_PREF_ORPO, FL_PREF_SIMPO } fl_pref_objective;

typedef struct {
    fl_pref_objective objective;
    double beta;        // TRL's beta (DPO 0.1, ORPO 0.1, CPO/SimPO 0.1 defaults)
    double simpo_gamma; // SimPO's target margin γ (TRL's default 0.5)
} fl_pref_loss_config;

typedef struct {
    double logp[2];     // policy: Σ log p over the completion tokens of chosen [0] and rejected [1]
    double ref_logp[2]; // reference (dpo, ipo); ignored otherwise
    int n_tokens[2];    // completion tokens of each
} fl_pref_logps;

typedef struct {
    double loss;        // the preference term of this pair (orpo: −β·logsigmoid(log-odds), the NLL apart)
    double dloss[2];    // ∂loss/∂logp[s]
    double reward[2];   // TRL's rewards/chosen, rewards/rejected
    double log_odds;    // orpo: the log-odds ratio (TRL's log_odds_chosen); 0 otherwise
    double log_sigmoid_odds; // orpo: logsigmoid(log_odds) (TRL's log_odds_ratio metric); 0 otherwise
} fl_pref_pair_loss;

/* The name of an objective ("dpo", ...), and back (-1 when unknown). */
const char *fl_pref_objective_name(fl_pref_objective o);
int fl_pref_objective_from_name(const char *name);

/* Whether the objective compares against a reference model (dpo, ipo). */
int fl_pref_needs_reference(fl_pref_objective o);

void fl_pref_pair_loss_eval(const fl_pref_loss_config *cfg, const fl_pref_logps *in, fl_pref_pair_loss *out);

#endif
