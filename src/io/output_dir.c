/* output_dir.c — staged output folders (see output_dir.h). */
#include "io/output_dir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"
#include "io/file_util.h"
#include "io/path_guard.h"
#include "io/run_lock.h"

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

/* rm -r (links are removed, never followed) */
static void remove_tree(const char *path) { nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS); }

static void fsync_dir(const char *path) {
    int fd = open(path, O_RDONLY | O_DIRECTORY);
    if (fd >= 0) { fsync(fd); close(fd); }
}

/* The first entry of a folder other than . and .. (malloc'd), or NULL when it is empty. */
static char *first_entry(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return NULL;
    struct dirent *e;
    char *name = NULL;
    while (!name && (e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) name = strdup(e->d_name);
    closedir(d);
    return name;
}

/* Creates the parent folders of d (a destination that does not exist yet). */
static int make_parent(char *d) {
    char *slash = strrchr(d, '/');
    if (!slash || slash == d) return 0;
    *slash = 0;
    int status = fl_mkdir_p(d);
    *slash = '/';
    return status;
}

/* The rules: not an input folder (by device and inode), not reached from an input's links, and not
 * a non-empty folder without force. */
static int check_rules(const char *d, int force, const char *const *inputs, int n_inputs) {
    struct stat ds;
    if (stat(d, &ds) != 0) return 0;
    if (!S_ISDIR(ds.st_mode)) return fl_input_error("--out %s: exists and is not a folder", d);
    for (int i = 0; i < n_inputs; i++) {
        struct stat is;
        if (inputs[i] && stat(inputs[i], &is) == 0 && is.st_dev == ds.st_dev && is.st_ino == ds.st_ino)
            return fl_input_error("--out %s is the input folder %s: its files would be replaced; write to another "
                                  "folder", d, inputs[i]);
    }
    FL_TRY(fl_guard_inputs("--out", d, NULL, inputs, n_inputs, NULL, 0));
    char *entry = first_entry(d);
    int status = 0;
    if (entry && !force)
        status = fl_input_error("--out %s: the folder is not empty (it holds '%s'); give --force to write into it "
                                "(files of the same name are replaced)", d, entry);
    free(entry);
    return status;
}

/* Staging folders of merges and conversions that were killed: PARENT/.NAME.fastlora-stage-PID and
 * DEST/.fastlora-stage-PID of processes no longer running (the lock is held: none is in use). */
static void clean_stale_stages(const char *d, int exists) {
    char *slash = strrchr(d, '/');
    size_t cap = strlen(d) + 32;
    char *prefix = fl_malloc(cap), *parent = slash ? strndup(d, slash == d ? 1 : (size_t)(slash - d)) : strdup(".");
    snprintf(prefix, cap, ".%s.fastlora-stage-", slash ? slash + 1 : d);
    fl_leftovers_clean(parent, prefix, NULL, stderr);
    if (exists) fl_leftovers_clean(d, ".fastlora-stage-", NULL, stderr);
    free(prefix);
    free(parent);
}

int fl_output_dir_begin(fl_output_dir *od, const char *dest, int force, const char *const *inputs, int n_inputs) {
    memset(od, 0, sizeof *od);
    od->lock.fd = -1;
    char *d = strdup(dest);
    for (size_t n = strlen(d); n > 1 && d[n - 1] == '/'; n--) d[n - 1] = 0;
    struct stat ds;
    int status = stat(d, &ds) == 0 ? 0 : make_parent(d);
    char *lock_path = status ? NULL : fl_run_lock_path_beside(d);
    char what[600];
    snprintf(what, sizeof what, "--out %s", d);
    if (!status) status = fl_run_lock_take(&od->lock, lock_path, what, "merge", stderr);
    free(lock_path);
    if (!status) status = check_rules(d, force, inputs, n_inputs);
    if (status) { fl_run_lock_release(&od->lock); free(d); return status; }
    int exists = stat(d, &ds) == 0;
    clean_stale_stages(d, exists);

    size_t cap = strlen(d) + 64;
    od->stage = fl_malloc(cap);
    char *slash = strrchr(d, '/');
    if (exists) snprintf(od->stage, cap, "%s/.fastlora-stage-%d", d, (int)getpid());
    else if (slash) snprintf(od->stage, cap, "%.*s/.%s.fastlora-stage-%d", (int)(slash - d), d, slash + 1, (int)getpid());
    else snprintf(od->stage, cap, ".%s.fastlora-stage-%d", d, (int)getpid());
    remove_tree(od->stage); /* a leftover of an earlier process with this pid */
    if (mkdir(od->stage, 0755) != 0)
        status = fl_input_error("--out %s: cannot create %s: %s", d, od->stage, strerror(errno));
    od->dest = d;
    od->into_existing = exists;
    if (status) fl_output_dir_abort(od);
    return status;
}

/* Moves every entry of src into dst (folders merged, files replaced by rename). check_only: move
 * nothing, only find what would stop it half-way (a staged file landing on a folder, a staged folder
 * on a file). */
static int move_into(const char *src, const char *dst, int check_only) {
    DIR *d = opendir(src);
    if (!d) return fl_input_error("%s: cannot open: %s", src, strerror(errno));
    struct dirent *e;
    int status = 0;
    while (!status && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char *from = fl_path_join(src, e->d_name), *to = fl_path_join(dst, e->d_name);
        struct stat sb, st;
        int staged_dir = lstat(from, &sb) == 0 && S_ISDIR(sb.st_mode), there = lstat(to, &st) == 0;
        if (check_only && there && staged_dir != S_ISDIR(st.st_mode)) {
            status = fl_input_error(staged_dir ? "%s: exists and is not a folder" : "%s: is a folder, not a file", to);
        } else if (staged_dir) {
            if (!check_only && mkdir(to, 0755) != 0 && errno != EEXIST)
                status = fl_input_error("%s: cannot create: %s", to, strerror(errno));
            if (!status && (there || !check_only)) status = move_into(from, to, check_only);
            if (!status && !check_only) rmdir(from);
        } else if (!check_only && rename(from, to) != 0) {
            status = fl_input_error("%s: cannot move into place: %s", to, strerror(errno));
        }
        free(from);
        free(to);
    }
    closedir(d);
    if (!status && !check_only) fsync_dir(dst);
    return status;
}

int fl_output_dir_commit(fl_output_dir *od) {
    int status = 0;
    if (od->into_existing) {
        status = move_into(od->stage, od->dest, 1);
        if (!status) status = move_into(od->stage, od->dest, 0);
    } else if (rename(od->stage, od->dest) != 0) {
        status = fl_input_error("--out %s: cannot move the finished folder into place: %s", od->dest, strerror(errno));
    } else {
        char *parent = fl_path_join(od->dest, "..");
        fsync_dir(parent);
        free(parent);
    }
    if (status) {
        fl_output_dir_abort(od);
        return status;
    }
    rmdir(od->stage); /* empty after move_into; gone after the rename */
    free(od->stage);
    free(od->dest);
    fl_run_lock lock = od->lock;
    int keep = od->keep_lock;
    memset(od, 0, sizeof *od);
    od->lock = lock;
    if (!keep) fl_run_lock_release(&od->lock);
    return 0;
}

void fl_output_dir_abort(fl_output_dir *od) {
    /* the error names a file in the staging folder, which is about to go: name the destination */
    const char *msg = fl_last_error();
    const char *at = od->stage && od->dest && msg ? strstr(msg, od->stage) : NULL;
    if (at) {
        char *copy = strdup(msg);
        size_t pre = (size_t)(at - msg);
        fl_fail(FL_ERR_INPUT, "%.*s%s%s (--out %s left as it was)", (int)pre, copy, od->dest,
                copy + pre + strlen(od->stage), od->dest);
        free(copy);
    }
    if (od->stage) remove_tree(od->stage);
    free(od->stage);
    free(od->dest);
    fl_run_lock_release(&od->lock);
    memset(od, 0, sizeof *od);
    od->lock.fd = -1;
}
