/* config_vlm.c — the language model of a vision-language checkpoint read from its text_config
 * (Gemma3ForConditionalGeneration, Mistral3ForConditionalGeneration): the defaults each family's text
 * config class fills in, the text architecture it is read as, the head's tying. Not the text configs'
 * own fields (model/config.c reads them) and not the vision tower, which is never run. */
#include "model/config_vlm.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "common/error.h"
#include "model/config_read.h"

/* Sets each key of `defaults` that obj lacks (a JSON null counts as given). */
typedef struct { const char *key; long long value; } int_default;
static void fill_defaults(json_t *obj, const int_default *defaults, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!json_object_get(obj, defaults[i].key)) json_object_set_new(obj, defaults[i].key, json_integer(defaults[i].value));
}

/* The language model of a vision-language checkpoint, read as the text-only architecture's config;
 * errors name the field as text_config.<field>.
 * - Gemma3ForConditionalGeneration (Gemma 3 4B, 12B, 27B): text_config as a Gemma3ForCausalLM config
 *   (google's configs give only what differs from Gemma3TextConfig's defaults: gemma-3-4b-it's
 *   hidden and intermediate size, layers, rope_scaling, sliding_window), tie_word_embeddings from the
 *   top level when text_config leaves it out; the head is tied.
 * - Mistral3ForConditionalGeneration (Mistral Small 3.1 / 3.2, Magistral Small): text_config as a
 *   MistralForCausalLM config, MistralConfig's defaults for what it leaves out (sliding_window 4096
 *   when the key is absent, not when null) — or, without a text_config, Mistral3Config's own default,
 *   Mistral Small 3.1's language model. The head: transformers 5 ties it on the top-level
 *   tie_word_embeddings (true by default) unless the checkpoint stores one, as every published one
 *   does; so untied, and tied when true and the folder has no head (tie_if_head_missing). */
int fl_config_parse_vision_language(const char *path, json_t *root, fl_model_config *cfg, int mistral3) {
    const char *family = mistral3 ? "Mistral3ForConditionalGeneration" : "Gemma3ForConditionalGeneration";
    json_t *text = json_object_get(root, "text_config"), *copy;
    if (mistral3 && (!text || json_is_null(text))) {
        copy = json_pack("{s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:f, s:f, s:n}", "head_dim", 128, "hidden_size", 5120,
                         "intermediate_size", 32768, "max_position_embeddings", 131072, "num_attention_heads", 32,
                         "num_hidden_layers", 40, "num_key_value_heads", 8, "vocab_size", 131072, "rms_norm_eps", 1e-5,
                         "rope_theta", 1e9, "sliding_window");
    } else if (!json_is_object(text)) {
        return fl_input_error("%s: field 'text_config' must be an object (the language model of %s)", path, family);
    } else {
        copy = json_deep_copy(text);
    }
    if (!copy) return fl_input_error("%s: out of memory reading text_config", path);
    json_t *archs = json_array(), *top_tie = json_object_get(root, "tie_word_embeddings");
    if (mistral3) {
        json_t *mt = json_object_get(copy, "model_type");
        const char *kind = json_is_string(mt) ? json_string_value(mt) : mt && !json_is_null(mt) ? "" : "mistral";
        int mini = !strcmp(kind, "ministral3");
        if (strcmp(kind, "mistral") && !mini) { /* the message first: kind lives in copy */
            int status = fl_input_error("%s: field 'text_config.model_type' is %s%s%s; supported: \"mistral\" (Mistral "
                                        "Small 3.1 / 3.2's language model), \"ministral3\" (Ministral 3, Devstral 2)",
                                        path, json_is_string(mt) ? "'" : "", json_is_string(mt) ? kind : "not a string",
                                        json_is_string(mt) ? "'" : "");
            json_decref(copy);
            json_decref(archs);
            return status;
        }
        static const int_default mistral[] = {
            {"vocab_size", 32000}, {"hidden_size", 4096}, {"intermediate_size", 14336}, {"num_hidden_layers", 32},
            {"num_attention_heads", 32}, {"num_key_value_heads", 8}, {"max_position_embeddings", 131072},
            {"sliding_window", 4096}, {"bos_token_id", 1}, {"eos_token_id", 2}};
        static const int_default ministral[] = {   /* Ministral3Config's; its sliding_window is None */
            {"vocab_size", 131072}, {"hidden_size", 4096}, {"intermediate_size", 14336}, {"num_hidden_layers", 34},
            {"num_attention_heads", 32}, {"num_key_value_heads", 8}, {"bos_token_id", 1}, {"eos_token_id", 2}};
        if (mini) fill_defaults(copy, ministral, sizeof ministral / sizeof *ministral);
        else fill_defaults(copy, mistral, sizeof mistral / sizeof *mistral);
        json_array_append_new(archs, json_string(mini ? "Ministral3ForCausalLM" : "MistralForCausalLM"));
        json_object_set_new(copy, "model_type", json_string(mini ? "ministral3" : "mistral"));
        json_object_set_new(copy, "tie_word_embeddings", json_false());
    } else {
        static const int_default gemma[] = {
            {"vocab_size", 262208}, {"hidden_size", 2304}, {"intermediate_size", 9216}, {"num_hidden_layers", 26},
            {"num_attention_heads", 8}, {"num_key_value_heads", 4}, {"max_position_embeddings", 131072},
            {"bos_token_id", 2}, {"eos_token_id", 1}};
        fill_defaults(copy, gemma, sizeof gemma / sizeof *gemma);
        json_array_append_new(archs, json_string("Gemma3ForCausalLM"));
        json_object_set_new(copy, "model_type", json_string("gemma3_text"));
        if (!json_object_get(copy, "tie_word_embeddings") && top_tie)
            json_object_set(copy, "tie_word_embeddings", top_tie);
    }
    json_object_set_new(copy, "architectures", archs);
    char where[600];
    snprintf(where, sizeof where, "%s: text_config", path);
    int status = fl_config_parse_json(where, copy, cfg);
    json_decref(copy);
    cfg->multimodal = 1;
    if (!status && mistral3) status = get_bool(path, root, "tie_word_embeddings", 1, &cfg->tie_if_head_missing);
    if (!status && !mistral3 && !cfg->tie_word_embeddings)
        status = fl_input_error("%s: text_config.tie_word_embeddings false: Gemma 3's vision-language checkpoints tie "
                                "the head (supported: tied)", path);
    return status;
}
