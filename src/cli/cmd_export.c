/* cmd_export.c — `fastlora export --gguf OUT.gguf --model DIR [--adapter DIR] [--type T]
 * [--lora-only] [--force]`: a model (merged with an adapter when given) or an adapter alone as GGUF
 * for llama.cpp and Ollama (export/export.h; docs/EXPORT.md shows how to run the result). */
#include "cli/commands.h"

#include <stdio.h>

#include "cli/args.h"
#include "common/error.h"
#include "export/export.h"

static const char usage_text[] =
    "usage: fastlora export --gguf OUT.gguf --model DIR [--adapter DIR] [--type f32|f16|bf16|q8_0] [--lora-only] [--force]\n"
    "  whole model (merged with --adapter when given), or with --lora-only the adapter alone for llama.cpp --lora";

int cmd_export(int argc, char **argv) {
    const char *type = "auto";
    int alignment = 0;
    fl_export_options o = {0};
    fl_option opts[] = {
        {"gguf", FL_OPT_STRING, &o.out_path, "the GGUF file to write"},
        {"model", FL_OPT_STRING, &o.model_dir, "HF model folder (config.json, safetensors, tokenizer)"},
        {"adapter", FL_OPT_STRING, &o.adapter_dir, "PEFT adapter folder: merged in, or alone with --lora-only"},
        {"type", FL_OPT_STRING, &type, "f32, f16, bf16 or q8_0 (default: the model's bf16/f16, f32 for --lora-only)"},
        {"lora-only", FL_OPT_FLAG, &o.lora_only, "write the adapter as a GGUF LoRA (llama.cpp --lora, Ollama ADAPTER)"},
        {"force", FL_OPT_FLAG, &o.force, "replace OUT.gguf when it exists"},
        {"no-tokenizer", FL_OPT_FLAG, &o.no_tokenizer, "no tokenizer metadata (models without one; llama.cpp then takes ids)"},
        {"alignment", FL_OPT_INT, &alignment, "tensor data alignment: 8, 16, 32 (default) or 64"},
    };
    int rc = fl_args_parse(argc, argv, opts, (int)(sizeof opts / sizeof opts[0]), usage_text);
    if (rc) return rc < 0 ? 0 : rc;
    if (alignment < 0) alignment = 1; /* rejected below with the others */
    o.alignment = (uint32_t)alignment;
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
