/* export_lora.c — a PEFT LoRA adapter as a GGUF adapter for llama.cpp's --lora, laid out as
 * convert_lora_to_gguf.py lays it out: for each adapted projection, `<base tensor>.lora_a` =
 * lora_A (R, IC) and `<base tensor>.lora_b` = lora_B (OC, R) (ggml ne [IC, R] and [R, OC]), llama
 * q/k lora_B rows permuted like the base weight rows; general.type "adapter", adapter.type "lora".
 *
 * llama.cpp scales B·A by adapter.lora.alpha / R. For rsLoRA (scale alpha/√R) the alpha written
 * is alpha·√R, so llama.cpp applies the scale PEFT applies; for plain LoRA it is alpha itself.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "export/export_internal.h"
#include "export/gguf_quant.h"
#include "lora/adapter_io.h"

int fl_export_load_adapter(const char *dir, const fl_model_config *cfg, fl_lora_config *lc, fl_lora_buffer *lora) {
    FL_TRY(fl_adapter_load_config(dir, lc));
    FL_TRY(fl_adapter_check_weights(dir, cfg, lc)); /* shapes against config.json before allocating */
    fl_lora_buffer_init(lora, cfg, lc, fl_backend_cpu());
    int status = fl_adapter_load_weights(dir, lora, cfg, lc);
    if (status) fl_lora_buffer_free(lora);
    return status;
}

/* Writes one matrix (rows, cols) f32 as `type`. */
static int write_matrix(fl_gguf_writer *w, const float *x, int64_t rows, int64_t cols, fl_ggml_type type) {
    size_t n = (size_t)(rows * cols), bytes = fl_ggml_nbytes(type, (int64_t)n);
    void *enc = fl_malloc(bytes + 1);
    fl_ggml_from_f32(type, x, enc, n);
    int status = fl_gguf_write_data(w, enc, bytes);
    free(enc);
    return status;
}

int fl_export_lora(const fl_export_options *o, const fl_model_config *cfg, int *n_tensors) {
    fl_lora_config lc;
    fl_lora_buffer lora;
    FL_TRY(fl_export_load_adapter(o->adapter_dir, cfg, &lc, &lora));
    fl_ggml_type want = o->type == FL_EXPORT_AUTO ? FL_GGML_F32 : fl_gguf_type_of(o->type);
    fl_gguf_writer w;
    fl_gguf_writer_init(&w);
    fl_gguf_put_general(&w, cfg, "adapter", o->adapter_dir, o->alignment);
    fl_gguf_kv_str(&w, "adapter.type", "lora");
    double alpha = lc.use_rslora ? lc.alpha * sqrt((double)lc.rank) : lc.alpha;
    fl_gguf_kv_f32(&w, "adapter.lora.alpha", (float)alpha);
    fl_gguf_kv_u32(&w, "general.quantization_version", FL_GGML_QUANT_VERSION);
    const int64_t R = lc.rank;
    int status = 0, n = 0;
    fl_ggml_type *types = fl_malloc(sizeof *types * (size_t)(2 * cfg->n_layers * FL_N_PROJ + 1));
    for (int l = 0; l < cfg->n_layers && !status; l++)
        for (int p = 0; p < FL_N_PROJ && !status; p++) {
            if (!lora.layers[l].a[p]) continue;
            int in, oc, off;
            fl_module_dims(cfg, (fl_proj)p, &in, &oc, &off);
            char base[64], name[96];
            fl_gguf_proj_name(base, sizeof base, cfg, l, (fl_proj)p);
            int64_t ne_a[2] = {in, R}, ne_b[2] = {R, oc};
            snprintf(name, sizeof name, "%s.lora_a", base);
            types[n] = fl_gguf_pick_type(name, 2, ne_a[0], want);
            status = fl_gguf_add_tensor(&w, name, 2, ne_a, types[n++]);
            snprintf(name, sizeof name, "%s.lora_b", base);
            types[n] = fl_gguf_pick_type(name, 2, ne_b[0], want);
            if (!status) status = fl_gguf_add_tensor(&w, name, 2, ne_b, types[n++]);
        }
    if (!status && n == 0) status = fl_input_error("%s: the adapter adapts no projection", o->adapter_dir);
    if (!status) status = fl_gguf_writer_begin(&w, o->out_path);
    int k = 0;
    float *perm = NULL;
    for (int l = 0; l < cfg->n_layers && !status; l++)
        for (int p = 0; p < FL_N_PROJ && !status; p++) {
            if (!lora.layers[l].a[p]) continue;
            int in, oc, off;
            fl_module_dims(cfg, (fl_proj)p, &in, &oc, &off);
            status = write_matrix(&w, lora.layers[l].a[p], R, in, types[k++]);
            const float *b = lora.layers[l].b[p];
            int heads = fl_gguf_permute_heads(cfg, (fl_proj)p);
            if (heads) {
                free(perm);
                perm = fl_malloc(sizeof(float) * (size_t)(oc * R));
                fl_gguf_permute_rows(perm, b, heads, oc, R);
                b = perm;
            }
            if (!status) status = write_matrix(&w, b, oc, R, types[k++]);
        }
    free(perm);
    if (!status) status = fl_gguf_writer_finish(&w);
    if (!status && n_tensors) *n_tensors = n;
    free(types);
    fl_gguf_writer_free(&w);
    fl_lora_buffer_free(&lora);
    return status;
}
