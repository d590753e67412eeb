/* merge.h — folding a LoRA adapter into the base weights: W' = W + s·B·A ([out, in]), written as a
 * complete Hugging Face model folder that transformers loads without PEFT.
 *
 * Every tensor keeps its name and its ORIGINAL dtype (BF16 stays BF16: W + s·B·A is computed in
 * f32, then rounded once, to nearest even); tensors that are not adapted are copied byte for byte.
 * A sharded model (model.safetensors.index.json) stays sharded with the same file names and index;
 * config.json, generation_config.json and the tokenizer files are copied. Not the adapter reader
 * (lora/adapter_io.h). */
#ifndef FL_INFER_MERGE_H
#define FL_INFER_MERGE_H

#include <stddef.h>

/* The base is checked as train and generate check it (model/weights.h: every tensor config.json
 * implies, with its shape). The output folder is written whole or not at all (io/output_dir.h): it
 * may not be the model or adapter folder, and when it exists and is not empty `force` must be set —
 * then files of the same name are replaced and weight files the merge did not write
 * (model*.safetensors, model.safetensors.index.json) are deleted, so they cannot be loaded with it. */
int fl_merge_adapter(const char *model_dir, const char *adapter_dir, const char *out_dir, int force);

/* 0 when every w[0..n) is finite; else an input error naming `from` (the weights' file), the tensor
 * and the element: finite weights and adapter can overflow when merged. */
int fl_merge_check_finite(const float *w, size_t n, const char *tensor, const char *from);
/* In memory, f32: w (OC, IC) += scale · lora_b (OC, R) · lora_a (R, IC). */
void fl_merge_lora_f32(float *w, const float *lora_b, const float *lora_a, int oc, int ic, int rank, float scale);

#endif
