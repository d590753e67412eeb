/* cmd_merge.c — `fastlora merge --model DIR --adapter DIR --out DIR`: the base with the LoRA folded
 * in (W' = W + s·B·A, each tensor in its original dtype), as a full HF folder (infer/merge.c). */
#include "cli/commands.h"

#include <stdio.h>

#include "cli/args.h"
#include "common/error.h"
#include "infer/merge.h"

int cmd_merge(int argc, char **argv) {
    const char *model = NULL, *adapter = NULL, *out = NULL;
    fl_option opts[] = {
        {"model", FL_OPT_STRING, &model, "base HF model folder"},
        {"adapter", FL_OPT_STRING, &adapter, "PEFT adapter folder"},
        {"out", FL_OPT_STRING, &out, "output folder (a complete HF model folder)"},
    };
    int rc = fl_args_parse(argc, argv, opts, 3, "usage: fastlora merge --model DIR --adapter DIR --out DIR");
    if (rc) return rc < 0 ? 0 : rc;
    if (!model || !adapter || !out) {
        fprintf(stderr, "fastlora merge: --model, --adapter and --out are required\n");
        return 2;
    }
    rc = fl_merge_adapter(model, adapter, out);
    if (rc) { fprintf(stderr, "fastlora merge: %s\n", fl_last_error()); return rc; }
    printf("merged %s + %s -> %s\n", model, adapter, out);
    return 0;
}
