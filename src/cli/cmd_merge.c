/* cmd_merge.c — `fastlora merge --model DIR --adapter DIR --out DIR [--force]`: the base with the LoRA
 * folded in (W' = W + s·B·A, each tensor in its original dtype), as a full HF folder written whole or
 * not at all; a non-empty --out needs --force (infer/merge.c). A bitsandbytes 4-bit (NF4) base is
 * merged into its dequantized weights and written as a float model (infer/merge_nf4.h, docs/QUANT.md). */
#include "cli/commands.h"

#include <stdio.h>
#include <stdlib.h>

#include "common/args.h"
#include "common/error.h"
#include "infer/merge.h"
#include "infer/merge_nf4.h"
#include "io/file_util.h"
#include "model/weights_nf4.h"

int cmd_merge(int argc, char **argv) {
    const char *model = NULL, *adapter = NULL, *out = NULL;
    int force = 0;
    fl_option opts[] = {
        {"model", FL_OPT_STRING, &model, "base HF model folder", FL_NO_RANGE},
        {"adapter", FL_OPT_STRING, &adapter, "PEFT adapter folder", FL_NO_RANGE},
        {"out", FL_OPT_STRING, &out, "output folder (a complete HF model folder; never the model or adapter folder)", FL_NO_RANGE},
        {"force", FL_OPT_FLAG, &force, "write into a non-empty --out (same names replaced, other model weights deleted)", FL_NO_RANGE},
    };
    int rc = fl_args_parse("merge", argc, argv, opts, 4, "usage: fastlora merge --model DIR --adapter DIR --out DIR [--force]");
    if (rc) return rc < 0 ? 0 : rc;
    if (!model || !adapter || !out) {
        fprintf(stderr, "fastlora merge: --model, --adapter and --out are required\n");
        return 2;
    }
    fl_quant_config qc = {0};
    char *config = fl_path_join(model, "config.json");
    rc = fl_file_exists(config) ? fl_quant_config_load(&qc, config) : 0;   /* no config.json: the merge says so */
    free(config);
    if (!rc) rc = qc.nf4 ? fl_nf4_merge_adapter(model, adapter, out, force) : fl_merge_adapter(model, adapter, out, force);
    if (rc) { fprintf(stderr, "fastlora merge: %s\n", fl_last_error()); return rc; }
    printf("merged %s + %s -> %s%s\n", model, adapter, out,
           qc.nf4 ? " (NF4 base: merged into its dequantized weights, written as a float model)" : "");
    return 0;
}
