/* cmd_plan.c — `fastlora plan`: for a model and a LoRA run, on every catalog GPU (or the one
 * named): the memory breakdown and whether it fits, the largest micro-batch, whether recompute is
 * needed, the predicted (or measured) train tok/s, and the time and cost of N tokens x epochs; as
 * a table, JSON or an HTML page. `--check` compares the throughput model with bench records and
 * `--board FILE` shows its predictions next to a reference board. The arithmetic is in plan/plan.h.
 * Not the bench: nothing here runs the model. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "bench/reference.h"
#include "cli/commands.h"
#include "common/args.h"
#include "common/error.h"
#include "io/file_util.h"
#include "plan/plan.h"
#include "plan/plan_report.h"
#include "tokenizer/tokenizer.h"
#include "train/data.h"
#include "train/preference_data.h"
#include "train/preference_loss.h"

/* "5e7", "50M", "1.2B", "300k" -> tokens */
static int parse_count(const char *s, double *out) {
    const char *end;
    double v;
    if (fl_parse_double(s, &v, &end)) return -1;
    double mul = 1;
    if (*end == 'k' || *end == 'K') mul = 1e3, end++;
    else if (*end == 'm' || *end == 'M') mul = 1e6, end++;
    else if (*end == 'b' || *end == 'B' || *end == 'g' || *end == 'G') mul = 1e9, end++;
    if (end == s || *end || !(v > 0) || !isfinite(v) || v * mul > 1e15) return -1;   /* 1e15: a million B-token datasets */
    *out = v * mul;
    return 0;
}

/* Tokens in a dataset file (or a folder / glob of them), counted as `train` reads it (fl_dataset_load: the same format detection,
 * record shapes, chat template and EOS). A tokens file needs nothing more; JSONL and JSON arrays
 * need the model's tokenizer, and without one (--preset, or a folder without tokenizer files) the
 * count is bytes / 4, marked ESTIMATE. A file with no usable document is an error, as in train. */
typedef struct { const char *format, *fields, *chat_template; } data_reading; /* train's --format, --fields, --chat-template */

/* Preference rows (--objective): the tokens of both sequences of each pair, as train tokenizes them. */
static int count_pair_tokens(const char *path, const data_reading *how, fl_tokenizer *tok, const fl_model_config *cfg,
                             const char *objective, int seq, double *tokens, char *note, size_t cap) {
    fl_data_options d = fl_data_options_default();
    d.vocab_size = cfg->vocab_size;
    d.log = stderr;
    fl_chat_template *chat = NULL;
    int status = fl_data_parse_field_map(how->fields, &d);
    if (!status) status = fl_data_chat_template(tok, how->chat_template, &chat);
    fl_pref_options po = {.chat_template = chat, .max_length = seq,
                          .rules = fl_pref_rules_for((fl_pref_objective)fl_pref_objective_from_name(objective))};
    fl_pref_set set;
    memset(&set, 0, sizeof set);
    if (!status) status = fl_pref_set_load(&set, path, tok, &po, &d);
    if (!status && !set.n)
        status = fl_input_error("%s: no usable preference pairs (%zu rows, %zu bad, %zu dropped): nothing to train on "
                                "(--data)", path, set.n_rows, set.n_bad, set.n_dropped);
    if (!status) {
        size_t n = 0;
        for (size_t i = 0; i < set.n; i++) n += (size_t)set.pairs[i].n[0] + (size_t)set.pairs[i].n[1];
        *tokens = (double)n;
        snprintf(note, cap, "%s: %zu pairs, %zu tokens (chosen and rejected, --seq %d) as train --objective %s reads them",
                 path, set.n, n, seq, objective);
    }
    fl_pref_set_free(&set);
    fl_chat_template_free(chat);
    return status;
}

static int count_data_tokens(const char *path, const data_reading *how, const char *model_dir, const fl_model_config *cfg,
                             const char *objective, int seq, double *tokens, char *note, size_t cap) {
    /* a folder or a glob (train/data.h): the sizes of its files */
    char **paths;
    size_t n_paths;
    uint64_t size = 0;
    FL_TRY(fl_data_paths(path, &paths, &n_paths));
    int status = 0;
    for (size_t i = 0; i < n_paths && !status; i++) {
        int fd;
        uint64_t one = 0;
        status = fl_file_open_read(paths[i], FL_FILE_DATASET, &fd, &one);
        if (!status) close(fd);
        size += one;
    }
    fl_data_paths_free(paths, n_paths);
    FL_TRY(status);
    if (size == 0) return fl_input_error("%s: empty file: no documents to train on (--data)", path);
    fl_tokenizer *tok = NULL;
    int is_tokens = fl_data_is_tokens_file(path, "auto");
    if (!is_tokens && model_dir && fl_tokenizer_load(&tok, model_dir) != 0) {
        snprintf(note, cap, "ESTIMATE: %s has %.0f bytes / 4 (tokenizer of %s not usable: %s)", path, (double)size,
                 model_dir, fl_last_error());
        fl_clear_error();
        *tokens = (double)size / 4.0;
        return 0;
    }
    if (!is_tokens && !tok) {
        *tokens = (double)size / 4.0;
        snprintf(note, cap, "ESTIMATE: %s has %.0f bytes / 4 bytes per token (give --model DIR to count with its "
                            "tokenizer)", path, (double)size);
        return 0;
    }
    if (objective && tok) {
        status = count_pair_tokens(path, how, tok, cfg, objective, seq, tokens, note, cap);
        fl_tokenizer_free(tok);
        return status;
    }
    if (objective) return fl_input_error("%s: preference pairs are counted with the model's tokenizer: give --model DIR", path);
    fl_data_options d = fl_data_options_default();
    d.eos_id = tok && fl_tokenizer_eos_id(tok) >= 0 ? fl_tokenizer_eos_id(tok) : cfg->eos_token_id;
    d.vocab_size = cfg->vocab_size;
    fl_chat_template *chat = NULL;
    status = fl_data_format_parse(how->format, &d.format);
    if (!status) status = fl_data_parse_field_map(how->fields, &d);
    if (!status) status = fl_data_chat_template(tok, how->chat_template, &chat);
    d.chat_template = chat;
    fl_dataset ds;
    memset(&ds, 0, sizeof ds);
    if (!status) status = fl_dataset_load(&ds, path, tok, &d);
    if (!status && ds.n_docs == 0)
        status = fl_input_error("%s: no usable documents (%zu records, %zu bad): nothing to train on (--data)", path,
                                ds.n_lines, ds.n_bad);
    if (!status) {
        *tokens = (double)ds.n_tokens;
        snprintf(note, cap, "%s: %zu documents, %zu tokens as train reads them (%s%s)%s", path, ds.n_docs,
                 ds.n_tokens, is_tokens ? "tokens file" : "tokenizer of ", is_tokens ? "" : model_dir,
                 ds.n_bad ? ", some records skipped" : "");
    }
    fl_dataset_free(&ds);
    fl_chat_template_free(chat);
    if (tok) fl_tokenizer_free(tok);
    return status;
}

/* --check: the throughput model against every usable bench record (leave-one-out efficiency). */
static void print_check(const fl_plan_calibration *cal, const char *path) {
    printf("throughput model vs bench records (%s): each prediction uses the efficiency calibrated on the OTHER "
           "records\n", path);
    printf("%-5s %-26s %-14s %5s %6s %11s %11s %7s %6s %10s %10s %7s\n", "line", "device", "model", "B", "T", "tok/s",
           "predicted", "error", "eff", "peak MiB", "model MiB", "error");
    double sum = 0, msum = 0;
    int n = 0, mn = 0;
    for (int i = 0; i < cal->n; i++) {
        const fl_plan_record *r = &cal->recs[i];
        if (!r->gpu) {
            printf("%-5d %-26.26s %-14.14s %5d %6d %11.1f %11s %7s %6s  (device not in the catalog)\n", r->line,
                   r->device, r->cfg.name, r->batch, r->seq, r->train_tok_s, "-", "-", "-");
            continue;
        }
        double err = (r->predicted_tok_s - r->train_tok_s) / r->train_tok_s * 100;
        sum += fabs(err);
        n++;
        printf("%-5d %-26.26s %-14.14s %5d %6d %11.1f %11.1f %+6.1f%% %6.3f", r->line, r->device, r->cfg.name, r->batch,
               r->seq, r->train_tok_s, r->predicted_tok_s, err, r->efficiency);
        if (r->peak_mem_bytes > 0) {
            fl_plan_target tg = strcasecmp(r->backend, "cpu") ? FL_TARGET_CUDA : FL_TARGET_CPU;
            double model = fl_plan_memory_compute(&r->cfg, &r->lc, r->batch, r->seq, tg, r->mode).total;
            double merr = (model - r->peak_mem_bytes) / r->peak_mem_bytes * 100;
            msum += fabs(merr);
            mn++;
            printf(" %10.1f %10.1f %+6.1f%%", r->peak_mem_bytes / 1048576.0, model / 1048576.0, merr);
        }
        printf("\n");
    }
    if (n) printf("throughput: mean absolute error %.1f%% over %d records (leave-one-out efficiency)\n", sum / n, n);
    if (mn) printf("memory: mean absolute error %.1f%% over %d records (CPU: model vs peak RSS, which also holds the "
                   "process's own baseline; CUDA: vs the backend's counted peak)\n", msum / mn, mn);
    if (cal->n_skipped) printf("skipped: %s\n", cal->notes);
}

/* --board: predictions for a reference board (model,gpu,train_tok_s) at --batch/--seq. */
static int print_board(const char *path, const fl_plan_request *base, const fl_gpu_catalog *cat,
                       const fl_plan_calibration *cal) {
    fl_reference_board ref;
    FL_TRY(fl_reference_board_load(&ref, path));
    printf("reference board %s vs fastlora's model (CUDA bf16, batch %d x seq %d, LoRA r=%d on %s)\n", path,
           base->batch, base->seq, base->lc.rank, base->targets);
    printf("%-36s %-50s %10s %10s %7s  %s\n", "model", "gpu", "board", "predicted", "ratio", "speed source");
    for (size_t i = 0; i < ref.n; i++) {
        const char *model = ref.entries[i].weights, *gpu = ref.entries[i].gpu;
        double board = ref.entries[i].train_tok_s;
        fl_plan_request rq = *base;
        int known = !fl_plan_resolve_model(&rq.cfg, model);
        const fl_gpu_spec *g = fl_gpu_catalog_find(cat, gpu);
        if (!known || !g) {
            printf("%-36.36s %-50.50s %10.1f %10s  (%s)\n", model, gpu, board, "-", !g ? "gpu not in catalog" : "no preset");
            continue;
        }
        fl_plan_result res;
        fl_plan_gpu(&rq, g, cal, &res);
        if (!res.fits) {
            printf("%-36.36s %-50.50s %10.1f %10s  (does not fit)\n", model, gpu, board, "-");
            continue;
        }
        printf("%-36.36s %-50.50s %10.1f %10.1f %6.2fx  %s%s\n", model, gpu, board, res.tok_s, res.tok_s / board,
               res.tok_s_source, res.grad_accum > 1 ? " [smaller micro-batch]" : "");
    }
    fl_reference_board_free(&ref);
    return 0;
}

int cmd_plan(int argc, char **argv) {
    const char *model_dir = NULL, *preset = NULL, *targets = "q,k,v,o,gate,up,down", *tokens_s = NULL, *data = NULL;
    data_reading how = {.format = "auto"};
    const char *recompute = "auto", *gpu_name = NULL, *catalog = NULL, *records = NULL, *html = NULL, *device = "cuda";
    const char *board = NULL, *quant = NULL, *objective = NULL;
    int batch = 4, seq = 1024, rank = 16, json = 0, check = 0, gpus = 1;
    float alpha = 32.0f, epochs = 1.0f, dropout = 0.0f;
    const fl_option options[] = {
        {"model", FL_OPT_STRING, &model_dir, "Hugging Face model folder (config.json; its tokenizer counts --data)", FL_NO_RANGE},
        {"preset", FL_OPT_STRING, &preset, "built-in config (qwen2.5-1.5b, smollm2-135m, ...)", FL_NO_RANGE},
        {"seq", FL_OPT_INT, &seq, "sequence length T (default 1024)", FL_RANGE(2, FL_MAX_SEQ)},
        {"batch", FL_OPT_INT, &batch, "batch size B per optimizer step (default 4)", FL_RANGE(1, FL_MAX_BATCH)},
        {"rank", FL_OPT_INT, &rank, "LoRA rank R (default 16)", FL_RANGE(1, FL_MAX_RANK)},
        {"alpha", FL_OPT_FLOAT, &alpha, "LoRA alpha (default 32)", FL_ABOVE(0)},
        {"dropout", FL_OPT_FLOAT, &dropout, "LoRA dropout (default 0)", FL_MIN | FL_MAX_OPEN, 0, 1},
        {"targets", FL_OPT_STRING, &targets, "adapted projections (default q,k,v,o,gate,up,down)", FL_NO_RANGE},
        {"tokens", FL_OPT_STRING, &tokens_s, "training tokens per epoch (50M, 1.2B, 3e8)", FL_NO_RANGE},
        {"data", FL_OPT_STRING, &data, "a dataset file (or folder / glob, as train reads it) whose tokens to count (instead of --tokens)", FL_NO_RANGE},
        {"format", FL_OPT_STRING, &how.format, "--data's format, as train's --format (default auto)", FL_NO_RANGE},
        {"fields", FL_OPT_STRING, &how.fields, "--data's field names, as train's --fields (ours=theirs,...)", FL_NO_RANGE},
        {"chat-template", FL_OPT_STRING, &how.chat_template, "messages data: the Jinja template train renders with (default: the model folder's)", FL_NO_RANGE},
        {"epochs", FL_OPT_FLOAT, &epochs, "epochs (default 1)", FL_MIN_OPEN | FL_MAX, 0, 1e4},
        {"gpus", FL_OPT_INT, &gpus, "data parallel on N GPUs of each kind: aggregate tok/s, all-reduce, time and cost (default 1)",
         FL_RANGE(1, 4096)},
        {"objective", FL_OPT_STRING, &objective, "sft (default), or preference tuning (dpo, ipo, orpo, simpo): --batch pairs of two rows each; dpo/ipo add each pair's reference forward once", FL_NO_RANGE},
        {"recompute", FL_OPT_STRING, &recompute, "auto, on or off (default auto: only when it does not fit)", FL_NO_RANGE},
        {"quant", FL_OPT_STRING, &quant, "nf4: the frozen projections in 4-bit NormalFloat (train --quant nf4, QLoRA)", FL_NO_RANGE},
        {"gpu", FL_OPT_STRING, &gpu_name, "plan for this GPU only (catalog or driver name, e.g. \"NVIDIA H200\")", FL_NO_RANGE},
        {"catalog", FL_OPT_STRING, &catalog, "a CSV of your own: add GPUs or override fields (prices too)", FL_NO_RANGE},
        {"records", FL_OPT_STRING, &records, "bench --json records (JSON lines) to calibrate and to use as measurements", FL_NO_RANGE},
        {"device", FL_OPT_STRING, &device, "cuda (default: bf16 on a GPU) or cpu (f32 engine; needs a CPU row in --catalog)", FL_NO_RANGE},
        {"json", FL_OPT_FLAG, &json, "print JSON instead of the table", FL_NO_RANGE},
        {"html", FL_OPT_STRING, &html, "also write an HTML page with charts to this file", FL_NO_RANGE},
        {"check", FL_OPT_FLAG, &check, "compare the throughput model with every record of --records and exit", FL_NO_RANGE},
        {"board", FL_OPT_STRING, &board, "show predictions next to a reference board CSV (model,gpu,train_tok_s)", FL_NO_RANGE},
    };
    int rc = fl_args_parse("plan", argc, argv, options, (int)(sizeof options / sizeof options[0]),
                           "usage: fastlora plan --model DIR | --preset NAME [--seq T --batch B --rank R --targets ...]\n"
                           "                     [--tokens N | --data FILE [--format F --fields MAP --chat-template FILE]] [--epochs E] [--recompute auto|on|off] [--quant nf4]\n"
                           "                     [--gpu NAME] [--catalog FILE] [--records FILE] [--json] [--html FILE]");
    if (rc) return rc < 0 ? 0 : rc;
    if (model_dir && preset) { fprintf(stderr, "fastlora: plan: give --model or --preset, not both\n"); return 2; }
    if (!model_dir && !preset) { fprintf(stderr, "fastlora: plan: give --model DIR or --preset NAME\n"); return 2; }
    if (tokens_s && data) { fprintf(stderr, "fastlora: plan: give --tokens or --data, not both\n"); return 2; }
    if (objective && !strcmp(objective, "sft")) objective = NULL;
    if (objective && fl_pref_objective_from_name(objective) < 0) {
        fprintf(stderr, "fastlora: plan: --objective: '%s' (expected sft, dpo, ipo, orpo or simpo)\n", objective);
        return 2;
    }
    if (objective) batch *= 2; /* rows: a pair's chosen and rejected (packed when they are short) */
    if ((int64_t)batch * seq > FL_MAX_MICRO_TOKENS) {
        fprintf(stderr, "fastlora plan: --batch %d x --seq %d is over %d positions per step\n", batch, seq, FL_MAX_MICRO_TOKENS);
        return 2;
    }
    fl_plan_request rq = fl_plan_request_default();
    rq.batch = batch;
    rq.seq = seq;
    rq.epochs = epochs;
    rq.gpus = gpus;
    rq.lc.rank = rank;
    rq.lc.alpha = alpha;
    rq.lc.dropout = dropout;
    snprintf(rq.targets, sizeof rq.targets, "%s", targets);
    if (!strcasecmp(recompute, "auto")) rq.recompute = FL_RECOMPUTE_AUTO;
    else if (!strcasecmp(recompute, "on")) rq.recompute = FL_RECOMPUTE_ON;
    else if (!strcasecmp(recompute, "off")) rq.recompute = FL_RECOMPUTE_OFF;
    else { fprintf(stderr, "fastlora: plan: --recompute: expected auto, on or off, got '%s'\n", recompute); return 2; }
    if (!strcasecmp(device, "cuda") || !strcasecmp(device, "gpu")) rq.target = FL_TARGET_CUDA;
    else if (!strcasecmp(device, "cpu")) rq.target = FL_TARGET_CPU;
    else { fprintf(stderr, "fastlora: plan: --device: expected cuda or cpu, got '%s'\n", device); return 2; }
    if (tokens_s && parse_count(tokens_s, &rq.tokens)) {
        fprintf(stderr, "fastlora: plan: --tokens: expected a count > 0 and <= 1e15 (50M, 1.2B, 3e8), got '%s'\n", tokens_s);
        return 2;
    }
    int status = fl_lora_parse_targets(targets, &rq.lc.target_mask);
    if (!status) status = fl_quant_parse(quant, &rq.quant);
    if (!status && html) status = fl_output_file_check(html);   /* before the table is printed */
    fl_plan_report rep;
    memset(&rep, 0, sizeof rep);
    if (!status) {
        if (preset) {
            status = fl_config_preset(&rq.cfg, preset);
            snprintf(rep.model_label, sizeof rep.model_label, "%s (preset)", preset);
        } else {
            char *path = malloc(strlen(model_dir) + 16);
            sprintf(path, "%s/config.json", model_dir);
            status = fl_config_load(&rq.cfg, path);
            free(path);
            snprintf(rep.model_label, sizeof rep.model_label, "%s", model_dir);
        }
        if (!status) status = fl_lora_check_targets(&rq.cfg, rq.lc.target_mask);   /* Phi-3: whole fused modules */
    }
    if (!status && data)
        status = count_data_tokens(data, &how, model_dir, &rq.cfg, objective, seq, &rq.tokens, rep.tokens_note,
                                   sizeof rep.tokens_note);
    if (!status && objective && fl_pref_needs_reference(fl_pref_objective_from_name(objective))) {
        rq.ref_tokens = rq.tokens;
        size_t len = strlen(rep.tokens_note);
        snprintf(rep.tokens_note + len, sizeof rep.tokens_note - len, "%s%s: each pair's reference forward once (half "
                 "a trained token each)", len ? "; " : "", objective);
    }
    else if (tokens_s) snprintf(rep.tokens_note, sizeof rep.tokens_note, "--tokens %s", tokens_s);
    fl_gpu_catalog cat;
    memset(&cat, 0, sizeof cat);
    if (!status) status = fl_gpu_catalog_load_default(&cat);
    if (!status && catalog) status = fl_gpu_catalog_merge_file(&cat, catalog);
    fl_plan_calibration cal;
    memset(&cal, 0, sizeof cal);
    if (!status) status = fl_plan_calibration_load(&cal, records, &cat);
    if (status) {
        fprintf(stderr, "fastlora: %s\n", fl_last_error());
        fl_gpu_catalog_free(&cat);
        return status;
    }
    if (cal.n_skipped && !check)   /* --check lists them itself */
        fprintf(stderr, "fastlora: plan: %s: %d record%s not used: %s\n", records, cal.n_skipped,
                cal.n_skipped == 1 ? "" : "s", cal.notes);
    if (check || board) {
        if (check) {
            if (!records) fprintf(stderr, "fastlora: plan: --check needs --records FILE\n"), status = 2;
            else print_check(&cal, records);
        }
        if (!status && board) status = print_board(board, &rq, &cat, &cal);
        if (status == FL_ERR_INPUT && board) fprintf(stderr, "fastlora: %s\n", fl_last_error());
        fl_plan_calibration_free(&cal);
        fl_gpu_catalog_free(&cat);
        return status;
    }
    const fl_gpu_spec *only = NULL;
    if (gpu_name) {
        only = fl_gpu_catalog_find(&cat, gpu_name);
        if (!only) {
            fprintf(stderr, "fastlora: plan: --gpu: no catalog GPU matches '%s' (see `fastlora gpus`; add it with "
                            "--catalog FILE)\n", gpu_name);
            fl_plan_calibration_free(&cal);
            fl_gpu_catalog_free(&cat);
            return 2;
        }
    }
    rep.rq = rq;
    rep.cal = &cal;
    rep.res = fl_calloc((size_t)cat.n + 1, sizeof(fl_plan_result));
    for (int i = 0; i < cat.n; i++) {
        if (only && only != &cat.gpus[i]) continue;
        fl_plan_gpu(&rq, &cat.gpus[i], &cal, &rep.res[rep.n++]);
    }
    if (json) {
        json_t *root = fl_plan_report_json(&rep);
        char *s = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        printf("%s\n", s);
        free(s);
        json_decref(root);
    } else {
        fl_plan_report_table(&rep, stdout);
    }
    if (html) {
        status = fl_plan_report_html(&rep, html);
        if (status) fprintf(stderr, "fastlora: %s\n", fl_last_error());
        else if (!json) printf("\nwrote %s\n", html);
    }
    free(rep.res);
    fl_plan_calibration_free(&cal);
    fl_gpu_catalog_free(&cat);
    return status;
}
