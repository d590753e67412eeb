/* export_internal.h — the pieces of the GGUF export shared by its files (not a public API):
 * llama.cpp's tensor names and hyperparameter keys (gguf_hparams.c), the tokenizer metadata
 * (gguf_vocab.c), the safetensors shards of a model folder (hf_shards.c), and the two exporters
 * (export_model.c, export_lora.c).
 */
#ifndef FL_EXPORT_INTERNAL_H
#define FL_EXPORT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "export/export.h"
#include "export/gguf_writer.h"
#include "io/safetensors.h"
#include "lora/lora.h"
#include "model/config.h"

/* ---- gguf_hparams.c ------------------------------------------------------------------------ */

/* "llama", "smollm3", "granite", "qwen2", "qwen3", "phi3", "gemma", "gemma3" or "gemma2": general.architecture and the
 * prefix of the architecture keys. */
const char *fl_gguf_arch_name(const fl_model_config *cfg);
/* Refuses the architectures whose whole-model export is not written (Gemma 2 / 3: their adapters
 * export with --lora-only). `path` names config.json. */
int fl_gguf_check_model_export(const fl_model_config *cfg, const char *path);
/* Refuses configs llama.cpp's graph for the architecture cannot run (e.g. qwen2 with
 * heads x head_dim != hidden_size, RoPE scaling it does not have). `path` names config.json. */
int fl_gguf_check_config(const fl_model_config *cfg, const char *path);
/* general.architecture, general.alignment (when not 0 or the default), general.type ("model" or
 * "adapter"), general.name (the last component of `dir`, the model or adapter folder). */
void fl_gguf_put_general(fl_gguf_writer *w, const fl_model_config *cfg, const char *type, const char *dir, uint32_t alignment);
/* The architecture keys llama.cpp reads (context, embedding, blocks, feed-forward, heads, kv heads,
 * rope base, rms eps, vocab size, rope dimensions, key/value length), general.file_type and
 * general.quantization_version. */
void fl_gguf_put_hparams(fl_gguf_writer *w, const fl_model_config *cfg, fl_ggml_type ftype);
/* llama.cpp's name of projection p's weight in layer l: "blk.3.attn_q.weight". */
void fl_gguf_proj_name(char *out, size_t cap, const fl_model_config *cfg, int layer, fl_proj p);
/* Rows of q/k for llama (interleaved RoPE): within each of n_head heads of hd rows, HF row
 * j·hd/2 + i becomes row 2i + j — convert_hf_to_gguf.py's permute. cols = 1 for a bias. */
void fl_gguf_permute_rows(float *dst, const float *src, int n_head, int64_t rows, int64_t cols);
/* Heads whose rows are permuted for projection p (0: none): llama q (NH), llama k (NKV). */
int fl_gguf_permute_heads(const fl_model_config *cfg, fl_proj p);
/* llama3 RoPE: rope_freqs.weight (HS/2), the factor each frequency is divided by. */
void fl_gguf_rope_factors(const fl_model_config *cfg, float *out);
/* The stored type of a tensor: 1-D and norms f32, else `want` (q8_0 -> f16 when ne0 % 32). */
fl_ggml_type fl_gguf_pick_type(const char *name, int n_dims, int64_t ne0, fl_ggml_type want);
fl_ggml_type fl_gguf_type_of(fl_export_type t); /* t != AUTO */

/* ---- gguf_vocab.c -------------------------------------------------------------------------- */

/* The tokenizer of `model_dir` as tokenizer.* metadata, padded to cfg->vocab_size ids;
 * tokenizer.chat_template is `chat_template` (NUL-terminated text) when not NULL, else the
 * folder's template text unchanged (none when it has none). */
int fl_gguf_put_tokenizer(fl_gguf_writer *w, const char *model_dir, const fl_model_config *cfg, const char *chat_template);
/* The llama.cpp pre-tokenizer name of a byte-level tokenizer, from the hash of its ids on
 * llama.cpp's check text (as convert_hf_to_gguf.py's get_vocab_base_pre); NULL when unknown. */
struct fl_tokenizer;
const char *fl_gguf_pre_tokenizer_name(struct fl_tokenizer *tok, char hash_hex[65]);

/* ---- hf_shards.c --------------------------------------------------------------------------- */

typedef struct {
    int n;
    fl_safetensors *files; /* (n,) */
} fl_hf_shards;

/* model.safetensors, or every file of model.safetensors.index.json. */
int fl_hf_shards_open(fl_hf_shards *s, const char *dir);
void fl_hf_shards_close(fl_hf_shards *s);
const fl_st_tensor *fl_hf_shards_find(const fl_hf_shards *s, const char *name, const char **file);

/* ---- the two exporters --------------------------------------------------------------------- */

int fl_export_model(const fl_export_options *o, const fl_model_config *cfg, int *n_tensors);
int fl_export_lora(const fl_export_options *o, const fl_model_config *cfg, int *n_tensors);
/* The adapter of `dir` checked against cfg and loaded (f32, CPU). */
int fl_export_load_adapter(const char *dir, const fl_model_config *cfg, fl_lora_config *lc, fl_lora_buffer *lora);

#endif
