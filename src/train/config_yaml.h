/* config_yaml.h — `fastlora train --config run.yaml` (or .yml): YAML config files through libyaml.
 *
 * Two kinds of file, told apart by their keys:
 *   - ours: the keys are fastlora's option names (`-` or `_`), as in a JSON config; a list value
 *     is joined with commas (`targets: [q, v]` is `--targets q,v`);
 *   - Axolotl's: a file with any of base_model, datasets, sequence_len, micro_batch_size,
 *     learning_rate or lora_r. Its keys are mapped onto our options (docs/TRAINING.md has the
 *     table); unset keys take Axolotl's defaults (sequence_len 512, micro_batch_size 1,
 *     sample_packing off, seed 42). A key fastlora does not implement is refused, or — only
 *     where ignoring it cannot change the adapter trained (wandb_*, flash_attention, ...) —
 *     ignored, with one line saying so on stderr.
 * Every error is one line naming the file, the line and the key: `run.yaml:12: lora_r: ...`.
 * Not the option table (options.h) nor its checks after loading (fl_train_options_validate).
 */
#ifndef FL_TRAIN_CONFIG_YAML_H
#define FL_TRAIN_CONFIG_YAML_H

#include <stddef.h>
#include <stdio.h>

#include "train/options.h"

/* Applies the YAML file at `path` over *o. Notes about ignored keys go to `notes` (NULL: stderr). */
int fl_train_options_load_yaml(fl_train_options *o, const char *path);
/* The same from bytes in memory (the fuzz harness); `path` only names them in messages. */
int fl_train_options_load_yaml_text(fl_train_options *o, const char *path, const char *text, size_t len, FILE *notes);

#endif
