/* test_train_yaml.c — `--config run.yaml`: our option names in YAML, Axolotl's example configs
 * (tests/fixtures/axolotl/, copied from the Axolotl repository: its NOTICE there) mapped onto the
 * options, and every bad input one line naming the file, the line and the key.
 * Not the JSON config (test_train.c: train_bad_input_config_files) nor the training itself. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_run.h"
#include "common/error.h"
#include "io/file_util.h"
#include "test.h"
#include "train/config_yaml.h"
#include "train/options.h"

/* Loads YAML text over defaults; the notes (ignored keys) into *notes (caller frees). */
static int load_text(fl_train_options *o, const char *text, char **notes) {
    fl_train_options_default(o);
    size_t n = 0;
    char *buf = NULL;
    FILE *f = open_memstream(&buf, &n);
    int rc = fl_train_options_load_yaml_text(o, "run.yaml", text, strlen(text), f);
    fclose(f);
    if (notes) *notes = buf;
    else free(buf);
    return rc;
}

static int load_fixture(fl_train_options *o, const char *name, char **notes) {
    char path[256], *text = NULL;
    size_t len = 0;
    snprintf(path, sizeof path, "tests/fixtures/axolotl/%s", name);
    if (fl_file_read_all(path, FL_FILE_CONFIG, &text, &len)) return -1;
    fl_train_options_default(o);
    size_t n = 0;
    char *buf = NULL;
    FILE *f = open_memstream(&buf, &n);
    int rc = fl_train_options_load_yaml_text(o, path, text, len, f);
    fclose(f);
    free(text);
    *notes = buf;
    return rc;
}

TEST(train_yaml_our_option_names) {
    fl_train_options o;
    const char *text = "# ours, as in a JSON config\n"
                       "model: /m\ndata: d.jsonl\ngrad_accum: 4\neval-frac: 0.25\nschedule: linear\n"
                       "no-packing: true\ntargets: [q, v]\nlr: 2e-4\nseed: 18446744073709551615\nquant: ~\n";
    CHECK_EQ_INT(load_text(&o, text, NULL), 0);
    CHECK(o.grad_accum == 4 && o.eval_frac == 0.25 && !strcmp(o.schedule, "linear") && o.no_packing == 1);
    CHECK(!strcmp(o.targets, "q,v") && o.lr == 2e-4 && o.seed == UINT64_MAX && !o.quant && !strcmp(o.model, "/m"));
    CHECK(fl_train_options_given(&o, "grad-accum") && !fl_train_options_given(&o, "quant"));
    fl_train_options_free(&o);
}

TEST(train_yaml_bad_input_names_file_line_key) {
    const char *cases[][2] = {
        {"lr: 1\nlearning-rate: 2\n", "run.yaml:2: learning-rate: 'learning-rate' is not a training option"},
        {"seq: 2\nlr: fast\n", "run.yaml:2: lr: --lr: expected a number >= 0 and < 10, got 'fast'"},
        {"seq: 1.5\n", "run.yaml:1: seq: --seq: expected an integer"},
        {"\n\nbatch: 0\n", "run.yaml:3: batch: --batch: expected an integer in 1..65536, got '0'"},
        {"no-packing: 1\n", "run.yaml:1: no-packing: expected true or false, got '1'"},
        {"lr: 1e400\n", "run.yaml:1: lr: --lr: expected"},
        {"lr: 1\nlr: 2\n", "run.yaml:2: lr: given twice (also on line 1)"},
        {"lr: [1\n", "run.yaml:2:1: invalid YAML"},
        {"- 1\n- 2\n", "run.yaml:1: expected a mapping of options"},
        {"", "run.yaml: empty YAML file"},
        {"lr: 1\n---\nlr: 2\n", "run.yaml:3: a second YAML document"},
        {"model: {a: 1}\n", "run.yaml:1: model: expected a value, not a mapping"},
        {"? [a]\n: 1\n", "run.yaml:1: options: a key must be a string"},
        /* Axolotl */
        {"base_model: m\nlora_r: 0\n", "run.yaml:2: lora_r: --rank: expected an integer in 1..4096, got '0'"},
        {"base_model: m\nload_in_8bit: true\n", "run.yaml:2: load_in_8bit: 'true': fastlora has no 8-bit base weights"},
        {"base_model: m\nrope_scaling: {type: linear}\n", "run.yaml:2: rope_scaling: not an Axolotl key fastlora implements"},
        {"base_model: m\noptimizer: lion_8bit\n", "run.yaml:2: optimizer: 'lion_8bit': fastlora's optimizer is AdamW"},
        {"base_model: m\nlr_scheduler: one_cycle\n", "run.yaml:2: lr_scheduler: 'one_cycle'"},
        {"base_model: m\nadapter: ia3\n", "run.yaml:2: adapter: 'ia3': fastlora trains lora and qlora adapters"},
        {"base_model: m\nlora_target_modules:\n  - q_proj\n  - c_attn\n", "run.yaml:4: lora_target_modules: 'c_attn'"},
        {"base_model: m\ndatasets:\n  - path: a.jsonl\n    type: alpaca\n  - path: b.jsonl\n    type: alpaca\n",
         "run.yaml:5: datasets: fastlora trains on one dataset"},
        {"base_model: m\ndatasets:\n  - path: a.jsonl\n    type: input_output\n", "run.yaml:4: datasets[0].type: 'input_output'"},
        {"base_model: m\ndatasets:\n  - path: a.jsonl\n    shards: 4\n", "run.yaml:4: datasets[0].shards: 'shards': not a dataset key"},
        {"base_model: m\ndatasets:\n  - type: alpaca\n", "run.yaml:3: datasets: the dataset has no path"},
        {"base_model: m\nval_set_size: 500\n", "run.yaml:2: val_set_size: '500': a count of rows"},
        {"base_model: m\neval_steps: 0.25\n", "run.yaml:2: eval_steps: '0.25': a fraction of the run"},
        {"base_model: m\nchat_template: chatml\n", "run.yaml:2: chat_template: 'chatml'"},
        {"base_model: m\nspecial_tokens:\n  eos_token: </s>\n", "run.yaml:3: special_tokens.eos_token"},
        {"base_model: m\ndeepspeed: zero2.json\n", "run.yaml:2: deepspeed: 'zero2.json'"},
        {"base_model: m\nfp16: true\n", "run.yaml:2: fp16: 'true'"},
        {"base_model: m\nbf16: maybe\n", "run.yaml:2: bf16: 'maybe': expected true, false or auto"},
        {"base_model: m\nseq: 128\n", "run.yaml:2: seq: not an Axolotl key"},
        {"\"a\\nb\": 1\n", "run.yaml:1: a?b: 'a?b' is not a training option"}, /* one line, whatever the key */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fl_train_options o;
        int rc = load_text(&o, cases[i][0], NULL);
        CHECK_MSG(rc == FL_ERR_INPUT, "case %zu: rc %d", i, rc);
        CHECK_STR_CONTAINS(fl_last_error(), cases[i][1]);
        CHECK_MSG(!strchr(fl_last_error(), '\n'), "case %zu: more than one line: %s", i, fl_last_error());
        fl_train_options_free(&o);
    }
}

/* examples/llama-3/lora-1b.yml of axolotl-ai-cloud/axolotl: every key mapped or said */
TEST(train_yaml_axolotl_llama3_lora_1b) {
    fl_train_options o;
    char *notes = NULL;
    CHECK_EQ_INT(load_fixture(&o, "llama-3-lora-1b.yml", &notes), 0);
    CHECK(!strcmp(o.model, "NousResearch/Llama-3.2-1B") && !strcmp(o.data, "teknium/GPT4-LLM-Cleaned"));
    CHECK(!strcmp(o.format, "alpaca") && o.eval_frac == 0.1 && !strcmp(o.out, "./outputs/lora-out"));
    CHECK(o.seq == 2048 && o.no_packing == 0 && o.batch == 2 && o.grad_accum == 2 && o.epochs == 1);
    CHECK(o.rank == 16 && o.alpha == 32 && o.dropout == 0.05 && o.lr == 0.0002 && !strcmp(o.schedule, "cosine"));
    unsigned mask = 0;
    CHECK(fl_lora_parse_targets(o.targets, &mask) == 0 && mask == (1u << FL_N_PROJ) - 1);
    CHECK(o.recompute == 1 && o.warmup_ratio == 0.1 && o.weight_decay == 0 && o.log_every == 1 && o.seed == 42);
    CHECK(!o.quant && !o.dtype);
    /* one line per key it does not run as Axolotl does, with its line */
    CHECK_STR_CONTAINS(notes, "tests/fixtures/axolotl/llama-3-lora-1b.yml:42: optimizer: runs as AdamW with f32 moments");
    CHECK_STR_CONTAINS(notes, "llama-3-lora-1b.yml:52: attn_implementation: ignored");
    CHECK_STR_CONTAINS(notes, "llama-3-lora-1b.yml:58: evals_per_epoch: ignored");
    CHECK_STR_CONTAINS(notes, "llama-3-lora-1b.yml:62: special_tokens.pad_token: ignored");
    CHECK(!strstr(notes, "wandb")); /* unset keys are Axolotl's defaults: nothing to say */
    free(notes);
    fl_train_options_free(&o);
}

/* examples/llama-3/qlora-1b.yml: adapter qlora + load_in_4bit -> nf4 */
TEST(train_yaml_axolotl_llama3_qlora_1b) {
    fl_train_options o;
    char *notes = NULL;
    CHECK_EQ_INT(load_fixture(&o, "llama-3-qlora-1b.yml", &notes), 0);
    CHECK(o.quant && !strcmp(o.quant, "nf4"));
    CHECK(o.rank == 32 && o.alpha == 16 && o.grad_accum == 4 && o.batch == 2 && !strcmp(o.out, "./outputs/qlora-out"));
    CHECK_STR_CONTAINS(notes, "qlora-1b.yml:11: dataset_prepared_path: ignored");
    free(notes);
    fl_train_options_free(&o);
}

/* The examples that load the base in 8 bits (mistral/lora.yml, tiny-llama/lora.yml,
 * llama-3/instruct-lora-8b.yml, deepcogito/cogito-v1-preview-qwen-14B-lora.yml) are refused at
 * that line: fastlora has no int8 base. */
TEST(train_yaml_axolotl_8bit_examples_refused_at_their_line) {
    const char *cases[][2] = {
        {"mistral-lora.yml", "mistral-lora.yml:8: load_in_8bit: 'true'"},
        {"tiny-llama-lora.yml", "tiny-llama-lora.yml:7: load_in_8bit: 'true'"},
        {"llama-3-instruct-lora-8b.yml", "llama-3-instruct-lora-8b.yml:8: load_in_8bit: 'true'"},
        {"deepcogito-cogito-v1-preview-qwen-14B-lora.yml", "qwen-14B-lora.yml:5: load_in_8bit: 'true'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fl_train_options o;
        char *notes = NULL;
        CHECK_EQ_INT(load_fixture(&o, cases[i][0], &notes), FL_ERR_INPUT);
        CHECK_STR_CONTAINS(fl_last_error(), cases[i][1]);
        free(notes);
        fl_train_options_free(&o);
    }
}

TEST(train_yaml_axolotl_datasets_and_defaults) {
    fl_train_options o;
    char *notes = NULL;
    /* chat_template with Axolotl's field mapping -> messages + --fields */
    CHECK_EQ_INT(load_text(&o, "base_model: m\nlearning_rate: 1e-4\nchat_template: tokenizer_default\ndatasets:\n"
                               "  - path: chats/\n    type: chat_template\n    field_messages: conversations\n"
                               "    message_property_mappings:\n      role: from\n      content: value\n"
                               "test_datasets:\n  - path: eval.jsonl\n    type: chat_template\n"
                               "    field_messages: conversations\n    message_property_mappings:\n"
                               "      role: from\n      content: value\n", &notes), 0);
    CHECK(!strcmp(o.data, "chats/") && !strcmp(o.eval_data, "eval.jsonl") && !strcmp(o.format, "messages"));
    CHECK(!strcmp(o.fields, "messages=conversations,role=from,content=value"));
    /* Axolotl's defaults where the file says nothing */
    CHECK(o.seq == 512 && o.batch == 1 && o.grad_accum == 1 && o.no_packing == 1 && o.seed == 42 && o.lr == 1e-4);
    free(notes);
    fl_train_options_free(&o);
    /* sharegpt: conversations of from/value; completion: its field */
    CHECK_EQ_INT(load_text(&o, "base_model: m\ndatasets:\n  - path: sg.json\n    type: sharegpt\n", NULL), 0);
    CHECK(!strcmp(o.format, "messages") && !strcmp(o.fields, "messages=conversations"));
    fl_train_options_free(&o);
    CHECK_EQ_INT(load_text(&o, "base_model: m\nuse_tensorboard: true\nbf16: false\nlora_target_linear: true\n"
                               "datasets:\n  - path: t.jsonl\n    type: completion\n    field: body\n", NULL), 0);
    CHECK(!strcmp(o.format, "text") && !strcmp(o.fields, "text=body") && !strcmp(o.report_to, "tensorboard"));
    CHECK(!strcmp(o.dtype, "f32") && !strcmp(o.targets, "all"));
    fl_train_options_free(&o);
}

/* Axolotl's preference keys: rl (dpo, ipo, orpo, simpo), rl_beta, simpo_gamma, cpo_alpha; a dataset
 * of TRL-format rows takes no type. kto is refused by --objective, naming what is supported. */
TEST(train_yaml_axolotl_rl_keys) {
    fl_train_options o;
    CHECK_EQ_INT(load_text(&o, "base_model: m\nrl: simpo\nrl_beta: 2.5\nsimpo_gamma: 0.8\ncpo_alpha: 1\n"
                               "datasets:\n  - path: prefs.jsonl\n", NULL), 0);
    CHECK(!strcmp(o.objective, "simpo") && o.beta == 2.5 && o.simpo_gamma == 0.8 && o.cpo_alpha == 1);
    CHECK(!strcmp(o.data, "prefs.jsonl") && !strcmp(o.format, "auto"));
    fl_train_options_free(&o);
    CHECK_EQ_INT(load_text(&o, "base_model: m\nrl: kto\noutput_dir: o\ndatasets:\n  - path: p.jsonl\n", NULL), 0);
    CHECK_EQ_INT(fl_train_options_validate(&o), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "--objective: 'kto' (expected sft, dpo, ipo, orpo or simpo)");
    fl_train_options_free(&o);
}

/* Through the CLI: --print-config shows the resolved options; the command line wins over the file. */
TEST(train_yaml_print_config_and_command_line_wins) {
    if (!fl_test_bin()) SKIP("FASTLORA_BIN not set");
    char out[16384];
    int rc = cr_run(out, sizeof out, NULL, "train --config tests/fixtures/axolotl/llama-3-lora-1b.yml --rank 8 --print-config");
    CHECK_EQ_INT(rc, 0);
    CHECK_STR_CONTAINS(out, "\"rank\": 8,");
    CHECK_STR_CONTAINS(out, "\"seq\": 2048,");
    CHECK_STR_CONTAINS(out, "\"format\": \"alpaca\",");
    CHECK_STR_CONTAINS(out, "llama-3-lora-1b.yml:47: tf32: ignored");
    rc = cr_run(out, sizeof out, NULL, "train --config tests/fixtures/axolotl/mistral-lora.yml --print-config");
    CHECK_EQ_INT(rc, 2);
    CHECK_STR_CONTAINS(out, "fastlora train: tests/fixtures/axolotl/mistral-lora.yml:8: load_in_8bit");
}
