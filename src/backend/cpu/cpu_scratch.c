/* cpu_scratch.c — the CPU backend's named scratch buffers (cpu_scratch.h). Not thread-safe: one
 * step's ops at a time, as documented there. */
#include "backend/cpu/cpu_scratch.h"

#include <stdlib.h>

#include "common/error.h"

static struct { void *ptr; size_t bytes; } scratch[FL_CPU_SCRATCH_COUNT];

void *fl_cpu_scratch(fl_cpu_scratch_slot slot, size_t bytes) {
    if (bytes > scratch[slot].bytes) {
        free(scratch[slot].ptr);
        scratch[slot].bytes = bytes;
        scratch[slot].ptr = fl_malloc(bytes);
    }
    return scratch[slot].ptr;
}
