/* weights_nf4.h — NF4 projections from a Hugging Face folder: pre-quantized bitsandbytes 4-bit
 * checkpoints as transformers saves them, or float checkpoints quantized at load (`--quant nf4`).
 *
 * A pre-quantized checkpoint says so in config.json ("quantization_config": {"quant_method":
 * "bitsandbytes", "load_in_4bit": true, "bnb_4bit_quant_type": "nf4", ...}) and stores, for each
 * quantized nn.Linear `<m>.weight` (out, in):
 *   <m>.weight                               U8 (ceil(n/2), 1)  packed nibbles (quant_storage uint8)
 *   <m>.weight.absmax                        U8 (n_blocks)      8-bit codes (F32 without double quant)
 *   <m>.weight.quant_map                     F32 (16)           the NF4 table
 *   <m>.weight.nested_absmax                 F32 (n_groups)     double quant only
 *   <m>.weight.nested_quant_map              F32 (256)          double quant only
 *   <m>.weight.quant_state.bitsandbytes__nf4 U8 (JSON bytes)    {"quant_type", "blocksize", "dtype",
 *                                            "shape", "nested_blocksize", "nested_dtype", "nested_offset"}
 * Every field is validated against the others and against the shape config.json implies; a
 * mismatch is one line naming the file and the tensor. Only the frozen projections (q, k, v, o,
 * gate, up, down) are NF4; embeddings, norms and the LM head stay in their float dtype. Not the
 * float weights loader (model/weights.h), which the engine keeps for everything else.
 */
#ifndef FL_MODEL_WEIGHTS_NF4_H
#define FL_MODEL_WEIGHTS_NF4_H

#include "io/safetensors.h"
#include "model/projections.h"
#include "model/config.h"
#include "quant/nf4.h"

/* config.json's "quantization_config", as far as fastlora reads it. */
typedef struct {
    int nf4;                 /* 1: a bitsandbytes 4-bit NF4 checkpoint */
    int double_quant;        /* bnb_4bit_use_double_quant */
    fl_dtype compute_dtype;  /* bnb_4bit_compute_dtype (informational) */
} fl_quant_config;

/* Reads `config_path`'s quantization_config: absent → qc->nf4 = 0; bitsandbytes 4-bit NF4 →
 * qc->nf4 = 1; anything else (8-bit, FP4, another quant_method) is an input error naming it. */
int fl_quant_config_load(fl_quant_config *qc, const char *config_path);

/* How a projection may be obtained. */
typedef enum {
    FL_NF4_STORED = 0,       /* must be stored in NF4 (a pre-quantized checkpoint) */
    FL_NF4_QUANTIZE = 1,     /* NF4 as stored, or a F32/BF16/F16 tensor quantized now (double quant) */
} fl_nf4_source;

/* Loads the weight `name` (e.g. "model.layers.0.self_attn.q_proj.weight", expected (rows, cols))
 * from the open files into w (host memory, owned by w). */
int fl_nf4_load_weight(fl_nf4_weight *w, const fl_safetensors *files, int n_files, const char *name,
                       int64_t rows, int64_t cols, fl_nf4_source source);

/* The seven projections of one layer. */
typedef struct {
    fl_nf4_weight proj[FL_N_PROJ];   /* q (QD, C), k (KVD, C), v (KVD, C), o (C, QD), gate (FF, C), up (FF, C), down (C, FF) */
} fl_nf4_layer;

/* Loads layer `layer`'s projections from the folder `dir` (model.safetensors, or the shards that
 * model.safetensors.index.json names for them). On failure nothing stays allocated. */
int fl_nf4_load_layer(fl_nf4_layer *out, const char *dir, const fl_model_config *cfg, int layer, fl_nf4_source source);
void fl_nf4_layer_free(fl_nf4_layer *l);

#endif
