/* fuzz.h — what the libFuzzer harnesses in fuzz/ share: a private scratch folder for the files a
 * parser reads, one fuzz input split into several files, the rule every failing call must keep
 * (an input error with a message, never another status), and where the fixtures are.
 *
 * Each harness is one fuzz/fuzz_<target>.c defining LLVMFuzzerTestOneInput (and, when it loads
 * something once, LLVMFuzzerInitialize); `make fuzz` builds and runs them (fuzz/run.sh). Paths to
 * fixtures are relative to the project root (the runner starts there); ../shared is found as the
 * tests find it ($FASTLORA_SHARED, else ../shared), and a harness that needs it runs without the
 * parts that are missing. Not a test framework: a finding is a crash, a sanitizer report, a leak,
 * a timeout or a blown memory limit, or an abort() from the checks below.
 */
#ifndef FL_FUZZ_H
#define FL_FUZZ_H

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"

/* Separates the files of a multi-file input ("\n@@@@\n"; in the dictionaries as "@@@@"). */
#define FZ_SEP "\n@@@@\n"
#define FZ_SEP_LEN 6

typedef struct {
    const uint8_t *data;
    size_t size;
} fz_part;

static char fz_dir_path[512];

static inline void fz_remove_tree(const char *path) {
    DIR *d = opendir(path);
    if (!d) { unlink(path); return; }
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char child[1024];
        snprintf(child, sizeof child, "%s/%s", path, e->d_name);
        fz_remove_tree(child);
    }
    closedir(d);
    rmdir(path);
}

static inline void fz_cleanup(void) {
    if (fz_dir_path[0]) fz_remove_tree(fz_dir_path);
}

/* The scratch folder: $TMPDIR/fastlora-fuzz-XXXXXX, made on first use, removed at exit. */
static inline const char *fz_dir(void) {
    if (!fz_dir_path[0]) {
        const char *tmp = getenv("TMPDIR");
        snprintf(fz_dir_path, sizeof fz_dir_path, "%s/fastlora-fuzz-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(fz_dir_path)) { perror(fz_dir_path); abort(); }
        atexit(fz_cleanup);
    }
    return fz_dir_path;
}

/* "scratch/name" in one of four rotating static buffers (so a call can take a few at once). */
static inline const char *fz_path(const char *name) {
    static char bufs[4][1024];
    static int next;
    char *p = bufs[next++ & 3];
    snprintf(p, sizeof bufs[0], "%s/%s", fz_dir(), name);
    return p;
}

/* Writes size bytes to scratch/name (folders in name are created); returns the path. */
static inline const char *fz_write(const char *name, const void *data, size_t size) {
    const char *path = fz_path(name);
    for (const char *s = strchr(name, '/'); s; s = strchr(s + 1, '/')) {
        char dir[1024];
        snprintf(dir, sizeof dir, "%s/%.*s", fz_dir(), (int)(s - name), name);
        mkdir(dir, 0755);
    }
    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) { perror(path); abort(); }
    return path;
}

/* Empties the scratch folder (between inputs, so no file of the last one is seen). */
static inline void fz_clear(void) {
    DIR *d = opendir(fz_dir());
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char child[1024];
        snprintf(child, sizeof child, "%s/%s", fz_dir(), e->d_name);
        fz_remove_tree(child);
    }
    closedir(d);
}

/* Splits data at FZ_SEP into at most max parts (the last takes the rest); returns the count. */
static inline int fz_split(const uint8_t *data, size_t size, fz_part *parts, int max) {
    int n = 0;
    size_t start = 0;
    while (n < max - 1) {
        const uint8_t *hit = NULL;
        for (size_t i = start; i + FZ_SEP_LEN <= size; i++)
            if (data[i] == '\n' && !memcmp(data + i, FZ_SEP, FZ_SEP_LEN)) { hit = data + i; break; }
        if (!hit) break;
        parts[n++] = (fz_part){data + start, (size_t)(hit - data) - start};
        start = (size_t)(hit - data) + FZ_SEP_LEN;
    }
    parts[n++] = (fz_part){data + start, size - start};
    return n;
}

/* A NUL-terminated copy of a part (caller frees). */
static inline char *fz_strndup(const fz_part *p) {
    char *s = malloc(p->size + 1);
    if (!s) abort();
    memcpy(s, p->data, p->size);
    s[p->size] = 0;
    return s;
}

/* The rule for bad input: a failing call returns FL_ERR_INPUT and leaves a message. Anything else
 * (a status the command layer would report as an internal failure, or no message) aborts, which
 * libFuzzer reports as a finding. */
static inline void fz_check(int status, const char *call) {
    if (status == 0) return;
    const char *msg = fl_last_error();
    if (status != FL_ERR_INPUT || !msg[0] || !strcmp(msg, "unknown error")) {
        fprintf(stderr, "fuzz: %s returned %d with message '%s' (expected 0, or %d with a message)\n", call, status, msg,
                FL_ERR_INPUT);
        abort();
    }
}

/* ../shared as the tests find it, or NULL. */
static inline const char *fz_shared_dir(void) {
    const char *env = getenv("FASTLORA_SHARED");
    struct stat st;
    if (env && stat(env, &st) == 0) return env;
    if (stat("../shared", &st) == 0 && S_ISDIR(st.st_mode)) return "../shared";
    return NULL;
}

/* Where a harness writes the valid inputs it builds at start-up, as seeds: FZ_SEEDS_OUT (set by
 * fuzz/corpus.sh, which then runs the harness with -runs=0), or NULL. */
static inline const char *fz_seeds_out(void) {
    const char *d = getenv("FZ_SEEDS_OUT");
    return d && *d ? d : NULL;
}

/* Writes the parts joined by FZ_SEP as FZ_SEEDS_OUT/name. */
static inline void fz_write_seed(const char *name, const fz_part *parts, int n) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", fz_seeds_out(), name);
    FILE *f = fopen(path, "wb");
    if (!f) { perror(path); abort(); }
    for (int i = 0; i < n; i++) {
        if (i) fwrite(FZ_SEP, 1, FZ_SEP_LEN, f);
        if (parts[i].size) fwrite(parts[i].data, 1, parts[i].size, f);
    }
    if (fclose(f) != 0) abort();
}

/* The bytes of a file (malloc'd, NUL-terminated), or abort. */
static inline uint8_t *fz_slurp(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); abort(); }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    uint8_t *b = malloc((size_t)n + 1);
    if (!b || fread(b, 1, (size_t)n, f) != (size_t)n) abort();
    b[n] = 0;
    fclose(f);
    *size = (size_t)n;
    return b;
}

/* A FILE that swallows what loaders report line by line (bad rows are expected here). */
static inline FILE *fz_devnull(void) {
    static FILE *f;
    if (!f && !(f = fopen("/dev/null", "w"))) abort();
    return f;
}

#endif
