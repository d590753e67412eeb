/* test_preference_loss.c — dpo, ipo, orpo and simpo for single pairs against TRL 1.16's own code
 * (tests/fixtures/pref/losses.json, tools/make_preference_loss_fixtures.py: DPOTrainer._compute_loss,
 * ORPOTrainer.odds_ratio_loss, CPOTrainer.cpo_loss, gradients by autograd, all in float64): the
 * loss, ∂loss/∂(Σ completion log-probs) of each side, TRL's rewards and, for dpo/ipo, the margins
 * and accuracies it logs. Both sides compute in double with the same formulas in a different
 * order, so the bound is 1e-9 relative to max(1, |value|) (a few hundred ulps of cancellation in
 * log-sigmoid and log1mexp). ORPO is the exception: TRL casts its inputs to float32
 * (odds_ratio_loss's .float()), so its values carry float32 rounding through ~8 operations and
 * log1mexp (conditioned ≤ 1/|log(1 − e^ā)| ≈ 7 for ā ≥ −1e-3 as drawn): 8 · 7 · 2^-24 ≈ 3.3e-6;
 * measured 2e-8. Plus central finite differences of every derivative, step h = 1e-5·min(1, |x|)
 * (the loss depends on x through β·x and x/n, so its curvature does not grow with |x|; near 0,
 * log1mexp's does, hence the min): truncation h²·|f'''|/6 ≤ 1e-9 of the derivative, rounding
 * 1e-16·|loss|/h ≤ 1e-9; bound 1e-6 of max(1e-3, |derivative|).
 */
#include "test.h"

#include "train/preference_loss.h"

#include <jansson.h>
#include <math.h>
#include <string.h>

static int close_to(double got, double want, double rel) { return fabs(got - want) <= rel * fmax(1.0, fabs(want)); }

static double metric(json_t *c, const char *key) { return json_real_value(json_object_get(json_object_get(c, "metrics"), key)) +
                                                          (double)json_integer_value(json_object_get(json_object_get(c, "metrics"), key)); }

TEST(preference_losses_match_trl) {
    json_error_t err;
    json_t *root = json_load_file("tests/fixtures/pref/losses.json", 0, &err);
    CHECK_MSG(root != NULL, "losses.json: %s", err.text);
    if (!root) return;
    json_t *cases = json_object_get(root, "cases");
    int seen[4] = {0};
    for (size_t i = 0; i < json_array_size(cases); i++) {
        json_t *c = json_array_get(cases, i);
        int obj = fl_pref_objective_from_name(json_string_value(json_object_get(c, "objective")));
        CHECK(obj >= 0);
        if (obj < 0) continue;
        seen[obj]++;
        fl_pref_loss_config cfg = {.objective = (fl_pref_objective)obj, .beta = json_number_value(json_object_get(c, "beta")),
                                   .simpo_gamma = json_number_value(json_object_get(c, "simpo_gamma"))};
        fl_pref_logps in;
        for (int s = 0; s < 2; s++) {
            in.logp[s] = json_number_value(json_array_get(json_object_get(c, "logp"), (size_t)s));
            in.ref_logp[s] = json_number_value(json_array_get(json_object_get(c, "ref_logp"), (size_t)s));
            in.n_tokens[s] = (int)json_integer_value(json_array_get(json_object_get(c, "n_tokens"), (size_t)s));
        }
        fl_pref_pair_loss out;
        fl_pref_pair_loss_eval(&cfg, &in, &out);
        double tol = cfg.objective == FL_PREF_ORPO ? 3.3e-6 : 1e-9;
        double want = json_number_value(json_object_get(c, "loss"));
        CHECK_MSG(close_to(out.loss, want, tol), "case %zu (%s, beta %g): loss %.17g, TRL %.17g", i, fl_pref_objective_name(cfg.objective),
                  cfg.beta, out.loss, want);
        for (int s = 0; s < 2; s++) {
            double g = json_number_value(json_array_get(json_object_get(c, "dloss"), (size_t)s));
            CHECK_MSG(close_to(out.dloss[s], g, tol), "case %zu (%s): dloss[%d] %.17g, TRL %.17g", i,
                      fl_pref_objective_name(cfg.objective), s, out.dloss[s], g);
            json_t *r = json_object_get(c, "reward");
            double rw = r ? json_number_value(json_array_get(r, (size_t)s)) : metric(c, s ? "rewards/rejected" : "rewards/chosen");
            CHECK_MSG(close_to(out.reward[s], rw, tol), "case %zu (%s): reward[%d] %.17g, TRL %.17g", i,
                      fl_pref_objective_name(cfg.objective), s, out.reward[s], rw);
            /* finite differences of the derivative */
            double h = 1e-5 * fmin(1.0, fabs(in.logp[s]));
            fl_pref_logps up = in, down = in;
            up.logp[s] += h;
            down.logp[s] -= h;
            fl_pref_pair_loss lu, ld;
            fl_pref_pair_loss_eval(&cfg, &up, &lu);
            fl_pref_pair_loss_eval(&cfg, &down, &ld);
            double fd = (lu.loss - ld.loss) / (2 * h);
            CHECK_MSG(fabs(fd - out.dloss[s]) <= 1e-6 * fmax(1e-3, fabs(out.dloss[s])), "case %zu (%s): dloss[%d] %.10g, finite differences %.10g",
                      i, fl_pref_objective_name(cfg.objective), s, out.dloss[s], fd);
        }
        if (json_object_get(c, "metrics")) {
            CHECK(close_to(out.reward[0] - out.reward[1], metric(c, "rewards/margins"), 1e-9));
            CHECK_EQ_INT(out.reward[0] > out.reward[1], metric(c, "rewards/accuracies") > 0.5);
        }
        if (cfg.objective == FL_PREF_ORPO)
            CHECK(close_to(out.log_odds, json_number_value(json_object_get(c, "log_odds")), tol));
    }
    printf("    dpo %d, ipo %d, orpo %d, simpo %d pairs\n", seen[0], seen[1], seen[2], seen[3]);
    for (int k = 0; k < 4; k++) CHECK_MSG(seen[k] >= 40, "objective %d: only %d cases", k, seen[k]);
    CHECK(fl_pref_needs_reference(FL_PREF_DPO) && fl_pref_needs_reference(FL_PREF_IPO) && !fl_pref_needs_reference(FL_PREF_ORPO) &&
          !fl_pref_needs_reference(FL_PREF_SIMPO));
    CHECK_EQ_INT(fl_pref_objective_from_name("kto"), -1);
    json_decref(root);
}
