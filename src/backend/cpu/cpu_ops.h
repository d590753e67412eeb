/* cpu_ops.h — the CPU reference ops, one declaration per backend.h entry (see there for the
 * contracts). Grouped by file: cpu_memory.c, cpu_embedding.c, cpu_matmul.c, cpu_norm.c, cpu_rope.c,
 * cpu_attention.c, cpu_attention_bf16.c, cpu_elementwise.c, cpu_loss.c, cpu_optim.c. On the CPU every act buffer
 * (backend.h) is f32, so each op casts its void pointers to float. */
#ifndef FL_CPU_OPS_H
#define FL_CPU_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "quant/nf4.h"

void *cpu_alloc(size_t bytes);
/* 64-byte aligned like cpu_alloc but not zeroed: kernel scratch that is written before it is read.
 * Freed with cpu_free. */
void *cpu_alloc_scratch(size_t bytes);
void cpu_free(void *ptr);
void cpu_copy(void *dst, const void *src, size_t bytes);
void cpu_copy_2d(void *dst, size_t ld_dst, const void *src, size_t ld_src, size_t width, size_t rows);
void cpu_zero(void *ptr, size_t bytes);
void cpu_synchronize(void);

void cpu_upload_act(void *dst, const float *host_src, size_t n);
void cpu_download_act(float *host_dst, const void *src, size_t n);
void cpu_cast_to_weight(void *dst, const float *src, size_t n);
void cpu_cast_to_weight_2d(const fl_cast_block *blocks, int n, float scale, int cols);

void embedding_forward_cpu(void *out, const int32_t *ids, const void *table, size_t N, int C);
void rmsnorm_forward_cpu(void *out, float *rstd, const void *inp, const void *weight, float eps, size_t N, int C,
                         int ld_out);
void rmsnorm_backward_cpu(void *dinp, const void *dout, const void *inp, const void *weight, const float *rstd,
                          size_t N, int C, int ld_dout);
void matmul_forward_cpu(void *out, const void *inp, const void *weight, const void *bias, float alpha, float beta,
                        size_t N, int IC, int OC, int ld_out, int ld_inp, int ld_w);
void matmul_backward_input_cpu(void *dinp, const void *dout, const void *weight, float alpha, float beta, size_t N,
                               int IC, int OC, int ld_dinp, int ld_dout, int ld_w);
void cpu_prefill_bias(float *out, const float *bias, float beta, size_t N, int OC, int ld);
/* The f32 backend's GEMM, cblas_sgemm's arguments (row-major, A as is, B transposed when trans_b):
 * C (M, N) = alpha · A · op(B) + beta · C on oneDNN's f32 matmul where fl_gemm_f32_takes_onednn
 * (gemm_bf16.h) sends the shape and oneDNN takes it, else on OpenBLAS's sgemm. */
void cpu_sgemm(int trans_b, size_t M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
               float beta, float *C, int ldc);
/* NF4 weights (cpu_matmul_nf4.c): f32 (the reference) and bf16 tiles */
void matmul_nf4_forward_cpu(void *out, const void *inp, const fl_nf4_weight *w, const void *bias, float alpha,
                            float beta, size_t N, int ld_out, int ld_inp);
void matmul_nf4_backward_input_cpu(void *dinp, const void *dout, const fl_nf4_weight *w, float alpha, float beta,
                                   size_t N, int ld_dinp, int ld_dout);
void matmul_nf4_forward_cpu_bf16(void *out, const void *inp, const fl_nf4_weight *w, const void *bias, float alpha,
                                 float beta, size_t N, int ld_out, int ld_inp);
void matmul_nf4_backward_input_cpu_bf16(void *dinp, const void *dout, const fl_nf4_weight *w, float alpha, float beta,
                                        size_t N, int ld_dinp, int ld_dout);
void matmul_backward_weight_cpu(float *dweight, const void *dout, const void *inp, float alpha, size_t N, int IC,
                                int OC, int ld_dout, int ld_inp);
void rope_forward_cpu(void *x, const int32_t *pos, const float *inv_freq, float scale, size_t N, int n_heads, int HS,
                      int RD, int ld);
void rope_backward_cpu(void *dx, const int32_t *pos, const float *inv_freq, float scale, size_t N, int n_heads, int HS,
                       int RD, int ld);
void attention_forward_cpu(void *out, float *lse, const void *q, const void *k, const void *v,
                           const int32_t *seg_start, int B, int T, int NH, int NKV, int HS, int ld_qkv,
                           float softcap);
void attention_backward_cpu(void *dq, void *dk, void *dv, const void *dout, const void *out, const float *lse,
                            const void *q, const void *k, const void *v, const int32_t *seg_start, int B, int T,
                            int NH, int NKV, int HS, int ld_qkv, float softcap);
/* The bf16 backend's attention (cpu_attention_bf16.c): the same arguments and results, every tile
 * product on bf16 operands with f32 sums. The *_bf16_tiles functions run those tiles on any CPU;
 * the *_cpu_bf16 ops run them where AVX512_BF16 does, the f32 attention above elsewhere. */
void attention_forward_bf16_tiles(void *out, float *lse, const void *q, const void *k, const void *v,
                                  const int32_t *seg_start, int B, int T, int NH, int NKV, int HS, int ld_qkv,
                                  float softcap);
void attention_backward_bf16_tiles(void *dq, void *dk, void *dv, const void *dout, const void *out,
                                   const float *lse, const void *q, const void *k, const void *v,
                                   const int32_t *seg_start, int B, int T, int NH, int NKV, int HS, int ld_qkv,
                                   float softcap);
void attention_forward_cpu_bf16(void *out, float *lse, const void *q, const void *k, const void *v,
                                const int32_t *seg_start, int B, int T, int NH, int NKV, int HS, int ld_qkv,
                                float softcap);
void attention_backward_cpu_bf16(void *dq, void *dk, void *dv, const void *dout, const void *out, const float *lse,
                                 const void *q, const void *k, const void *v, const int32_t *seg_start, int B, int T,
                                 int NH, int NKV, int HS, int ld_qkv, float softcap);
void rmsnorm_offset_forward_cpu(void *out, float *rstd, const void *inp, const void *weight, float w_offset,
                                float eps, size_t N, int C, int ld_out);
void rmsnorm_offset_backward_cpu(void *dinp, const void *dout, const void *inp, const void *weight, float w_offset,
                                 const float *rstd, size_t N, int C, int ld_dout);
void geglu_forward_cpu(void *out, const void *gate_up, size_t N, int FF);
void geglu_backward_cpu(void *dgate_up, const void *dout, const void *gate_up, size_t N, int FF);
void scale_2d_cpu(void *x, float alpha, size_t rows, int cols, int ld);
void swiglu_forward_cpu(void *out, const void *gate_up, size_t N, int FF);
void swiglu_backward_cpu(void *dgate_up, const void *dout, const void *gate_up, size_t N, int FF);
void dropout_cpu(void *out, const void *inp, float p, const uint64_t *stream, size_t rows, int cols, int ld_inp);
void add_inplace_cpu(void *acc, const void *x, size_t rows, int cols, int ld_acc);
void scale_rows_cpu(void *x, const float *w, size_t rows, int cols);
void lm_head_loss_softcap_cpu(void *dinp, float *logits_out, float *token_loss, fl_step_scalars *sc, const void *inp,
                              const int32_t *targets, const void *weight, float softcap, size_t N, int C, int V);
void lm_head_loss_softcap_cpu_bf16(void *dinp, float *logits_out, float *token_loss, fl_step_scalars *sc,
                                   const void *inp, const int32_t *targets, const void *weight, float softcap, size_t N,
                                   int C, int V);
void lm_head_loss_cpu(void *dinp, float *logits_out, float *token_loss, fl_step_scalars *sc, const void *inp,
                      const int32_t *targets, const void *weight, size_t N, int C, int V);
void sum_squares_cpu(double *out, const float *x, size_t n);
void grad_clip_scale_cpu(fl_step_scalars *sc, float max_norm);
void adamw_update_cpu(float *params, void *params_w, float *m, float *v, const float *grads, const fl_step_scalars *sc,
                      float beta1, float beta2, float eps, float weight_decay, size_t n);

/* The same ops for the bf16-weight CPU backend (weights bf16, activations f32). */
void cpu_upload_weight_bf16(void *dst, const float *host_src, size_t n);
void cpu_cast_to_weight_bf16(void *dst, const float *src, size_t n);
void cpu_cast_to_weight_2d_bf16(const fl_cast_block *blocks, int n, float scale, int cols);
void embedding_forward_cpu_bf16(void *out, const int32_t *ids, const void *table, size_t N, int C);
void matmul_forward_cpu_bf16(void *out, const void *inp, const void *weight, const void *bias, float alpha,
                             float beta, size_t N, int IC, int OC, int ld_out, int ld_inp, int ld_w);
void matmul_backward_input_cpu_bf16(void *dinp, const void *dout, const void *weight, float alpha, float beta,
                                    size_t N, int IC, int OC, int ld_dinp, int ld_dout, int ld_w);
void lm_head_loss_cpu_bf16(void *dinp, float *logits_out, float *token_loss, fl_step_scalars *sc, const void *inp,
                           const int32_t *targets, const void *weight, size_t N, int C, int V);
void adamw_update_cpu_bf16(float *params, void *params_w, float *m, float *v, const float *grads,
                           const fl_step_scalars *sc, float beta1, float beta2, float eps, float weight_decay,
                           size_t n);

#endif
