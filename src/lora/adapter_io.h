/* adapter_io.h — PEFT adapter folders: adapter_config.json + adapter_model.safetensors with PEFT's
 * exact tensor names (base_model.model.model.layers.{i}.self_attn.q_proj.lora_A.weight, (R, IC);
 * ...lora_B.weight, (OC, R); F32), so `PeftModel.from_pretrained` loads what we write, and we load
 * what PEFT writes (F32, BF16 or F16). Not the training checkpoint (optimizer state lives there). */
#ifndef FL_ADAPTER_IO_H
#define FL_ADAPTER_IO_H

#include "lora/lora.h"
#include "model/config.h"

/* Writes `dir`/adapter_config.json and `dir`/adapter_model.safetensors (each atomically; the folder
 * is created). base_model_name may be NULL. */
int fl_adapter_save(const char *dir, const fl_lora_buffer *params, const fl_model_config *cfg,
                    const fl_lora_config *lc, const char *base_model_name);

/* Reads adapter_config.json into *lc (r, lora_alpha, use_rslora, lora_dropout, target_modules);
 * fields we do not support (DoRA, lora_bias, rank/alpha patterns, layers_to_transform, ...) are
 * clear errors. */
int fl_adapter_load_config(const char *dir, fl_lora_config *lc);

/* Reads adapter_model.safetensors into params (allocated for `lc`, which must come from
 * fl_adapter_load_config). Every expected tensor must exist with the right shape. */
int fl_adapter_load_weights(const char *dir, fl_lora_buffer *params, const fl_model_config *cfg,
                            const fl_lora_config *lc);

/* Checks, without allocating, that adapter_model.safetensors holds every tensor `lc` and `cfg`
 * imply, with the right shape and a float dtype — so a config.json with absurd sizes is an error
 * before anything is allocated from it. */
int fl_adapter_check_weights(const char *dir, const fl_model_config *cfg, const fl_lora_config *lc);

/* The PEFT key of lora_A (which = 'A') or lora_B of projection p in layer l. */
void fl_adapter_tensor_name(char *out, size_t cap, const fl_model_config *cfg, int layer, fl_proj p, char which);

#endif
