/* cmd_convert_llama2c.c — `fastlora convert-llama2c --checkpoint model.bin [--tokenizer tok.bin] --out DIR`:
 * a karpathy/llama2.c checkpoint (e.g. stories260K) as a Hugging Face Llama folder (train/llama2c.c). */
#include "cli/commands.h"

#include <stdio.h>

#include "cli/args.h"
#include "common/error.h"
#include "train/llama2c.h"

int cmd_convert_llama2c(int argc, char **argv) {
    const char *ckpt = NULL, *tok = NULL, *out = NULL;
    int force = 0;
    fl_option opts[] = {
        {"checkpoint", FL_OPT_STRING, &ckpt, "llama2.c checkpoint (legacy v0 .bin)"},
        {"tokenizer", FL_OPT_STRING, &tok, "llama2.c tokenizer .bin (e.g. tok512.bin); writes tokenizer.json"},
        {"out", FL_OPT_STRING, &out, "output HF model folder"},
        {"force", FL_OPT_FLAG, &force, "write into a non-empty --out (files of the same name are replaced)"},
    };
    int rc = fl_args_parse(argc, argv, opts, 4,
                           "usage: fastlora convert-llama2c --checkpoint FILE.bin [--tokenizer TOK.bin] --out DIR [--force]");
    if (rc) return rc < 0 ? 0 : rc;
    if (!ckpt || !out) { fprintf(stderr, "fastlora convert-llama2c: --checkpoint and --out are required\n"); return 2; }
    rc = fl_llama2c_convert(ckpt, tok, out, force);
    if (rc) { fprintf(stderr, "fastlora convert-llama2c: %s\n", fl_last_error()); return rc; }
    printf("converted %s -> %s\n", ckpt, out);
    return 0;
}
