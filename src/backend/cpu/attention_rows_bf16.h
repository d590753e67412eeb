/* attention_rows_bf16.h — the bf16 attention's row steps fused with the packing of their results
 * into the tile products' operands (cpu_attention_bf16.c), on CPUs with AVX512_BF16. Each is the
 * same arithmetic as cpu_attention_rows.h's scalar step followed by tile_gemm_bf16.h's packings,
 * bit for bit (the exp is fl_expf's steps in vectors), without the f32 round trip between the two.
 * The caller checks att_rows_bf16_fused() first: below AVX512_BF16 these do nothing. Not the
 * scalar steps (cpu_attention_rows.h) and not the soft-capped rows, which stay scalar. */
#ifndef FL_ATTENTION_ROWS_BF16_H
#define FL_ATTENTION_ROWS_BF16_H

#include <stdint.h>

/* Whether the fused steps below run on this CPU's kernel level (cpu_isa.h). */
int att_rows_bf16_fused(void);

/* The backward's step for `pair` (1 or 2) query rows of a tile of nq keys, as att_backward_row
 * on each row and then the three packings of cpu_attention_bf16.c. p_raw and dp_raw hold the rows'
 * raw scores q·k and dp = dO·v (row stride ld, read only inside [j0[i], j1[i])); L and Dr are the
 * rows' lse and D. Written: P and dS as one word row of the panels along the queries (p_panel,
 * ds_panel: panel c at c·tile_panel, ceil(nq / 16) panels, the second row's half zero when pair is
 * 1) and dS as rows of kw_nq = ceil(nq / 2) words (ds_rows, row i at i·kw_nq). */
void att_backward_pair_bf16(const float *p_raw, const float *dp_raw, int64_t ld, int pair, int nq, const int *j0,
                            const int *j1, const float *L, const float *Dr, float scale, uint32_t *p_panel,
                            uint32_t *ds_panel, int64_t tile_panel, uint32_t *ds_rows, int64_t kw_nq);

/* The forward's step for one query row over a tile of nk raw scores s (unscaled; [j0, j1) seen),
 * as att_forward_row followed by tg16_pack_rows of the probabilities into words (ceil(nk / 2) of
 * them, 0 outside the range): the same probabilities, running max and correction, returned as
 * there; the running sum adds this tile's probabilities in another order (16 lanes, then a tree),
 * within nk·2⁻²⁴ of it relative. s is not written. */
float att_forward_row_bf16(const float *s, int nk, int j0, int j1, float scale, float *run_max, float *run_sum,
                           uint32_t *words);

#endif
