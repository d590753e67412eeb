/* export_model.c — the whole model (optionally with a LoRA adapter folded in) as one GGUF file.
 *
 * Plan first, then stream: the tensors config.json implies are looked up in the safetensors
 * shards and checked (presence, shape, float dtype) before the output is opened, and every tensor
 * in the files must have a GGUF name (the rotary inv_freq buffer and a tied lm_head are skipped).
 * Then each tensor is converted on its own — copied byte for byte when nothing changes it, else
 * converted through f32 in row chunks, or whole when the adapter is merged in (W + s·B·A,
 * infer/merge.h) or llama's q/k rows are permuted — so memory stays at about one tensor.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dtype.h"
#include "common/error.h"
#include "export/export_internal.h"
#include "export/gguf_quant.h"
#include "infer/merge.h"
#include "io/safetensors.h"
#include "lora/adapter_io.h"
#include "tokenizer/chat_template.h"

typedef struct {
    char hf[96];              /* safetensors name; "" for a generated tensor */
    char name[FL_GGUF_MAX_NAME + 1];
    const fl_st_tensor *src;
    const char *src_file;
    int64_t rows, cols;       /* torch shape (rows, cols); cols == 0: a vector of rows */
    int layer, proj;          /* the adapted projection, or proj -1 */
    int permute_heads;        /* llama q/k: heads whose rows are permuted */
    int factors;              /* a generated phi3 tensor: 1 rope_factors_short, 2 rope_factors_long */
    float add;                /* added to every value: Gemma's norm weights are stored as w - 1 */
    fl_ggml_type type;
} plan_item;

typedef struct {
    plan_item *items;
    int n, cap;
} plan;

static plan_item *plan_add(plan *p, const char *hf, const char *name, int64_t rows, int64_t cols) {
    if (p->n == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 64;
        plan_item *g = fl_malloc(sizeof *g * (size_t)p->cap);
        if (p->n) memcpy(g, p->items, sizeof *g * (size_t)p->n);
        free(p->items);
        p->items = g;
    }
    plan_item *it = &p->items[p->n++];
    memset(it, 0, sizeof *it);
    snprintf(it->hf, sizeof it->hf, "%s", hf);
    snprintf(it->name, sizeof it->name, "%s", name);
    it->rows = rows;
    it->cols = cols;
    it->proj = -1;
    return it;
}

/* A norm weight of C (or HS) values; Gemma stores w - 1, llama.cpp multiplies by w (the converter's +1). */
static void plan_norm(plan *p, const fl_model_config *cfg, const char *hf, const char *name, int64_t n) {
    plan_add(p, hf, name, n, 0)->add = cfg->norm_weight_offset;
}

/* The tensors of a llama / qwen2 / qwen3 / phi3 / gemma2 / gemma3 / olmo2 model in llama.cpp's names, in HF layout. */
static void plan_model(plan *p, const fl_model_config *cfg) {
    const int64_t C = cfg->hidden_size, V = cfg->vocab_size;
    const char *pre = fl_config_tensor_prefix(cfg);
    char hf[96], name[64];
    if (cfg->rope_llama3) plan_add(p, "", "rope_freqs.weight", cfg->head_dim / 2, 0);
    if (cfg->rope_longrope) { /* phi3: the converter's extra tensors come first */
        plan_add(p, "", "rope_factors_long.weight", fl_config_rotary_dim(cfg) / 2, 0)->factors = 2;
        plan_add(p, "", "rope_factors_short.weight", fl_config_rotary_dim(cfg) / 2, 0)->factors = 1;
    }
    snprintf(hf, sizeof hf, "%sembed_tokens.weight", pre);
    plan_add(p, hf, "token_embd.weight", V, C);
    /* Gemma's sandwich: post_attention_layernorm follows attention, pre_feedforward_layernorm is the
     * MLP's input norm; elsewhere post_attention_layernorm is the MLP's input norm; OLMo 2 has only the
     * sandwich's post norms (the 2nd and 4th) */
    static const char *const norm_hf[4] = {"input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                                           "post_feedforward_layernorm"};
    static const char *const norm_gguf[2][4] = {{"attn_norm", "ffn_norm", "", ""},
                                                {"attn_norm", "post_attention_norm", "ffn_norm", "post_ffw_norm"}};
    const int sandwich = cfg->sandwich_norms != 0, n_norms = sandwich ? 4 : 2;
    for (int l = 0; l < cfg->n_layers; l++) {
        for (int k = 0; k < n_norms; k++) {
            if (cfg->no_pre_norms && k % 2 == 0) continue;   /* olmo2: no input_layernorm, no pre_feedforward_layernorm */
            snprintf(hf, sizeof hf, "%slayers.%d.%s.weight", pre, l, norm_hf[k]);
            snprintf(name, sizeof name, "blk.%d.%s.weight", l, norm_gguf[sandwich][k]);
            plan_norm(p, cfg, hf, name, C);
        }
        for (int j = 0; j < FL_N_PROJ; j++) {
            if (!fl_is_module(cfg, (fl_proj)j)) continue;   /* phi3: k, v, up are rows of qkv_proj, gate_up_proj */
            int in, oc, off;
            fl_module_dims(cfg, (fl_proj)j, &in, &oc, &off);
            snprintf(hf, sizeof hf, "%slayers.%d.%s.weight", pre, l, fl_module_path(cfg, (fl_proj)j));
            fl_gguf_proj_name(name, sizeof name, cfg, l, (fl_proj)j);
            plan_item *it = plan_add(p, hf, name, oc, in);
            it->layer = l;
            it->proj = j;
            it->permute_heads = fl_gguf_permute_heads(cfg, (fl_proj)j);
            if (cfg->qkv_bias && j <= FL_PROJ_V) {
                snprintf(hf, sizeof hf, "%slayers.%d.%s.bias", pre, l, fl_proj_modules[j]);
                name[strlen(name) - strlen("weight")] = 0;
                strcat(name, "bias");
                plan_add(p, hf, name, oc, 0)->permute_heads = fl_gguf_permute_heads(cfg, (fl_proj)j);
            }
        }
        for (int k = 0; k < 2 && cfg->qk_norm; k++) { /* qwen3, gemma3: the per-head norms of q and k; olmo2: whole rows */
            snprintf(hf, sizeof hf, "%slayers.%d.self_attn.%s_norm.weight", pre, l, k ? "k" : "q");
            snprintf(name, sizeof name, "blk.%d.attn_%s_norm.weight", l, k ? "k" : "q");
            plan_norm(p, cfg, hf, name, !cfg->qk_norm_full ? cfg->head_dim : k ? fl_config_kv_dim(cfg) : fl_config_q_dim(cfg));
        }
    }
    snprintf(hf, sizeof hf, "%snorm.weight", pre);
    plan_norm(p, cfg, hf, "output_norm.weight", C);
    if (!cfg->tie_word_embeddings) plan_add(p, fl_config_lm_head_name(cfg), "output.weight", V, C);
}

static int check_sources(plan *p, const fl_hf_shards *sh, const char *dir, const fl_model_config *cfg) {
    const char *arch = fl_gguf_arch_name(cfg), *pre = fl_config_tensor_prefix(cfg);
    for (int i = 0; i < p->n; i++) {
        plan_item *it = &p->items[i];
        if (!it->hf[0]) continue;
        const fl_st_tensor *t = fl_hf_shards_find(sh, it->hf, &it->src_file);
        if (!t) return fl_input_error("%s: tensor '%s' is missing from the safetensors files", dir, it->hf);
        int ok = it->cols ? t->ndim == 2 && t->shape[0] == it->rows && t->shape[1] == it->cols : t->ndim == 1 && t->shape[0] == it->rows;
        if (!ok) return fl_input_error("%s: tensor '%s' has a shape that disagrees with config.json", it->src_file, it->hf);
        if (t->dtype != FL_F32 && t->dtype != FL_BF16 && t->dtype != FL_F16)
            return fl_input_error("%s: tensor '%s' has dtype %s (export reads F32, BF16, F16)", it->src_file, it->hf, fl_dtype_name(t->dtype));
        FL_TRY(fl_st_check_finite(t, it->src_file));
        it->src = t;
    }
    /* every stored tensor must be one we write (or one llama.cpp has no use for) */
    for (int f = 0; f < sh->n; f++)
        for (int k = 0; k < sh->files[f].n_tensors; k++) {
            const char *name = sh->files[f].tensors[k].name;
            size_t n = strlen(name);
            if (n >= 20 && !strcmp(name + n - 20, ".rotary_emb.inv_freq")) continue;
            if (!strcmp(name, fl_config_lm_head_name(cfg))) continue; /* tied: the embedding serves as output */
            /* a vision-language folder: the vision tower and projector are llama.cpp's mmproj file, not this one */
            if (cfg->multimodal && strncmp(name, pre, strlen(pre))) continue;
            int known = 0;
            for (int i = 0; i < p->n && !known; i++) known = !strcmp(p->items[i].hf, name);
            if (!known) return fl_input_error("%s: tensor '%s' has no llama.cpp counterpart in a %s model", sh->files[f].path, name, arch);
        }
    return 0;
}

/* Streams one tensor in its planned type. */
static int write_item(fl_gguf_writer *w, const plan_item *it, const fl_model_config *cfg, const fl_lora_config *lc,
                      const fl_lora_buffer *lora) {
    const int64_t rows = it->rows, cols = it->cols ? it->cols : 1;
    const size_t n = (size_t)(rows * cols);
    if (!it->src) { /* rope_freqs (llama3), or longrope's factor lists (phi3: rope_factors_long / _short) */
        float *f = fl_malloc(sizeof(float) * n);
        if (it->factors) memcpy(f, it->factors == 2 ? cfg->rope_long_factor : cfg->rope_short_factor, sizeof(float) * n);
        else fl_gguf_rope_factors(cfg, f);
        int status = fl_gguf_write_data(w, f, sizeof(float) * n);
        free(f);
        return status;
    }
    const fl_st_tensor *t = it->src;
    const float *lora_a = NULL, *lora_b = NULL;
    if (lora && it->proj >= 0) {
        lora_a = lora->layers[it->layer].a[it->proj];
        lora_b = lora->layers[it->layer].b[it->proj];
    }
    const int same = (t->dtype == FL_F32 && it->type == FL_GGML_F32) || (t->dtype == FL_BF16 && it->type == FL_GGML_BF16) ||
                     (t->dtype == FL_F16 && it->type == FL_GGML_F16);
    if (same && !lora_a && !it->permute_heads && it->add == 0) return fl_gguf_write_data(w, t->data, t->nbytes);
    const size_t esize = fl_dtype_size(t->dtype);
    /* rows per step: the whole tensor when it is merged or permuted, else chunks of ~1M values */
    int64_t step = lora_a || it->permute_heads ? rows : (int64_t)((1 << 20) / (size_t)cols) + 1;
    if (step > rows) step = rows;
    float *x = fl_malloc(sizeof(float) * (size_t)(step * cols));
    float *y = it->permute_heads ? fl_malloc(sizeof(float) * (size_t)(step * cols)) : NULL;
    void *enc = fl_malloc(fl_ggml_nbytes(it->type, step * cols) + 1);
    int status = 0;
    for (int64_t r = 0; r < rows && !status; r += step) {
        int64_t nr = rows - r < step ? rows - r : step;
        size_t cnt = (size_t)(nr * cols);
        fl_convert_to_f32(x, (const char *)t->data + (size_t)(r * cols) * esize, t->dtype, cnt);
        if (lora_a) {
            fl_merge_lora_f32(x, lora_b, lora_a, (int)rows, (int)cols, lc->rank, fl_lora_scale(lc));
            if ((status = fl_merge_check_finite(x, cnt, it->hf, it->src_file))) break; /* no Inf or NaN into the GGUF */
        }
        for (size_t i = 0; it->add != 0 && i < cnt; i++) x[i] += it->add;
        const float *src = x;
        if (y) {
            fl_gguf_permute_rows(y, x, it->permute_heads, rows, cols);
            src = y;
        }
        fl_ggml_from_f32(it->type, src, enc, cnt);
        status = fl_gguf_write_data(w, enc, fl_ggml_nbytes(it->type, (int64_t)cnt));
    }
    free(x);
    free(y);
    free(enc);
    return status;
}

int fl_export_model(const fl_export_options *o, const fl_model_config *cfg, int *n_tensors) {
    fl_lora_config lc;
    fl_lora_buffer lora = {0};
    int have_lora = 0, status = 0;
    char *chat_template = NULL; /* --chat-template's text, checked to parse before anything is written */
    size_t chat_len;
    if (o->chat_template) FL_TRY(fl_chat_template_read_file(o->chat_template, &chat_template, &chat_len));
    if (chat_template && strlen(chat_template) != chat_len) {
        free(chat_template);
        return fl_input_error("%s: a NUL byte in the chat template (a GGUF string metadata value cannot hold it)", o->chat_template);
    }
    if (o->adapter_dir && (status = fl_export_load_adapter(o->adapter_dir, cfg, &lc, &lora))) {
        free(chat_template);
        return status;
    }
    if (o->adapter_dir) {
        have_lora = 1;
    }
    fl_hf_shards sh = {0};
    plan p = {0};
    fl_gguf_writer w;
    fl_gguf_writer_init(&w);
    status = fl_hf_shards_open(&sh, o->model_dir);
    if (!status) {
        plan_model(&p, cfg);
        status = check_sources(&p, &sh, o->model_dir, cfg);
    }
    fl_ggml_type want = FL_GGML_F16;
    if (!status) {
        const fl_st_tensor *embd = p.items[(cfg->rope_llama3 ? 1 : 0) + (cfg->rope_longrope ? 2 : 0)].src;
        want = o->type != FL_EXPORT_AUTO ? fl_gguf_type_of(o->type) : embd->dtype == FL_BF16 ? FL_GGML_BF16 : FL_GGML_F16;
        fl_gguf_put_general(&w, cfg, "model", o->model_dir, o->alignment);
        fl_gguf_put_hparams(&w, cfg, want);
        if (!o->no_tokenizer) status = fl_gguf_put_tokenizer(&w, o->model_dir, cfg, chat_template);
        else { /* llama.cpp's "no vocab": ids only; it takes the vocabulary size from <arch>.vocab_size */
            fl_gguf_kv_str(&w, "tokenizer.ggml.model", "none");
            if (cfg->arch != FL_ARCH_LLAMA) {
                char key[64];
                snprintf(key, sizeof key, "%s.vocab_size", fl_gguf_arch_name(cfg));
                fl_gguf_kv_u32(&w, key, (uint32_t)cfg->vocab_size);
            }
        }
    }
    for (int i = 0; i < p.n && !status; i++) {
        plan_item *it = &p.items[i];
        int64_t ne[2] = {it->cols ? it->cols : it->rows, it->rows};
        int nd = it->cols ? 2 : 1;
        it->type = fl_gguf_pick_type(it->name, nd, ne[0], want);
        status = fl_gguf_add_tensor(&w, it->name, nd, ne, it->type);
    }
    if (!status) status = fl_gguf_writer_begin(&w, o->out_path);
    for (int i = 0; i < p.n && !status; i++) status = write_item(&w, &p.items[i], cfg, &lc, have_lora ? &lora : NULL);
    if (!status) status = fl_gguf_writer_finish(&w);
    if (!status && n_tensors) *n_tensors = p.n;
    fl_gguf_writer_free(&w);
    free(p.items);
    fl_hf_shards_close(&sh);
    if (have_lora) fl_lora_buffer_free(&lora);
    free(chat_template);
    return status;
}
