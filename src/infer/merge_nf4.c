/* merge_nf4.c — merging an adapter trained on an NF4 base (see merge_nf4.h).
 *
 * The choice: the merged model is a plain float model — W' = round(dequant(W) + s·B·A) in the
 * dtype the weights were quantized from (quant_state.dtype, bf16 for the common checkpoints) — not
 * a re-quantized 4-bit one. Re-quantizing would add a second, larger rounding on top of the adapter
 * (up to half the widest NF4 gap, ~14% of its block's absmax, bigger than most LoRA updates), so the
 * merged model would no longer compute what the adapter was trained to; the float model computes
 * exactly the base the adapter saw (its dequantized bf16 weights) plus the adapter.
 *
 * Done in two steps that reuse the tested float merge: the NF4 folder is dequantized into a float
 * folder beside the output (model/nf4_dequantize.h: config.json without quantization_config; every
 * NF4 weight replaced by its dequantization, the bitsandbytes companion tensors dropped, every other
 * tensor copied byte for byte), fl_merge_adapter merges into it, and the intermediate folder is
 * removed.
 */
#include "infer/merge_nf4.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"
#include "infer/merge.h"
#include "io/file_util.h"
#include "io/path_guard.h"
#include "io/run_lock.h"
#include "model/nf4_dequantize.h"

/* Links the model folder's other files (tokenizer, generation config, ...) into dir, so that the
 * float merge copies them to the output as it does for a float model. */
static int link_other_files(const char *model_dir, const char *dir) {
    DIR *d = opendir(model_dir);
    if (!d) return fl_input_error("%s: cannot list the folder", model_dir);
    struct dirent *e;
    int status = 0;
    while (!status && (e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (e->d_name[0] == '.' || !strcmp(e->d_name, "config.json") || !strcmp(e->d_name, "model.safetensors.index.json") ||
            (len > 12 && !strcmp(e->d_name + len - 12, ".safetensors")))
            continue;
        char *src = fl_path_join(model_dir, e->d_name), *dst = fl_path_join(dir, e->d_name);
        char *abs = realpath(src, NULL);
        if (!abs || symlink(abs, dst)) status = fl_input_error("%s: cannot link into %s", src, dir);
        free(abs);
        free(src);
        free(dst);
    }
    closedir(d);
    return status;
}

/* Removes the intermediate folder: its entries (files and links, no subfolders), then itself. */
static void remove_flat_dir(const char *dir) {
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char *p = fl_path_join(dir, e->d_name);
        unlink(p);
        free(p);
    }
    if (d) closedir(d);
    rmdir(dir);
}

/* The intermediate folders of merges killed before they removed theirs: OUT.nf4-dequantized.<pid>
 * of a pid no longer running, beside OUT (tmp is this run's, its first len bytes OUT). */
static void clean_dead_intermediates(const char *tmp, size_t len) {
    const char *slash = memrchr(tmp, '/', len);
    char *parent = slash ? strndup(tmp, slash == tmp ? 1 : (size_t)(slash - tmp)) : strdup(".");
    const char *base = slash ? slash + 1 : tmp;
    size_t base_len = len - (size_t)(base - tmp);
    char *prefix = malloc(base_len + 32);
    snprintf(prefix, base_len + 32, "%.*s.nf4-dequantized.", (int)base_len, base);
    fl_leftovers_clean(parent, prefix, NULL, stderr);
    free(prefix);
    free(parent);
}

int fl_nf4_merge_adapter(const char *model_dir, const char *adapter_dir, const char *out_dir, int force) {
    /* the float merge checks --out against its inputs, which are the intermediate folder and the
     * adapter: the 4-bit model folder is checked here */
    struct stat so, sm;
    if (stat(out_dir, &so) == 0 && stat(model_dir, &sm) == 0 && so.st_dev == sm.st_dev && so.st_ino == sm.st_ino)
        return fl_input_error("--out %s is the model folder %s: merge writes the merged model to another folder", out_dir,
                              model_dir);
    /* nor may a file of the 4-bit folder be reached through a link into --out */
    const char *inputs[1] = {model_dir};
    FL_TRY(fl_guard_inputs("--out", out_dir, NULL, inputs, 1, NULL, 0));
    size_t len = strlen(out_dir);
    while (len > 1 && out_dir[len - 1] == '/') len--;   /* beside --out, never inside it */
    char *tmp = malloc(len + 48);
    snprintf(tmp, len + 48, "%.*s.nf4-dequantized.%d", (int)len, out_dir, (int)getpid());
    clean_dead_intermediates(tmp, len);
    int status = fl_nf4_dequantize_folder(model_dir, tmp);
    if (!status) status = link_other_files(model_dir, tmp);
    if (!status) status = fl_merge_adapter(tmp, adapter_dir, out_dir, force);
    remove_flat_dir(tmp);
    free(tmp);
    return status;
}
