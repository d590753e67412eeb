/* lora.c — LoRA config parsing, the flat parameter layout and PEFT's initialization. */
#include "lora/lora.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/rng.h"

fl_lora_config fl_lora_config_default(void) {
    fl_lora_config lc = {.rank = 16, .alpha = 32.0f, .use_rslora = 0, .dropout = 0.0f,
                         .target_mask = (1u << FL_N_PROJ) - 1, .seed = 1234};
    return lc;
}

float fl_lora_scale(const fl_lora_config *lc) {
    return lc->use_rslora ? lc->alpha / sqrtf((float)lc->rank) : lc->alpha / (float)lc->rank;
}

/* A --targets word: a projection ("q", "q_proj") or a fused module ("qkv_proj", "gate_up_proj": its
 * members' bits). */
static unsigned target_bits(const char *tok) {
    if (!strcmp(tok, "qkv_proj") || !strcmp(tok, "qkv")) return 7u << FL_PROJ_Q;
    if (!strcmp(tok, "gate_up_proj") || !strcmp(tok, "gate_up")) return 3u << FL_PROJ_GATE;
    for (int p = 0; p < FL_N_PROJ; p++) {
        size_t len = strlen(fl_proj_names[p]) - 5; /* without "_proj" */
        if (!strcmp(tok, fl_proj_names[p]) || (strlen(tok) == len && !strncmp(tok, fl_proj_names[p], len))) return 1u << p;
    }
    return 0;
}

int fl_lora_parse_targets(const char *list, unsigned *mask) {
    *mask = 0;
    if (!strcmp(list, "all")) { *mask = (1u << FL_N_PROJ) - 1; return 0; }
    char *copy = strdup(list), *save = NULL;
    int status = 0;
    for (char *tok = strtok_r(copy, ",", &save); tok && !status; tok = strtok_r(NULL, ",", &save)) {
        unsigned bits = target_bits(tok);
        if (!bits)
            status = fl_input_error("--targets: unknown projection '%s' (expected q,k,v,o,gate,up,down, or Phi-3's "
                                    "qkv_proj,o_proj,gate_up_proj,down_proj)", tok);
        else *mask |= bits;
    }
    free(copy);
    if (!status && !*mask) status = fl_input_error("--targets: no projection given (expected q,k,v,o,gate,up,down)");
    return status;
}

int fl_lora_check_targets(const fl_model_config *cfg, unsigned mask) {
    for (int p = 0; p < FL_N_PROJ; p++) {
        fl_proj h = fl_module_head(cfg, (fl_proj)p), last = fl_module_last(cfg, (fl_proj)p);
        if (h != (fl_proj)p || last == h) continue;   /* one check per fused module */
        unsigned bits = ((2u << last) - 1) & ~((1u << h) - 1), got = mask & bits;
        if (!got || got == bits) continue;
        int given = h;
        while (!((got >> given) & 1u)) given++;
        return fl_input_error("--targets: %s has no module %s (%s are one module, %s): give %s", cfg->name,
                              fl_proj_names[given], h == FL_PROJ_Q ? "q, k and v" : "gate and up",
                              fl_module_path(cfg, h), fl_module_name(cfg, h));
    }
    return 0;
}

void fl_lora_targets_text(const fl_model_config *cfg, unsigned mask, char *out, size_t cap) {
    size_t n = 0;
    if (cap) out[0] = 0;
    for (int p = 0; p < FL_N_PROJ && n < cap; p++) {
        if (!((mask >> p) & 1u) || !fl_is_module(cfg, (fl_proj)p)) continue;
        int w = snprintf(out + n, cap - n, "%s%s", n ? "," : "", fl_module_name(cfg, (fl_proj)p));
        n = w < 0 ? cap : n + (size_t)w;
    }
}

int fl_lora_adapts(const fl_model_config *cfg, const fl_lora_config *lc, fl_proj p) {
    return ((lc->target_mask >> p) & 1u) && fl_is_module(cfg, p);
}

int fl_lora_group_rank(const fl_model_config *cfg, const fl_lora_config *lc, fl_group g) {
    fl_proj first, end;
    fl_group_members(g, &first, &end);
    int n = 0;
    for (fl_proj p = first; p < end; p++) n += fl_lora_adapts(cfg, lc, p);
    return n * lc->rank;
}

size_t fl_lora_param_count(const fl_model_config *cfg, const fl_lora_config *lc) {
    size_t per_layer = 0;
    for (int p = 0; p < FL_N_PROJ; p++) {
        if (!fl_lora_adapts(cfg, lc, (fl_proj)p)) continue;
        int in, out, off;
        fl_module_dims(cfg, (fl_proj)p, &in, &out, &off);
        per_layer += (size_t)lc->rank * (size_t)(in + out);
    }
    return per_layer * (size_t)cfg->n_layers;
}

void fl_lora_buffer_init(fl_lora_buffer *buf, const fl_model_config *cfg, const fl_lora_config *lc, const fl_backend *be) {
    memset(buf, 0, sizeof *buf);
    buf->be = be;
    buf->n = fl_lora_param_count(cfg, lc);
    buf->data = be->alloc(buf->n * sizeof(float));
    buf->n_layers = cfg->n_layers;
    buf->layers = fl_calloc((size_t)cfg->n_layers, sizeof(fl_lora_layer));
    size_t offset = 0;
    for (int l = 0; l < cfg->n_layers; l++)
        for (int g = 0; g < FL_N_GROUPS; g++) {
            fl_proj first, end;
            fl_group_members((fl_group)g, &first, &end);
            for (int b = 0; b < 2; b++) /* the group's lora_a matrices, then its lora_b */
                for (fl_proj p = first; p < end; p++) {
                    if (!fl_lora_adapts(cfg, lc, p)) continue;
                    int in, out, off;
                    fl_module_dims(cfg, p, &in, &out, &off);
                    if (b) buf->layers[l].b[p] = buf->data + offset;
                    else buf->layers[l].a[p] = buf->data + offset;
                    offset += (size_t)lc->rank * (b ? out : in);
                }
        }
}

void fl_lora_buffer_free(fl_lora_buffer *buf) {
    if (buf->data) buf->be->free(buf->data);
    free(buf->layers);
    memset(buf, 0, sizeof *buf);
}

void fl_lora_init_peft(fl_lora_buffer *params, const fl_model_config *cfg, const fl_lora_config *lc) {
    const fl_backend *be = params->be;
    for (int l = 0; l < cfg->n_layers; l++)
        for (int p = 0; p < FL_N_PROJ; p++) {
            if (!params->layers[l].a[p]) continue;
            int in, out, off;
            fl_module_dims(cfg, (fl_proj)p, &in, &out, &off);
            size_t n_a = (size_t)lc->rank * in;
            float *host = fl_malloc(n_a * sizeof(float));
            float bound = 1.0f / sqrtf((float)in);
            fl_rng_fill_uniform(host, n_a, fl_rng_stream(lc->seed, 0x10a, (uint64_t)l, (uint64_t)p), -bound, bound);
            be->upload(params->layers[l].a[p], host, n_a * sizeof(float));
            be->zero(params->layers[l].b[p], (size_t)out * lc->rank * sizeof(float));
            free(host);
        }
}
