/* cpu_scratch.h — the CPU backend's scratch arena: named buffers that ops keep between calls, as
 * the CUDA backend's fl_cuda_scratch (cuda_context.cu) does on the device. Not activations or
 * anything the engine sees; not per-call temporaries (cpu_alloc_scratch, freed by the op).
 *
 * A slot grows to the largest size asked for and is kept for the life of the process (its peak is
 * what `fastlora plan` models: cpu_plan.h). Like the static buffers it replaces, the arena is one
 * per process: ops that use a slot must not run at the same time from two host threads — one
 * step's ops run one at a time, each parallel inside. */
#ifndef FL_CPU_SCRATCH_H
#define FL_CPU_SCRATCH_H

#include <stddef.h>

typedef enum {
    FL_CPU_SCRATCH_LM_LOGITS = 0,  /* f32 logits of one LM-head chunk (cpu_loss.c) */
    FL_CPU_SCRATCH_LM_ROW_LOSS,    /* f64 loss of each row of that chunk (cpu_loss.c) */
    FL_CPU_SCRATCH_ATTN_PARTIALS,  /* attention backward's per-head dK/dV partials (cpu_attention.c) */
    FL_CPU_SCRATCH_COUNT
} fl_cpu_scratch_slot;

/* At least `bytes` of the slot's buffer (contents undefined; a grown buffer is a new one). */
void *fl_cpu_scratch(fl_cpu_scratch_slot slot, size_t bytes);

#endif
