/* generate.c — the generation loop (see generate.h). */
#include "infer/generate.h"

#include <stdlib.h>

#include "common/error.h"

int fl_generate(fl_decoder *d, const int32_t *prompt, int n, const fl_gen_options *o, int32_t *out, int *n_out, int *stopped) {
    int V = d->m->cfg.vocab_size;
    float *logits = fl_malloc(sizeof(float) * (size_t)V), *probs = fl_malloc(sizeof(float) * (size_t)V);
    int32_t *idx = fl_malloc(sizeof(int32_t) * (size_t)V);
    *n_out = 0;
    *stopped = 0;
    int status = fl_decoder_feed(d, prompt, n, logits, NULL);
    for (int i = 0; !status && i < o->max_new; i++) {
        int32_t next = fl_sample(logits, V, &o->sampler, (uint64_t)i, probs, idx);
        int stop = 0;
        for (int s = 0; s < o->n_stop; s++) stop |= next == o->stop_ids[s];
        if (stop) { *stopped = 1; break; }
        out[(*n_out)++] = next;
        if (o->on_token) o->on_token(next, o->ctx);
        if (i + 1 < o->max_new) {
            if (d->n + 1 > d->capacity) break;
            status = fl_decoder_feed(d, &next, 1, logits, NULL);
        }
    }
    free(logits);
    free(probs);
    free(idx);
    return status;
}
