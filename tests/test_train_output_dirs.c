/* test_train_output_dirs.c — the output folders of `fastlora merge` and `fastlora convert-llama2c`
 * (io/output_dir.h). A full disk while they write: exit status 2, one line saying so, and no output
 * left behind (no partial folder, no staging folder, no temp file: the small file system is empty
 * again). A non-empty --out: refused without --force.
 *
 * The full disk is real: a tmpfs of a few hundred KiB mounted on a temporary folder (this needs
 * root; the tests SKIP when the mount is refused), with sizes swept from far too small to just too
 * small, so the failure lands in the weights, between files, and in the last small files. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/rng.h"
#include "test.h"

/* Mounts a tmpfs of `kib` KiB on dir; 0 on success. */
static int mount_small(const char *dir, int kib) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "mount -t tmpfs -o size=%dk tmpfs '%s' 2>/dev/null", kib, dir);
    return system(cmd);
}

static void unmount(const char *dir) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "umount '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not unmount %s\n", dir);
}

static int path_exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* Entries in dir (other than . and ..), hidden ones included. */
static int count_entries(const char *dir) {
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    if (d) closedir(d);
    return n;
}

/* Runs `FASTLORA_BIN args`; the exit status, stderr in err. */
static int run_cli(const char *args, char *err, size_t cap) {
    char err_path[] = "/tmp/fastlora-df-err-XXXXXX";
    int fd = mkstemp(err_path);
    close(fd);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s %s >/dev/null 2>%s", getenv("FASTLORA_BIN"), args, err_path);
    int rc = system(cmd);
    FILE *f = fopen(err_path, "rb");
    size_t n = f ? fread(err, 1, cap - 1, f) : 0;
    err[n] = 0;
    if (f) fclose(f);
    unlink(err_path);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
}

/* Runs `args` (which writes OUT = mnt/out) on a tmpfs of each size; checks the outcome of each. */
static void sweep(const char *args_fmt, const char *expect_file, const int *kib, int n_sizes) {
    const char *bin = getenv("FASTLORA_BIN");
    if (!bin || access(bin, X_OK) != 0) { fl_test_skip("FASTLORA_BIN not set"); return; }
    char mnt[] = "/tmp/fastlora-diskfull-XXXXXX";
    if (!mkdtemp(mnt)) { fl_test_skip("mkdtemp failed"); return; }
    int failed = 0;
    for (int i = 0; i < n_sizes; i++) {
        if (mount_small(mnt, kib[i]) != 0) {
            rmdir(mnt);
            fl_test_skip("cannot mount a tmpfs (needs root): no full disk to test");
            return;
        }
        char out[300], args[1800], err[4096], path[400];
        snprintf(out, sizeof out, "%s/out", mnt);
        snprintf(args, sizeof args, args_fmt, out);
        int rc = run_cli(args, err, sizeof err);
        if (rc == 0) {
            snprintf(path, sizeof path, "%s/%s", out, expect_file);
            struct stat sb;
            CHECK_MSG(stat(path, &sb) == 0 && sb.st_size > 0, "%d KiB: success without %s", kib[i], path);
        } else {
            failed++;
            CHECK_MSG(rc == 2, "%d KiB: exit status %d (expected 2): %s", kib[i], rc, err);
            CHECK_STR_CONTAINS(err, "No space left on device");
            char *nl = strchr(err, '\n');
            CHECK_MSG(nl && nl[1] == 0, "%d KiB: expected one line, got: %s", kib[i], err);
            CHECK_MSG(count_entries(mnt) == 0, "%d KiB: %d entries left on the full disk", kib[i], count_entries(mnt));
        }
        printf("    tmpfs %4d KiB: %s\n", kib[i], rc ? "refused, nothing left" : "fits");
        unmount(mnt);
    }
    CHECK(failed >= 3); /* the sweep did reach the full disk */
    rmdir(mnt);
}

/* The merged llama_gqa fixture: model.safetensors 376,160 bytes (92 pages), then config.json,
 * generation_config.json. 368 KiB holds the weights but not the small files after them. */
TEST(merge_bad_input_disk_full_leaves_no_output) {
    static const int kib[] = {8, 128, 300, 364, 368, 372, 1024};
    sweep("merge --model tests/fixtures/hf/llama_gqa/model --adapter tests/fixtures/hf/llama_gqa/adapter --out %s",
          "model.safetensors", kib, 7);
}

/* A llama2.c v0 checkpoint (dim 64, hidden 128, 2 layers, 4 heads, 2 kv heads, vocab 256, seq 16,
 * shared classifier) of seeded random floats: 90,688 floats. */
static int write_llama2c_checkpoint(const char *path) {
    const int32_t h[7] = {64, 128, 2, 4, 2, 256, 16};
    size_t n = 256 * 64 + 2 * 64 + 2 * 64 * 64 + 2 * 2 * 32 * 64 + 2 * 64 * 64 + 2 * 64 + 3 * 2 * 128 * 64 + 64 + 16 * 8 * 2;
    float *f = malloc(n * sizeof(float));
    fl_rng_fill_uniform(f, n, fl_rng_stream(3, 1, 4, 1), 0.5f, 1.0f);
    FILE *fp = fopen(path, "wb");
    if (!fp) { free(f); return 1; }
    int ok = fwrite(h, sizeof h, 1, fp) == 1 && fwrite(f, sizeof(float), n, fp) == n;
    fclose(fp);
    free(f);
    return !ok;
}

TEST(convert_llama2c_bad_input_disk_full_leaves_no_output) {
    char dir[] = "/tmp/fastlora-l2c-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char ckpt[300], args[600];
    snprintf(ckpt, sizeof ckpt, "%s/tiny.bin", dir);
    CHECK(write_llama2c_checkpoint(ckpt) == 0);
    /* model.safetensors ~363 KB (89 pages), then config.json and generation_config.json */
    static const int kib[] = {8, 100, 256, 352, 356, 360, 1024};
    snprintf(args, sizeof args, "convert-llama2c --checkpoint %s --out %%s", ckpt);
    sweep(args, "config.json", kib, 7);
    unlink(ckpt);
    rmdir(dir);
}

/* convert-llama2c wrote into any folder; a non-empty one now needs --force (and keeps its other files) */
TEST(convert_llama2c_bad_input_out_not_empty) {
    const char *bin = getenv("FASTLORA_BIN");
    if (!bin || access(bin, X_OK) != 0) SKIP("FASTLORA_BIN not set");
    char dir[] = "/tmp/fastlora-l2c-out-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char ckpt[300], args[900], err[4096], path[400];
    snprintf(ckpt, sizeof ckpt, "%s/tiny.bin", dir);
    CHECK(write_llama2c_checkpoint(ckpt) == 0);
    /* the folder holds the checkpoint itself */
    snprintf(args, sizeof args, "convert-llama2c --checkpoint %s --out %s", ckpt, dir);
    CHECK_EQ_INT(run_cli(args, err, sizeof err), 2);
    CHECK_STR_CONTAINS(err, "not empty");
    CHECK_STR_CONTAINS(err, "--force");
    snprintf(path, sizeof path, "%s/config.json", dir);
    CHECK(!path_exists(path));
    snprintf(args, sizeof args, "convert-llama2c --checkpoint %s --out %s --force", ckpt, dir);
    CHECK_EQ_INT(run_cli(args, err, sizeof err), 0);
    CHECK(path_exists(path));
    CHECK(path_exists(ckpt));
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK_EQ_INT(system(cmd), 0);
}
