/* batch.h — from documents to (B, T) batches: long documents split (or truncated), a seeded
 * shuffle, packing of several documents into one row with RoPE positions and attention reset at
 * every document boundary, and the fl_batch arrays the engine reads.
 *
 * A document of n tokens trains n-1 positions (input token i, target token i+1), so a piece of at
 * most T+1 tokens fills at most T positions of a row. Long documents (n > T+1):
 *   split (default)  pieces [0, T+1), [T, 2T+1), ... — consecutive pieces share one token so every
 *                    target is trained once; each piece starts a fresh context (position 0)
 *   truncate         only [0, T+1); the rest is dropped
 * Packing (default on): pieces are laid into rows in order; a piece that does not fit in what is
 * left of the row starts the next row. In a row, positions restart at 0 for each piece and query t
 * sees keys seg_start[t] .. t, seg_start = where its piece starts, so documents never see each
 * other (same loss and gradients as running them one by one; tests/test_train.c checks it).
 * Unused tail positions are padding: id 0, target -100, attending only to themselves.
 * Not the data loading (train/data.h), not the loop (train/trainer.h).
 */
#ifndef FL_TRAIN_BATCH_H
#define FL_TRAIN_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "train/data.h"

typedef struct {
    uint32_t doc;   /* index into the dataset */
    int start, n;   /* tokens [start, start + n) of that document, n >= 2 */
} fl_piece;

typedef struct {
    fl_piece *pieces;    /* (n_pieces) in row order */
    size_t n_pieces;
    size_t *row_start;   /* (n_rows + 1) first piece of each row */
    size_t n_rows;
    int T;
} fl_rows;

typedef struct {
    int T;          /* positions per row (--seq) */
    int packing;    /* several pieces per row */
    int truncate;   /* 1: truncate long documents, 0: split them */
    int shuffle;    /* shuffle the pieces with (seed, epoch) */
    uint64_t seed;
} fl_pack_options;

/* Rows for one epoch over the documents `docs` (n indices into ds). */
void fl_rows_build(fl_rows *rows, const fl_dataset *ds, const uint32_t *docs, size_t n, const fl_pack_options *opt,
                   uint64_t epoch);
void fl_rows_free(fl_rows *rows);

/* Fills row r into ids/targets/pos/seg_start (each T entries). Returns the number of targets != -100. */
int fl_rows_fill(const fl_rows *rows, const fl_dataset *ds, size_t r, int32_t *ids, int32_t *targets, int32_t *pos,
                 int32_t *seg_start);

/* Deterministic permutation of 0..n-1 (Fisher-Yates over fl_hash64(seed, stream, i)). */
void fl_shuffle_u32(uint32_t *x, size_t n, uint64_t seed, uint64_t stream);

/* Splits documents 0..n_docs-1 into train and eval index lists: a seeded shuffle, then the first
 * round(frac * n) (at least 1 when frac > 0, and at least 1 left to train) go to eval. Both lists
 * are returned in ascending document order. */
void fl_split_eval(size_t n_docs, double frac, uint64_t seed, uint32_t **train, size_t *n_train, uint32_t **eval,
                   size_t *n_eval);

#endif
