/* run_dir.c — the output folder of a training run (see run_dir.h). */
#include "train/run_dir.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"
#include "io/file_util.h"
#include "io/path_guard.h"
#include "train/checkpoint.h"
#include "train/tfevents.h"


/* What a run writes into OUT; any of them there means OUT holds a run. */
static const char *const run_outputs[] = {"adapter_config.json", "adapter_model.safetensors", "train_config.json",
                                          "metrics.jsonl", "loss.svg", "checkpoints"};
#define N_RUN_OUTPUTS (sizeof run_outputs / sizeof run_outputs[0])

static int same_folder(const char *a, const char *b) {
    struct stat sa, sb;
    return a && b && stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* Whether OUT holds a run (some of its files) that has neither an adapter nor a checkpoint: one
 * that stopped (a kill, a NaN at the first steps) before its first checkpoint. */
static int stopped_before_first_checkpoint(const char *out) {
    int any = 0;
    for (size_t i = 0; i < N_RUN_OUTPUTS; i++) {
        char *p = fl_path_join(out, run_outputs[i]);
        any |= fl_file_exists(p);
        free(p);
    }
    char *a = fl_path_join(out, "adapter_config.json"), *b = fl_path_join(out, "adapter_model.safetensors"), *ckpt = NULL;
    int adapter = fl_file_exists(a) || fl_file_exists(b);
    free(a);
    free(b);
    int have_ckpt = !adapter && any && fl_checkpoint_find(out, &ckpt) == 0;
    free(ckpt);
    fl_clear_error();
    return any && !adapter && !have_ckpt;
}

/* An earlier run in --out is refused unless --resume continues it or --overwrite replaces it (its
 * checkpoints would otherwise outrank the new run's in rotation and in --resume). An empty folder,
 * or one with other files only, is fine. --resume continues a run in its own folder (--out is the
 * folder of the checkpoint, by device and inode), or starts a new run from the checkpoint in an
 * --out that holds no run. */
static int check_out_dir(const fl_train_options *o, int *restart) {
    *restart = 0;
    if (o->resume && o->overwrite) return fl_input_error("--resume and --overwrite: give one (continue the run, or replace it)");
    if (o->overwrite) return 0;
    /* a run killed before its first checkpoint lost nothing: the same command (or --resume of it)
     * starts it again */
    if (stopped_before_first_checkpoint(o->out) && (!o->resume || same_folder(o->resume, o->out))) {
        *restart = 1;
        return 0;
    }
    char *run_dir = NULL;
    if (o->resume) {
        char *ckpt = NULL;
        FL_TRY(fl_checkpoint_find(o->resume, &ckpt));
        run_dir = fl_checkpoint_run_dir(ckpt);
        free(ckpt);
        if (same_folder(run_dir, o->out)) { free(run_dir); return 0; }
    }
    int status = 0;
    for (size_t i = 0; i < N_RUN_OUTPUTS && !status; i++) {
        char *p = fl_path_join(o->out, run_outputs[i]);
        if (!fl_file_exists(p)) {}
        else if (!o->resume)
            status = fl_input_error("--out %s holds an earlier run (%s); continue it with --resume %s, or replace it "
                                    "with --overwrite (deletes its adapter, checkpoints and metrics)", o->out,
                                    run_outputs[i], o->out);
        else
            status = fl_input_error("--out %s holds another run (%s) than the checkpoint of --resume %s; continue that "
                                    "run in its own folder%s%s, or give an empty --out to start a new run from the "
                                    "checkpoint", o->out, run_outputs[i], o->resume, run_dir ? " --out " : "",
                                    run_dir ? run_dir : "");
        free(p);
    }
    free(run_dir);
    return status;
}

/* Rank 0 takes OUT for this run: the rules above (before anything is created), the folder, its
 * lock (a second process is refused naming the first), the rules again under the lock, and no
 * input reaching through links into what the run writes (io/path_guard.h). */
int fl_run_dir_claim(const fl_train_options *o, fl_run_lock *lock, FILE *log, int *restart) {
    struct stat st;
    if (stat(o->out, &st) != 0) FL_TRY(check_out_dir(o, restart));
    FL_TRY(fl_mkdir_p(o->out));
    char *lock_path = fl_path_join(o->out, ".fastlora-lock"), what[600];
    snprintf(what, sizeof what, "--out %s", o->out);
    int status = fl_run_lock_take(lock, lock_path, what, "train", log);
    free(lock_path);
    if (!status) status = check_out_dir(o, restart);
    const char *dirs[] = {o->model, o->adapter}, *files[] = {o->data, o->eval_data};
    const char *names[N_RUN_OUTPUTS + 1] = {0};
    for (size_t i = 0; i < N_RUN_OUTPUTS; i++) names[i] = run_outputs[i];
    if (!status) status = fl_guard_inputs("--out", o->out, names, dirs, 2, files, 2);
    if (!status && *restart)
        fprintf(log, "note: --out %s holds a run that stopped before its first checkpoint (nothing to "
                         "resume, nothing lost): starting it again\n", o->out);
    return status;
}

/* What a run writes in OUT must be replaceable, found before the run rather than when its adapter is
 * saved: files (not a FIFO, a device or a folder), checkpoints/ a folder. */
int fl_run_dir_check_files(const char *out) {
    int status = 0;
    for (size_t i = 0; i + 1 < N_RUN_OUTPUTS && !status; i++) {
        char *p = fl_path_join(out, run_outputs[i]);
        status = fl_output_file_check(p);
        free(p);
    }
    char *ckpt_root = fl_path_join(out, "checkpoints");
    struct stat st;
    if (!status && stat(ckpt_root, &st) == 0 && !S_ISDIR(st.st_mode))
        status = fl_input_error("%s: exists and is not a directory", ckpt_root);
    free(ckpt_root);
    return status;
}

/* --overwrite: the earlier run's outputs go before the new run writes any (after every input check). */
void fl_run_dir_clear(const fl_train_options *o, const char *ckpt_root) {
    fl_checkpoint_remove_all(ckpt_root);
    fl_tfevents_remove(o->out); /* an earlier --report-to tensorboard run's event files */
    for (size_t i = 0; i + 1 < N_RUN_OUTPUTS; i++) { /* the files; checkpoints/ (the last) went above */
        char *p = fl_path_join(o->out, run_outputs[i]);
        unlink(p);
        free(p);
    }
}
