/* llama2c.h — converting a karpathy/llama2.c checkpoint ("legacy v0" .bin) and its tokenizer .bin
 * into a Hugging Face Llama folder that fastlora (and transformers) load, with no Python.
 *
 * Checkpoint: 7 little-endian int32 (dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size
 * (negative: untied classifier), seq_len), then f32 tensors, every matrix (out, in) row-major:
 * token_embedding (V, dim), rms_att (L, dim), wq (L, dim, dim), wk (L, kvd, dim), wv (L, kvd, dim),
 * wo (L, dim, dim), rms_ffn (L, dim), w1 = gate (L, hidden, dim), w2 = down (L, dim, hidden),
 * w3 = up (L, hidden, dim), rms_final (dim), freq_cis_real/imag (seq_len, hs/2) (skipped),
 * [wcls (V, dim) when untied]. llama2.c rotates INTERLEAVED pairs (2j, 2j+1) of each head; HF
 * rotates (j, j+hs/2), so q and k rows are permuted per head: new row j = old row 2j, new row
 * hs/2 + j = old row 2j+1 (llama2.c export.py permute_original). RMSNorm eps 1e-5, RoPE θ 10000.
 *
 * Tokenizer .bin: int32 max_token_length, then per id: f32 score, int32 length, bytes (llama2.c
 * tokenizer.py export: '▁' written as ' ', <s>/</s> as "\n<s>\n"/"\n</s>\n"). Written as a
 * SentencePiece-BPE tokenizer.json (byte fallback when all 256 <0xNN> tokens are there, Prepend/Replace "▁" normalizer, BOS
 * post-processor — the layout of HF's LlamaConverter), merges ranked by the merged piece's score,
 * which is how SentencePiece BPE and llama2.c's encoder pick merges.
 *
 * The tokenizer may instead be the SentencePiece model the .bin was exported from (tok512.model: a
 * protobuf ModelProto, train/spm_model.h): its pieces and scores give the same tokenizer.json. It
 * must be what that file expresses — BPE, the identity normalizer with its dummy prefix, <unk> <s>
 * </s> as ids 0-2, normal and byte pieces only — else one line says which field is not. Other files
 * given by mistake (a .vocab listing, a tokenizer.json; a tokenizer, a llama2.c version-1/2 file or a
 * safetensors file as --checkpoint) are refused with one line saying what to pass.
 */
#ifndef FL_TRAIN_LLAMA2C_H
#define FL_TRAIN_LLAMA2C_H

/* tokenizer_bin (a .bin or a SentencePiece .model) may be NULL (no tokenizer files written). out_dir is written whole or not at all, and
 * when it exists and is not empty `force` must be set (io/output_dir.h). */
int fl_llama2c_convert(const char *checkpoint_bin, const char *tokenizer_bin, const char *out_dir, int force);

#endif
