/* main.c — the `fastlora` program: dispatches to one subcommand per file in src/cli/.
 * It parses nothing itself beyond the subcommand name. */
#include "cli/commands.h"

#include <stdio.h>
#include <string.h>

#include "backend/cpu/cpu_isa.h"
#include "backend/cpu/gemm_bf16.h"
#include "backend/cpu/cpu_threads.h"
#include "common/error.h"

typedef struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} command;

static const command commands[] = {
    {"bench", cmd_bench, "LoRA training throughput on a fixed batch (train tok/s, ms/step, memory)"},
    {"gpus", cmd_gpus, "the GPU catalog: memory, bandwidth, dense TFLOPS, power, price"},
    {"plan", cmd_plan, "memory, fit, speed, time and cost of a fine-tuning run on every GPU"},
    {"board", cmd_board, "leaderboards (Markdown, HTML) from bench result records"},
    {"tokenize", cmd_tokenize, "text to token ids and back with a model's tokenizer (--text, --file, --decode, --chat, --jsonl)"},
    {"train", cmd_train, "LoRA fine-tuning: model folder + JSONL data in, PEFT adapter out (checkpoints, resume, eval)"},
    {"generate", cmd_generate, "sample text from a model (+ adapter) with a KV cache (--prompt, --chat)"},
    {"merge", cmd_merge, "fold an adapter into the base: a full HF folder in the original dtypes"},
    {"convert-llama2c", cmd_convert_llama2c, "a llama2.c checkpoint (+ tokenizer) as an HF Llama folder"},
    {"export", cmd_export, "a model (+ adapter) or an adapter alone as GGUF for llama.cpp and Ollama"},
};

static void usage(FILE *out) {
    fprintf(out, "usage: fastlora <command> [options]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-16s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\n`fastlora <command> --help` describes each command's options.\n");
}

int main(int argc, char **argv) {
    fl_omp_default_environment(argv); /* passive OpenMP waiting unless the user chose (cpu_threads.h) */
    if (fl_cpu_isa_check_env() || fl_gemm_bf16_check_env()) { /* a forced kernel path this CPU lacks: say so, run none */
        fprintf(stderr, "fastlora: %s\n", fl_last_error());
        return 2;
    }
    if (argc < 2) { usage(stderr); return 2; }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].run(argc - 2, argv + 2);
    fprintf(stderr, "fastlora: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
