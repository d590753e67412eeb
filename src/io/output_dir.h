/* output_dir.h — writing a whole output folder (a merged model, a converted model) as one step, and
 * the rules for where such a folder may go.
 *
 * Everything is written into a hidden staging folder and moved into place only once all of it is
 * written, so a failure part-way (a full disk, a bad tensor found late) leaves no partial output:
 *   the destination does not exist  ->  staged in PARENT/.NAME.fastlora-stage-PID, renamed to NAME
 *   it exists (empty, or --force)   ->  staged in DEST/.fastlora-stage-PID, then each file renamed
 *                                       into DEST (a file of the same name is replaced by a rename,
 *                                       never written through: links to other files stay intact)
 * The rules: one process at a time per destination (io/run_lock.h: a second one is refused naming
 * the first), the destination may not be one of the input folders (compared by device and inode,
 * so another spelling, a symlink or a bind mount of it counts too), no file of an input folder may
 * reach into it through links (io/path_guard.h: the commit would replace it), and a non-empty
 * destination needs `force`. Staging folders of killed processes are removed (with a note).
 *
 *     fl_output_dir od;
 *     const char *inputs[] = {model_dir};
 *     FL_TRY(fl_output_dir_begin(&od, out, force, inputs, 1));
 *     char *p = fl_path_join(od.stage, "config.json"); ... write p ...
 *     status ? fl_output_dir_abort(&od) : (status = fl_output_dir_commit(&od));
 *
 * Not single files (io/file_util.h: fl_atomic_file), not training runs (train/trainer.c has its own
 * --resume/--overwrite rules). */
#ifndef FL_OUTPUT_DIR_H
#define FL_OUTPUT_DIR_H

#include "io/run_lock.h"

typedef struct {
    char *dest;         /* the destination folder, as given (trailing '/' removed) */
    char *stage;        /* write the outputs here */
    int into_existing;  /* the destination existed: commit moves the files into it one by one */
    fl_run_lock lock;   /* PARENT/.NAME.fastlora-lock, held from begin to commit or abort */
    int keep_lock;      /* set before commit: the caller still works in dest, then releases od->lock */
} fl_output_dir;

/* Checks the rules, creates the staging folder (and the destination's parents). Errors name the
 * flag `--out`, the folder and what to do. */
int fl_output_dir_begin(fl_output_dir *od, const char *dest, int force, const char *const *inputs, int n_inputs);
/* Moves the staged outputs into the destination and removes the staging folder. */
int fl_output_dir_commit(fl_output_dir *od);
/* Deletes the staging folder and all in it; the destination is left as it was. */
void fl_output_dir_abort(fl_output_dir *od);

#endif
