/* file_util.c — atomic writes and path helpers (see file_util.h). */
#include "io/file_util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"

int fl_atomic_file_open(fl_atomic_file *f, const char *path) {
    memset(f, 0, sizeof *f);
    size_t n = strlen(path) + 32;
    f->final_path = strdup(path);
    f->temp_path = fl_malloc(n);
    snprintf(f->temp_path, n, "%s.tmp.%d", path, (int)getpid());
    f->fp = fopen(f->temp_path, "wb");
    if (!f->fp) {
        int status = fl_input_error("%s: cannot create: %s", f->temp_path, strerror(errno));
        free(f->final_path);
        free(f->temp_path);
        memset(f, 0, sizeof *f);
        return status;
    }
    return 0;
}

int fl_atomic_file_commit(fl_atomic_file *f) {
    int status = 0;
    if (fflush(f->fp) != 0 || ferror(f->fp) || fsync(fileno(f->fp)) != 0)
        status = fl_input_error("%s: write failed: %s", f->final_path, strerror(errno));
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
    int rc = mkdir(copy, 0755);
    free(copy);
    if (rc != 0 && errno != EEXIST) return fl_input_error("%s: cannot create directory: %s", path, strerror(errno));
    return 0;
}
