/* checkpoint.h — training checkpoints: everything a run needs to continue bit for bit.
 *
 * OUT/checkpoints/step-00000100/
 *   adapter_config.json, adapter_model.safetensors   the PEFT adapter at that step (loads in PEFT)
 *   optimizer.safetensors                            AdamW moments "adam_m", "adam_v" (F32, flat, the
 *                                                    engine's LoRA layout, lora/lora.h)
 *   trainer_state.json                               step, adam_step, micro_step (dropout stream),
 *                                                    data position (epoch, row), tokens seen
 * Written into OUT/checkpoints/.tmp-step-XXXXXXXX-PID (each file fsynced), then renamed: a crash or
 * kill -9 at any moment leaves either the complete new checkpoint or none, and the previous ones
 * untouched. trainer_state.json is written last, so a folder without it is never used. After a
 * save, only the last `keep` step-* folders remain. Not the metrics (train/metrics.h).
 */
#ifndef FL_TRAIN_CHECKPOINT_H
#define FL_TRAIN_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "engine/model.h"

typedef struct {
    int step;             /* optimizer steps done */
    int adam_step;
    uint64_t micro_step;
    uint64_t epoch, row;  /* data position: next row of that epoch */
    uint64_t tokens;      /* target tokens trained so far */
    uint64_t n_params;    /* LoRA parameter count (a consistency check) */
    uint64_t seed;
} fl_train_state;

/* Saves a checkpoint of m and st under root (OUT/checkpoints); *saved (malloc'd, may be NULL) gets
 * its folder. crash_test: raise SIGKILL in the middle of the write (tests). */
int fl_checkpoint_save(const char *root, const fl_model *m, const fl_train_state *st, const char *base_name, int keep,
                       int crash_test, char **saved);
/* Loads a checkpoint folder into m (adapter + moments + step counters) and *st. The checkpoint's
 * LoRA config must equal m->lora_cfg. */
int fl_checkpoint_load(const char *dir, fl_model *m, fl_train_state *st);
/* `dir` itself when it is a checkpoint, else the latest complete one in dir/checkpoints. */
int fl_checkpoint_find(const char *dir, char **out);

#endif
