/* cpu_embedding.c — the token embedding lookup: out (N, C) = table[ids] (V, C), f32 or bf16 rows
 * widened to f32. Forward only: the table is frozen, so there is no backward. Not the LM head
 * (cpu_loss.c), which may share the table. */
#include "backend/cpu/cpu_ops.h"
#include "common/dtype.h"

void embedding_forward_cpu(void *out_, const int32_t *ids, const void *table_, size_t N, int C) {
    float *out = out_;
    const float *table = table_;
    #pragma omp parallel for schedule(static)
    for (size_t n = 0; n < N; n++)
        for (int c = 0; c < C; c++) out[n * C + c] = table[(size_t)ids[n] * C + c];
}

void embedding_forward_cpu_bf16(void *out_, const int32_t *ids, const void *table_, size_t N, int C) {
    float *out = out_;
    const uint16_t *table = table_;
    #pragma omp parallel for schedule(static)
    for (size_t n = 0; n < N; n++)
        for (int c = 0; c < C; c++) out[n * C + c] = fl_bf16_to_f32(table[(size_t)ids[n] * C + c]);
}
