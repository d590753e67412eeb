/* export.c — `fastlora export --gguf` front door: options checked, the overwrite rule, the model
 * config read and checked against what llama.cpp runs, the output's lock taken (one export per
 * file at a time), then the model or adapter exporter. */
#include "export/export.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "export/export_internal.h"
#include "io/file_util.h"
#include "io/run_lock.h"
#include "model/weights.h"

int fl_export_parse_type(const char *s, fl_export_type *out) {
    static const struct { const char *name; fl_export_type t; } types[] = {
        {"auto", FL_EXPORT_AUTO}, {"f32", FL_EXPORT_F32}, {"f16", FL_EXPORT_F16}, {"bf16", FL_EXPORT_BF16}, {"q8_0", FL_EXPORT_Q8_0}};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (!strcmp(s, types[i].name)) { *out = types[i].t; return 0; }
    return fl_input_error("--type: '%s' is not one of f32, f16, bf16, q8_0", s);
}

int fl_export_gguf(const fl_export_options *o, int *n_tensors) {
    if (!o->out_path || !o->model_dir) return fl_input_error("--gguf and --model are required");
    if (o->lora_only && !o->adapter_dir) return fl_input_error("--lora-only needs --adapter");
    if (o->chat_template && (o->lora_only || o->no_tokenizer))
        return fl_input_error("--chat-template: a GGUF written with %s has no tokenizer metadata to carry it", o->lora_only ? "--lora-only" : "--no-tokenizer");
    if (o->alignment && (o->alignment < 8 || o->alignment > 64 || (o->alignment & (o->alignment - 1))))
        return fl_input_error("--alignment: %u is not 8, 16, 32 or 64", o->alignment);
    if (fl_file_exists(o->out_path) && !o->force) return fl_input_error("%s: exists (--force replaces it)", o->out_path);
    fl_model_config cfg;
    char *config_path = fl_path_join(o->model_dir, "config.json");
    int status = fl_config_load(&cfg, config_path);
    if (!status) status = fl_gguf_check_config(&cfg, config_path);
    if (!status && !o->lora_only) status = fl_weights_resolve_head(&cfg, o->model_dir);
    if (!status && !o->lora_only) status = fl_gguf_check_model_export(&cfg, config_path);
    free(config_path);
    FL_TRY(status);
    /* one export per output file at a time (io/run_lock.h) */
    fl_run_lock lock;
    char *lock_path = fl_run_lock_path_beside(o->out_path), what[600];
    snprintf(what, sizeof what, "--gguf %s", o->out_path);
    status = fl_run_lock_take(&lock, lock_path, what, "export", stderr);
    free(lock_path);
    FL_TRY(status);
    if (fl_file_exists(o->out_path) && !o->force) /* again: another export may have finished meanwhile */
        status = fl_input_error("%s: exists (--force replaces it)", o->out_path);
    if (!status) status = o->lora_only ? fl_export_lora(o, &cfg, n_tensors) : fl_export_model(o, &cfg, n_tensors);
    fl_run_lock_release(&lock);
    return status;
}
