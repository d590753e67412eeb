/* config_rope.h — the RoPE readers config.c calls (model/config_rope.c); internal to model/. */
#ifndef FL_CONFIG_ROPE_H
#define FL_CONFIG_ROPE_H

#include <jansson.h>

#include "model/config.h"

/* rope_theta, partial_rotary_factor and rope_scaling / rope_parameters into cfg (head_dim, arch and
 * max_position_embeddings already set); 0, or one input-error line naming the file and field. */
int fl_config_parse_rope(const char *path, json_t *root, fl_model_config *cfg);

/* Gemma 3's global and local (sliding-layer) RoPEs into cfg. */
int fl_config_parse_gemma3_rope(const char *path, json_t *root, fl_model_config *cfg);

/* OLMo 3's full layers' RoPE (theta, scaling) and its sliding layers' (rope_local_theta) into cfg. */
int fl_config_parse_olmo3_rope(const char *path, json_t *root, fl_model_config *cfg);

/* Ministral3Config's default RoPE (yarn, factor 16 over 16384, llama_4_scaling_beta 0.1) set as root's
 * rope_parameters when the config gives no RoPE at all. */
int fl_config_ministral3_default_rope(const char *path, json_t *root);

/* Ministral 3's attention scaling (rope_llama4_beta, rope_llama4_original) from its rope_parameters. */
int fl_config_parse_llama4_scaling(const char *path, json_t *root, fl_model_config *cfg);

#endif
