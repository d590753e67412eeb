/* nf4_dequantize.h — an NF4 (bitsandbytes 4-bit) model folder as a float one: each NF4 projection
 * dequantized to the dtype it was quantized from (as bitsandbytes' dequantize_4bit does), the
 * companion tensors dropped, config.json without its quantization_config. What the merge of an
 * adapter into an NF4 base starts from (infer/merge_nf4.h, docs/QUANT.md); not the merge itself.
 */
#ifndef FL_MODEL_NF4_DEQUANTIZE_H
#define FL_MODEL_NF4_DEQUANTIZE_H

/* The NF4 folder model_dir as a float folder out_dir (config.json without quantization_config,
 * NF4 weights dequantized, their companion tensors dropped, other tensors byte for byte; a sharded
 * model keeps its shard names and an index without the companions). Other files are not copied. */
int fl_nf4_dequantize_folder(const char *model_dir, const char *out_dir);

#endif
