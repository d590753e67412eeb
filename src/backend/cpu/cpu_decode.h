/* cpu_decode.h — the CPU inference ops (backend.h, "inference" section), in cpu_decode.c. */
#ifndef FL_CPU_DECODE_H
#define FL_CPU_DECODE_H

void attention_decode_cpu(void *out, const void *q, const void *k_cache, const void *v_cache, int start, int Tn,
                          int window, int NH, int NKV, int HS, int ld_q, float softcap);

#endif
