/* checkpoint.h — training checkpoints: everything a run needs to continue bit for bit.
 *
 * OUT/checkpoints/step-00000100/
 *   adapter_config.json, adapter_model.safetensors   the PEFT adapter at that step (loads in PEFT)
 *   optimizer.safetensors                            AdamW moments "adam_m", "adam_v" (F32, flat, the
 *                                                    engine's LoRA layout, lora/lora.h)
 *   trainer_state.json                               step, adam_step, micro_step (dropout stream),
 *                                                    data position (epoch, row), tokens seen, rows
 *                                                    per step and ranks
 * Written into OUT/checkpoints/.tmp-step-XXXXXXXX-PID (each file fsynced), then renamed: a crash or
 * kill -9 at any moment leaves either the complete new checkpoint or none, and the previous ones
 * untouched. trainer_state.json is written last, so a folder without it is never used. After a
 * save, only the last `keep` step-* folders remain: each older one is first renamed to a hidden
 * .old-step-* name, then deleted, so a kill during the rotation never leaves a partial step-*
 * folder (resume lists step-* names only; the next save removes .tmp-* and .old-* leftovers).
 * Not the metrics (train/metrics.h).
 */
#ifndef FL_TRAIN_CHECKPOINT_H
#define FL_TRAIN_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "engine/model.h"

typedef struct {
    int step;             /* optimizer steps done */
    int adam_step;
    uint64_t micro_step;
    uint64_t epoch, row;  /* data position: next row of that epoch */
    uint64_t tokens;      /* target tokens trained so far */
    uint64_t n_params;    /* LoRA parameter count (a consistency check) */
    uint64_t seed;
    uint64_t rows_per_step; /* --batch x --grad-accum x ranks (0: a checkpoint from before it was recorded) */
    uint64_t world_size;    /* ranks of the run that wrote it (informative) */
    /* what the run depends on (train/run_inputs.h; 0 / "": not recorded, an older checkpoint) */
    uint64_t data_digest, weights_digest;
    char options[2048];     /* "name=value\n" of the math-changing options */
} fl_train_state;

/* Test hooks of fl_checkpoint_save: SIGKILL itself in the middle of writing the checkpoint, or of
 * deleting a checkpoint that rotated out. */
enum { FL_CKPT_CRASH_IN_WRITE = 1, FL_CKPT_CRASH_IN_ROTATION = 2 };

/* Saves a checkpoint of m and st under root (OUT/checkpoints); *saved (malloc'd, may be NULL) gets
 * its folder. crash_test: 0, or one of the hooks above. */
int fl_checkpoint_save(const char *root, const fl_model *m, const fl_train_state *st, const char *base_name, int keep,
                       int crash_test, char **saved);
/* Loads a checkpoint folder into m (adapter + moments + step counters) and *st. The checkpoint's
 * LoRA config must equal m->lora_cfg. */
int fl_checkpoint_load(const char *dir, fl_model *m, fl_train_state *st);
/* `dir` itself when it is a checkpoint, else the latest complete one in dir/checkpoints. */
int fl_checkpoint_find(const char *dir, char **out);
/* Deletes every checkpoint under root (step-*, abandoned branches and leftovers), each renamed aside
 * first, then root itself when that leaves it empty (--overwrite). */
void fl_checkpoint_remove_all(const char *root);
/* The run folder a checkpoint folder belongs to: RUN for RUN/checkpoints/step-N (malloc'd, resolved
 * through symlinks), NULL for a checkpoint kept anywhere else. */
char *fl_checkpoint_run_dir(const char *ckpt_dir);
/* Resuming step `step` of the run under root: every later step-* folder (a branch the resumed run
 * replaces) is renamed to .abandoned-step-N (resume and rotation never read it; nothing is deleted),
 * each named on log. */
int fl_checkpoint_abandon_after(const char *root, int step, FILE *log);

#endif
