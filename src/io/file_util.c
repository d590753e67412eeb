/* file_util.c — atomic writes, path helpers and the one input-file reader (see file_util.h). */
#include "io/file_util.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"
#include "io/run_lock.h"

static const char *not_regular(mode_t mode);

int fl_output_file_check(const char *path) {
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) return fl_input_error("cannot write %s: %s", path, not_regular(st.st_mode));
    /* the temp file is created in the file's folder: it must be writable (a folder still to be made is not checked) */
    char *dir = strdup(path), *slash = strrchr(dir, '/');
    if (slash) slash == dir ? (void)(slash[1] = 0) : (void)(*slash = 0);
    int status = 0;
    if (access(slash ? dir : ".", W_OK | X_OK) != 0 && errno != ENOENT)
        status = fl_input_error("cannot write %s: %s", path, strerror(errno));
    free(dir);
    return status;
}

/* Leftovers of this path's atomic writes by processes that died (PATH.tmp.PID): removed, with a note. */
static void clean_dead_temps(const char *path) {
    char *dir = strdup(path), *slash = strrchr(dir, '/');
    const char *name = slash ? slash + 1 : path;
    size_t cap = strlen(name) + 8;
    char *prefix = fl_malloc(cap);
    snprintf(prefix, cap, "%s.tmp.", name);
    if (slash) slash == dir ? (void)(slash[1] = 0) : (void)(*slash = 0);
    fl_leftovers_clean(slash ? dir : ".", prefix, NULL, stderr);
    free(prefix);
    free(dir);
}

int fl_atomic_file_open(fl_atomic_file *f, const char *path) {
    memset(f, 0, sizeof *f);
    FL_TRY(fl_output_file_check(path));
    clean_dead_temps(path);
    /* the temp file is made beside PATH itself and renamed onto it: a symbolic link at PATH is
     * replaced, never written through (the file it names may be an input) */
    f->final_path = strdup(path);
    size_t n = strlen(f->final_path) + 32;
    f->temp_path = fl_malloc(n);
    snprintf(f->temp_path, n, "%s.tmp.%d", f->final_path, (int)getpid());
    unlink(f->temp_path);   /* O_EXCL: never open an existing name (a FIFO there would block) */
    int fd = open(f->temp_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
    f->fp = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (!f->fp) {
        if (fd >= 0) close(fd);
        int status = fl_input_error("%s: cannot create: %s", f->temp_path, strerror(errno));
        free(f->final_path);
        free(f->temp_path);
        memset(f, 0, sizeof *f);
        return status;
    }
    return 0;
}

/* Test hook (tests/test_resume_inputs.c): a process killed between writing an output's temporary
 * file and renaming it, as a signal or a power cut would. FASTLORA_TEST_KILL_BEFORE_RENAME=SUFFIX
 * kills it (SIGKILL) at the first commit of a path ending in SUFFIX. */
static void test_kill_before_rename(const char *path) {
    const char *suffix = getenv("FASTLORA_TEST_KILL_BEFORE_RENAME");
    size_t n = suffix ? strlen(suffix) : 0, len = strlen(path);
    if (n && len >= n && !strcmp(path + len - n, suffix)) raise(SIGKILL);
}

int fl_atomic_file_commit(fl_atomic_file *f) {
    int status = 0;
    if (fflush(f->fp) != 0 || ferror(f->fp) || fsync(fileno(f->fp)) != 0)
        status = fl_input_error("%s: write failed: %s", f->final_path, strerror(errno));
    if (!status) test_kill_before_rename(f->final_path);
    if (fclose(f->fp) != 0 && !status) status = fl_input_error("%s: close failed: %s", f->final_path, strerror(errno));
    if (!status && rename(f->temp_path, f->final_path) != 0)
        status = fl_input_error("%s: rename failed: %s", f->final_path, strerror(errno));
    if (status) unlink(f->temp_path);
    free(f->final_path);
    free(f->temp_path);
    memset(f, 0, sizeof *f);
    return status;
}

void fl_atomic_file_abort(fl_atomic_file *f) {
    if (f->fp) fclose(f->fp);
    if (f->temp_path) unlink(f->temp_path);
    free(f->final_path);
    free(f->temp_path);
    memset(f, 0, sizeof *f);
}

int fl_write_file_atomic(const char *path, const void *data, size_t len) {
    fl_atomic_file f;
    FL_TRY(fl_atomic_file_open(&f, path));
    fwrite(data, 1, len, f.fp);
    return fl_atomic_file_commit(&f);
}

char *fl_path_join(const char *dir, const char *name) {
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = fl_malloc(n);
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

int fl_file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

int fl_mkdir_p(const char *path) {
    char *copy = strdup(path);
    for (char *p = copy + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        mkdir(copy, 0755);
        *p = '/';
    }
    int rc = mkdir(copy, 0755), e = errno;
    free(copy);
    struct stat st;
    if (rc != 0 && e == EEXIST && (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)))
        return fl_input_error("%s: exists and is not a directory", path);
    if (rc != 0 && e != EEXIST) return fl_input_error("%s: cannot create directory: %s", path, strerror(e));
    return 0;
}

/* ---- reading input files -------------------------------------------------------------------- */

int fl_read_line(FILE *f, char **buf, size_t *cap, size_t *len, size_t max) {
    int c, any = 0;
    *len = 0;
    while ((c = getc(f)) != EOF && c != '\n') {
        any = 1;
        if (*len == max) return -1;
        if (*len + 2 > *cap) {
            *cap = *cap ? 2 * *cap : 4096;
            char *nb = realloc(*buf, *cap);
            if (!nb) fl_die("out of memory reading a line of %zu bytes", *len);
            *buf = nb;
        }
        (*buf)[(*len)++] = (char)c;
    }
    if (*buf) (*buf)[*len] = 0;
    return any || c == '\n';
}

#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)

static const struct {
    uint64_t limit;
    const char *noun;
} kinds[] = {
    [FL_FILE_CONFIG] = {16 * MiB, "a JSON config"},
    [FL_FILE_TOKENIZER] = {256 * MiB, "a tokenizer file"},
    [FL_FILE_TABLE] = {16 * MiB, "a catalog or records file"},
    [FL_FILE_TEXT] = {1 * GiB, "a text file"},
    [FL_FILE_DATASET] = {64 * GiB, "a dataset"},
    [FL_FILE_WEIGHTS] = {UINT64_MAX, "a weights file"},
};

uint64_t fl_file_limit(fl_file_kind kind) { return kinds[kind].limit; }

/* "16 MiB", "9.3 GiB", "812 bytes" */
static const char *human_size(uint64_t n, char *buf, size_t cap) {
    if (n < 10 * 1024) snprintf(buf, cap, "%llu bytes", (unsigned long long)n);
    else if (n < MiB) snprintf(buf, cap, "%.1f KiB", (double)n / 1024);
    else if (n < GiB) snprintf(buf, cap, "%.1f MiB", (double)n / MiB);
    else snprintf(buf, cap, "%.1f GiB", (double)n / GiB);
    return buf;
}

static int too_large(const char *path, fl_file_kind kind, uint64_t size) {
    char have[32], limit[32];
    return fl_input_error("%s: %s is over the %s limit for %s", path, human_size(size, have, sizeof have),
                          human_size(kinds[kind].limit, limit, sizeof limit), kinds[kind].noun);
}

static const char *not_regular(mode_t mode) {
    return S_ISDIR(mode)    ? "Is a directory"
         : S_ISFIFO(mode)   ? "a FIFO, not a regular file"
         : S_ISCHR(mode)    ? "a character device, not a regular file"
         : S_ISBLK(mode)    ? "a block device, not a regular file"
         : S_ISSOCK(mode)   ? "a socket, not a regular file"
                            : "not a regular file";
}

int fl_file_open_read(const char *path, fl_file_kind kind, int *fd_out, uint64_t *size) {
    *fd_out = -1;
    /* O_NONBLOCK: opening a FIFO without a writer returns at once instead of waiting for one. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return fl_input_error("cannot read %s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return fl_input_error("cannot read %s: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return fl_input_error("cannot read %s: %s", path, not_regular(st.st_mode));
    }
    if ((uint64_t)st.st_size > kinds[kind].limit) {
        close(fd);
        return too_large(path, kind, (uint64_t)st.st_size);
    }
    int flags = fcntl(fd, F_GETFL);
    if (flags >= 0) fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    *fd_out = fd;
    *size = (uint64_t)st.st_size;
    return 0;
}

int fl_file_check_read(const char *path, fl_file_kind kind) {
    int fd;
    uint64_t size;
    FL_TRY(fl_file_open_read(path, kind, &fd, &size));
    close(fd);
    return 0;
}

int fl_file_fopen_read(const char *path, fl_file_kind kind, FILE **out) {
    int fd;
    uint64_t size;
    *out = NULL;
    FL_TRY(fl_file_open_read(path, kind, &fd, &size));
    *out = fdopen(fd, "rb");
    if (!*out) {
        int e = errno;
        close(fd);
        return fl_input_error("cannot read %s: %s", path, strerror(e));
    }
    return 0;
}

int fl_file_read_all(const char *path, fl_file_kind kind, char **data, size_t *len) {
    int fd;
    uint64_t size;
    *data = NULL;
    *len = 0;
    FL_TRY(fl_file_open_read(path, kind, &fd, &size));
    if (size > SIZE_MAX - 2) { close(fd); return too_large(path, kind, size); }
    /* The stat size is a hint (files under /proc say 0, a file may grow while read): read until EOF,
     * one byte past the expected end so that growth is seen, and stop at the limit. */
    size_t cap = (size_t)size + 2, n = 0;
    char *buf = fl_malloc(cap);
    for (;;) {
        if (n + 1 == cap) {
            if ((uint64_t)n > kinds[kind].limit) break;
            cap = cap < SIZE_MAX / 2 ? cap * 2 : SIZE_MAX;
            char *nb = realloc(buf, cap);
            if (!nb) fl_die("out of memory reading %s (%zu bytes)", path, cap);
            buf = nb;
        }
        ssize_t got = read(fd, buf + n, cap - 1 - n);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            int e = errno;
            close(fd);
            free(buf);
            return fl_input_error("cannot read %s: %s", path, strerror(e));
        }
        if (got == 0) break;
        n += (size_t)got;
    }
    close(fd);
    if ((uint64_t)n > kinds[kind].limit) { free(buf); return too_large(path, kind, n); }
    buf[n] = 0;
    *data = buf;
    *len = n;
    return 0;
}

/* An integer literal past int64 (transformers writes model_max_length = int(1e30) as
 * 1000000000000000019884624838656) becomes a real: each integer token outside strings with more
 * than 18 digits gets ".0" appended, so it reads as the double Python's float() of it gives. Returns
 * a new buffer, or NULL when there is none. */
static char *big_integers_as_reals(const char *text, size_t len, size_t *out_len) {
    size_t extra = 0;
    int in_string = 0;
    for (size_t pass = 0; pass < 2; pass++) {
        char *out = pass ? fl_malloc(len + extra + 1) : NULL;
        size_t o = 0;
        in_string = 0;
        for (size_t i = 0; i < len;) {
            char c = text[i];
            if (in_string) {
                if (c == '\\' && i + 1 < len) { if (out) { out[o] = c; out[o + 1] = text[i + 1]; } o += 2; i += 2; continue; }
                if (c == '"') in_string = 0;
            } else if (c == '"') {
                in_string = 1;
            } else if (((c >= '0' && c <= '9') || c == '-') && (i == 0 || !strchr("0123456789.eE+-", text[i - 1]))) {
                size_t j = i + (c == '-'), digits = j;
                while (j < len && text[j] >= '0' && text[j] <= '9') j++;
                int integer = j >= len || !strchr(".eE", text[j]);
                if (out) memcpy(out + o, text + i, j - i);
                o += j - i;
                if (integer && j - digits > 18) {
                    if (out) memcpy(out + o, ".0", 2);
                    o += 2;
                    if (!pass) extra += 2;
                }
                i = j;
                continue;
            }
            if (out) out[o] = c;
            o++;
            i++;
        }
        if (pass) {
            out[o] = 0;
            *out_len = o;
            return out;
        }
        if (!extra) return NULL;
    }
    return NULL;
}

int fl_file_load_json(const char *path, fl_file_kind kind, size_t flags, json_t **out) {
    char *text;
    size_t len;
    *out = NULL;
    FL_TRY(fl_file_read_all(path, kind, &text, &len));
    size_t skip = len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3) ? 3 : 0;
    json_error_t jerr;
    *out = json_loadb(text + skip, len - skip, flags, &jerr);
    if (!*out && strstr(jerr.text, "too big integer")) {
        size_t n;
        char *fixed = big_integers_as_reals(text + skip, len - skip, &n);
        if (fixed) *out = json_loadb(fixed, n, flags, &jerr);
        free(fixed);
    }
    free(text);
    if (!*out) return fl_input_error("%s:%d:%d: invalid JSON: %s", path, jerr.line, jerr.column, jerr.text);
    return 0;
}
