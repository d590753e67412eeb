/* decoder.h — the inference path: the model's forward for new tokens of one sequence with a K/V
 * cache, written over the backend interface like engine/model.c (same weights, same LoRA math
 * y = x·Wᵀ + b + s·(x·Aᵀ)·Bᵀ, no dropout), so generation costs O(T) per token.
 *
 *   fl_decoder d;  fl_decoder_init(&d, &model, 512, 1);
 *   fl_decoder_feed(&d, prompt, n_prompt, logits);     // prefill (in chunks), logits of the last
 *   fl_decoder_feed(&d, &next, 1, logits);             // one token at a time afterwards
 * Needs the backend's attention_decode op (backend.h); a backend without it is a clear error.
 * Not the sampler (infer/sample.h), not training (no activations kept).
 *
 * Shapes: L layers, Tc = capacity, Tn = tokens of one call (<= chunk), C, QD = NH*HS, KVD = NKV*HS,
 * QKV = QD + 2·KVD; x holds the norm output then x·lora_aᵀ of the fused q/k/v or gate/up group.
 */
#ifndef FL_INFER_DECODER_H
#define FL_INFER_DECODER_H

#include <stdint.h>

#include "engine/model.h"

typedef struct {
    fl_model *m;
    int use_lora;          /* 0: the base alone (LoRA skipped) */
    int capacity;          /* Tc: positions the cache holds */
    int chunk;             /* most tokens per internal forward */
    int n;                 /* positions filled */
    void *k_cache, *v_cache;  /* (L, Tc, KVD) act-typed, RoPE applied to k */
    void *h, *x, *qkv, *att, *gate_up, *wide, *xa;   /* (chunk, C / C + 3R / QKV / QD / 2FF / max(FF, C) / R) act */
    void *proj;          /* (chunk, C) act, Gemma: o's and down's outputs before their norms; else NULL */
    float *rstd;           /* (chunk) */
    void *qk_raw;          /* (chunk, QD + KVD) act, Qwen3 only: q | k before q_norm / k_norm, else NULL */
    float *qk_rstd;        /* (chunk, NH + NKV) Qwen3 only, else NULL */
    int32_t *ids, *pos, *ignore;  /* (chunk) backend memory; ignore = -100 targets for the LM head */
    float *logits;         /* (V) backend f32 */
} fl_decoder;

/* capacity: max positions (prompt + generated); use_lora: apply m's LoRA. */
int fl_decoder_init(fl_decoder *d, fl_model *m, int capacity, int use_lora);
void fl_decoder_free(fl_decoder *d);
/* Forgets the cached positions (a new sequence). */
void fl_decoder_reset(fl_decoder *d);
/* Appends Tn tokens; logits_last (V, host f32, may be NULL) gets the logits after the last one.
 * logits_all (Tn, V, host, may be NULL) gets every position's logits (tests). */
int fl_decoder_feed(fl_decoder *d, const int32_t *ids, int Tn, float *logits_last, float *logits_all);

#endif
