/* nf4_merge.h — `merge` of an adapter trained on an NF4 (bitsandbytes 4-bit) base.
 *
 * The merged model is a plain float Hugging Face folder: each NF4 projection is dequantized (to the
 * dtype it was quantized from, as bitsandbytes' dequantize_4bit does), the adapter is added in f32
 * and the sum rounded once (infer/merge.h), and config.json loses its quantization_config. The
 * reasons for not re-quantizing are in nf4_merge.c and docs/QUANT.md. Not the float merge itself.
 */
#ifndef FL_QUANT_NF4_MERGE_H
#define FL_QUANT_NF4_MERGE_H

/* The NF4 folder model_dir as a float folder out_dir (config.json without quantization_config,
 * NF4 weights dequantized, their companion tensors dropped, other tensors byte for byte; a sharded
 * model keeps its shard names and an index without the companions). Other files are not copied. */
int fl_nf4_dequantize_folder(const char *model_dir, const char *out_dir);

/* Merges adapter_dir into the dequantized model_dir, written to out_dir (as fl_merge_adapter). An
 * intermediate float folder `<out_dir>.nf4-dequantized.<pid>` exists during the call. */
int fl_nf4_merge_adapter(const char *model_dir, const char *adapter_dir, const char *out_dir, int force);

#endif
