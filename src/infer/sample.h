/* sample.h — picking the next token from logits: greedy (temperature 0), or temperature + top-p
 * (nucleus) sampling with a seeded counter-based draw, so a (seed, step) pair always gives the
 * same token. Not the decoder (infer/decoder.h). */
#ifndef FL_INFER_SAMPLE_H
#define FL_INFER_SAMPLE_H

#include <stdint.h>

typedef struct {
    float temperature;   /* <= 0: greedy (argmax) */
    float top_p;         /* keep the smallest set of tokens whose probability reaches top_p (1: all) */
    uint64_t seed;
} fl_sampler;

/* Samples from logits (V); scratch must hold V floats and V ints. step: the draw's index. */
int32_t fl_sample(const float *logits, int V, const fl_sampler *s, uint64_t step, float *prob_scratch, int32_t *idx_scratch);

#endif
