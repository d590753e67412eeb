/* run_lock.h — one process per output: an advisory lock on a run folder (train), a merged model
 * folder (merge, convert-llama2c) or a GGUF file (export), and the clean-up of what killed
 * processes of the same kind left behind.
 *
 * The lock is flock(2) on a small file that says who holds it ("pid 4242\nhost node1\nstarted
 * 2026-12-01T21:56:27Z\ncommand train\n"): the kernel releases it when its process dies, however it
 * dies, so a lock file whose lock is free is stale by construction and is taken over with a note
 * naming the dead holder. A lock held by a live process is a one-line refusal naming that process,
 * before anything is written. The holder unlinks the file when it is done; a taker re-checks after
 * locking that the file it locked is still the one at the path (a release in between would
 * otherwise let two processes hold two different files).
 *
 *     fl_run_lock lk;
 *     FL_TRY(fl_run_lock_take(&lk, "run1/.fastlora-lock", "--out run1", "train", stderr));
 *     ... write run1 ...
 *     fl_run_lock_release(&lk);
 *
 * Leftovers: fl_leftovers_clean removes entries of a folder named PREFIX<pid>[SUFFIX] whose pid is
 * not a live process on this host (staging folders of merge, temp files of export and of the
 * atomic writer), each named on the log. Not a general process registry; not for checkpoints
 * (train/checkpoint.c removes its own under the run's lock). */
#ifndef FL_RUN_LOCK_H
#define FL_RUN_LOCK_H

#include <stdio.h>

typedef struct {
    int fd;     /* -1: not held */
    char *path; /* the lock file */
} fl_run_lock;

/* Takes the lock file `lock_path` for `what` (the output as the user named it, e.g. "--out run1")
 * on behalf of `command` ("train", "merge", "export"). A free lock whose file names another
 * process is taken over with a note on log (may be NULL). Refuses, with one line naming the
 * holder, a lock held by a live process. */
int fl_run_lock_take(fl_run_lock *lk, const char *lock_path, const char *what, const char *command, FILE *log);
/* Removes the lock file and releases the lock; a no-op on a lock not held (or zeroed). */
void fl_run_lock_release(fl_run_lock *lk);
/* The lock file of an output `path` (a folder or a file that may not exist yet), kept beside it:
 * DIR/.NAME.fastlora-lock, DIR being the resolved folder of path (so every spelling of the output,
 * through links too, names one lock). Malloc'd. */
char *fl_run_lock_path_beside(const char *path);

/* Whether pid is a live process on this host (kill(pid, 0): alive, or alive under another user). */
int fl_pid_alive(long pid);
/* In folder dir: removes every entry whose name is prefix + decimal pid + (suffix or nothing after
 * it) when that pid is not alive here and is not this process (folders removed whole, links never
 * followed). Each removal is named on log: "note: removed OUT/.x.fastlora-stage-42, left by process
 * 42 (no longer running)". Returns how many were removed. */
int fl_leftovers_clean(const char *dir, const char *prefix, const char *suffix, FILE *log);

#endif
