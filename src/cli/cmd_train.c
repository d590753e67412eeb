/* cmd_train.c — `fastlora train`: a model folder and a dataset in, a PEFT adapter out.
 *
 *   fastlora train --model DIR --data train.jsonl --out run1 [--eval-frac 0.05] [--max-steps 500] ...
 *   fastlora train --config run1/train_config.json            repeat a run exactly
 *   fastlora train --config run1/train_config.json --resume run1   continue after Ctrl-C / a crash
 * Every option lives in train/options.h (one table: command line, config file, saved config).
 * The loop is train/trainer.c; this file only loads the model and the tokenizer.
 */
#include "cli/commands.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/error.h"
#include "dist/dist.h"
#include "engine/model.h"
#include "io/file_util.h"
#include "lora/adapter_io.h"
#include "train/data.h"
#include "train/trainer.h"

static const char usage_text[] =
    "usage: fastlora train --model DIR --data FILE --out DIR [options]\n"
    "       fastlora train --config FILE.json|FILE.yaml [options]   (options from a file, ours or an Axolotl\n"
    "       config; the command line wins; --print-config shows the resolved options and exits)\n"
    "Data: JSONL with {\"text\"}, {\"prompt\",\"completion\"}, {\"messages\":[...]} or {\"instruction\",\"input\",\"output\"}\n"
    "per line (or a JSON array of them), plain text, or a fastlora tokens file (docs/TRAINING.md).\n"
    "Plain text (*.txt, or --format text-file): the WHOLE FILE is one document, as a {\"text\"} row is\n"
    "(BOS, text, EOS); --format text-paragraphs makes one per blank-line-separated block, text-lines one\n"
    "per line. A .txt file whose first line is a JSON object is read as JSONL. Documents longer than\n"
    "--seq are split (--truncate to cut them); several documents are packed per row with attention\n"
    "reset between them.";

int cmd_train(int argc, char **argv) {
    /* under mpirun/srun: join the job first (docs/DISTRIBUTED.md) */
    if (fl_dist_join() || fl_dist_pick_gpu()) {
        fprintf(stderr, "fastlora train: %s\n", fl_last_error());
        return 2;
    }
    fl_train_options o;
    fl_train_options_default(&o);
    int rc = fl_train_options_parse_args(&o, argc, argv, usage_text);
    if (rc) { fl_train_options_free(&o); return rc < 0 ? 0 : rc; }
    if (o.print_config) { /* the resolved options, as train_config.json would record them; nothing runs */
        fl_train_options_print(&o, stdout);
        fl_train_options_free(&o);
        return 0;
    }
    /* test hooks (tests/test_train.c): SIGKILL itself in the middle of the N-th checkpoint write / rotation */
    if (getenv("FASTLORA_TEST_CRASH_IN_CHECKPOINT")) o.crash_in_checkpoint = atoi(getenv("FASTLORA_TEST_CRASH_IN_CHECKPOINT"));
    if (getenv("FASTLORA_TEST_CRASH_IN_ROTATION")) o.crash_in_rotation = atoi(getenv("FASTLORA_TEST_CRASH_IN_ROTATION"));
    /* (tests/test_dist.c): stop after step N as Ctrl-C would, on every rank */
    if (getenv("FASTLORA_TEST_STOP_AT_STEP")) o.stop_at_step = atoi(getenv("FASTLORA_TEST_STOP_AT_STEP"));
    if (!o.model) {
        fprintf(stderr, "fastlora train: --model: required (a Hugging Face model folder)\n");
        fl_train_options_free(&o);
        return 2;
    }
    const fl_backend *be = NULL;
    fl_tokenizer *tok = NULL;
    fl_model m;
    int have_model = 0;
    fl_lora_config lc = fl_lora_config_default();
    lc.rank = o.rank;
    lc.alpha = o.alpha;
    lc.use_rslora = o.rslora;
    lc.dropout = o.dropout;
    lc.seed = (uint64_t)o.seed;
    rc = fl_train_options_validate(&o);
    /* strftime_now's time is pinned for the whole run and recorded in train_config.json, so a
     * --config OUT/train_config.json rerun (or a resume) renders chat data the same */
    if (!o.chat_date) o.chat_date = (uint64_t)time(NULL);
    if (!rc) rc = fl_lora_parse_targets(o.targets, &lc.target_mask);
    if (!rc && o.adapter) { /* a given adapter decides the LoRA shape; the seed still drives dropout */
        rc = fl_adapter_load_config(o.adapter, &lc);
        if (!rc) rc = fl_train_options_apply_adapter(&o, &lc, o.adapter);
        lc.seed = (uint64_t)o.seed;
    }
    if (!rc) rc = fl_backend_select_dtype(o.device, o.dtype, &be);
    if (!rc) fl_dist_use_backend(be);
    if (!rc && fl_tokenizer_load(&tok, o.model)) {
        tok = NULL;
        char why[512];
        snprintf(why, sizeof why, "%s", fl_last_error());
        /* only text data needs the tokenizer: then its absence is the error, with the reason */
        const char *text_data = !fl_data_is_tokens_file(o.data, o.format) ? o.data
                                : o.eval_data && !fl_data_is_tokens_file(o.eval_data, o.format) ? o.eval_data : NULL;
        /* data that cannot be read at all is that error (a folder, a FIFO), not the tokenizer's */
        if (fl_data_check_read(o.data) || (o.eval_data && fl_data_check_read(o.eval_data)))
            rc = FL_ERR_INPUT;
        else if (text_data)
            rc = fl_input_error("%s needs the model's tokenizer, and %s has no usable one (%s); a tokens file needs none",
                                text_data, o.model, why);
    }
    fl_quant quant = FL_QUANT_NONE;
    if (!rc) rc = fl_quant_parse(o.quant, &quant);
    if (!rc) {
        rc = fl_model_init_dir_quant(&m, o.model, be, &lc, quant);
        m.recompute = o.recompute;
        have_model = !rc;
        if (!rc && o.adapter) rc = fl_model_load_adapter(&m, o.adapter);
    }
    fl_train_result res;
    if (!rc) rc = fl_train_run(&o, &m, tok, &res);
    if (rc) fl_dist_setup_done(rc); /* a rank that failed before the trainer reached the ranks' agreement */
    if (rc && rc != 130 && fl_dist_prints_errors()) fprintf(stderr, "fastlora train%s: %s\n", fl_dist_tag(), fl_last_error());
    if (have_model) fl_model_free(&m);
    fl_tokenizer_free(tok);
    fl_train_options_free(&o);
    return rc;
}
