/* merge_nf4.h — `merge` of an adapter trained on an NF4 (bitsandbytes 4-bit) base.
 *
 * The merged model is a plain float Hugging Face folder: each NF4 projection is dequantized (to the
 * dtype it was quantized from, model/nf4_dequantize.h), the adapter is added in f32 and the sum
 * rounded once (infer/merge.h), and config.json loses its quantization_config. The reasons for not
 * re-quantizing are in merge_nf4.c and docs/QUANT.md. Not the float merge itself.
 */
#ifndef FL_INFER_MERGE_NF4_H
#define FL_INFER_MERGE_NF4_H

/* Merges adapter_dir into the dequantized model_dir, written to out_dir (as fl_merge_adapter). An
 * intermediate float folder `<out_dir>.nf4-dequantized.<pid>` exists during the call. */
int fl_nf4_merge_adapter(const char *model_dir, const char *adapter_dir, const char *out_dir, int force);

#endif
