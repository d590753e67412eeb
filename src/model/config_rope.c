/* config_rope.c — the RoPE fields of config.json: rope_theta, partial_rotary_factor and the scaling
 * (rope_scaling in transformers 4.x, rope_parameters in 5.x: default, linear, dynamic, llama3, longrope,
 * yarn),
 * Gemma 3's two RoPEs keyed by layer type, and Ministral 3's default RoPE and attention scaling. Not the frequencies themselves (engine/model_init.c
 * builds inv_freq from what is parsed here) and not the rest of the config (model/config.c). */
#include "model/config_rope.h"

#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "common/error.h"
#include "model/config_read.h"

/* A longrope factor list (short_factor, long_factor): rotary_dim/2 positive numbers. */
static int get_factors(const char *path, json_t *scaling, const char *field, const char *key, int n, float *out) {
    json_t *v = json_object_get(scaling, key);
    if (!json_is_array(v) || (int)json_array_size(v) != n)
        return fl_input_error("%s: field '%s.%s' must be a list of %d numbers (rotary_dim / 2)", path, field, key, n);
    for (int i = 0; i < n; i++) {
        json_t *x = json_array_get(v, (size_t)i);
        if (!json_is_number(x) || !(json_number_value(x) > 0) || isinf(json_number_value(x)))
            return fl_input_error("%s: field '%s.%s[%d]' must be a positive number", path, field, key, i);
        out[i] = (float)json_number_value(x);
    }
    return 0;
}

/* The pretraining length the llama3, longrope and yarn types read, as transformers 5.x's model uses
 * it: its rotary embedding re-runs standardize_rope_params, which copies a config attribute
 * original_max_position_embeddings (a top-level field; Phi3Config always has one, default 4096) over
 * the scaling object's; without one, the scaling object's, else max_position_embeddings. */
static int get_original_max(const char *path, json_t *root, json_t *scaling, const fl_model_config *cfg, int *out) {
    int fallback = cfg->max_position_embeddings;
    FL_TRY(get_int(path, scaling, "original_max_position_embeddings", 0, fallback, &fallback));
    FL_TRY(get_int(path, root, "original_max_position_embeddings", 0, cfg->arch == FL_ARCH_PHI3 ? 4096 : fallback, out));
    if (*out <= 0) return fl_input_error("%s: field 'original_max_position_embeddings' must be a positive integer", path);
    return 0;
}

/* `factor` of longrope and yarn: given, or (absent for longrope, null for yarn, whose validation
 * requires the key) max_position_embeddings / original_max_position_embeddings. */
static int get_scale_factor(const char *path, json_t *scaling, const char *field, int required,
                            const fl_model_config *cfg, double *out) {
    json_t *v = json_object_get(scaling, "factor");
    if (!v && required) return fl_input_error("%s: field '%s.factor' is missing (expected a number)", path, field);
    FL_TRY(get_number(path, scaling, "factor", 0,
                      (double)cfg->max_position_embeddings / cfg->rope_original_max_position, out));
    if (!(*out > 0) || isinf(*out)) return fl_input_error("%s: field '%s.factor' must be a positive number", path, field);
    return 0;
}

/* An attention_factor given in the scaling object (0 when absent or null); else one line. */
static int get_attention_factor(const char *path, json_t *scaling, const char *field, double *out) {
    json_t *v = json_object_get(scaling, "attention_factor");
    FL_TRY(get_number(path, scaling, "attention_factor", 0, 0, out));
    if (v && !json_is_null(v) && (!(*out > 0) || isinf(*out)))
        return fl_input_error("%s: field '%s.attention_factor' must be a positive number", path, field);
    return 0;
}

/* Phi-3's longrope (transformers' _compute_longrope_parameters): short/long factor lists, the
 * pretraining length (get_original_max), attention_factor given or sqrt(1 + ln(factor) / ln(original))
 * with factor given or max_position_embeddings / original (1 when factor <= 1). */
static int parse_longrope(const char *path, json_t *root, json_t *scaling, const char *field, fl_model_config *cfg) {
    int half = fl_config_rotary_dim(cfg) / 2;
    cfg->rope_longrope = 1;
    FL_TRY(get_factors(path, scaling, field, "short_factor", half, cfg->rope_short_factor));
    FL_TRY(get_factors(path, scaling, field, "long_factor", half, cfg->rope_long_factor));
    FL_TRY(get_original_max(path, root, scaling, cfg, &cfg->rope_original_max_position));
    double factor = 0, attn = 0;
    FL_TRY(get_scale_factor(path, scaling, field, 0, cfg, &factor));
    FL_TRY(get_attention_factor(path, scaling, field, &attn));
    if (attn == 0) attn = factor <= 1.0 ? 1.0 : sqrt(1.0 + log(factor) / log((double)cfg->rope_original_max_position));
    if (!(attn > 0) || isinf(attn)) return fl_input_error("%s: field '%s.attention_factor' must be positive", path, field);
    cfg->rope_factor = factor;
    cfg->rope_attention_factor = attn;
    return 0;
}

/* YaRN's cos/sin factor for a scale (transformers' get_mscale): 0.1·m·ln(scale) + 1, 1 when scale <= 1. */
static double yarn_mscale(double scale, double m) { return scale <= 1 ? 1.0 : 0.1 * m * log(scale) + 1.0; }

double fl_config_yarn_default_attention(double factor) { return yarn_mscale(factor, 1.0); }

/* YaRN (transformers' _compute_yarn_parameters; Qwen2.5 and Qwen3 past 32k, OLMo 3): factor (null:
 * max_position_embeddings / original), the pretraining length (get_original_max), beta_fast and
 * beta_slow (absent, null or 0: 32 and 1), truncate (default true), attention_factor given, else
 * get_mscale(factor, mscale) / get_mscale(factor, mscale_all_dim) when both are non-zero, else
 * get_mscale(factor). The frequencies themselves: engine/model_init.c. */
static int parse_yarn(const char *path, json_t *root, json_t *scaling, const char *field, fl_model_config *cfg) {
    cfg->rope_yarn = 1;
    FL_TRY(get_original_max(path, root, scaling, cfg, &cfg->rope_original_max_position));
    FL_TRY(get_scale_factor(path, scaling, field, 1, cfg, &cfg->rope_factor));
    double beta_fast = 0, beta_slow = 0, mscale = 0, mscale_all = 0, attn = 0;
    FL_TRY(get_number(path, scaling, "beta_fast", 0, 0, &beta_fast));
    FL_TRY(get_number(path, scaling, "beta_slow", 0, 0, &beta_slow));
    if (beta_fast == 0) beta_fast = 32;
    if (beta_slow == 0) beta_slow = 1;
    if (!(beta_fast > 0) || !(beta_slow > 0) || isinf(beta_fast) || isinf(beta_slow))
        return fl_input_error("%s: field '%s.beta_fast' / '%s.beta_slow' must be positive numbers", path, field, field);
    if (cfg->rope_theta == 1.0)   /* the correction dims divide by ln(rope_theta) */
        return fl_input_error("%s: field 'rope_theta' must not be 1 with rope_type yarn", path);
    /* transformers reads truncate from the top of config.rope_parameters: an entry keyed by layer type
     * (root NULL) never has it there, so it is true whatever the entry says */
    cfg->rope_yarn_truncate = 1;
    if (root) FL_TRY(get_bool(path, scaling, "truncate", 1, &cfg->rope_yarn_truncate));
    FL_TRY(get_number(path, scaling, "mscale", 0, 0, &mscale));
    FL_TRY(get_number(path, scaling, "mscale_all_dim", 0, 0, &mscale_all));
    FL_TRY(get_attention_factor(path, scaling, field, &attn));
    if (attn == 0)
        attn = mscale != 0 && mscale_all != 0 ? yarn_mscale(cfg->rope_factor, mscale) / yarn_mscale(cfg->rope_factor, mscale_all)
                                              : yarn_mscale(cfg->rope_factor, 1.0);
    if (!(attn > 0) || isinf(attn))
        return fl_input_error("%s: field '%s': mscale and mscale_all_dim give attention factor %g (expected a positive "
                              "number)", path, field, attn);
    cfg->rope_yarn_beta_fast = beta_fast;
    cfg->rope_yarn_beta_slow = beta_slow;
    cfg->rope_attention_factor = attn;
    return 0;
}

static int parse_scaling(const char *path, json_t *root, json_t *scaling, const char *field, fl_model_config *cfg);

/* Dynamic NTK's base at init: transformers' _compute_dynamic_ntk_parameters with seq_len =
 * max_position_embeddings (M), in double as Python computes it: theta wherever factor·M/M − (factor − 1)
 * rounds to 1 (every factor seen in real configs), a few ulps off elsewhere. */
double fl_config_rope_base(const fl_model_config *cfg) {
    if (!cfg->rope_dynamic) return cfg->rope_theta;
    double factor = cfg->rope_factor, M = cfg->max_position_embeddings, RD = fl_config_rotary_dim(cfg);
    return cfg->rope_theta * pow(factor * M / M - (factor - 1.0), RD / (RD - 2.0));
}

/* RoPE: `rope_theta` + `rope_scaling` (transformers 4.x) or `rope_parameters` (5.x); the rotated
 * share of a head, partial_rotary_factor, at the top level (4.x) or in rope_parameters (5.x). */
int fl_config_parse_rope(const char *path, json_t *root, fl_model_config *cfg) {
    json_t *params = json_object_get(root, "rope_parameters");
    json_t *scaling = json_object_get(root, "rope_scaling");
    const char *field = "rope_scaling";
    double partial = 1.0;
    FL_TRY(get_number(path, root, "partial_rotary_factor", 0, 1.0, &partial));
    if (params && !json_is_null(params)) {
        if (!json_is_object(params)) return fl_input_error("%s: field 'rope_parameters' must be an object", path);
        FL_TRY(get_number(path, params, "rope_theta", 0, 10000.0, &cfg->rope_theta));
        FL_TRY(get_number(path, params, "partial_rotary_factor", 0, partial, &partial));
        scaling = params;
        field = "rope_parameters";
    } else {
        FL_TRY(get_number(path, root, "rope_theta", 0, 10000.0, &cfg->rope_theta));
        if (json_is_object(scaling))   /* 5.x reads the 4.x rope_scaling object as its rope_parameters */
            FL_TRY(get_number(path, scaling, "partial_rotary_factor", 0, partial, &partial));
    }
    if (!(cfg->rope_theta > 0)) return fl_input_error("%s: field 'rope_theta' must be positive", path);
    /* transformers: int(head_dim * partial_rotary_factor); converted only once it is in range */
    int rd = partial > 0 && partial <= 1 ? (int)(cfg->head_dim * partial) : 0;
    if (!(partial > 0 && partial <= 1) || rd < 2 || rd % 2)
        return fl_input_error("%s: field 'partial_rotary_factor' (%g) must be in (0, 1] and give an even rotary "
                              "dimension >= 2 of head_dim %d", path, partial, cfg->head_dim);
    cfg->rotary_dim = rd;
    if (!scaling || json_is_null(scaling)) return 0;
    if (!json_is_object(scaling)) return fl_input_error("%s: field '%s' must be an object or null", path, field);
    return parse_scaling(path, root, scaling, field, cfg);
}

/* The scaling object's type and its fields into cfg. root: the config, for the pretraining length's
 * top-level field (get_original_max); NULL for an entry of rope_parameters keyed by layer type, which
 * transformers fills from the entry alone. */
static int parse_scaling(const char *path, json_t *root, json_t *scaling, const char *field, fl_model_config *cfg) {
    json_t *type = json_object_get(scaling, "rope_type");
    if (!type) type = json_object_get(scaling, "type");
    const char *kind = json_is_string(type) ? json_string_value(type) : "default";
    if (!strcmp(kind, "default")) return 0;
    /* Phi3Config reads the older names "su" and "yarn" as longrope */
    if (!strcmp(kind, "longrope") || (cfg->arch == FL_ARCH_PHI3 && (!strcmp(kind, "su") || !strcmp(kind, "yarn"))))
        return parse_longrope(path, root, scaling, field, cfg);
    if (cfg->arch == FL_ARCH_PHI3)   /* Phi3Config's validate_rope: default or longrope only */
        return fl_input_error("%s: field '%s.rope_type' is '%s'; Phi3ForCausalLM supports: default, longrope (su, yarn)",
                              path, field, kind);
    if (!strcmp(kind, "yarn")) return parse_yarn(path, root, scaling, field, cfg);
    if (!strcmp(kind, "dynamic")) {   /* dynamic NTK: transformers' _compute_dynamic_ntk_parameters */
        FL_TRY(get_number(path, scaling, "factor", 1, 0, &cfg->rope_factor));
        if (!(cfg->rope_factor >= 1) || isinf(cfg->rope_factor))
            return fl_input_error("%s: field '%s.factor' must be a number >= 1 for rope_type dynamic", path, field);
        if (cfg->rotary_dim <= 2)   /* its exponent RD / (RD - 2) */
            return fl_input_error("%s: rope_type dynamic needs a rotary dimension above 2, got %d", path, cfg->rotary_dim);
        cfg->rope_dynamic = 1;
        double base = fl_config_rope_base(cfg);   /* a huge factor cancels to 0 in double, as in Python */
        if (!(base > 0) || isinf(base))
            return fl_input_error("%s: field '%s.factor' (%g) gives dynamic NTK a base of %g; expected a factor whose "
                                  "base is positive and finite", path, field, cfg->rope_factor, base);
        return 0;
    }
    if (!strcmp(kind, "linear")) {   /* transformers' linear type: inv_freq / factor */
        FL_TRY(get_number(path, scaling, "factor", 1, 0, &cfg->rope_linear_factor));
        if (!(cfg->rope_linear_factor > 0) || isinf(cfg->rope_linear_factor))
            return fl_input_error("%s: field '%s.factor' must be a positive number", path, field);
        return 0;
    }
    if (strcmp(kind, "llama3") != 0)
        return fl_input_error("%s: field '%s.rope_type' is '%s'; supported: default, linear, dynamic, llama3, longrope, yarn", path, field,
                              kind);
    cfg->rope_llama3 = 1;
    FL_TRY(get_number(path, scaling, "factor", 1, 0, &cfg->rope_factor));
    FL_TRY(get_number(path, scaling, "low_freq_factor", 1, 0, &cfg->rope_low_freq_factor));
    FL_TRY(get_number(path, scaling, "high_freq_factor", 1, 0, &cfg->rope_high_freq_factor));
    FL_TRY(get_original_max(path, root, scaling, cfg, &cfg->rope_original_max_position));
    if (!(cfg->rope_factor > 0) || !(cfg->rope_high_freq_factor > cfg->rope_low_freq_factor) ||
        !(cfg->rope_low_freq_factor > 0) || cfg->rope_original_max_position <= 0)
        return fl_input_error("%s: field '%s': llama3 needs factor > 0, high_freq_factor > low_freq_factor > 0, "
                              "original_max_position_embeddings > 0", path, field);
    return 0;
}

/* One Gemma 3 RoPE entry ("default" or "linear"): its theta (default `theta0`) and linear factor. */
static int gemma_rope_entry(const char *path, json_t *e, const char *field, double theta0, int allow_linear,
                            double *theta, double *factor) {
    *theta = theta0;
    *factor = 0;
    if (!e || json_is_null(e)) return 0;
    if (!json_is_object(e)) return fl_input_error("%s: field '%s' must be an object or null", path, field);
    FL_TRY(get_number(path, e, "rope_theta", 0, theta0, theta));
    json_t *type = json_object_get(e, "rope_type");
    if (!type) type = json_object_get(e, "type");
    const char *kind = json_is_string(type) ? json_string_value(type) : "default";
    if (!strcmp(kind, "default")) return 0;
    if (strcmp(kind, "linear") != 0 || !allow_linear)
        return fl_input_error("%s: field '%s.rope_type' is '%s'; supported: default%s", path, field, kind,
                              allow_linear ? ", linear" : "");
    FL_TRY(get_number(path, e, "factor", 1, 0, factor));
    if (!(*factor > 0)) return fl_input_error("%s: field '%s.factor' must be positive", path, field);
    return 0;
}

/* Gemma 3's two RoPEs: rope_parameters keyed by layer type (5.x), or rope_theta (global, default 1e6),
 * rope_local_base_freq (sliding, default 1e4) and rope_scaling (global only) in 4.x. */
int fl_config_parse_gemma3_rope(const char *path, json_t *root, fl_model_config *cfg) {
    json_t *params = json_object_get(root, "rope_parameters");
    double local = 10000.0;
    if (params && !json_is_null(params)) {
        if (!json_is_object(params) || json_object_get(params, "rope_theta"))
            return fl_input_error("%s: field 'rope_parameters' must be an object keyed by layer type "
                                  "(full_attention, sliding_attention)", path);
        const char *key;
        json_t *val;
        json_object_foreach(params, key, val)
            if (strcmp(key, "full_attention") != 0 && strcmp(key, "sliding_attention") != 0)
                return fl_input_error("%s: field 'rope_parameters.%s' is not supported (supported: full_attention, "
                                      "sliding_attention)", path, key);
        double unused;
        FL_TRY(gemma_rope_entry(path, json_object_get(params, "full_attention"), "rope_parameters.full_attention", 1e6,
                                1, &cfg->rope_theta, &cfg->rope_linear_factor));
        FL_TRY(gemma_rope_entry(path, json_object_get(params, "sliding_attention"),
                                "rope_parameters.sliding_attention", 1e4, 0, &local, &unused));
    } else {
        FL_TRY(get_number(path, root, "rope_local_base_freq", 0, 1e4, &local));
        double theta = 1e6;
        FL_TRY(get_number(path, root, "rope_theta", 0, 1e6, &theta));
        FL_TRY(gemma_rope_entry(path, json_object_get(root, "rope_scaling"), "rope_scaling", theta, 1, &cfg->rope_theta,
                                &cfg->rope_linear_factor));
    }
    if (!(cfg->rope_theta > 0) || !(local > 0))
        return fl_input_error("%s: the RoPE thetas (rope_theta, rope_local_base_freq) must be positive", path);
    cfg->rope_local_theta = local;
    return 0;
}

/* A partial_rotary_factor in `obj`, if any, must be 1: OLMo 3's default RoPE rotates whole heads. */
static int olmo3_whole_heads(const char *path, json_t *obj, const char *field) {
    double partial = 1.0;
    FL_TRY(get_number(path, obj, "partial_rotary_factor", 0, 1.0, &partial));
    if (partial != 1.0)
        return fl_input_error("%s: field '%spartial_rotary_factor' must be 1 on OLMo 3 (its sliding layers' RoPE "
                              "rotates whole heads)", path, field);
    return 0;
}

/* OLMo 3's two RoPEs, as Olmo3Config.convert_rope_params_to_dict builds them: rope_parameters keyed by
 * layer type (a flat one is refused: transformers would ignore it), the 4.x rope_scaling merged over the
 * full layers' entry. The full layers' rope_theta: their entry's, else the top-level rope_theta, else
 * 500000; the sliding layers': their entry's, else 500000 (the top-level one is consumed by the full
 * layers' default), default type only. Entries keyed by layer type take their pretraining length from
 * themselves, else max_position_embeddings (parse_scaling with no root). */
int fl_config_parse_olmo3_rope(const char *path, json_t *root, fl_model_config *cfg) {
    json_t *params = json_object_get(root, "rope_parameters"), *full = NULL, *sliding = NULL;
    if (params && !json_is_null(params)) {
        if (!json_is_object(params))
            return fl_input_error("%s: field 'rope_parameters' must be an object keyed by layer type", path);
        const char *key;
        json_t *val;
        json_object_foreach(params, key, val) {
            if (strcmp(key, "full_attention") != 0 && strcmp(key, "sliding_attention") != 0)
                return fl_input_error("%s: field 'rope_parameters.%s' is not supported (OLMo 3's rope_parameters is "
                                      "keyed by layer type: full_attention, sliding_attention)", path, key);
            if (!json_is_null(val) && !json_is_object(val))
                return fl_input_error("%s: field 'rope_parameters.%s' must be an object or null", path, key);
        }
        full = json_object_get(params, "full_attention");
        sliding = json_object_get(params, "sliding_attention");
    }
    json_t *scaling = json_object_get(root, "rope_scaling");
    if (scaling && !json_is_null(scaling) && !json_is_object(scaling))
        return fl_input_error("%s: field 'rope_scaling' must be an object or null", path);
    FL_TRY(olmo3_whole_heads(path, root, ""));
    json_t *entry = json_is_object(full) ? json_deep_copy(full) : json_object();
    if (json_is_object(scaling)) json_object_update(entry, scaling);
    const char *field = json_is_object(scaling) ? "rope_scaling" : "rope_parameters.full_attention";
    double top = 500000.0;
    cfg->rotary_dim = cfg->head_dim;
    int rc = get_number(path, root, "rope_theta", 0, 500000.0, &top);
    if (!rc) rc = get_number(path, entry, "rope_theta", 0, top, &cfg->rope_theta);
    if (!rc && !(cfg->rope_theta > 0)) rc = fl_input_error("%s: field 'rope_theta' must be positive", path);
    if (!rc) rc = olmo3_whole_heads(path, entry, json_is_object(scaling) ? "rope_scaling." : "rope_parameters.full_attention.");
    if (!rc) rc = parse_scaling(path, NULL, entry, field, cfg);
    json_decref(entry);
    FL_TRY(rc);
    double local = 500000.0;
    if (json_is_object(sliding)) {
        FL_TRY(get_number(path, sliding, "rope_theta", 0, 500000.0, &local));
        FL_TRY(olmo3_whole_heads(path, sliding, "rope_parameters.sliding_attention."));
        json_t *type = json_object_get(sliding, "rope_type");
        if (!type) type = json_object_get(sliding, "type");
        if (type && !(json_is_string(type) && !strcmp(json_string_value(type), "default")))
            return fl_input_error("%s: field 'rope_parameters.sliding_attention.rope_type' must be \"default\" (OLMo 3's "
                                  "sliding layers are not scaled)", path);
    }
    if (!(local > 0)) return fl_input_error("%s: field 'rope_parameters.sliding_attention.rope_theta' must be positive", path);
    cfg->rope_local_theta = local;
    return 0;
}

/* Ministral3Config's RoPE when the config gives none (no rope_parameters, rope_scaling or rope_theta):
 * yarn, factor 16 over 16384 positions, theta 1e6, beta 32 / 1, mscale and mscale_all_dim 1 (so an
 * attention factor of 1), llama_4_scaling_beta 0.1. */
int fl_config_ministral3_default_rope(const char *path, json_t *root) {
    json_t *p = json_object_get(root, "rope_parameters"), *s = json_object_get(root, "rope_scaling");
    if ((p && !json_is_null(p)) || (s && !json_is_null(s)) || json_object_get(root, "rope_theta")) return 0;
    json_t *d = json_pack("{s:s, s:f, s:f, s:i, s:f, s:f, s:f, s:f, s:f}", "rope_type", "yarn", "rope_theta", 1e6,
                          "factor", 16.0, "original_max_position_embeddings", 16384, "beta_fast", 32.0, "beta_slow", 1.0,
                          "mscale", 1.0, "mscale_all_dim", 1.0, "llama_4_scaling_beta", 0.1);
    if (!d || json_object_set_new(root, "rope_parameters", d))
        return fl_input_error("%s: out of memory setting Ministral 3's default rope_parameters", path);
    return 0;
}

/* Ministral 3's attention scaling (transformers' Ministral3Attention): q times 1 + beta·ln(1 + floor(p / n))
 * at position p, beta = rope_parameters.llama_4_scaling_beta and n its original_max_position_embeddings,
 * both of which transformers reads unconditionally (a config without them does not run there). */
int fl_config_parse_llama4_scaling(const char *path, json_t *root, fl_model_config *cfg) {
    const char *field = "rope_parameters";
    json_t *rp = json_object_get(root, field);
    if (!rp || json_is_null(rp)) rp = json_object_get(root, field = "rope_scaling");
    if (!json_is_object(rp))
        return fl_input_error("%s: field 'rope_parameters' is missing (Ministral 3 reads llama_4_scaling_beta and "
                              "original_max_position_embeddings from it)", path);
    json_t *beta = json_object_get(rp, "llama_4_scaling_beta"), *n = json_object_get(rp, "original_max_position_embeddings");
    if (!json_is_number(beta) || !(json_number_value(beta) >= 0) || isinf(json_number_value(beta)))
        return fl_input_error("%s: field '%s.llama_4_scaling_beta' must be a number >= 0 (Ministral 3's attention scaling)",
                              path, field);
    if (!json_is_integer(n) || json_integer_value(n) <= 0 || json_integer_value(n) > INT32_MAX)
        return fl_input_error("%s: field '%s.original_max_position_embeddings' must be a positive integer (the period "
                              "of Ministral 3's attention scaling)", path, field);
    cfg->rope_llama4_beta = json_number_value(beta);
    cfg->rope_llama4_original = (int)json_integer_value(n);
    return 0;
}
