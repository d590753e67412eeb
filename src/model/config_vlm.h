/* config_vlm.h — the vision-language reader config.c calls (model/config_vlm.c) and the text-config
 * parser it calls back; internal to model/. */
#ifndef FL_CONFIG_VLM_H
#define FL_CONFIG_VLM_H

#include <jansson.h>

#include "model/config.h"

/* A config.json object into cfg (model/config.c): 0, or one input-error line naming path and the field. */
int fl_config_parse_json(const char *path, json_t *root, fl_model_config *cfg);

/* The language model of a Gemma3ForConditionalGeneration (mistral3 0) or Mistral3ForConditionalGeneration
 * (mistral3 1) config: its text_config read as the text architecture's config, cfg->multimodal set. */
int fl_config_parse_vision_language(const char *path, json_t *root, fl_model_config *cfg, int mistral3);

#endif
