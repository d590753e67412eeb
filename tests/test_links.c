/* test_links.c — inputs reached through links are never written or deleted (io/path_guard.h,
 * io/file_util.h's atomic writer). The three cases and their kin:
 *   merge, M/model.safetensors -> OUT/model.safetensors: refused (the rename would make M's weights
 *     the merged ones);
 *   merge, M/model.safetensors -> OUT/model-00001-of-00002.safetensors: refused (the clean-up of
 *     stale weight files would delete M's weights), and through a chain of two links;
 *   merge, OUT/model.safetensors -> M/model.safetensors: the link is replaced, M keeps its weights;
 *   train --resume OUT with OUT/adapter_model.safetensors -> M/model.safetensors (and metrics.jsonl,
 *     train_config.json linked to files elsewhere): the run writes its own files, the links are
 *     replaced, the files they named keep their bytes;
 *   export --gguf LINK: the link is replaced, the file it named is left as it was. */
#include "cli_run.h"
#include "test.h"

/* DIR/M: a copy of the fixture model whose model.safetensors is a link to `target` (a copy of the
 * fixture's weights put there first). */
static void model_linking_to(const char *dir, const char *target) {
    char path[800], cmd[4096];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s/M' && cp " CR_MODEL "/config.json " CR_MODEL "/generation_config.json '%s/M/' "
             "&& cp " CR_MODEL "/model.safetensors '%s' && ln -sf '%s' '%s/M/model.safetensors'", dir, dir, target, target, dir);
    CHECK_EQ_INT(system(cmd), 0);
    (void)path;
}

static void check_merge_refused(const char *dir, const char *kept, const char *needle) {
    char args[2048], out[8192];
    snprintf(args, sizeof args, "merge --model %s/M --adapter %s --out %s/OUT --force", dir, CR_ADAPTER, dir);
    CHECK_EQ_INT(cr_run(out, sizeof out, NULL, args), 2);
    CHECK_STR_CONTAINS(out, needle);
    CHECK_MSG(cr_files_equal(kept, CR_MODEL "/model.safetensors"), "%s changed or is gone", kept);
}

TEST(links_merge_never_writes_or_deletes_what_an_input_resolves_to) {
    CR_NEED_BIN();
    char *dir = cr_temp_dir();
    char out_dir[700], target[800], cmd[4096];
    snprintf(out_dir, sizeof out_dir, "%s/OUT", dir);
    mkdir(out_dir, 0755);
    /* (a) the input's weights are the output's file of the same name */
    snprintf(target, sizeof target, "%s/model.safetensors", out_dir);
    model_linking_to(dir, target);
    check_merge_refused(dir, target, "is (through a link)");
    /* (b) ... another weight file there, which merge would delete as stale */
    snprintf(cmd, sizeof cmd, "rm -rf '%s/M' '%s'/*", dir, out_dir);
    CHECK_EQ_INT(system(cmd), 0);
    snprintf(target, sizeof target, "%s/model-00001-of-00002.safetensors", out_dir);
    model_linking_to(dir, target);
    check_merge_refused(dir, target, "model-00001-of-00002.safetensors");
    /* a two-hop chain through a link outside OUT */
    snprintf(cmd, sizeof cmd, "ln -s '%s' '%s/hop' && ln -sf '%s/hop' '%s/M/model.safetensors'", target, dir, dir, dir);
    CHECK_EQ_INT(system(cmd), 0);
    check_merge_refused(dir, target, "model-00001-of-00002.safetensors");
    /* a link in OUT to an input's file is replaced by the merged file, the input left alone */
    snprintf(cmd, sizeof cmd, "rm -f '%s/M/model.safetensors' '%s'/* && cp " CR_MODEL "/model.safetensors '%s/M/' && "
             "ln -s '%s/M/model.safetensors' '%s/model.safetensors'", dir, out_dir, dir, dir, out_dir);
    CHECK_EQ_INT(system(cmd), 0);
    snprintf(target, sizeof target, "%s/M/model.safetensors", dir);
    char args[2048], out[8192], merged[800];
    snprintf(args, sizeof args, "merge --model %s/M --adapter %s --out %s --force", dir, CR_ADAPTER, out_dir);
    CHECK_EQ_INT(cr_run(out, sizeof out, NULL, args), 0);
    CHECK(cr_files_equal(target, CR_MODEL "/model.safetensors"));
    snprintf(merged, sizeof merged, "%s/model.safetensors", out_dir);
    CHECK(!cr_files_equal(merged, CR_MODEL "/model.safetensors"));
    cr_remove_tree(dir);
    free(dir);
}

TEST(links_train_replaces_links_in_out_never_writes_through_them) {
    CR_NEED_BIN();
    char *dir = cr_temp_dir();
    char *data = cr_token_data(dir, "data.tokens", 30, 0);
    char args[2048], out[8192], cmd[4096], path[800], weights[800], elsewhere[800];
    snprintf(cmd, sizeof cmd, "cp -r " CR_MODEL " '%s/M' && printf 'keep me\\n' > '%s/elsewhere.txt'", dir, dir);
    CHECK_EQ_INT(system(cmd), 0);
    snprintf(weights, sizeof weights, "%s/M/model.safetensors", dir);
    snprintf(elsewhere, sizeof elsewhere, "%s/elsewhere.txt", dir);
    snprintf(args, sizeof args, "train --model %s/M --data %s --out %s/OUT %s", dir, data, dir, CR_TRAIN);
    CHECK_EQ_INT(cr_run(out, sizeof out, NULL, args), 0);
    /* (c) the adapter is a link to the base's weights; metrics and config links to a file elsewhere */
    snprintf(cmd, sizeof cmd, "cd '%s/OUT' && ln -sf '%s' adapter_model.safetensors && ln -sf '%s' metrics.jsonl && "
             "ln -sf '%s' loss.svg", dir, weights, elsewhere, elsewhere);
    CHECK_EQ_INT(system(cmd), 0);
    snprintf(args, sizeof args, "train --model %s/M --data %s --out %s/OUT --max-steps 6 --resume %s/OUT %s", dir, data,
             dir, dir, CR_TRAIN);
    CHECK_EQ_INT(cr_run(out, sizeof out, NULL, args), 0);
    CHECK_MSG(cr_files_equal(weights, CR_MODEL "/model.safetensors"), "the base weights were written over: %s", out);
    char *kept = cr_read(elsewhere, NULL);
    CHECK_MSG(kept && !strcmp(kept, "keep me\n"), "a file named by a link in OUT was written through");
    free(kept);
    struct stat st;
    snprintf(path, sizeof path, "%s/OUT/adapter_model.safetensors", dir);
    CHECK(lstat(path, &st) == 0 && S_ISREG(st.st_mode));
    cr_remove_tree(dir);
    free(data);
    free(dir);
}

TEST(links_export_replaces_a_link_at_the_gguf_path) {
    CR_NEED_BIN();
    char *dir = cr_temp_dir();
    char args[2048], out[8192], cmd[4096], other[800];
    snprintf(other, sizeof other, "%s/other.bin", dir);
    snprintf(cmd, sizeof cmd, "printf 'not yours\\n' > '%s' && ln -s '%s' '%s/a.gguf'", other, other, dir);
    CHECK_EQ_INT(system(cmd), 0);
    snprintf(args, sizeof args, "export --gguf %s/a.gguf --model %s --adapter %s --lora-only --force", dir, CR_MODEL, CR_ADAPTER);
    CHECK_EQ_INT(cr_run(out, sizeof out, NULL, args), 0);
    char *kept = cr_read(other, NULL);
    CHECK_MSG(kept && !strcmp(kept, "not yours\n"), "export wrote through the link at --gguf");
    free(kept);
    cr_remove_tree(dir);
    free(dir);
}
