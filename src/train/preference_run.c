/* preference_run.c — the pairs, order, reference and metrics of a preference run (preference_run.h). */
#include "train/preference_run.h"

#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "train/batch.h"
#include "train/data.h"

int fl_pref_run_wanted(const fl_train_options *o) { return o->objective && strcmp(o->objective, "sft") != 0; }

static uint32_t *all_pairs(size_t n) {
    uint32_t *idx = fl_malloc(sizeof(uint32_t) * (n + 1));
    for (size_t i = 0; i < n; i++) idx[i] = (uint32_t)i;
    return idx;
}

int fl_pref_run_load(fl_pref_run *r, const fl_train_options *o, fl_model *m, fl_tokenizer *tok, FILE *log,
                     size_t *n_bad) {
    memset(r, 0, sizeof *r);
    r->objective = (fl_pref_objective)fl_pref_objective_from_name(o->objective);
    if (!tok) return fl_input_error("%s: preference rows need the model's tokenizer (%s has none that loads)", o->data, o->model);
    fl_data_options d = fl_data_options_default();
    FL_TRY(fl_data_parse_field_map(o->fields, &d));
    d.strict = o->strict;
    d.vocab_size = m->cfg.vocab_size;
    d.log = log;
    FL_TRY(fl_data_chat_template(tok, o->chat_template, &r->chat));
    fl_pref_options po = {.chat_template = r->chat, .chat_now = (int64_t)o->chat_date, .max_length = o->seq,
                          .rules = fl_pref_rules_for(r->objective)};
    FL_TRY(fl_pref_set_load(&r->train_set, o->data, tok, &po, &d));
    *n_bad = r->train_set.n_bad;
    if (o->eval_data) {
        FL_TRY(fl_pref_set_load(&r->eval_set_own, o->eval_data, tok, &po, &d));
        *n_bad += r->eval_set_own.n_bad;
        if (!r->eval_set_own.n)
            return fl_input_error("%s: no usable preference pairs (%zu rows, %zu bad, %zu dropped: prompt fills --seq %d) "
                                  "(--eval-data)", o->eval_data, r->eval_set_own.n_rows, r->eval_set_own.n_bad,
                                  r->eval_set_own.n_dropped, o->seq);
        r->eval_set = &r->eval_set_own;
        r->train_idx = all_pairs(r->n_train = r->train_set.n);
        r->eval_idx = all_pairs(r->n_eval = r->eval_set_own.n);
    } else {
        r->eval_set = &r->train_set;
        fl_split_eval(r->train_set.n, o->eval_frac, (uint64_t)o->seed, &r->train_idx, &r->n_train, &r->eval_idx,
                      &r->n_eval);
    }
    size_t dropped = r->train_set.n_dropped + r->eval_set_own.n_dropped;
    if (dropped)
        fprintf(log, "note: %zu preference pair%s dropped: the prompt alone fills --seq %d (no completion token left "
                "to compare)\n", dropped, dropped == 1 ? "" : "s", o->seq);
    if (!r->n_train)
        return fl_input_error("%s: no usable preference pairs to train on (%zu rows, %zu bad, %zu dropped: prompt fills "
                              "--seq %d)", o->data, r->train_set.n_rows, r->train_set.n_bad, r->train_set.n_dropped, o->seq);
    fl_pref_loss_config loss = {.objective = r->objective, .beta = o->beta, .simpo_gamma = o->simpo_gamma};
    FL_TRY(fl_pref_trainer_init(&r->trainer, m, &loss, o->cpo_alpha, o->ref_adapter, o->batch, o->seq,
                                   !o->no_packing));
    fl_pref_ref_cache_init(&r->ref_train, r->train_set.n);
    fl_pref_ref_cache_init(&r->ref_eval, r->eval_set->n);
    fl_pref_run_epoch(r, o, 0);
    return 0;
}

void fl_pref_run_epoch(fl_pref_run *r, const fl_train_options *o, uint64_t epoch) {
    free(r->order);
    r->order = fl_malloc(sizeof(uint32_t) * (r->n_train + 1));
    if (o->no_shuffle || r->n_train < 2) {
        memcpy(r->order, r->train_idx, sizeof(uint32_t) * r->n_train);
        return;
    }
    uint32_t *perm = all_pairs(r->n_train);
    fl_shuffle_u32(perm, r->n_train, (uint64_t)o->seed, epoch + 1);
    for (size_t i = 0; i < r->n_train; i++) r->order[i] = r->train_idx[perm[i]];
    free(perm);
}

uint64_t fl_pref_run_digest(const fl_pref_run *r) {
    return fl_pref_set_digest(&r->eval_set_own, fl_pref_set_digest(&r->train_set, 0));
}

void fl_pref_run_extra(const fl_pref_run *r, const fl_pref_metrics *pm, fl_metric_extra *x) {
    memset(x, 0, sizeof *x);
#define PUT(label, v) (x->name[x->n] = (label), x->value[x->n++] = (v))
    PUT("rewards/chosen", pm->reward[0]);
    PUT("rewards/rejected", pm->reward[1]);
    PUT("rewards/accuracies", pm->accuracy);
    PUT("rewards/margins", pm->margin);
    PUT("logps/chosen", pm->logp[0]);
    PUT("logps/rejected", pm->logp[1]);
    if (r->objective == FL_PREF_ORPO || (r->objective == FL_PREF_SIMPO && r->trainer.cpo_alpha != 0))
        PUT("nll_loss", pm->nll);
    if (r->objective == FL_PREF_ORPO) {
        PUT("log_odds_ratio", pm->log_odds_ratio);
        PUT("log_odds_chosen", pm->log_odds_chosen);
    }
    PUT("pairs", (double)pm->n_pairs);
#undef PUT
}

void fl_pref_run_free(fl_pref_run *r) {
    fl_pref_trainer_free(&r->trainer);
    fl_pref_set_free(&r->train_set);
    fl_pref_set_free(&r->eval_set_own);
    free(r->train_idx);
    free(r->eval_idx);
    free(r->order);
    fl_pref_ref_cache_free(&r->ref_train);
    fl_pref_ref_cache_free(&r->ref_eval);
    fl_chat_template_free(r->chat);
    memset(r, 0, sizeof *r);
}
