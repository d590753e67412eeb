/* path_guard.h — an output may not be reached from an input: before a command writes (or deletes)
 * in an output folder, every input file is followed through its chain of symbolic links, and one
 * whose chain passes through that folder stops the command with one line naming both. A write
 * there would change the input (`M/model.safetensors -> OUT/model.safetensors`: merge's rename
 * would make M's weights the merged ones), a clean-up there would delete it. A hard link needs no
 * check: outputs are renamed into place and clean-ups unlink names, so the other name keeps the
 * input's bytes.
 *
 * Not the rule that an output may not BE an input folder (io/output_dir.c) nor the atomic writer's
 * rule that a link at an output path is replaced, never written through (io/file_util.h). */
#ifndef FL_PATH_GUARD_H
#define FL_PATH_GUARD_H

/* Checks every regular file (through links) of each folder in input_dirs (and its original/
 * subfolder, where Llama-3 keeps tokenizer.model) and each path in input_files against folder
 * dest, which may not exist yet (nothing to check then). `flag` names dest for the message
 * ("--out"). `names` (NULL-terminated, or NULL for every entry): the entries of dest the command
 * writes or deletes, a folder among them covering all under it ("checkpoints"). NULL entries of
 * the input lists are skipped.
 *     const char *dirs[] = {model_dir, adapter_dir};
 *     FL_TRY(fl_guard_inputs("--out", out, NULL, dirs, 2, NULL, 0)); */
int fl_guard_inputs(const char *flag, const char *dest, const char *const *names, const char *const *input_dirs,
                    int n_dirs, const char *const *input_files, int n_files);

/* Whether path, followed link by link (at most 40 hops), is at some hop at or under folder dest,
 * below one of names (NULL: anywhere); *via (malloc'd, may be NULL) gets that hop's path. */
int fl_path_passes_through(const char *path, const char *dest, const char *const *names, char **via);

#endif
