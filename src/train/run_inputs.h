/* run_inputs.h — what a checkpoint depends on, so that --resume notices when it changed: a digest
 * of the documents the run read (token ids and loss masks of --data and --eval-data: the file
 * cut, shuffled, replaced or re-tokenized all change it), a digest of the base weights
 * (model/weights.h: headers and a spread sample of every tensor), and the options that change
 * the math (lr, schedule, seq, dropout, eval split, ...; not the run's length, the output, logging
 * or checkpoint cadence). Written into trainer_state.json; a resume that differs is refused naming what changed,
 * or, for options the user names with --allow-changed, accepted with a note (the flag is recorded
 * in train_config.json). Not the LoRA shape, seed and rows per step (train/trainer.c checks them). */
#ifndef FL_TRAIN_RUN_INPUTS_H
#define FL_TRAIN_RUN_INPUTS_H

#include <stdint.h>
#include <stdio.h>

#include "train/checkpoint.h"
#include "train/data.h"
#include "train/options.h"

/* FNV-1a over every document's ids and masks (n_docs first), continuing from h (0: start). */
uint64_t fl_run_inputs_data_digest(const fl_dataset *ds, uint64_t h);
/* "name=value\n" for each math-changing option of o, into out (cap bytes). */
void fl_run_inputs_options(const fl_train_options *o, char *out, size_t cap);
/* The checkpoint `dir` (state `was`) against this run (`now`, its options o): differences outside
 * o->allow_changed are one error line naming them; allowed ones a note on log. A checkpoint that
 * recorded nothing (an older build) is not compared. */
int fl_run_inputs_compare(const char *dir, const fl_train_state *was, const fl_train_state *now,
                          const fl_train_options *o, FILE *log);

#endif
