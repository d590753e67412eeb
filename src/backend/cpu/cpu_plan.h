/* cpu_plan.h — the CPU backend's sizing arithmetic that the memory planner (plan/plan.c) must
 * agree with: the LM head's chunk of f32 logits (cpu_loss.c). Plain arithmetic, no allocation. */
#ifndef FL_CPU_PLAN_H
#define FL_CPU_PLAN_H

#include <stddef.h>

/* Most bytes of one chunk of f32 logits (the only (rows, V) buffer of the LM head). */
#define FL_CPU_LM_HEAD_BUDGET ((size_t)128 << 20)
/* Rows per LM-head chunk for N tokens and vocabulary V: N split into the fewest equal chunks
 * whose logits fit the budget — but chunks of up to 64 rows however large V is (GEMMs of fewer
 * rows spend their time packing the (V, C) weight). */
size_t fl_cpu_lm_head_chunk_rows(size_t N, int V);

#endif
