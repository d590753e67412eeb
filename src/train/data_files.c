/* data_files.c — what a `--data` / `--eval-data` value names: one file, a folder, or a glob.
 *   a file            itself (whatever its name; data.c detects its format)
 *   a folder          its *.jsonl and *.json files (not in subfolders, not hidden ones, not
 *                     folders so named), in
 *                     byte order of their names (strcmp: "a10" before "a9"), each read as its own
 *                     file would be (JSONL, or a JSON array)
 *   a glob pattern    (a value with * ? or [ that is no existing file) glob(3)'s matches, in the
 *                     same byte order; each match read as a file (any format but a tokens file)
 * The documents of the files follow one another in that order, so the same folder gives the same
 * dataset (and the same --resume data digest) on every machine.
 * Not the readers (data.c, data_text.c).
 */
#include "train/data.h"

#include <dirent.h>
#include <glob.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/error.h"
#include "io/file_util.h"

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int ends_with(const char *s, const char *tail) {
    size_t n = strlen(s), m = strlen(tail);
    return n > m && !strcmp(s + n - m, tail);
}

int fl_data_is_many(const char *spec) {
    struct stat st;
    if (stat(spec, &st) == 0) return S_ISDIR(st.st_mode);
    return strpbrk(spec, "*?[") != NULL;
}

void fl_data_paths_free(char **paths, size_t n) {
    for (size_t i = 0; i < n; i++) free(paths[i]);
    free(paths);
}

int fl_data_paths(const char *spec, char ***out, size_t *n_out) {
    *out = NULL;
    *n_out = 0;
    char **paths = NULL;
    size_t n = 0;
    struct stat st;
    if (stat(spec, &st) == 0 && S_ISDIR(st.st_mode)) {
        DIR *d = opendir(spec);
        if (!d) return fl_input_error("cannot read %s: a folder that cannot be listed", spec);
        for (struct dirent *e; (e = readdir(d));) {
            if (e->d_name[0] == '.' || !(ends_with(e->d_name, ".jsonl") || ends_with(e->d_name, ".json"))) continue;
            char *p = fl_path_join(spec, e->d_name);
            struct stat es;
            if (stat(p, &es) == 0 && S_ISDIR(es.st_mode)) { free(p); continue; } /* a folder named x.jsonl */
            paths = realloc(paths, (n + 1) * sizeof *paths);
            if (!paths) fl_die("out of memory (data files)");
            paths[n++] = p;
        }
        closedir(d);
        if (!n) return fl_input_error("%s: a folder without .jsonl or .json files (--data reads those of a folder)", spec);
    } else if (stat(spec, &st) != 0 && strpbrk(spec, "*?[")) {
        glob_t g;
        int rc = glob(spec, GLOB_ERR, NULL, &g);
        if (rc == GLOB_NOMATCH) return fl_input_error("%s: no file matches this pattern", spec);
        if (rc) return fl_input_error("%s: the pattern cannot be read (%s)", spec, rc == GLOB_NOSPACE ? "out of memory" : "a folder it names cannot be listed");
        for (size_t i = 0; i < g.gl_pathc; i++) {
            if (stat(g.gl_pathv[i], &st) == 0 && S_ISDIR(st.st_mode)) continue;
            paths = realloc(paths, (n + 1) * sizeof *paths);
            if (!paths) fl_die("out of memory (data files)");
            paths[n++] = strdup(g.gl_pathv[i]);
        }
        globfree(&g);
        if (!n) return fl_input_error("%s: the pattern matches only folders", spec);
    } else {
        paths = malloc(sizeof *paths);
        if (!paths) fl_die("out of memory (data files)");
        paths[n++] = strdup(spec);
    }
    qsort(paths, n, sizeof *paths, by_name);
    *out = paths;
    *n_out = n;
    return 0;
}

int fl_data_check_read(const char *spec) {
    char **paths;
    size_t n;
    FL_TRY(fl_data_paths(spec, &paths, &n));
    int status = 0;
    for (size_t i = 0; i < n && !status; i++) status = fl_file_check_read(paths[i], FL_FILE_DATASET);
    fl_data_paths_free(paths, n);
    return status;
}
