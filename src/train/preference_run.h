/* preference_run.h — what a preference-tuning run (--objective dpo|ipo|orpo|simpo) holds beside the
 * trainer's loop: its pairs (train and eval), each epoch's order, the reference log-prob caches and
 * the step machinery (train/preference_step.h), and its metrics as metrics.jsonl names them.
 * A "row" of such a run is a pair: --batch pairs per micro-batch, the data position of a checkpoint
 * counts pairs. Not the loop (train/trainer.c).
 */
#ifndef FL_TRAIN_PREFERENCE_RUN_H
#define FL_TRAIN_PREFERENCE_RUN_H

#include <stdio.h>

#include "engine/model.h"
#include "train/metrics.h"
#include "train/options.h"
#include "train/preference_step.h"

typedef struct {
    fl_pref_objective objective;
    fl_pref_trainer trainer;
    fl_pref_set train_set, eval_set_own;
    const fl_pref_set *eval_set;
    uint32_t *train_idx, *eval_idx; // pairs of each set that train / evaluate
    size_t n_train, n_eval;
    uint32_t *order;                // (n_train) this epoch's order of train_idx
    fl_pref_ref_cache ref_train, ref_eval;
    fl_chat_template *chat;
} fl_pref_run;

/* Whether the options ask for preference tuning (--objective other than sft). */
int fl_pref_run_wanted(const fl_train_options *o);
/* Reads --data (and --eval-data or the --eval-frac split) as pairs, sets up the objective and its
 * reference from m's LoRA parameters as they are now (call before a checkpoint is loaded). Counts
 * into *n_bad; says dropped pairs on log. One line naming the file on bad input. */
int fl_pref_run_load(fl_pref_run *r, const fl_train_options *o, fl_model *m, fl_tokenizer *tok, FILE *log,
                     size_t *n_bad);
/* The order of epoch `epoch`: train_idx as it is, or shuffled by (seed, epoch). */
void fl_pref_run_epoch(fl_pref_run *r, const fl_train_options *o, uint64_t epoch);
uint64_t fl_pref_run_digest(const fl_pref_run *r);
/* The numbers of m as metrics.jsonl writes them after the fixed ones (TRL's names). */
void fl_pref_run_extra(const fl_pref_run *r, const fl_pref_metrics *pm, fl_metric_extra *x);
void fl_pref_run_free(fl_pref_run *r);

#endif
