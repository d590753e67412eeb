/* generate.h — autoregressive generation: prefill the prompt into the K/V cache, then sample one
 * token at a time until max_new tokens or a stop id (EOS / end-of-turn). The stop token is not
 * part of the output. Deterministic for a given seed (the draw of step i is fl_sample(.., i, ..)).
 * Not the command (cli/cmd_generate.c). */
#ifndef FL_INFER_GENERATE_H
#define FL_INFER_GENERATE_H

#include <stdint.h>

#include "infer/decoder.h"
#include "infer/sample.h"

typedef struct {
    int max_new;
    int32_t stop_ids[8];
    int n_stop;
    fl_sampler sampler;
    void (*on_token)(int32_t id, void *ctx);  /* called per generated token (may be NULL) */
    void *ctx;
} fl_gen_options;

/* Continues the decoder's sequence with `prompt` (n >= 1 tokens) and generates into out (max_new);
 * *n_out = tokens generated, *stopped = 1 when a stop id ended it. */
int fl_generate(fl_decoder *d, const int32_t *prompt, int n, const fl_gen_options *o, int32_t *out, int *n_out, int *stopped);

#endif
