/* batch.c — pieces, shuffle, packing and row filling (see batch.h). */
#include "train/batch.h"

#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/rng.h"

void fl_shuffle_u32(uint32_t *x, size_t n, uint64_t seed, uint64_t stream) {
    uint64_t key = fl_rng_stream(seed, 0x5f1e, stream, 0);
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)(fl_hash64(key ^ (uint64_t)i * 0x9e3779b97f4a7c15ull) % i);
        uint32_t t = x[i - 1];
        x[i - 1] = x[j];
        x[j] = t;
    }
}

static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

void fl_split_eval(size_t n_docs, double frac, uint64_t seed, uint32_t **train, size_t *n_train, uint32_t **eval,
                   size_t *n_eval) {
    uint32_t *all = fl_malloc(sizeof(uint32_t) * (n_docs + 1));
    for (size_t i = 0; i < n_docs; i++) all[i] = (uint32_t)i;
    size_t ne = 0;
    if (frac > 0 && n_docs > 1) {
        ne = (size_t)(frac * (double)n_docs + 0.5);
        if (ne < 1) ne = 1;
        if (ne > n_docs - 1) ne = n_docs - 1;
        fl_shuffle_u32(all, n_docs, seed, 0xe7a1);
    }
    *eval = fl_malloc(sizeof(uint32_t) * (ne + 1));
    *train = fl_malloc(sizeof(uint32_t) * (n_docs - ne + 1));
    memcpy(*eval, all, sizeof(uint32_t) * ne);
    memcpy(*train, all + ne, sizeof(uint32_t) * (n_docs - ne));
    qsort(*eval, ne, sizeof(uint32_t), cmp_u32);
    qsort(*train, n_docs - ne, sizeof(uint32_t), cmp_u32);
    *n_eval = ne;
    *n_train = n_docs - ne;
    free(all);
}

void fl_rows_build(fl_rows *rows, const fl_dataset *ds, const uint32_t *docs, size_t n, const fl_pack_options *opt,
                   uint64_t epoch) {
    memset(rows, 0, sizeof *rows);
    int T = opt->T;
    rows->T = T;
    /* pieces in document order */
    size_t cap = n + 16, np = 0;
    fl_piece *pieces = fl_malloc(sizeof *pieces * cap);
    for (size_t i = 0; i < n; i++) {
        const fl_doc *d = &ds->docs[docs[i]];
        for (int start = 0; start + 1 < d->n; start += T) {
            int len = d->n - start < T + 1 ? d->n - start : T + 1;
            int targets = 0;
            for (int k = 1; k < len; k++) targets += d->mask[start + k];
            if (targets) {
                if (np == cap) {
                    cap *= 2;
                    fl_piece *nb = realloc(pieces, sizeof *pieces * cap);
                    if (!nb) fl_die("out of memory building %zu pieces", cap);
                    pieces = nb;
                }
                pieces[np++] = (fl_piece){.doc = docs[i], .start = start, .n = len};
            }
            if (opt->truncate) break;
        }
    }
    if (opt->shuffle && np > 1) {
        uint32_t *order = fl_malloc(sizeof(uint32_t) * np);
        for (size_t i = 0; i < np; i++) order[i] = (uint32_t)i;
        fl_shuffle_u32(order, np, opt->seed, epoch + 1);
        fl_piece *shuffled = fl_malloc(sizeof *pieces * np);
        for (size_t i = 0; i < np; i++) shuffled[i] = pieces[order[i]];
        free(pieces);
        free(order);
        pieces = shuffled;
    }
    /* rows: greedy in order */
    rows->row_start = fl_malloc(sizeof(size_t) * (np + 2));
    size_t nr = 0;
    int fill = T; /* forces a new row for the first piece */
    for (size_t i = 0; i < np; i++) {
        int need = pieces[i].n - 1;
        if (!opt->packing || fill + need > T) {
            rows->row_start[nr++] = i;
            fill = 0;
        }
        fill += need;
    }
    rows->row_start[nr] = np;
    rows->pieces = pieces;
    rows->n_pieces = np;
    rows->n_rows = nr;
}

void fl_rows_free(fl_rows *rows) {
    free(rows->pieces);
    free(rows->row_start);
    memset(rows, 0, sizeof *rows);
}

int fl_rows_fill(const fl_rows *rows, const fl_dataset *ds, size_t r, int32_t *ids, int32_t *targets, int32_t *pos,
                 int32_t *seg_start) {
    int T = rows->T, o = 0, counted = 0;
    for (size_t p = rows->row_start[r]; p < rows->row_start[r + 1]; p++) {
        const fl_piece *pc = &rows->pieces[p];
        const fl_doc *d = &ds->docs[pc->doc];
        for (int i = 0; i + 1 < pc->n; i++) {
            ids[o + i] = d->ids[pc->start + i];
            int tgt = d->mask[pc->start + i + 1] ? d->ids[pc->start + i + 1] : -100;
            targets[o + i] = tgt;
            counted += tgt != -100;
            if (pos) pos[o + i] = i;
            if (seg_start) seg_start[o + i] = o;
        }
        o += pc->n - 1;
    }
    for (int t = o; t < T; t++) {
        ids[t] = 0;
        targets[t] = -100;
        if (pos) pos[t] = 0;
        if (seg_start) seg_start[t] = t;
    }
    return counted;
}
