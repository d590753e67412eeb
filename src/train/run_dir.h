/* run_dir.h — the output folder of a training run (OUT): who may write it and what is in it. One
 * run per folder: an earlier run is refused unless --resume continues it or --overwrite replaces
 * it; a run killed before its first checkpoint is started again; a lock keeps a second process out;
 * no input may reach through links into what the run writes. Not the files themselves (the
 * adapter, checkpoints and metrics have their own modules).
 */
#ifndef FL_TRAIN_RUN_DIR_H
#define FL_TRAIN_RUN_DIR_H

#include <stdio.h>

#include "io/run_lock.h"
#include "train/options.h"

/* Rank 0 takes OUT for this run: the rules above (before anything is created), the folder, its lock
 * (held until fl_run_lock_release), the rules again under the lock, and the inputs' links. *restart:
 * OUT holds a run that stopped before its first checkpoint (said on log), to be cleared and started
 * again. */
int fl_run_dir_claim(const fl_train_options *o, fl_run_lock *lock, FILE *log, int *restart);
/* What a run writes in OUT must be replaceable, found before the run: files, checkpoints/ a folder. */
int fl_run_dir_check_files(const char *out);
/* --overwrite (or a restart): the earlier run's outputs go, after every input check. */
void fl_run_dir_clear(const fl_train_options *o, const char *ckpt_root);

#endif
