/* run_lock.c — output locks and leftovers of dead processes (see run_lock.h). */
#include "io/run_lock.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/error.h"
#include "io/file_util.h"

/* ---- the lock file's text ------------------------------------------------------------------- */

/* "pid 4242 on node1, started 2026-12-01T21:56:27Z" from the file's text, or "" when it is empty. */
static void describe_holder(const char *text, char *out, size_t cap) {
    long pid = 0;
    char host[256] = "?", started[64] = "?", command[64] = "fastlora";
    const char *p;
    if ((p = strstr(text, "pid "))) pid = strtol(p + 4, NULL, 10);
    if ((p = strstr(text, "host "))) sscanf(p + 5, "%255s", host);
    if ((p = strstr(text, "started "))) sscanf(p + 8, "%63s", started);
    if ((p = strstr(text, "command "))) sscanf(p + 8, "%63s", command);
    if (!pid) { out[0] = 0; return; }
    snprintf(out, cap, "fastlora %s, pid %ld on %s, started %s", command, pid, host, started);
}

static void read_text(int fd, char *buf, size_t cap) {
    ssize_t n = pread(fd, buf, cap - 1, 0);
    buf[n > 0 ? n : 0] = 0;
}

static void write_holder(int fd, const char *command) {
    char host[256] = "?", when[64] = "?", text[512];
    gethostname(host, sizeof host - 1);
    host[sizeof host - 1] = 0;
    time_t t = time(NULL);
    struct tm tm;
    if (gmtime_r(&t, &tm)) strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    int n = snprintf(text, sizeof text, "pid %ld\nhost %s\nstarted %s\ncommand %s\n", (long)getpid(), host, when, command);
    if (ftruncate(fd, 0) != 0 || pwrite(fd, text, (size_t)n, 0) != n) { /* the lock holds without its text */ }
}

/* ---- taking and releasing ------------------------------------------------------------------- */

/* Whether fd is still the file at path (a holder that released in between unlinked it). */
static int still_at_path(int fd, const char *path) {
    struct stat a, b;
    return fstat(fd, &a) == 0 && lstat(path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* Test hook (tests/test_run_lock.c): hold the lock, once taken, until the file FASTLORA_TEST_LOCK_HOLD
 * names exists (at most 30 s), so a second process can meet a run that is really going. */
static void test_hold(void) {
    const char *wait_for = getenv("FASTLORA_TEST_LOCK_HOLD");
    for (int i = 0; wait_for && i < 3000 && !fl_file_exists(wait_for); i++) usleep(10000);
}

int fl_run_lock_take(fl_run_lock *lk, const char *lock_path, const char *what, const char *command, FILE *log) {
    lk->fd = -1;
    lk->path = NULL;
    for (int attempt = 0; attempt < 100; attempt++) {
        /* O_NOFOLLOW: a link planted at the lock's name is not a lock (nor written through) */
        int fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0) return fl_input_error("%s: cannot create the lock file %s: %s", what, lock_path, strerror(errno));
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            int e = errno;
            char text[512], who[400];
            read_text(fd, text, sizeof text);
            close(fd);
            if (e != EWOULDBLOCK) return fl_input_error("%s: cannot lock %s: %s", what, lock_path, strerror(e));
            describe_holder(text, who, sizeof who);
            return fl_input_error("%s is in use by %s (lock %s): wait for it to finish, or write elsewhere", what,
                                  who[0] ? who : "another fastlora process", lock_path);
        }
        if (!still_at_path(fd, lock_path)) { close(fd); continue; } /* released and unlinked meanwhile */
        char text[512], who[400];
        read_text(fd, text, sizeof text);
        describe_holder(text, who, sizeof who);
        if (who[0] && log)
            fprintf(log, "note: %s: took over the lock of %s, which is no longer running\n", what, who);
        write_holder(fd, command);
        lk->fd = fd;
        lk->path = strdup(lock_path);
        test_hold();
        return 0;
    }
    return fl_input_error("%s: the lock %s keeps changing hands; is another fastlora process starting there?", what, lock_path);
}

void fl_run_lock_release(fl_run_lock *lk) {
    if (lk->path) { /* held (a zeroed struct holds nothing: fd 0 is not ours) */
        if (still_at_path(lk->fd, lk->path)) unlink(lk->path); /* while held: see still_at_path */
        close(lk->fd);
    }
    free(lk->path);
    lk->fd = -1;
    lk->path = NULL;
}

char *fl_run_lock_path_beside(const char *path) {
    char *copy = strdup(path);
    for (size_t n = strlen(copy); n > 1 && copy[n - 1] == '/'; n--) copy[n - 1] = 0;
    char *real = realpath(copy, NULL); /* the output itself when it exists (a link to a folder: that folder) */
    char *dir, *name;
    if (real) {
        char *slash = strrchr(real, '/');
        name = strdup(slash[1] ? slash + 1 : "root");
        *slash = 0;
        dir = strdup(real[0] ? real : "/");
        free(real);
    } else {
        char *slash = strrchr(copy, '/');
        name = strdup(slash ? slash + 1 : copy);
        if (slash == copy) dir = strdup("/");
        else {
            if (slash) *slash = 0;
            dir = realpath(slash ? copy : ".", NULL);
            if (!dir) dir = strdup(slash ? copy : "."); /* a folder still to be made: its spelling */
        }
    }
    size_t cap = strlen(dir) + strlen(name) + 32;
    char *out = fl_malloc(cap);
    snprintf(out, cap, "%s/.%s.fastlora-lock", dir, name);
    free(dir);
    free(name);
    free(copy);
    return out;
}

/* ---- leftovers ------------------------------------------------------------------------------ */

int fl_pid_alive(long pid) { return pid > 0 && (kill((pid_t)pid, 0) == 0 || errno == EPERM); }

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

/* The pid in name = prefix + digits + (suffix | ""), or 0. */
static long leftover_pid(const char *name, const char *prefix, const char *suffix) {
    size_t np = strlen(prefix);
    if (strncmp(name, prefix, np) || name[np] < '0' || name[np] > '9') return 0;
    char *end;
    long pid = strtol(name + np, &end, 10);
    if (*end && (!suffix || strcmp(end, suffix))) return 0;
    return pid;
}

int fl_leftovers_clean(const char *dir, const char *prefix, const char *suffix, FILE *log) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    char *victims[64];
    long pids[64];
    int nv = 0, removed = 0;
    struct dirent *e;
    while ((e = readdir(d)) && nv < 64) {
        long pid = leftover_pid(e->d_name, prefix, suffix);
        if (pid && pid != (long)getpid() && !fl_pid_alive(pid)) {
            pids[nv] = pid;
            victims[nv++] = fl_path_join(dir, e->d_name);
        }
    }
    closedir(d);
    for (int i = 0; i < nv; i++) {
        if (nftw(victims[i], remove_entry, 16, FTW_DEPTH | FTW_PHYS) == 0 && !fl_file_exists(victims[i])) {
            removed++;
            if (log) fprintf(log, "note: removed %s, left by process %ld (no longer running)\n", victims[i], pids[i]);
        }
        free(victims[i]);
    }
    return removed;
}
