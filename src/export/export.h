/* export.h — `fastlora export --gguf`: a model folder (optionally merged with a PEFT adapter), or
 * the adapter alone, as a GGUF file that llama.cpp (and Ollama, LM Studio, ...) load.
 *
 * Whole model: the architecture metadata of a llama / qwen2 / qwen3 model (llama.cpp's names), the
 * tokenizer of the folder (tokens, types, merges or scores, special ids, the pre-tokenizer name,
 * add_bos/add_eos, the chat template: the folder's text unchanged, or --chat-template's) and every tensor under llama.cpp's name, with the adapter
 * folded in (W + s·B·A, infer/merge.h) when one is given. Llama q/k rows are permuted to the
 * interleaved RoPE layout llama.cpp's llama graph uses, as convert_hf_to_gguf.py does.
 * Adapter only: general.type "adapter", adapter.type "lora", adapter.lora.alpha, and for every
 * adapted projection blk.N.<tensor>.weight.lora_a (= PEFT's lora_A, (R, IC)) and .lora_b (lora_B,
 * (OC, R)), as convert_lora_to_gguf.py writes them, for llama-cli/llama-server --lora.
 *
 * Types: f32, f16, bf16 or q8_0 for matrices; norms, biases and 1-D tensors stay f32; a matrix
 * whose rows are not a multiple of 32 falls back from q8_0 to f16 (as llama.cpp's converter does).
 * The file is written to a temporary name and renamed; an existing file is replaced only with
 * `force`. Not a general converter: other architectures, quantized sources and tokenizers without
 * a GGUF counterpart are refused with one line naming the file and the field.
 */
#ifndef FL_EXPORT_H
#define FL_EXPORT_H

#include <stdint.h>

typedef enum { FL_EXPORT_AUTO = 0, FL_EXPORT_F32, FL_EXPORT_F16, FL_EXPORT_BF16, FL_EXPORT_Q8_0 } fl_export_type;

typedef struct {
    const char *out_path;     /* the .gguf to write */
    const char *model_dir;    /* HF model folder (config.json, safetensors, tokenizer files) */
    const char *adapter_dir;  /* PEFT adapter folder, or NULL */
    fl_export_type type;      /* AUTO: whole model -> bf16 when its weights are bf16, else f16; adapter -> f32 */
    int lora_only;            /* write the adapter alone (needs adapter_dir) */
    int force;                /* replace an existing out_path */
    int no_tokenizer;         /* whole model without tokenizer metadata (llama.cpp then takes token ids only) */
    const char *chat_template; /* a chat template file whose text (verbatim) is tokenizer.chat_template instead
                                  of the folder's (`--chat-template`, as train and generate render with); NULL: the folder's */
    uint32_t alignment;       /* 0: the GGUF default, 32 */
} fl_export_options;

/* Parses "f32", "f16", "bf16", "q8_0" (or "auto"). */
int fl_export_parse_type(const char *s, fl_export_type *out);

/* Writes the GGUF file. On success prints nothing; the summary is the caller's. */
int fl_export_gguf(const fl_export_options *o, int *n_tensors_out);

#endif
