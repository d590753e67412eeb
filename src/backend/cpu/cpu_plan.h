/* cpu_plan.h — the CPU backend's sizing arithmetic that the memory planner (plan/plan.c) must
 * agree with: the LM head's chunk of f32 logits (cpu_loss.c) and the attention backward's per-head
 * dK/dV partials and packed K/V operands (cpu_attention.c). Plain arithmetic, no allocation. */
#ifndef FL_CPU_PLAN_H
#define FL_CPU_PLAN_H

#include <stddef.h>

/* Most bytes of one chunk of f32 logits (the only (rows, V) buffer of the LM head)... */
#define FL_CPU_LM_HEAD_BUDGET ((size_t)128 << 20)
/* ...except that a chunk may take up to FL_CPU_LM_HEAD_ROWS rows while its logits stay within
 * FL_CPU_LM_HEAD_BUDGET_MAX: every chunk packs the (V, C) weight again for both GEMMs and streams it
 * from memory, so a large vocabulary in small chunks runs the head well under the GEMM's rate
 * (docs/CPU-GEMM.md, "LM head chunks": Qwen2.5's 151,936 rows, 3 chunks of 171 rows vs 1 of 512). */
#define FL_CPU_LM_HEAD_ROWS 512
#define FL_CPU_LM_HEAD_BUDGET_MAX ((size_t)512 << 20)
/* Rows per LM-head chunk for N tokens and vocabulary V: N split into the fewest equal chunks of at
 * most max(FL_CPU_LM_HEAD_BUDGET / 4V, min(FL_CPU_LM_HEAD_ROWS, FL_CPU_LM_HEAD_BUDGET_MAX / 4V), 64)
 * rows — 64 however large V is (GEMMs of fewer rows spend their time packing the weight). */
size_t fl_cpu_lm_head_chunk_rows(size_t N, int V);

/* The row stride, in elements, of a buffer whose rows are T long and which a tile GEMM reads or
 * writes many rows of at once: T rounded up to 16, plus 16 when that is a multiple of 256, so that
 * rows do not start a power-of-two distance apart (rows 4 KiB or 8 KiB apart fall into the same
 * L1 sets and the tile products run 10-15% slower: docs/CPU-GEMM.md, "bf16 attention tiles"). */
static inline size_t fl_cpu_attention_row_ld(int T) {
    size_t t16 = ((size_t)T + 15) / 16 * 16;
    return t16 % 256 == 0 ? t16 + 16 : t16;
}

/* The attention backward's dK and dV partials, f32, kept between steps: one (T, HS) pair per
 * (batch row, query head) (cpu_attention.c), or one transposed (HS, T) pair of row stride
 * fl_cpu_attention_row_ld(T) (cpu_attention_bf16.c); the larger of the two. */
static inline size_t fl_cpu_attention_partial_bytes(int B, int T, int NH, int HS) {
    return 2 * (size_t)B * (size_t)NH * fl_cpu_attention_row_ld(T) * (size_t)HS * sizeof(float);
}

/* The attention backward's other scratch (tile_gemm.h), freed when it returns (the forward's is
 * smaller): per (batch row, kv head) Kᵀ and Vᵀ in 16-key panels and K in 16-column panels; per
 * thread the task's Q and dO rows and dQ sums, contiguous (T, HS) each. */
static inline size_t fl_cpu_attention_pack_bytes(int B, int T, int NKV, int HS, int threads) {
    size_t t16 = ((size_t)T + 15) / 16 * 16, hs16 = ((size_t)HS + 15) / 16 * 16;
    size_t shared = (size_t)B * (size_t)NKV * (2 * t16 * (size_t)HS + (size_t)T * hs16);
    /* (the bf16 attention's transposed Q and dO rows are fl_cpu_attention_row_ld(T) / 2 words long) */
    size_t per_thread = (size_t)T * (2 * (size_t)HS + 1) + (size_t)HS * fl_cpu_attention_row_ld(T);
    return (shared + (size_t)threads * per_thread) * sizeof(float);
}

#endif
