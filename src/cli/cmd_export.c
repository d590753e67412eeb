/* cmd_export.c — `fastlora export --gguf OUT.gguf --model DIR [--adapter DIR] [--type T]
 * [--lora-only] [--force]`: a model (merged with an adapter when given) or an adapter alone as GGUF
 * for llama.cpp and Ollama (export/export.h; docs/EXPORT.md shows how to run the result). */
#include "cli/commands.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "common/args.h"
#include "common/error.h"
#include "export/export.h"
#include "io/file_util.h"

static const char usage_text[] =
    "usage: fastlora export --gguf OUT.gguf --model DIR [--adapter DIR] [--type f32|f16|bf16|q8_0] [--lora-only] [--force]\n"
    "  whole model (merged with --adapter when given), or with --lora-only the adapter alone for llama.cpp --lora";

/* Whether path names (by device and inode: any spelling or link) a file in folder dir. */
static int is_file_in(const char *path, const char *dir) {
    struct stat target;
    if (stat(path, &target) != 0) return 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    int found = 0;
    while (d && !found && (e = readdir(d))) {
        char *p = fl_path_join(dir, e->d_name);
        struct stat st;
        found = stat(p, &st) == 0 && S_ISREG(st.st_mode) && st.st_dev == target.st_dev && st.st_ino == target.st_ino;
        free(p);
    }
    if (d) closedir(d);
    return found;
}

int cmd_export(int argc, char **argv) {
    const char *type = "auto";
    int alignment = 0;
    fl_export_options o = {0};
    fl_option opts[] = {
        {"gguf", FL_OPT_STRING, &o.out_path, "the GGUF file to write", FL_NO_RANGE},
        {"model", FL_OPT_STRING, &o.model_dir, "HF model folder (config.json, safetensors, tokenizer)", FL_NO_RANGE},
        {"adapter", FL_OPT_STRING, &o.adapter_dir, "PEFT adapter folder: merged in, or alone with --lora-only", FL_NO_RANGE},
        {"type", FL_OPT_STRING, &type, "f32, f16, bf16 or q8_0 (default: the model's bf16/f16, f32 for --lora-only)", FL_NO_RANGE},
        {"lora-only", FL_OPT_FLAG, &o.lora_only, "write the adapter as a GGUF LoRA (llama.cpp --lora, Ollama ADAPTER)", FL_NO_RANGE},
        {"force", FL_OPT_FLAG, &o.force, "replace OUT.gguf when it exists", FL_NO_RANGE},
        {"chat-template", FL_OPT_STRING, &o.chat_template, "a Jinja chat template file: its text is the GGUF's tokenizer.chat_template (default: the folder's, unchanged)", FL_NO_RANGE},
        {"no-tokenizer", FL_OPT_FLAG, &o.no_tokenizer, "no tokenizer metadata (models without one; llama.cpp then takes ids)", FL_NO_RANGE},
        {"alignment", FL_OPT_INT, &alignment, "tensor data alignment: 8, 16, 32 (default) or 64", FL_RANGE(1, 64)},
    };
    int rc = fl_args_parse("export", argc, argv, opts, (int)(sizeof opts / sizeof opts[0]), usage_text);
    if (rc) return rc < 0 ? 0 : rc;
    o.alignment = (uint32_t)alignment;
    /* the output before any work: not a FIFO, device or folder, and never one of the input files */
    if (o.out_path && fl_output_file_check(o.out_path)) {
        fprintf(stderr, "fastlora export: --gguf: %s\n", fl_last_error());
        return 2;
    }
    const char *inputs[] = {o.model_dir, o.adapter_dir};
    for (int i = 0; i < 2; i++)
        if (o.out_path && inputs[i] && is_file_in(o.out_path, inputs[i])) {
            fprintf(stderr, "fastlora export: --gguf %s is a file of the input folder %s: write the GGUF elsewhere\n",
                    o.out_path, inputs[i]);
            return 2;
        }
    int n = 0;
    rc = fl_export_parse_type(type, &o.type);
    if (!rc) rc = fl_export_gguf(&o, &n);
    if (rc) {
        fprintf(stderr, "fastlora export: %s\n", fl_last_error());
        return rc;
    }
    printf("wrote %s: %s%s, %d tensors\n", o.out_path, o.lora_only ? "LoRA adapter of " : "", o.model_dir, n);
    return 0;
}
