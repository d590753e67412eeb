/* preference_loss.c — dpo, ipo, orpo and simpo for one pair and their derivatives
 * (preference_loss.h has the formulas and TRL's names). */
#include "train/preference_loss.h"

#include <math.h>
#include <string.h>

static const char *const NAMES[] = {"dpo", "ipo", "orpo", "simpo"};

const char *fl_pref_objective_name(fl_pref_objective o) { return (unsigned)o < 4 ? NAMES[o] : "?"; }

int fl_pref_objective_from_name(const char *name) {
    for (int i = 0; i < 4; i++)
        if (!strcmp(name, NAMES[i])) return i;
    return -1;
}

int fl_pref_needs_reference(fl_pref_objective o) { return o == FL_PREF_DPO || o == FL_PREF_IPO; }

/* log σ(x) = −log(1 + e^{−x}), stable for both signs; σ(x) likewise. */
static double log_sigmoid(double x) { return x >= 0 ? -log1p(exp(-x)) : x - log1p(exp(x)); }
static double sigmoid(double x) { return x >= 0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x)); }

/* log(1 − e^x) for x < 0 (TRL's log1mexp): log(−expm1(x)) near 0, log1p(−e^x) far from it. */
static double log1mexp(double x) { return x > -M_LN2 ? log(-expm1(x)) : log1p(-exp(x)); }

/* d log1mexp(x)/dx = −e^x/(1 − e^x) = 1/(1 − e^{−x}) = −1/expm1(−x). */
static double dlog1mexp(double x) { return -1.0 / expm1(-x); }

void fl_pref_pair_loss_eval(const fl_pref_loss_config *cfg, const fl_pref_logps *in, fl_pref_pair_loss *out) {
    memset(out, 0, sizeof *out);
    const double beta = cfg->beta;
    double n[2], mean[2], delta[2];
    for (int s = 0; s < 2; s++) {
        n[s] = in->n_tokens[s] > 1 ? in->n_tokens[s] : 1.0;
        mean[s] = in->logp[s] / n[s];
        delta[s] = in->logp[s] - in->ref_logp[s];
    }
    switch (cfg->objective) {
    case FL_PREF_DPO: {
        double z = beta * (delta[0] - delta[1]);
        out->loss = -log_sigmoid(z);
        double g = -beta * sigmoid(-z); // ∂loss/∂Δc; ∂loss/∂Δr = −g
        out->dloss[0] = g;
        out->dloss[1] = -g;
        out->reward[0] = beta * delta[0];
        out->reward[1] = beta * delta[1];
        break;
    }
    case FL_PREF_IPO: {
        double h = delta[0] / n[0] - delta[1] / n[1], e = h - 1.0 / (2.0 * beta);
        out->loss = e * e;
        out->dloss[0] = 2.0 * e / n[0];
        out->dloss[1] = -2.0 * e / n[1];
        out->reward[0] = beta * delta[0];
        out->reward[1] = beta * delta[1];
        break;
    }
    case FL_PREF_ORPO: {
        double lo = (mean[0] - mean[1]) - (log1mexp(mean[0]) - log1mexp(mean[1]));
        out->log_sigmoid_odds = log_sigmoid(lo);
        out->loss = -beta * out->log_sigmoid_odds;
        out->log_odds = lo;
        double g = -beta * sigmoid(-lo); // ∂loss/∂lo
        out->dloss[0] = g * (1.0 - dlog1mexp(mean[0])) / n[0];
        out->dloss[1] = -g * (1.0 - dlog1mexp(mean[1])) / n[1];
        out->reward[0] = beta * mean[0];
        out->reward[1] = beta * mean[1];
        break;
    }
    case FL_PREF_SIMPO: {
        double z = beta * (mean[0] - mean[1]) - cfg->simpo_gamma;
        out->loss = -log_sigmoid(z);
        double g = -beta * sigmoid(-z);
        out->dloss[0] = g / n[0];
        out->dloss[1] = -g / n[1];
        out->reward[0] = beta * mean[0];
        out->reward[1] = beta * mean[1];
        break;
    }
    }
}
