/* path_guard.c — inputs that an output folder would change (see path_guard.h). */
#include "io/path_guard.h"

#include <dirent.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"
#include "io/file_util.h"

/* The folder part of path ("." when none), malloc'd. */
static char *parent_of(const char *path) {
    char *d = strdup(path), *slash = strrchr(d, '/');
    if (!slash) { free(d); return strdup("."); }
    if (slash == d) slash[1] = 0;
    else *slash = 0;
    return d;
}

/* Whether a path in folder `parent` (resolved) named `name` is at or under dest_real, and its first
 * component below dest_real is one of names (NULL: any). */
static int lands_in(const char *parent, const char *name, const char *dest_real, const char *const *names) {
    char *p = realpath(parent, NULL);
    if (!p) return 0;
    size_t nd = strlen(dest_real);
    const char *first = NULL;
    size_t first_len = 0;
    if (!strcmp(p, dest_real)) {
        first = name;
        first_len = strlen(name);
    } else if (!strncmp(p, dest_real, nd) && (p[nd] == '/' || !strcmp(dest_real, "/"))) {
        first = p + nd + (p[nd] == '/');
        first_len = strcspn(first, "/");
    }
    int hit = first != NULL && names == NULL;
    for (int i = 0; first && names && names[i] && !hit; i++) hit = strlen(names[i]) == first_len && !strncmp(names[i], first, first_len);
    free(p);
    return hit;
}

int fl_path_passes_through(const char *path, const char *dest, const char *const *names, char **via) {
    if (via) *via = NULL;
    char *dest_real = realpath(dest, NULL);
    if (!dest_real) return 0;
    char *cur = strdup(path);
    int found = 0;
    for (int hop = 0; hop < 40 && !found; hop++) {
        char *dir = parent_of(cur), *slash = strrchr(cur, '/');
        found = lands_in(dir, slash ? slash + 1 : cur, dest_real, names);
        struct stat ls;
        char target[PATH_MAX];
        ssize_t n = found || lstat(cur, &ls) != 0 || !S_ISLNK(ls.st_mode) ? -1 : readlink(cur, target, sizeof target - 1);
        if (n > 0) { /* the next hop: the link's target, read relative to the link's folder */
            target[n] = 0;
            char *next = target[0] == '/' ? strdup(target) : fl_path_join(dir, target);
            free(cur);
            cur = next;
        }
        free(dir);
        if (n <= 0) break;
    }
    free(dest_real);
    if (found && via) *via = cur;
    else free(cur);
    return found;
}

static int check_one(const char *flag, const char *dest, const char *const *names, const char *input) {
    struct stat st;
    if (stat(input, &st) != 0 || !S_ISREG(st.st_mode)) return 0;
    char *via = NULL;
    int status = 0;
    if (fl_path_passes_through(input, dest, names, &via))
        status = fl_input_error("%s %s: the input %s is (through a link) %s, which this command would replace or "
                                "delete; write to another folder, or copy the input out of it first", flag, dest, input, via);
    free(via);
    return status;
}

static int check_dir(const char *flag, const char *dest, const char *const *names, const char *dir, int depth) {
    DIR *d = opendir(dir);
    struct dirent *e;
    int status = 0;
    while (d && !status && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char *p = fl_path_join(dir, e->d_name);
        struct stat st;
        if (depth == 0 && !strcmp(e->d_name, "original") && stat(p, &st) == 0 && S_ISDIR(st.st_mode))
            status = check_dir(flag, dest, names, p, 1);
        else status = check_one(flag, dest, names, p);
        free(p);
    }
    if (d) closedir(d);
    return status;
}

int fl_guard_inputs(const char *flag, const char *dest, const char *const *names, const char *const *input_dirs,
                    int n_dirs, const char *const *input_files, int n_files) {
    struct stat ds;
    if (!dest || stat(dest, &ds) != 0 || !S_ISDIR(ds.st_mode)) return 0;
    int status = 0;
    for (int i = 0; i < n_dirs && !status; i++)
        if (input_dirs[i]) status = check_dir(flag, dest, names, input_dirs[i], 0);
    for (int i = 0; i < n_files && !status; i++)
        if (input_files[i]) status = check_one(flag, dest, names, input_files[i]);
    return status;
}
