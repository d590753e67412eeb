/* test_layout.c — the house rules that keep the code readable, checked on the tree itself (tests
 * run from the project root):
 *   - layering: a file under src/X/ includes only headers of its own folder or of a folder at or
 *     below X's row in docs/ARCHITECTURE.md's "Layers, bottom up" table (read from the document, so
 *     the map and the code cannot drift apart); a folder missing from the table is an error;
 *   - no include cycle among the headers of src/;
 *   - no source file (src/, tests/, fuzz/, dev/: .c .h .cu .cuh) over 800 lines.
 */
#include "test.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_FILES 1024
#define MAX_INCLUDES 48

typedef struct {
    char path[512];   /* relative to src/ for sources, else to the root */
    char inc[MAX_INCLUDES][128];
    int n_inc;
    int lines;
    int is_src;
    int state;        /* DFS colour */
} src_file;

static src_file files[MAX_FILES];
static int n_files;

static int is_source(const char *name) {
    const char *dot = strrchr(name, '.');
    return dot && (!strcmp(dot, ".c") || !strcmp(dot, ".h") || !strcmp(dot, ".cu") || !strcmp(dot, ".cuh"));
}

static void scan(const char *dir, int is_src) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char p[512];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(p, &st)) continue;
        if (S_ISDIR(st.st_mode)) { scan(p, is_src); continue; }
        if (!is_source(e->d_name) || n_files == MAX_FILES) continue;
        src_file *f = &files[n_files++];
        memset(f, 0, sizeof *f);
        snprintf(f->path, sizeof f->path, "%s", is_src ? p + 4 : p);
        f->is_src = is_src;
        FILE *in = fopen(p, "r");
        char line[4096];
        while (in && fgets(line, sizeof line, in)) {
            f->lines++;
            const char *s = line;
            while (*s == ' ') s++;
            if (strncmp(s, "#include \"", 10) || f->n_inc == MAX_INCLUDES) continue;
            const char *a = s + 10, *b = strchr(a, '"');
            if (b && (size_t)(b - a) < sizeof f->inc[0]) snprintf(f->inc[f->n_inc++], sizeof f->inc[0], "%.*s", (int)(b - a), a);
        }
        if (in) fclose(in);
    }
    closedir(d);
}

/* The table's rows, bottom up: rank[i] of folder name[i]; folders of one row share a rank. */
static int read_layers(char names[][32], int *rank, int cap) {
    FILE *f = fopen("docs/ARCHITECTURE.md", "r");
    if (!f) return -1;
    char line[8192];
    int n = 0, row = 0, in_table = 0;
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "## Layers, bottom up", 20)) { in_table = 1; continue; }
        if (in_table && !strncmp(line, "## ", 3)) break;
        if (!in_table || strncmp(line, "| `src/", 7)) continue;
        char *cell_end = strchr(line + 1, '|');
        for (char *s = line + 1; cell_end && (s = strstr(s, "`src/")) && s < cell_end; s += 5) {
            char *slash = strchr(s + 5, '/');
            if (!slash || n == cap || slash - (s + 5) >= 32) break;
            snprintf(names[n], 32, "%.*s", (int)(slash - (s + 5)), s + 5);
            rank[n++] = row;
        }
        row++;
    }
    fclose(f);
    return n;
}

static int rank_of(const char *folder, char names[][32], const int *rank, int n) {
    for (int i = 0; i < n; i++)
        if (!strcmp(names[i], folder)) return rank[i];
    return -1;
}

static src_file *find_header(const char *path) {
    for (int i = 0; i < n_files; i++)
        if (files[i].is_src && !strcmp(files[i].path, path)) return &files[i];
    return NULL;
}

/* Depth-first over header includes; returns 1 and prints the cycle when one is found. */
static int has_cycle(src_file *f, const char **stack, int depth) {
    f->state = 1;
    stack[depth] = f->path;
    for (int i = 0; i < f->n_inc; i++) {
        src_file *g = find_header(f->inc[i]);
        if (!g) continue;
        if (g->state == 1) {
            printf("    include cycle:");
            for (int k = 0; k <= depth; k++) printf(" %s ->", stack[k]);
            printf(" %s\n", g->path);
            return 1;
        }
        if (!g->state && depth < 62 && has_cycle(g, stack, depth + 1)) return 1;
    }
    f->state = 2;
    return 0;
}

TEST(layout_layers_cycles_and_file_sizes) {
    n_files = 0;
    scan("src", 1);
    int n_src = n_files;
    scan("tests", 0);
    scan("fuzz", 0);
    scan("dev", 0);
    CHECK_MSG(n_src > 100, "only %d files under src/ (run from the project root)", n_src);
    char names[64][32];
    int rank[64];
    int n_layers = read_layers(names, rank, 64);
    CHECK_MSG(n_layers >= 10, "docs/ARCHITECTURE.md: the \"Layers, bottom up\" table has %d folders", n_layers);
    int upward = 0, unknown = 0, long_files = 0;
    for (int i = 0; i < n_files; i++) {
        src_file *f = &files[i];
        if (f->lines > 800 && !strstr(f->path, "/fixtures/")) {
            CHECK_MSG(0, "%s%s: %d lines (the limit is 800: split it by job)", f->is_src ? "src/" : "", f->path, f->lines);
            long_files++;
        }
        if (!f->is_src) continue;
        char own[32];
        snprintf(own, sizeof own, "%.*s", (int)(strchr(f->path, '/') ? strchr(f->path, '/') - f->path : 0), f->path);
        int r = rank_of(own, names, rank, n_layers);
        if (r < 0) { CHECK_MSG(0, "src/%s: folder %s/ is not in ARCHITECTURE.md's layer table", f->path, own); unknown++; continue; }
        for (int k = 0; k < f->n_inc; k++) {
            const char *slash = strchr(f->inc[k], '/');
            if (!slash) continue;
            char to[32];
            snprintf(to, sizeof to, "%.*s", (int)(slash - f->inc[k]), f->inc[k]);
            if (!strcmp(to, own)) continue;
            int rt = rank_of(to, names, rank, n_layers);
            if (rt < 0 || rt > r) {
                CHECK_MSG(0, "src/%s includes %s: %s/ is %s %s/ in ARCHITECTURE.md's layer table", f->path, f->inc[k], to,
                          rt < 0 ? "not listed beside" : "above", own);
                upward++;
            }
        }
    }
    const char *stack[64];
    int cycles = 0;
    for (int i = 0; i < n_files; i++)
        if (files[i].is_src && !files[i].state && strchr(files[i].path, '.')[1] == 'h') cycles += has_cycle(&files[i], stack, 0);
    CHECK_MSG(cycles == 0, "%d include cycle(s) among src/'s headers", cycles);
    printf("    %d files (%d under src/), %d layers: %d upward includes, %d unlisted folders, %d cycles, %d files over 800 lines\n",
           n_files, n_src, n_layers, upward, unknown, cycles, long_files);
}
