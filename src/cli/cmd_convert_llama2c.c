/* cmd_convert_llama2c.c — `fastlora convert-llama2c --checkpoint model.bin [--tokenizer tok.bin|tok.model] --out DIR`:
 * a karpathy/llama2.c checkpoint (e.g. stories260K) as a Hugging Face Llama folder (train/llama2c.c); the
 * tokenizer is llama2.c's .bin or the SentencePiece .model it was exported from. */
#include "cli/commands.h"

#include <stdio.h>

#include "common/args.h"
#include "common/error.h"
#include "train/llama2c.h"

int cmd_convert_llama2c(int argc, char **argv) {
    const char *ckpt = NULL, *tok = NULL, *out = NULL;
    int force = 0;
    fl_option opts[] = {
        {"checkpoint", FL_OPT_STRING, &ckpt, "llama2.c checkpoint (legacy v0 .bin)", FL_NO_RANGE},
        {"tokenizer", FL_OPT_STRING, &tok, "llama2.c tokenizer .bin (tok512.bin) or its SentencePiece BPE .model (tok512.model); writes tokenizer.json", FL_NO_RANGE},
        {"out", FL_OPT_STRING, &out, "output HF model folder", FL_NO_RANGE},
        {"force", FL_OPT_FLAG, &force, "write into a non-empty --out (files of the same name are replaced)", FL_NO_RANGE},
    };
    int rc = fl_args_parse("convert-llama2c", argc, argv, opts, 4,
                           "usage: fastlora convert-llama2c --checkpoint FILE.bin [--tokenizer TOK.bin|TOK.model] --out DIR [--force]");
    if (rc) return rc < 0 ? 0 : rc;
    if (!ckpt || !out) { fprintf(stderr, "fastlora convert-llama2c: --checkpoint and --out are required\n"); return 2; }
    rc = fl_llama2c_convert(ckpt, tok, out, force);
    if (rc) { fprintf(stderr, "fastlora convert-llama2c: %s\n", fl_last_error()); return rc; }
    printf("converted %s -> %s\n", ckpt, out);
    return 0;
}
