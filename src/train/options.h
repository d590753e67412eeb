/* options.h — every option of a training run, in one table (FL_TRAIN_OPTIONS): the command line
 * (`fastlora train --name value`), the JSON config file (`--config run.json` with the same names as
 * keys, `-` or `_`), and the resolved configuration saved as `train_config.json` in the output
 * folder all walk the same list, so they cannot drift apart. Precedence: defaults < config file <
 * command line. `fastlora train --config OUT/train_config.json` repeats a run exactly.
 * Not the loop (train/trainer.h).
 */
#ifndef FL_TRAIN_OPTIONS_H
#define FL_TRAIN_OPTIONS_H

#include <stdint.h>
#include <stdio.h>

#include "lora/lora.h"

/* The most optimizer steps a run may have (checkpoints store the step counters within 2^30). */
#define FL_TRAIN_MAX_STEPS (1 << 30)

/* X(name on the command line, kind, field, default, help) — kind: a fl_opt_kind (common/args.h) without
 * its FL_OPT_ prefix: STRING, INT, DOUBLE, FLAG, U64 */
#define FL_TRAIN_OPTIONS(X)                                                                                   \
    X("model", STRING, model, NULL, "HF model folder (config.json, safetensors, tokenizer)")                \
    X("data", STRING, data, NULL, "training data: JSONL (text, prompt/completion, messages, ShareGPT conversations, alpaca), plain text or tokens file; or a folder of .jsonl/.json files, or a glob") \
    X("out", STRING, out, NULL, "output folder: adapter, checkpoints/, metrics.jsonl, loss.svg, train_config.json") \
    X("eval-data", STRING, eval_data, NULL, "evaluation data, as --data (else --eval-frac of --data)")                   \
    X("eval-frac", DOUBLE, eval_frac, 0.0, "fraction of --data documents held out for eval (0: none)")        \
    X("format", STRING, format, "auto", "auto, text, prompt, messages, alpaca, tokens, or plain text: text-file (the file is one document; auto for *.txt), text-paragraphs (one per blank-line-separated block), text-lines") \
    X("fields", STRING, fields, NULL, "rename the data's fields, ours=theirs: e.g. prompt=question,completion=answer") \
    X("chat-template", STRING, chat_template, NULL, "messages data: a Jinja chat template file to render with instead of the model folder's") \
    X("chat-date", U64, chat_date, 0, "messages data: the time strftime_now gives the template, seconds since 1970 (0: the start of the run, recorded)") \
    X("objective", STRING, objective, "sft", "sft (next-token loss on the targets), or preference tuning of {prompt, chosen, rejected} rows: dpo, ipo, orpo, simpo (docs/TRAINING.md)") \
    X("beta", DOUBLE, beta, 0.1, "dpo, ipo, orpo, simpo: beta (TRL's, default 0.1 as in each of its trainers)") \
    X("simpo-gamma", DOUBLE, simpo_gamma, 0.5, "simpo: the target reward margin gamma")                    \
    X("cpo-alpha", DOUBLE, cpo_alpha, 0.0, "simpo: weight of the chosen completions' NLL (0: pure SimPO; TRL's CPOTrainer default is 1)") \
    X("ref-adapter", STRING, ref_adapter, NULL, "dpo, ipo: the reference, an adapter folder or none (the base model alone); default: the starting adapter, frozen") \
    X("seq", INT, seq, 512, "positions per row (T)")                                                          \
    X("batch", INT, batch, 4, "rows per micro-batch (B)")                                                      \
    X("grad-accum", INT, grad_accum, 1, "micro-batches per optimizer step")                                    \
    X("epochs", DOUBLE, epochs, 1.0, "passes over the training rows (ignored when --max-steps > 0)")         \
    X("max-steps", INT, max_steps, 0, "optimizer steps (0: from --epochs)")                                   \
    X("lr", DOUBLE, lr, 2e-4, "peak learning rate")                                                         \
    X("schedule", STRING, schedule, "cosine", "after warmup: cosine, linear or constant")                     \
    X("warmup", INT, warmup, 0, "linear warmup steps: step s < N runs at lr·s/N")                                                        \
    X("warmup-ratio", DOUBLE, warmup_ratio, 0.0, "warmup as a fraction of the steps, rounded up (when --warmup is 0)")    \
    X("min-lr-ratio", DOUBLE, min_lr_ratio, 0.0, "floor of cosine and linear as a fraction of --lr")                 \
    X("weight-decay", DOUBLE, weight_decay, 0.0, "AdamW decoupled weight decay")                            \
    X("beta1", DOUBLE, beta1, 0.9, "AdamW beta1")                                                           \
    X("beta2", DOUBLE, beta2, 0.999, "AdamW beta2")                                                         \
    X("adam-eps", DOUBLE, adam_eps, 1e-8, "AdamW epsilon")                                                  \
    X("clip", DOUBLE, clip, 1.0, "max global gradient norm (0: no clipping)")                               \
    X("rank", INT, rank, 16, "LoRA rank r")                                                                  \
    X("alpha", DOUBLE, alpha, 32.0, "LoRA alpha (scale alpha/r)")                                           \
    X("dropout", DOUBLE, dropout, 0.0, "LoRA dropout")                                                      \
    X("targets", STRING, targets, "all", "adapted: q,k,v,o,gate,up,down, all; Phi-3 qkv_proj,gate_up_proj") \
    X("rslora", FLAG, rslora, 0, "scale alpha/sqrt(r)")                                                      \
    X("seed", U64, seed, 1234, "seed of the LoRA init, shuffle, eval split and dropout")                     \
    X("no-packing", FLAG, no_packing, 0, "one document per row (default: pack several)")                     \
    X("truncate", FLAG, truncate, 0, "truncate documents longer than --seq (default: split them)")            \
    X("no-shuffle", FLAG, no_shuffle, 0, "keep the data order")                                              \
    X("eval-every", INT, eval_every, 50, "eval loss every N steps (and at the end)")                          \
    X("eval-max-rows", INT, eval_max_rows, 0, "evaluate on at most N rows (0: all)")                         \
    X("save-every", INT, save_every, 100, "checkpoint every N steps (0: only at the end and on Ctrl-C)")       \
    X("keep", INT, keep, 3, "checkpoints kept (the last K)")                                                 \
    X("log-every", INT, log_every, 10, "a log line every N steps when not on a terminal")                    \
    X("strict", FLAG, strict, 0, "stop at the first bad data line (default: report and skip)")                \
    X("quant", STRING, quant, NULL, "frozen projections in nf4 (QLoRA: 4-bit NormalFloat); a 4-bit checkpoint is nf4 anyway") \
    X("recompute", FLAG, recompute, 0, "activation recompute: keep each layer's input, rerun the layer in the backward") \
    X("report-to", STRING, report_to, "none", "also log to: tensorboard (OUT/runs/events.out.tfevents.*: the scalars of metrics.jsonl) or none") \
    X("device", STRING, device, "auto", "cpu, cuda or auto (default: the GPU when there is one)")             \
    X("dtype", STRING, dtype, NULL, "weight dtype: bf16 or f32 (the exact CPU reference); default bf16 on a GPU, on a CPU the faster of the two there (said when it runs)")   \
    X("adapter", STRING, adapter, NULL, "start from this PEFT adapter (its r, alpha, targets and rsLoRA; flags must agree)") \
    X("overwrite", FLAG, overwrite, 0, "--out holds an earlier run: delete its outputs and start anew")         \
    X("resume", STRING, resume, NULL, "continue from a checkpoint folder (or an output folder: its latest)") \
    X("allow-changed", STRING, allow_changed, NULL, "--resume: what may differ from the checkpoint's run, e.g. lr,max-steps (options), data, model")

#define FL_OPT_FIELD_STRING const char *
#define FL_OPT_FIELD_INT int
#define FL_OPT_FIELD_DOUBLE double /* as typed: 0.01 is 0.01, not 0.00999999978 */
#define FL_OPT_FIELD_FLAG int
#define FL_OPT_FIELD_U64 uint64_t

typedef struct {
#define X(name, kind, field, def, help) FL_OPT_FIELD_##kind field;
    FL_TRAIN_OPTIONS(X)
#undef X
    /* not options: */
    FILE *log;               /* progress and messages (NULL: stderr) */
    int crash_in_checkpoint; /* test hook: SIGKILL itself while writing the N-th checkpoint (0: never) */
    int crash_in_rotation;   /* test hook: SIGKILL itself while the N-th save deletes an old checkpoint */
    int inject_nan_step;     /* test hook: poison the loss at this step (0: never) */
    int stop_at_step;        /* test hook: behave as if Ctrl-C came during this step (0: never) */
    int print_config;        /* --print-config: print the resolved options and exit (cmd_train.c) */
    char *owned[64];         /* strings read from a config file */
    int n_owned;
    uint64_t given;          /* bit i: option i of the table was given (command line or config file) */
} fl_train_options;

void fl_train_options_default(fl_train_options *o);
/* Applies a JSON config file (an object of option names -> values). Unknown keys and wrong types
 * are errors naming the file and key. */
int fl_train_options_load_json(fl_train_options *o, const char *path);
/* Sets option `name` (a table name, `-` or `_`) from a config file's text: a string as it is
 * (copied), a flag from "true" / "false", a number through the command line's parser and the
 * option's range. Errors are one line starting with `where` ("run.yaml:12: lora_r"). Returns -1,
 * with no error set, when `name` is no option. Marks the option given. */
int fl_train_options_set_text(fl_train_options *o, const char *name, const char *text, const char *where);
/* Parses command-line arguments over *o (after defaults and config). `--config FILE` is applied
 * first wherever it appears (a .yaml/.yml name: train/config_yaml.h; else JSON). Returns 0, -1 for --help, 2 for bad input (message printed). */
int fl_train_options_parse_args(fl_train_options *o, int argc, char **argv, const char *usage);
/* Writes the resolved options as JSON (resume and overwrite omitted: they are actions, not settings).
 * Numbers are written in the shortest form that reads back as the same double (--lr 0.01: 0.01). */
int fl_train_options_save_json(const fl_train_options *o, const char *path);
/* The resolved options as fl_train_options_save_json writes them (--print-config). */
void fl_train_options_print(const fl_train_options *o, FILE *out);
/* The same as a malloc'd string (the caller frees it). */
char *fl_train_options_json(const fl_train_options *o);
/* Whether option `name` ("rank", "alpha", ...) was given on the command line or in a config file. */
int fl_train_options_given(const fl_train_options *o, const char *name);
/* Starting from an adapter whose config is *lc (from `adapter`/adapter_config.json): --rank, --alpha,
 * --targets and --rslora, when given, must agree with it (else one line naming the option, both
 * values and the file); the options then record the adapter's values, so train_config.json says
 * what ran. A given --dropout replaces the adapter's lora_dropout (it is a training setting), else
 * the adapter's is used. */
int fl_train_options_apply_adapter(fl_train_options *o, fl_lora_config *lc, const char *adapter);
/* Checks every number against its option's range (the table in options.c, the same the command line
 * and config files are checked against), the shape of a step (batch x seq x grad-accum), and names
 * (schedule, format, targets). */
int fl_train_options_validate(const fl_train_options *o);
void fl_train_options_free(fl_train_options *o);

#endif
