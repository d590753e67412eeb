/* staging.c — a step's inputs in host memory and their way to the backend: the staged block
 * (scalars, then one slot per micro-batch), the uploads from it, the scalars' read-back, and the
 * activations sized for a batch. What the runner records and replays is step.c's. Not numerics:
 * nothing here computes on the backend. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/rng.h"
#include "engine/model_internal.h"

/* ---- a step's inputs, staged in host memory the backend may record uploads from ----------------
 *
 * Everything a step reads from the host goes through one block of alloc_host memory (runner.host):
 * the scalars (fl_step_scalars: grad_scale, lr, AdamW's bias corrections; results zeroed), then one
 * slot per micro-batch: its ids, targets, positions, seg_start and win_start (5, N) and its dropout streams
 * (L, FL_N_PROJ). Uploads come from these fixed addresses, so a recorded step replays with whatever
 * the host staged for the new step. Uploads from pinned memory run when the stream reaches them, so
 * the host writes the block only when none is pending (stage_begin; normally the previous step's
 * read-back has waited already). */

#define STAGE_ALIGN(x) (((x) + 63) / 64 * 64)

static size_t stage_header_bytes(void) { return STAGE_ALIGN(sizeof(fl_step_scalars)); }
fl_step_scalars *staged_scalars(fl_model *m) { return (fl_step_scalars *)m->runner->host; }
/* (5, N): ids, targets, pos, seg_start, win_start of slot i */
static int32_t *staged_batch(fl_model *m, int i) {
    return (int32_t *)(m->runner->host + stage_header_bytes() + (size_t)i * m->runner->slot_bytes);
}
/* (L, FL_N_PROJ) dropout streams of slot i */
static uint64_t *staged_streams(fl_model *m, int i) {
    return (uint64_t *)((char *)staged_batch(m, i) + STAGE_ALIGN(5 * m->runner->N * sizeof(int32_t)));
}

void ensure_activations(fl_model *m, int B, int T) {
    if (m->act.storage && m->act.B == B && m->act.T == T && m->act.recompute == !!m->recompute) return;
    drop_recordings(m); /* they name the old buffers */
    fl_activations_free(&m->act);
    fl_activations_init(&m->act, &m->cfg, m->lora_cfg.rank, B, T, !!m->recompute, m->be);
}

/* The mask stream of member p at layer l in forward pass `micro_step` (common/rng.h). */
static uint64_t dropout_stream_of(const fl_model *m, uint64_t micro_step, int l, int p) {
    return fl_rng_stream(m->lora_cfg.seed ^ 0xd50bull, micro_step, (uint64_t)l, (uint64_t)p);
}

struct fl_step_runner *new_runner(void) { return fl_calloc(1, sizeof(struct fl_step_runner)); }

void drop_recordings(fl_model *m) {
    struct fl_step_runner *r = m->runner;
    if (!r) return;
    for (int i = 0; i < r->n_recordings; i++) m->be->capture_free(r->recordings[i]);
    r->n_recordings = 0;
}

void free_runner(fl_model *m) {
    drop_recordings(m);
    if (m->runner->host) {
        if (m->be->free_host) m->be->free_host(m->runner->host);
        else free(m->runner->host);
    }
    free(m->runner->active);
    free(m->runner->seq);
    free(m->runner);
    m->runner = NULL;
}

/* Before the host writes the staged block: no upload from it is still queued. */
void stage_begin(fl_model *m) {
    if (!m->runner->pending) return;
    m->be->synchronize();
    m->runner->pending = 0;
}

/* Room for `slots` micro-batches of N tokens (a new block drops the recordings that name the old),
 * ready to be written. */
void ensure_staging(fl_model *m, int slots, size_t N) {
    struct fl_step_runner *r = m->runner;
    stage_begin(m);
    if (r->host && r->slots >= slots && r->N == N) return;
    drop_recordings(m);
    if (r->host) {
        if (m->be->free_host) m->be->free_host(r->host);
        else free(r->host);
    }
    r->slots = slots > r->slots ? slots : r->slots;
    r->N = N;
    free(r->active);
    r->active = fl_calloc((size_t)r->slots, 1);
    free(r->seq);
    r->seq = fl_calloc((size_t)r->slots, sizeof *r->seq);
    r->slot_bytes = STAGE_ALIGN(5 * N * sizeof(int32_t)) + STAGE_ALIGN(sizeof(uint64_t) * (size_t)m->cfg.n_layers * FL_N_PROJ);
    size_t bytes = stage_header_bytes() + (size_t)r->slots * r->slot_bytes;
    r->host = m->be->alloc_host ? m->be->alloc_host(bytes) : fl_calloc(1, bytes);
}

void fl_window_key_start(int32_t *win, const int32_t *seg, size_t B, int T, int W) {
    for (size_t b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            size_t n = b * (size_t)T + (size_t)t;
            int lo = W > 0 ? t - W + 1 : 0;
            win[n] = seg[n] > lo ? seg[n] : lo;
        }
}

/* The batch into slot i, with the dropout streams of forward pass `micro_step`. */
void stage_batch(fl_model *m, int i, const fl_batch *batch, uint64_t micro_step) {
    size_t N = (size_t)batch->B * batch->T;
    int32_t *ids = staged_batch(m, i), *targets = ids + N, *pos = ids + 2 * N, *seg = ids + 3 * N, *win = ids + 4 * N;
    memcpy(ids, batch->ids, sizeof(int32_t) * N);
    memcpy(targets, batch->targets, sizeof(int32_t) * N);
    int32_t top = 0;   /* transformers' longrope: torch.max(position_ids) + 1 picks the table per forward */
    for (size_t t = 0; t < N; t++) {
        pos[t] = batch->pos ? batch->pos[t] : (int32_t)(t % (size_t)batch->T);
        seg[t] = batch->seg_start ? batch->seg_start[t] : 0;
        top = pos[t] > top ? pos[t] : top;
    }
    m->runner->seq[i] = top + 1;
    if (fl_model_check_length(m, top + 1, "a batch")) fl_die("%s", fl_last_error()); /* callers check first */
    fl_window_key_start(win, seg, (size_t)batch->B, batch->T, m->cfg.sliding_window);
    if (m->lora_cfg.dropout > 0.0f) {
        uint64_t *streams = staged_streams(m, i);
        for (int l = 0; l < m->cfg.n_layers; l++)
            for (int p = 0; p < FL_N_PROJ; p++) streams[(size_t)l * FL_N_PROJ + p] = dropout_stream_of(m, micro_step, l, p);
    }
}

/* Slot i into the activations' ids, targets, pos, seg_start, win_start (adjacent in the table: one copy when
 * nothing pads them) and the dropout streams. */
void upload_slot(fl_model *m, int i) {
    const fl_backend *be = m->be;
    fl_activations *a = &m->act;
    size_t N = (size_t)a->B * a->T, bytes = sizeof(int32_t) * N;
    const int32_t *src = staged_batch(m, i);
    if (a->targets == a->ids + N && a->pos == a->ids + 2 * N && a->seg_start == a->ids + 3 * N &&
        a->win_start == a->ids + 4 * N) {
        be->upload(a->ids, src, 5 * bytes);
    } else {
        be->upload(a->ids, src, bytes);
        be->upload(a->targets, src + N, bytes);
        be->upload(a->pos, src + 2 * N, bytes);
        be->upload(a->seg_start, src + 3 * N, bytes);
        be->upload(a->win_start, src + 4 * N, bytes);
    }
    if (m->lora_cfg.dropout > 0.0f)
        be->upload(m->dropout_streams, staged_streams(m, i), sizeof(uint64_t) * (size_t)m->cfg.n_layers * FL_N_PROJ);
    m->rope_seq = m->runner->seq[i];
    m->runner->pos = src + 2 * N;
    m->runner->pending = 1;
}

/* The staged scalars' first `bytes` into m->sc: offsetof(grad_sumsq) at a step's start (the inputs,
 * and zeros for the loss sums), offsetof(clip_scale) for the inputs alone. */
void upload_scalars(fl_model *m, size_t bytes) {
    m->be->upload(m->sc, staged_scalars(m), bytes);
    m->runner->pending = 1;
}

/* The step's scalars to the host: waits for everything queued, the uploads too. */
void read_scalars(fl_model *m, fl_step_scalars *out) {
    m->be->download(out, m->sc, sizeof *out);
    m->runner->pending = 0;
}

fl_step_stats stats_of(const fl_step_scalars *sc) {
    fl_step_stats st = {.loss_sum = sc->loss_sum, .n_counted = (size_t)sc->n_counted};
    st.loss = st.n_counted ? st.loss_sum / (double)st.n_counted : 0.0;
    return st;
}

/* One batch for the forward passes outside a step (fl_model_forward, eval, logits): slot 0, the loss
 * sums zeroed, grad_scale set. */
void load_batch(fl_model *m, const fl_batch *batch, float grad_scale) {
    ensure_activations(m, batch->B, batch->T);
    ensure_staging(m, 1, (size_t)batch->B * batch->T);
    staged_scalars(m)->grad_scale = grad_scale;
    stage_batch(m, 0, batch, m->micro_step);
    upload_scalars(m, offsetof(fl_step_scalars, grad_sumsq));
    upload_slot(m, 0);
}

size_t counted_tokens(const fl_batch *b) {
    size_t N = (size_t)b->B * b->T, n = 0;
    for (size_t t = 0; t < N; t++) n += b->targets[t] >= 0;
    return n;
}
