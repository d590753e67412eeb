/* config_yaml.c — YAML config files (ours and Axolotl's) onto the training options (see
 * config_yaml.h). libyaml parses the file into a document (nodes with their line numbers); this
 * file walks it and sets options through fl_train_options_set_text, so a YAML value meets the
 * same parser and range as the command line's.
 * Not a YAML implementation (libyaml is), nor the data formats the keys point to (data.c).
 */
#include "train/config_yaml.h"

#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "common/error.h"
#include "io/file_util.h"
#include "lora/lora.h"

typedef struct {
    const char *path;
    yaml_document_t *doc;
    fl_train_options *o;
    FILE *notes;
} yctx;

/* ===== Nodes ===== */

static int line_of(const yaml_node_t *n) { return n ? (int)n->start_mark.line + 1 : 0; }

static int is_scalar(const yaml_node_t *n) { return n && n->type == YAML_SCALAR_NODE; }
static const char *text_of(const yaml_node_t *n) { return is_scalar(n) ? (const char *)n->data.scalar.value : ""; }

/* YAML's null: an empty plain scalar, ~, null (plain, any of YAML's spellings) */
static int is_null(const yaml_node_t *n) {
    if (!is_scalar(n) || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) return 0;
    const char *t = text_of(n);
    return !*t || !strcmp(t, "~") || !strcmp(t, "null") || !strcmp(t, "Null") || !strcmp(t, "NULL");
}

/* YAML 1.2's booleans, as "true" / "false"; NULL for anything else (a quoted "true" counts:
 * Axolotl's pydantic reads it so) */
static const char *bool_of(const yaml_node_t *n) {
    if (!is_scalar(n)) return NULL;
    const char *t = text_of(n);
    if (!strcmp(t, "true") || !strcmp(t, "True") || !strcmp(t, "TRUE")) return "true";
    if (!strcmp(t, "false") || !strcmp(t, "False") || !strcmp(t, "FALSE")) return "false";
    return NULL;
}

static yaml_node_t *node(yctx *c, int id) { return yaml_document_get_node(c->doc, id); }

/* The value of `key` in mapping m (NULL when absent). */
static yaml_node_t *map_get(yctx *c, yaml_node_t *m, const char *key) {
    if (!m || m->type != YAML_MAPPING_NODE) return NULL;
    for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++)
        if (!strcmp(text_of(node(c, p->key)), key)) return node(c, p->value);
    return NULL;
}

/* A mapping's keys must be distinct plain strings. */
static int check_keys(yctx *c, yaml_node_t *m, const char *what) {
    for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
        yaml_node_t *k = node(c, p->key);
        if (!is_scalar(k)) return fl_input_error("%s:%d: %s: a key must be a string", c->path, line_of(k), what);
        for (yaml_node_pair_t *q = m->data.mapping.pairs.start; q < p; q++)
            if (!strcmp(text_of(node(c, q->key)), text_of(k)))
                return fl_input_error("%s:%d: %s: given twice (also on line %d)", c->path, line_of(k), text_of(k),
                                      line_of(node(c, q->key)));
    }
    return 0;
}

static int set(yctx *c, const char *option, const char *text, const yaml_node_t *at, const char *key) {
    char where[600];
    snprintf(where, sizeof where, "%s:%d: %s", c->path, line_of(at), key);
    int rc = fl_train_options_set_text(c->o, option, text, where);
    if (rc < 0) return fl_input_error("%s: '%s' is not a training option (see fastlora train --help)", where, option);
    return rc;
}

static void note(yctx *c, const yaml_node_t *at, const char *key, const char *what) {
    fprintf(c->notes ? c->notes : stderr, "fastlora train: %s:%d: %s: %s\n", c->path, line_of(at), key, what);
}

static int refuse(yctx *c, const yaml_node_t *at, const char *key, const char *why) {
    if (is_scalar(at)) return fl_input_error("%s:%d: %s: '%s': %s", c->path, line_of(at), key, text_of(at), why);
    return fl_input_error("%s:%d: %s: %s", c->path, line_of(at), key, why);
}

/* ===== Our own option names ===== */

/* A scalar as it is; a list of scalars joined with commas. */
static int value_text(yctx *c, yaml_node_t *v, const char *key, char *out, size_t cap) {
    if (is_scalar(v)) {
        const char *b = bool_of(v);
        snprintf(out, cap, "%s", b ? b : text_of(v));
        return 0;
    }
    if (v->type == YAML_SEQUENCE_NODE) {
        out[0] = 0;
        for (yaml_node_item_t *i = v->data.sequence.items.start; i < v->data.sequence.items.top; i++) {
            yaml_node_t *e = node(c, *i);
            if (!is_scalar(e)) return fl_input_error("%s:%d: %s: expected a list of strings", c->path, line_of(e), key);
            size_t n = strlen(out);
            if (n + strlen(text_of(e)) + 2 > cap) return fl_input_error("%s:%d: %s: too long", c->path, line_of(e), key);
            if (n) out[n++] = ',';
            memcpy(out + n, text_of(e), strlen(text_of(e)) + 1);
        }
        return 0;
    }
    return fl_input_error("%s:%d: %s: expected a value, not a mapping", c->path, line_of(v), key);
}

static int load_ours(yctx *c, yaml_node_t *root) {
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top; p++) {
        yaml_node_t *k = node(c, p->key), *v = node(c, p->value);
        if (is_null(v)) continue;
        char text[4096];
        FL_TRY(value_text(c, v, text_of(k), text, sizeof text));
        FL_TRY(set(c, text_of(k), text, k, text_of(k)));
    }
    return 0;
}

/* ===== Axolotl ===== */

typedef enum {
    AX_MAP,     /* arg: our option; the value as it is */
    AX_FLAG,    /* arg: our flag; true / false */
    AX_NOFLAG,  /* arg: our flag, set to the opposite (sample_packing -> no-packing) */
    AX_IGNORE,  /* why it cannot change the adapter: said, then ignored */
    AX_ONLY,    /* arg: the one value fastlora has (else refused with why) */
    AX_UNSET,   /* refused when set (why) */
    AX_SPECIAL, /* a function below */
} ax_kind;

static const struct {
    const char *key;
    ax_kind kind;
    const char *arg, *why;
} ax_keys[] = {
    {"base_model", AX_MAP, "model", NULL},
    {"output_dir", AX_MAP, "out", NULL},
    {"sequence_len", AX_MAP, "seq", NULL},
    {"micro_batch_size", AX_MAP, "batch", NULL},
    {"gradient_accumulation_steps", AX_MAP, "grad-accum", NULL},
    {"num_epochs", AX_MAP, "epochs", NULL},
    {"max_steps", AX_MAP, "max-steps", NULL},
    {"learning_rate", AX_MAP, "lr", NULL},
    {"warmup_steps", AX_MAP, "warmup", NULL},
    {"warmup_ratio", AX_MAP, "warmup-ratio", NULL},
    {"cosine_min_lr_ratio", AX_MAP, "min-lr-ratio", NULL},
    {"weight_decay", AX_MAP, "weight-decay", NULL},
    {"max_grad_norm", AX_MAP, "clip", NULL},
    {"adam_beta1", AX_MAP, "beta1", NULL},
    {"adam_beta2", AX_MAP, "beta2", NULL},
    {"adam_epsilon", AX_MAP, "adam-eps", NULL},
    {"rl", AX_MAP, "objective", NULL},          /* dpo, ipo, orpo, simpo (kto, grpo: refused by --objective) */
    {"rl_beta", AX_MAP, "beta", NULL},
    {"simpo_gamma", AX_MAP, "simpo-gamma", NULL},
    {"cpo_alpha", AX_MAP, "cpo-alpha", NULL},
    {"lora_r", AX_MAP, "rank", NULL},
    {"lora_alpha", AX_MAP, "alpha", NULL},
    {"lora_dropout", AX_MAP, "dropout", NULL},
    {"lora_model_dir", AX_MAP, "adapter", NULL},
    {"peft_use_rslora", AX_FLAG, "rslora", NULL},
    {"gradient_checkpointing", AX_FLAG, "recompute", NULL},
    {"sample_packing", AX_NOFLAG, "no-packing", NULL},
    {"seed", AX_MAP, "seed", NULL},
    {"logging_steps", AX_MAP, "log-every", NULL},
    {"save_total_limit", AX_MAP, "keep", NULL},
    {"val_set_size", AX_SPECIAL, NULL, NULL},
    {"eval_steps", AX_SPECIAL, "eval-every", NULL},
    {"save_steps", AX_SPECIAL, "save-every", NULL},
    {"adapter", AX_SPECIAL, NULL, NULL},
    {"load_in_4bit", AX_SPECIAL, NULL, NULL},
    {"optimizer", AX_SPECIAL, NULL, NULL},
    {"lr_scheduler", AX_SPECIAL, NULL, NULL},
    {"lora_target_modules", AX_SPECIAL, NULL, NULL},
    {"lora_target_linear", AX_SPECIAL, NULL, NULL},
    {"bf16", AX_SPECIAL, NULL, NULL},
    {"datasets", AX_SPECIAL, "data", NULL},
    {"test_datasets", AX_SPECIAL, "eval-data", NULL},
    {"chat_template", AX_SPECIAL, NULL, NULL},
    {"special_tokens", AX_SPECIAL, NULL, NULL},
    {"use_tensorboard", AX_SPECIAL, NULL, NULL},
    {"load_in_8bit", AX_ONLY, "false", "fastlora has no 8-bit base weights (load_in_4bit: true with adapter: qlora is nf4)"},
    {"fp16", AX_ONLY, "false", "fastlora computes in bf16 or f32 (bf16: true, or bf16: false for f32)"},
    {"train_on_inputs", AX_ONLY, "false", "fastlora trains on the outputs only (prompt/completion, alpaca, assistant turns)"},
    {"group_by_length", AX_ONLY, "false", "fastlora shuffles pieces, it does not group them by length"},
    {"lora_fan_in_fan_out", AX_ONLY, "false", "Llama-family projections are not fan-in-fan-out"},
    {"trust_remote_code", AX_ONLY, "false", "fastlora runs no model code: it implements the Llama family itself"},
    {"save_safetensors", AX_ONLY, "true", "fastlora writes safetensors"},
    {"resume_from_checkpoint", AX_UNSET, NULL, "an Axolotl checkpoint is not fastlora's: use --resume OUT with a fastlora run"},
    {"lora_modules_to_save", AX_UNSET, NULL, "fastlora trains LoRA matrices only (no embed_tokens / lm_head copies)"},
    {"tokenizer_config", AX_UNSET, NULL, "fastlora reads the tokenizer of the base_model folder"},
    {"deepspeed", AX_UNSET, NULL, "fastlora's multi-GPU runs are mpirun/srun data parallel (docs/DISTRIBUTED.md)"},
    {"fsdp", AX_UNSET, NULL, "fastlora's multi-GPU runs are mpirun/srun data parallel (docs/DISTRIBUTED.md)"},
    {"fsdp_config", AX_UNSET, NULL, "fastlora's multi-GPU runs are mpirun/srun data parallel (docs/DISTRIBUTED.md)"},
    {"plugins", AX_UNSET, NULL, "fastlora has no plugins"},
    {"early_stopping_patience", AX_UNSET, NULL, "fastlora runs the steps it is given"},
    {"neftune_noise_alpha", AX_UNSET, NULL, "fastlora adds no embedding noise"},
    {"gptq", AX_UNSET, NULL, "fastlora reads no GPTQ weights"},
    {"wandb_project", AX_IGNORE, NULL, "ignored: no Weights & Biases logging (metrics.jsonl; use_tensorboard: true)"},
    {"wandb_entity", AX_IGNORE, NULL, "ignored: no Weights & Biases logging"},
    {"wandb_watch", AX_IGNORE, NULL, "ignored: no Weights & Biases logging"},
    {"wandb_name", AX_IGNORE, NULL, "ignored: no Weights & Biases logging"},
    {"wandb_log_model", AX_IGNORE, NULL, "ignored: no Weights & Biases logging"},
    {"wandb_run_id", AX_IGNORE, NULL, "ignored: no Weights & Biases logging"},
    {"hub_model_id", AX_IGNORE, NULL, "ignored: fastlora uploads nothing"},
    {"hub_strategy", AX_IGNORE, NULL, "ignored: fastlora uploads nothing"},
    {"dataset_prepared_path", AX_IGNORE, NULL, "ignored: fastlora keeps no dataset cache"},
    {"flash_attention", AX_IGNORE, NULL, "ignored: fastlora's attention computes the same softmax(QK^T)V"},
    {"attn_implementation", AX_IGNORE, NULL, "ignored: fastlora's attention computes the same softmax(QK^T)V"},
    {"sdp_attention", AX_IGNORE, NULL, "ignored: fastlora's attention computes the same softmax(QK^T)V"},
    {"xformers_attention", AX_IGNORE, NULL, "ignored: fastlora's attention computes the same softmax(QK^T)V"},
    {"eval_sample_packing", AX_IGNORE, NULL, "ignored: packing is exact in fastlora (attention reset per document), so eval loss is the same"},
    {"pad_to_sequence_len", AX_IGNORE, NULL, "ignored: padding carries no loss, it changes no gradient"},
    {"evals_per_epoch", AX_IGNORE, NULL, "ignored: evals do not change the adapter; eval_steps sets --eval-every"},
    {"saves_per_epoch", AX_IGNORE, NULL, "ignored: checkpoints do not change the adapter; save_steps sets --save-every"},
    {"save_first_step", AX_IGNORE, NULL, "ignored: checkpoints do not change the adapter"},
    {"tf32", AX_IGNORE, NULL, "ignored: fastlora's matmuls are bf16 or f32 (never tf32)"},
    {"strict", AX_IGNORE, NULL, "ignored: fastlora's key checks are always strict"},
    {"loss_watchdog_threshold", AX_IGNORE, NULL, "ignored: fastlora stops on a non-finite loss (no watchdog threshold)"},
    {"loss_watchdog_patience", AX_IGNORE, NULL, "ignored: fastlora stops on a non-finite loss (no watchdog threshold)"},
    {"model_type", AX_IGNORE, NULL, "ignored: fastlora reads the architecture from base_model's config.json"},
    {"tokenizer_type", AX_IGNORE, NULL, "ignored: fastlora reads base_model's tokenizer files"},
    {"base_model_config", AX_IGNORE, NULL, "ignored: fastlora reads base_model's config.json"},
    {"is_llama_derived_model", AX_IGNORE, NULL, "ignored: fastlora reads the architecture from config.json"},
    {"is_mistral_derived_model", AX_IGNORE, NULL, "ignored: fastlora reads the architecture from config.json"},
    {"is_qwen_derived_model", AX_IGNORE, NULL, "ignored: fastlora reads the architecture from config.json"},
    {"gradient_checkpointing_kwargs", AX_IGNORE, NULL, "ignored: recompute gives the same gradients either way"},
    {"torch_compile", AX_IGNORE, NULL, "ignored: no PyTorch here"},
    {"eval_table_size", AX_IGNORE, NULL, "ignored: no generation tables"},
    {"eval_max_new_tokens", AX_IGNORE, NULL, "ignored: no generation during eval"},
    {"eval_batch_size", AX_IGNORE, NULL, "ignored: eval loss is per token, the same for any batch"},
    {"debug", AX_IGNORE, NULL, "ignored"},
    {"local_rank", AX_IGNORE, NULL, "ignored: ranks come from mpirun/srun"},
    {"ddp_timeout", AX_IGNORE, NULL, "ignored: ranks come from mpirun/srun"},
};

/* the option nf4 asks for, once */
static int set_nf4(yctx *c, const yaml_node_t *at, const char *key) {
    return set(c, "quant", "nf4", at, key);
}

/* lora_target_modules: [q_proj, ...] -> --targets q,... */
static int target_modules(yctx *c, yaml_node_t *v, const char *key) {
    enum { ALL = (1u << FL_N_PROJ) - 1 };
    char targets[128] = "";
    unsigned mask = 0;
    int n_items = v->type == YAML_SEQUENCE_NODE ? (int)(v->data.sequence.items.top - v->data.sequence.items.start) : 1;
    for (int i = 0; i < n_items; i++) {
        yaml_node_t *e = v->type == YAML_SEQUENCE_NODE ? node(c, v->data.sequence.items.start[i]) : v;
        if (!is_scalar(e)) return refuse(c, e, key, "expected a list of module names (q_proj, ..., down_proj)");
        if (!strcmp(text_of(e), "all-linear")) { mask = ALL; break; }
        size_t k = 0;
        while (k < FL_N_PROJ && strcmp(text_of(e), fl_proj_names[k])) k++;
        if (k == FL_N_PROJ) return refuse(c, e, key, "not a projection fastlora adapts (q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj)");
        mask |= 1u << k;
    }
    /* in projection order, "all" for all seven (as train_config.json writes them) */
    for (size_t k = 0; k < FL_N_PROJ && mask != ALL; k++)
        if (mask >> k & 1)
            snprintf(targets + strlen(targets), sizeof targets - strlen(targets), "%s%.*s", *targets ? "," : "",
                     (int)(strlen(fl_proj_names[k]) - 5), fl_proj_names[k]);
    return set(c, "targets", mask == ALL ? "all" : targets, v, key);
}

/* One entry of datasets / test_datasets -> --data (or --eval-data), --format, --fields. */
static int dataset(yctx *c, yaml_node_t *v, const char *key, const char *option) {
    if (v->type != YAML_SEQUENCE_NODE) return refuse(c, v, key, "expected a list of datasets");
    size_t n = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
    if (n == 0) return 0;
    yaml_node_t *d = node(c, v->data.sequence.items.start[0]);
    if (n > 1)
        return refuse(c, node(c, v->data.sequence.items.start[1]), key,
                      "fastlora trains on one dataset: give one entry whose path is a folder or a glob of files");
    if (d->type != YAML_MAPPING_NODE) return refuse(c, d, key, "expected a mapping with path and type");
    FL_TRY(check_keys(c, d, key));
    char fields[512] = "", sub[96];
    const char *format = NULL;
    for (yaml_node_pair_t *p = d->data.mapping.pairs.start; p < d->data.mapping.pairs.top; p++) {
        yaml_node_t *k = node(c, p->key), *x = node(c, p->value);
        const char *name = text_of(k), *val = text_of(x);
        snprintf(sub, sizeof sub, "%s[0].%s", key, name);
        if (is_null(x)) continue;
        if (!strcmp(name, "path")) FL_TRY(set(c, option, val, x, sub));
        else if (!strcmp(name, "type")) {
            if (!is_scalar(x)) return refuse(c, x, sub, "expected alpaca, completion, chat_template or sharegpt");
            if (!strcmp(val, "alpaca")) format = "alpaca";
            else if (!strcmp(val, "completion")) format = "text";
            else if (!strcmp(val, "chat_template") || !strcmp(val, "sharegpt")) format = "messages";
            else return refuse(c, x, sub, "fastlora reads alpaca, completion, chat_template and sharegpt datasets");
            if (!strcmp(val, "sharegpt") && !map_get(c, d, "field_messages"))
                snprintf(fields + strlen(fields), sizeof fields - strlen(fields), "%smessages=conversations", *fields ? "," : "");
        } else if (!strcmp(name, "field") || !strcmp(name, "field_messages") || !strcmp(name, "message_field_role") ||
                   !strcmp(name, "message_field_content")) {
            const char *ours = !strcmp(name, "field") ? "text" : !strcmp(name, "field_messages") ? "messages"
                               : !strcmp(name, "message_field_role") ? "role" : "content";
            if (!is_scalar(x)) return refuse(c, x, sub, "expected a field name");
            snprintf(fields + strlen(fields), sizeof fields - strlen(fields), "%s%s=%s", *fields ? "," : "", ours, val);
        } else if (!strcmp(name, "message_property_mappings")) {
            if (x->type != YAML_MAPPING_NODE) return refuse(c, x, sub, "expected a mapping role: FIELD, content: FIELD");
            for (yaml_node_pair_t *q = x->data.mapping.pairs.start; q < x->data.mapping.pairs.top; q++) {
                const char *ours = text_of(node(c, q->key));
                if (strcmp(ours, "role") && strcmp(ours, "content"))
                    return refuse(c, node(c, q->key), sub, "fastlora maps role and content only");
                snprintf(fields + strlen(fields), sizeof fields - strlen(fields), "%s%s=%s", *fields ? "," : "", ours,
                         text_of(node(c, q->value)));
            }
        } else if (!strcmp(name, "roles")) {
            note(c, x, sub, "fastlora maps human/user -> user, gpt/assistant/model -> assistant, system, tool; "
                            "roles beyond those are refused row by row");
        } else if (!strcmp(name, "ds_type")) {
            if (strcmp(val, "json")) return refuse(c, x, sub, "fastlora reads json / jsonl files");
        } else if (!strcmp(name, "split")) {
            if (strcmp(val, "train")) return refuse(c, x, sub, "fastlora reads files, not Hub splits: give the split's file as path");
        } else if (!strcmp(name, "roles_to_train")) {
            if (x->type != YAML_SEQUENCE_NODE || x->data.sequence.items.top - x->data.sequence.items.start != 1 ||
                strcmp(text_of(node(c, x->data.sequence.items.start[0])), "assistant"))
                return refuse(c, x, sub, "fastlora trains on the assistant turns: [assistant] only");
        } else if (!strcmp(name, "train_on_eos")) {
            if (strcmp(val, "turn")) return refuse(c, x, sub, "fastlora trains each assistant turn's end-of-turn marker: turn only");
        } else return refuse(c, k, sub, "not a dataset key fastlora implements (path, type, ds_type, split, field, "
                                     "field_messages, message_property_mappings, message_field_role/content, roles)");
    }
    if (!map_get(c, d, "path")) return refuse(c, d, key, "the dataset has no path");
    if (format) FL_TRY(set(c, "format", format, d, key));
    if (*fields) {
        if (c->o->fields && strcmp(c->o->fields, fields))
            return refuse(c, d, key, "the datasets' field renames differ: fastlora has one --fields");
        FL_TRY(set(c, "fields", fields, d, key));
    }
    return 0;
}

static int special(yctx *c, yaml_node_t *k, yaml_node_t *v, const char *arg) {
    const char *key = text_of(k), *val = text_of(v), *b = bool_of(v);
    if (!strcmp(key, "val_set_size")) {
        double f = strtod(val, NULL);
        if (is_scalar(v) && f >= 1) return refuse(c, v, key, "a count of rows: fastlora holds out a fraction (0 to 1)");
        return set(c, "eval-frac", val, v, key);
    }
    if (!strcmp(key, "eval_steps") || !strcmp(key, "save_steps")) {
        if (is_scalar(v) && strchr(val, '.') && strtod(val, NULL) < 1)
            return refuse(c, v, key, "a fraction of the run: give a step count");
        return set(c, arg, val, v, key);
    }
    if (!strcmp(key, "adapter")) {
        if (!strcmp(val, "lora")) return 0;
        if (!strcmp(val, "qlora")) return set_nf4(c, v, key);
        return refuse(c, v, key, "fastlora trains lora and qlora adapters");
    }
    if (!strcmp(key, "load_in_4bit")) {
        if (!b) return refuse(c, v, key, "expected true or false");
        return !strcmp(b, "true") ? set_nf4(c, v, key) : 0;
    }
    if (!strcmp(key, "optimizer")) {
        static const char *const same[] = {"adamw_torch", "adamw_torch_fused", "adamw_hf", "adamw_apex_fused", "adamw"};
        static const char *const approx[] = {"adamw_8bit", "adamw_bnb_8bit", "paged_adamw_8bit", "paged_adamw_32bit", "adamw_torch_4bit"};
        for (size_t i = 0; i < sizeof same / sizeof *same; i++)
            if (!strcmp(val, same[i])) return 0;
        for (size_t i = 0; i < sizeof approx / sizeof *approx; i++)
            if (!strcmp(val, approx[i])) {
                note(c, v, key, "runs as AdamW with f32 moments: the same update; bitsandbytes' 8-bit / paged states "
                                "approximate or page those moments");
                return 0;
            }
        return refuse(c, v, key, "fastlora's optimizer is AdamW (adamw_torch, adamw_torch_fused, adamw_8bit, ...)");
    }
    if (!strcmp(key, "lr_scheduler")) {
        if (!strcmp(val, "cosine") || !strcmp(val, "linear") || !strcmp(val, "constant")) return set(c, "schedule", val, v, key);
        if (!strcmp(val, "constant_with_warmup")) return set(c, "schedule", "constant", v, key);
        return refuse(c, v, key, "fastlora schedules cosine, linear, constant and constant_with_warmup");
    }
    if (!strcmp(key, "lora_target_modules")) return target_modules(c, v, key);
    if (!strcmp(key, "lora_target_linear")) {
        if (!b) return refuse(c, v, key, "expected true or false");
        return !strcmp(b, "true") ? set(c, "targets", "all", v, key) : 0;
    }
    if (!strcmp(key, "bf16")) {
        if (!strcmp(val, "auto")) { note(c, v, key, "auto: fastlora's default dtype (bf16 on a GPU, on a CPU the faster)"); return 0; }
        if (!b) return refuse(c, v, key, "expected true, false or auto");
        return set(c, "dtype", !strcmp(b, "true") ? "bf16" : "f32", v, key);
    }
    if (!strcmp(key, "datasets") || !strcmp(key, "test_datasets")) return dataset(c, v, key, arg);
    if (!strcmp(key, "chat_template")) {
        if (!strcmp(val, "tokenizer_default")) return 0;
        return refuse(c, v, key, "fastlora renders base_model's own template (tokenizer_default), or --chat-template FILE");
    }
    if (!strcmp(key, "special_tokens")) {
        if (v->type != YAML_MAPPING_NODE) return refuse(c, v, key, "expected a mapping");
        for (yaml_node_pair_t *p = v->data.mapping.pairs.start; p < v->data.mapping.pairs.top; p++) {
            yaml_node_t *sk = node(c, p->key), *sv = node(c, p->value);
            char sub[96];
            snprintf(sub, sizeof sub, "special_tokens.%s", text_of(sk));
            if (is_null(sv)) continue;
            if (strcmp(text_of(sk), "pad_token"))
                return refuse(c, sk, sub, "fastlora uses the tokenizer's own special tokens (only pad_token may be set)");
            note(c, sv, sub, "ignored: fastlora packs or masks rows, padding carries no loss");
        }
        return 0;
    }
    if (!strcmp(key, "use_tensorboard")) {
        if (!b) return refuse(c, v, key, "expected true or false");
        return !strcmp(b, "true") ? set(c, "report-to", "tensorboard", v, key) : 0;
    }
    return refuse(c, k, key, "not handled");
}

/* the keys that make a file Axolotl's */
static int is_axolotl(yctx *c, yaml_node_t *root) {
    static const char *const marks[] = {"base_model", "datasets", "sequence_len", "micro_batch_size", "learning_rate", "lora_r"};
    for (size_t i = 0; i < sizeof marks / sizeof *marks; i++)
        if (map_get(c, root, marks[i])) return 1;
    return 0;
}

static int load_axolotl(yctx *c, yaml_node_t *root) {
    /* Axolotl's defaults for the keys a config leaves out (its config schema; HF Trainer's seed 42) */
    fl_train_options *o = c->o;
    o->seq = 512;
    o->batch = 1;
    o->grad_accum = 1;
    o->epochs = 1;
    o->no_packing = 1;
    o->seed = 42;
    o->dropout = 0;
    o->schedule = "cosine";
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top; p++) {
        yaml_node_t *k = node(c, p->key), *v = node(c, p->value);
        const char *key = text_of(k);
        size_t i = 0, n = sizeof ax_keys / sizeof *ax_keys;
        while (i < n && strcmp(ax_keys[i].key, key)) i++;
        if (i == n)
            return fl_input_error("%s:%d: %s: not an Axolotl key fastlora implements (docs/TRAINING.md lists them); "
                                  "remove it, or give fastlora's own option on the command line", c->path, line_of(k), key);
        if (is_null(v)) continue; /* unset: Axolotl's default */
        const char *b = bool_of(v);
        switch (ax_keys[i].kind) {
        case AX_MAP:
            if (!is_scalar(v)) return refuse(c, v, key, "expected a single value");
            FL_TRY(set(c, ax_keys[i].arg, b ? b : text_of(v), v, key));
            break;
        case AX_FLAG:
        case AX_NOFLAG:
            if (!b) return refuse(c, v, key, "expected true or false");
            FL_TRY(set(c, ax_keys[i].arg, (ax_keys[i].kind == AX_FLAG) == !strcmp(b, "true") ? "true" : "false", v, key));
            break;
        case AX_IGNORE: note(c, v, key, ax_keys[i].why); break;
        case AX_ONLY:
            if (strcmp(b ? b : text_of(v), ax_keys[i].arg)) return refuse(c, v, key, ax_keys[i].why);
            break;
        case AX_UNSET:
            if (v->type == YAML_SEQUENCE_NODE && v->data.sequence.items.top == v->data.sequence.items.start) break;
            if (v->type == YAML_MAPPING_NODE && v->data.mapping.pairs.top == v->data.mapping.pairs.start) break;
            if (b && !strcmp(b, "false")) break;
            return refuse(c, v, key, ax_keys[i].why);
        case AX_SPECIAL: FL_TRY(special(c, k, v, ax_keys[i].arg)); break;
        }
    }
    return 0;
}

/* ===== Loading ===== */

/* A key or value quoted in an error may hold a newline ("a\nb": 1): the message stays one line,
 * control characters shown as '?'. */
static int one_line_error(int status) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", fl_last_error());
    int changed = 0;
    for (char *c = msg; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f) { *c = '?'; changed = 1; }
    if (changed) fl_fail_at(__FILE__, __LINE__, status, "%s", msg);
    return status;
}

int fl_train_options_load_yaml_text(fl_train_options *o, const char *path, const char *text, size_t len, FILE *notes) {
    yaml_parser_t parser;
    yaml_document_t doc;
    if (!yaml_parser_initialize(&parser)) return fl_input_error("%s: out of memory (YAML parser)", path);
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    int status = 0;
    if (!yaml_parser_load(&parser, &doc)) {
        status = fl_input_error("%s:%zu:%zu: invalid YAML: %s%s%s", path, parser.problem_mark.line + 1,
                                parser.problem_mark.column + 1, parser.problem ? parser.problem : "error",
                                parser.context ? " " : "", parser.context ? parser.context : "");
        yaml_parser_delete(&parser);
        return status;
    }
    yctx c = {.path = path, .doc = &doc, .o = o, .notes = notes};
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (!root) status = fl_input_error("%s: empty YAML file (expected a mapping of options)", path);
    else if (root->type != YAML_MAPPING_NODE)
        status = fl_input_error("%s:%d: expected a mapping of options (key: value)", path, line_of(root));
    else {
        yaml_document_t next;
        if (!yaml_parser_load(&parser, &next))
            status = fl_input_error("%s:%zu:%zu: invalid YAML: %s", path, parser.problem_mark.line + 1,
                                    parser.problem_mark.column + 1, parser.problem ? parser.problem : "error");
        else {
            yaml_node_t *second = yaml_document_get_root_node(&next);
            if (second) status = fl_input_error("%s:%d: a second YAML document (one mapping of options expected)", path, line_of(second));
            yaml_document_delete(&next);
        }
    }
    if (!status) status = check_keys(&c, root, "options");
    if (!status) status = is_axolotl(&c, root) ? load_axolotl(&c, root) : load_ours(&c, root);
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    return status ? one_line_error(status) : 0;
}

int fl_train_options_load_yaml(fl_train_options *o, const char *path) {
    char *text = NULL;
    size_t len = 0;
    FL_TRY(fl_file_read_all(path, FL_FILE_CONFIG, &text, &len));
    int status = fl_train_options_load_yaml_text(o, path, text, len, NULL);
    free(text);
    return status;
}
