/* adapter_io.c — PEFT adapter read/write (see adapter_io.h and ../shared/docs/formats.md §4). */
#include "lora/adapter_io.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/strbuf.h"
#include "io/file_util.h"
#include "io/safetensors.h"

/* The start of the one regex form of target_modules fastlora writes and reads back (a vision-language
 * model's adapter: PEFT's full match over the language model's modules); the module names follow,
 * '|'-separated, and a closing ')'. */
static const char vl_targets_head[] = "model\\.language_model\\.layers\\.\\d+\\.(self_attn|mlp)\\.(";

void fl_adapter_tensor_name(char *out, size_t cap, const fl_model_config *cfg, int layer, fl_proj p, char which) {
    snprintf(out, cap, "base_model.model.%slayers.%d.%s.lora_%c.weight", fl_config_module_prefix(cfg), layer,
             fl_module_path(cfg, p), which);
}

int fl_adapter_save(const char *dir, const fl_lora_buffer *params, const fl_model_config *cfg,
                    const fl_lora_config *lc, const char *base_model_name) {
    FL_TRY(fl_mkdir_p(dir));
    const fl_backend *be = params->be;
    /* adapter_config.json: the keys PEFT writes, sorted like its json.dumps(sort_keys=True) */
    json_t *root = json_object();
    json_t *targets = json_array();
    for (int p = 0; p < FL_N_PROJ; p++)
        if (fl_lora_adapts(cfg, lc, (fl_proj)p)) json_array_append_new(targets, json_string(fl_module_name(cfg, (fl_proj)p)));
    if (cfg->multimodal) { /* names alone would also adapt the vision tower's q/k/v_proj: PEFT's full-match regex */
        fl_strbuf re = {0};
        fl_strbuf_append_str(&re, vl_targets_head);
        for (size_t i = 0; i < json_array_size(targets); i++) {
            if (i) fl_strbuf_append_str(&re, "|");
            fl_strbuf_append_str(&re, json_string_value(json_array_get(targets, i)));
        }
        fl_strbuf_append_str(&re, ")");
        json_decref(targets);
        targets = json_stringn(re.p, re.n);
        free(re.p);
    }
    json_object_set_new(root, "alpha_pattern", json_object());
    json_object_set_new(root, "auto_mapping", json_null());
    json_object_set_new(root, "base_model_name_or_path", base_model_name ? json_string(base_model_name) : json_null());
    json_object_set_new(root, "bias", json_string("none"));
    json_object_set_new(root, "fan_in_fan_out", json_false());
    json_object_set_new(root, "inference_mode", json_true());
    json_object_set_new(root, "init_lora_weights", json_true());
    json_object_set_new(root, "layer_replication", json_null());
    json_object_set_new(root, "layers_pattern", json_null());
    json_object_set_new(root, "layers_to_transform", json_null());
    json_object_set_new(root, "lora_alpha", json_real(lc->alpha));
    json_object_set_new(root, "lora_bias", json_false());
    json_object_set_new(root, "lora_dropout", json_real(lc->dropout));
    json_object_set_new(root, "modules_to_save", json_null());
    json_object_set_new(root, "peft_type", json_string("LORA"));
    json_object_set_new(root, "r", json_integer(lc->rank));
    json_object_set_new(root, "rank_pattern", json_object());
    json_object_set_new(root, "revision", json_null());
    json_object_set_new(root, "target_modules", targets);
    json_object_set_new(root, "task_type", json_string("CAUSAL_LM"));
    json_object_set_new(root, "use_dora", json_false());
    json_object_set_new(root, "use_rslora", lc->use_rslora ? json_true() : json_false());
    char *text = json_dumps(root, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_REAL_PRECISION(9));
    json_decref(root);
    char *config_path = fl_path_join(dir, "adapter_config.json");
    int status = fl_write_file_atomic(config_path, text, strlen(text));
    free(config_path);
    free(text);
    if (status) return status;

    /* adapter_model.safetensors: host copy of the flat buffer, one tensor per matrix */
    float *host = fl_malloc(params->n * sizeof(float) + 1);
    be->download(host, params->data, params->n * sizeof(float));
    int n_tensors = 0;
    fl_st_write_tensor *tensors = fl_calloc((size_t)cfg->n_layers * FL_N_PROJ * 2, sizeof *tensors);
    char (*names)[128] = fl_calloc((size_t)cfg->n_layers * FL_N_PROJ * 2, 128);
    for (int l = 0; l < cfg->n_layers; l++)
        for (int p = 0; p < FL_N_PROJ; p++) {
            if (!params->layers[l].a[p]) continue;
            int in, out, off;
            fl_module_dims(cfg, (fl_proj)p, &in, &out, &off);
            for (int which = 0; which < 2; which++) {
                fl_st_write_tensor *t = &tensors[n_tensors];
                fl_adapter_tensor_name(names[n_tensors], 128, cfg, l, (fl_proj)p, which ? 'B' : 'A');
                t->name = names[n_tensors];
                t->dtype = FL_F32;
                t->ndim = 2;
                t->shape[0] = which ? out : lc->rank;
                t->shape[1] = which ? lc->rank : in;
                const float *dev = which ? params->layers[l].b[p] : params->layers[l].a[p];
                t->data = host + (dev - params->data);
                n_tensors++;
            }
        }
    const char *meta[] = {"format", "pt"};
    char *weights_path = fl_path_join(dir, "adapter_model.safetensors");
    status = fl_safetensors_write(weights_path, tensors, n_tensors, meta, 1);
    free(weights_path);
    free(names);
    free(tensors);
    free(host);
    return status;
}

/* The module names of vl_targets_head's form: "...\.(q_proj|v_proj)" -> ["q_proj", "v_proj"]; NULL for
 * any other string. */
static json_t *regex_module_names(const char *re) {
    size_t n = strlen(re), h = sizeof vl_targets_head - 1;
    if (n <= h + 1 || strncmp(re, vl_targets_head, h) || re[n - 1] != ')') return NULL;
    json_t *names = json_array();
    const char *p = re + h, *end = re + n - 1;
    while (p <= end) {
        const char *bar = memchr(p, '|', (size_t)(end - p));
        const char *stop = bar ? bar : end;
        json_array_append_new(names, json_stringn(p, (size_t)(stop - p)));
        p = stop + 1;
    }
    return names;
}

int fl_adapter_load_config(const char *dir, fl_lora_config *lc) {
    char *path = fl_path_join(dir, "adapter_config.json");
    json_t *root;
    int status = fl_file_load_json(path, FL_FILE_CONFIG, 0, &root);
    if (status) {
        free(path);
        return status;
    }
    *lc = fl_lora_config_default();
    json_t *v;
    if (!json_is_string(v = json_object_get(root, "peft_type")) || strcmp(json_string_value(v), "LORA"))
        status = fl_input_error("%s: field 'peft_type' must be \"LORA\"", path);
    else if (!json_is_integer(v = json_object_get(root, "r")) || json_integer_value(v) <= 0 || json_integer_value(v) > 4096)
        status = fl_input_error("%s: field 'r' must be a positive integer", path);
    if (!status) lc->rank = (int)json_integer_value(v);
    if (!status && (v = json_object_get(root, "lora_alpha")) && !json_is_null(v)) {
        if (!json_is_number(v) || !(json_number_value(v) > 0) || json_number_value(v) > 1e6)
            status = fl_input_error("%s: field 'lora_alpha' must be a positive number", path);
        else lc->alpha = (float)json_number_value(v);
    } else if (!status) {
        lc->alpha = 8.0f; /* PEFT's default */
    }
    if (!status && (v = json_object_get(root, "lora_dropout")) && !json_is_null(v)) {
        if (!json_is_number(v) || json_number_value(v) < 0 || json_number_value(v) >= 1)
            status = fl_input_error("%s: field 'lora_dropout' must be a number in [0, 1)", path);
        else lc->dropout = (float)json_number_value(v);
    }
    if (!status && (v = json_object_get(root, "use_rslora")) && !json_is_null(v)) lc->use_rslora = json_is_true(v);
    if (!status && json_is_true(json_object_get(root, "use_dora")))
        status = fl_input_error("%s: field 'use_dora' is true; DoRA adapters are not supported", path);
    if (!status && json_is_true(json_object_get(root, "lora_bias")))
        status = fl_input_error("%s: field 'lora_bias' is true; LoRA biases are not supported", path);
    const char *unsupported[] = {"rank_pattern", "alpha_pattern"};
    for (int i = 0; i < 2 && !status; i++) {
        v = json_object_get(root, unsupported[i]);
        if (v && !json_is_null(v) && !(json_is_object(v) && json_object_size(v) == 0))
            status = fl_input_error("%s: field '%s' is not empty; per-module ranks/alphas are not supported", path, unsupported[i]);
    }
    if (!status) {
        v = json_object_get(root, "layers_to_transform");
        if (v && !json_is_null(v)) status = fl_input_error("%s: field 'layers_to_transform' is set; adapting a subset of layers is not supported", path);
    }
    if (!status) {
        v = json_object_get(root, "target_modules");
        lc->target_mask = 0;
        json_t *names = json_is_string(v) ? regex_module_names(json_string_value(v)) : NULL;
        if (names) v = names;
        if (json_is_string(v)) {
            status = fl_input_error("%s: field 'target_modules' is a pattern fastlora does not read ('%s'; supported: a "
                                    "list of module names, or %sq_proj|...) as fastlora writes for vision-language models)",
                                    path, json_string_value(v), vl_targets_head);
        } else if (!json_is_array(v)) {
            status = fl_input_error("%s: field 'target_modules' must be a list of module names", path);
        } else {
            size_t i;
            json_t *item;
            json_array_foreach(v, i, item) {
                const char *name = json_is_string(item) ? json_string_value(item) : "";
                unsigned bits = 0;
                for (int p = 0; p < FL_N_PROJ; p++)
                    if (!strcmp(name, fl_proj_names[p])) bits = 1u << p;
                if (!strcmp(name, "qkv_proj")) bits = 7u << FL_PROJ_Q;      /* Phi-3's fused modules */
                if (!strcmp(name, "gate_up_proj")) bits = 3u << FL_PROJ_GATE;
                if (!bits) {
                    status = fl_input_error("%s: field 'target_modules' has '%s' (supported: q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj; Phi-3: qkv_proj, gate_up_proj)", path, name);
                    break;
                }
                lc->target_mask |= bits;
            }
            if (!status && !lc->target_mask) status = fl_input_error("%s: field 'target_modules' is empty", path);
        }
        json_decref(names);
    }
    json_decref(root);
    free(path);
    return status;
}

int fl_adapter_check_weights(const char *dir, const fl_model_config *cfg, const fl_lora_config *lc) {
    char *path = fl_path_join(dir, "adapter_model.safetensors");
    fl_safetensors st;
    int status = fl_safetensors_open(&st, path);
    if (status) { free(path); return status; }
    if ((status = fl_lora_check_targets(cfg, lc->target_mask))) { fl_safetensors_close(&st); free(path); return status; }
    int per_layer = 0;
    for (int p = 0; p < FL_N_PROJ; p++) per_layer += fl_lora_adapts(cfg, lc, (fl_proj)p);
    if ((int64_t)cfg->n_layers * per_layer * 2 > st.n_tensors) {
        char name[128];
        int missing_layer = st.n_tensors / (2 * (per_layer ? per_layer : 1));
        fl_adapter_tensor_name(name, sizeof name, cfg, missing_layer < cfg->n_layers ? missing_layer : cfg->n_layers - 1,
                               FL_PROJ_Q, 'A');
        status = fl_input_error("%s: holds %d tensors but the model's %d layers need %lld (e.g. '%s')", path,
                                st.n_tensors, cfg->n_layers, (long long)cfg->n_layers * per_layer * 2, name);
    }
    for (int l = 0; l < cfg->n_layers && !status; l++)
        for (int p = 0; p < FL_N_PROJ && !status; p++) {
            if (!fl_lora_adapts(cfg, lc, (fl_proj)p)) continue;
            int in, out, off;
            fl_module_dims(cfg, (fl_proj)p, &in, &out, &off);
            for (int which = 0; which < 2 && !status; which++) {
                char name[128];
                fl_adapter_tensor_name(name, sizeof name, cfg, l, (fl_proj)p, which ? 'B' : 'A');
                const fl_st_tensor *t = fl_safetensors_find(&st, name);
                int64_t rows = which ? out : lc->rank, cols = which ? lc->rank : in;
                if (!t) status = fl_input_error("%s: tensor '%s' is missing", path, name);
                else if (t->ndim != 2 || t->shape[0] != rows || t->shape[1] != cols)
                    status = fl_input_error("%s: tensor '%s' has the wrong shape (expected [%lld, %lld])", path, name,
                                            (long long)rows, (long long)cols);
                else if (t->dtype != FL_F32 && t->dtype != FL_BF16 && t->dtype != FL_F16)
                    status = fl_input_error("%s: tensor '%s' has dtype %s (expected F32, BF16 or F16)", path, name,
                                            fl_dtype_name(t->dtype));
                else status = fl_st_check_finite(t, path); /* a NaN would run into every output */
            }
        }
    fl_safetensors_close(&st);
    free(path);
    return status;
}

int fl_adapter_load_weights(const char *dir, fl_lora_buffer *params, const fl_model_config *cfg,
                            const fl_lora_config *lc) {
    FL_TRY(fl_adapter_check_weights(dir, cfg, lc)); /* every name, shape and dtype, before any upload */
    char *path = fl_path_join(dir, "adapter_model.safetensors");
    fl_safetensors st;
    int status = fl_safetensors_open(&st, path);
    free(path);
    if (status) return status;
    const fl_backend *be = params->be;
    float *host = NULL;
    for (int l = 0; l < cfg->n_layers; l++)
        for (int p = 0; p < FL_N_PROJ; p++) {
            if (!params->layers[l].a[p]) continue;
            for (int which = 0; which < 2; which++) {
                char name[128];
                fl_adapter_tensor_name(name, sizeof name, cfg, l, (fl_proj)p, which ? 'B' : 'A');
                const fl_st_tensor *t = fl_safetensors_find(&st, name);
                host = realloc(host, t->numel * sizeof(float));
                fl_convert_to_f32(host, t->data, t->dtype, t->numel);
                be->upload(which ? params->layers[l].b[p] : params->layers[l].a[p], host, t->numel * sizeof(float));
            }
        }
    free(host);
    fl_safetensors_close(&st);
    return 0;
}
