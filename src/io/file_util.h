/* file_util.h — small file helpers: atomic writes (temp file + fsync + rename) so that no output
 * is ever half-written, path joining, and reading a whole text file. */
#ifndef FL_FILE_UTIL_H
#define FL_FILE_UTIL_H

#include <stdio.h>

typedef struct {
    FILE *fp;
    char *final_path;
    char *temp_path;
} fl_atomic_file;

/* Opens `<path>.tmp.<pid>` for writing. */
int fl_atomic_file_open(fl_atomic_file *f, const char *path);
/* Flushes, fsyncs, closes and renames onto the final path; on a write error removes the temp file. */
int fl_atomic_file_commit(fl_atomic_file *f);
/* Closes and removes the temp file (the final path is untouched). */
void fl_atomic_file_abort(fl_atomic_file *f);

/* Writes `len` bytes atomically to path. */
int fl_write_file_atomic(const char *path, const void *data, size_t len);

/* Returns a malloc'd "dir/name". */
char *fl_path_join(const char *dir, const char *name);
int fl_file_exists(const char *path);
/* Creates a directory (and its parents); ok when it exists. */
int fl_mkdir_p(const char *path);

#endif
