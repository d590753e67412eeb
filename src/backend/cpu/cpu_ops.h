/* cpu_ops.h — the CPU reference ops, one declaration per backend.h entry (see there for the
 * contracts). Grouped by file: cpu_memory.c, cpu_matmul.c, cpu_norm.c, cpu_rope.c,
 * cpu_attention.c, cpu_elementwise.c, cpu_loss.c, cpu_optim.c. */
#ifndef FL_CPU_OPS_H
#define FL_CPU_OPS_H

#include <stddef.h>
#include <stdint.h>

void *cpu_alloc(size_t bytes);
void cpu_free(void *ptr);
void cpu_copy(void *dst, const void *src, size_t bytes);
void cpu_zero(void *ptr, size_t bytes);
void cpu_synchronize(void);

void embedding_forward_cpu(float *out, const int32_t *ids, const float *table, size_t N, int C);
void rmsnorm_forward_cpu(float *out, float *rstd, const float *inp, const float *weight, float eps, size_t N, int C);
void rmsnorm_backward_cpu(float *dinp, const float *dout, const float *inp, const float *weight, const float *rstd,
                          size_t N, int C);
void matmul_forward_cpu(float *out, const float *inp, const float *weight, const float *bias, float alpha, float beta,
                        size_t N, int IC, int OC);
void matmul_backward_input_cpu(float *dinp, const float *dout, const float *weight, float alpha, float beta, size_t N,
                               int IC, int OC);
void matmul_backward_weight_cpu(float *dweight, const float *dout, const float *inp, float alpha, size_t N, int IC,
                                int OC);
void rope_forward_cpu(float *x, const int32_t *pos, const float *inv_freq, size_t N, int n_heads, int HS);
void rope_backward_cpu(float *dx, const int32_t *pos, const float *inv_freq, size_t N, int n_heads, int HS);
void attention_forward_cpu(float *out, float *lse, const float *q, const float *k, const float *v,
                           const int32_t *seg_start, int B, int T, int NH, int NKV, int HS);
void attention_backward_cpu(float *dq, float *dk, float *dv, const float *dout, const float *out, const float *lse,
                            const float *q, const float *k, const float *v, const int32_t *seg_start, int B, int T,
                            int NH, int NKV, int HS);
void swiglu_forward_cpu(float *out, const float *gate, const float *up, size_t N);
void swiglu_backward_cpu(float *dgate, float *dup, const float *dout, const float *gate, const float *up, size_t N);
void dropout_cpu(float *out, const float *inp, float p, uint64_t stream, size_t N);
void add_inplace_cpu(float *acc, const float *x, size_t N);
double lm_head_loss_cpu(float *dinp, float *logits_out, const float *inp, const int32_t *targets, const float *weight,
                        float grad_scale, size_t N, int C, int V, size_t *n_counted);
void adamw_update_cpu(float *params, float *m, float *v, const float *grads, float lr, float beta1, float beta2,
                      float eps, float weight_decay, float grad_scale, int step, size_t n);
double sum_squares_cpu(const float *x, size_t n);

#endif
