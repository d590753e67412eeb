/* cuda_backend.cu — binds the CUDA ops into the fl_backend interface (backend.h), as
 * cpu_backend.c does for the CPU: each <op>_cuda casts the act buffers to bf16 and enqueues the
 * launcher on the context stream. No entry returns a host value: the loss, Σg² and the clip factor
 * stay in the step's scalars on the device until the engine downloads them, so a training step has
 * no host-device synchronization inside it and can be recorded as one CUDA graph (cuda_graph.cu). */
#include <stdio.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/cuda_info.h"
#include "backend/cuda/cuda_memory.h"
#include "backend/cuda/cuda_nf4.h"

static void embedding_forward_cuda(void *out, const int32_t *ids, const void *table, size_t N, int C) {
    embedding_forward((bf16 *)out, ids, (const bf16 *)table, N, C, fl_cuda.stream);
}
static void rmsnorm_forward_cuda(void *out, float *rstd, const void *inp, const void *weight, float eps, size_t N, int C,
                                 int ld_out) {
    rmsnorm_forward((bf16 *)out, rstd, (const bf16 *)inp, (const bf16 *)weight, eps, N, C, ld_out, fl_cuda.stream);
}
static void rmsnorm_backward_cuda(void *dinp, const void *dout, const void *inp, const void *weight, const float *rstd,
                                  size_t N, int C, int ld_dout) {
    rmsnorm_backward((bf16 *)dinp, (const bf16 *)dout, (const bf16 *)inp, (const bf16 *)weight, rstd, N, C, ld_dout,
                     fl_cuda.stream);
}
static void matmul_forward_cuda(void *out, const void *inp, const void *weight, const void *bias, float alpha, float beta,
                                size_t N, int IC, int OC, int ld_out, int ld_inp, int ld_w) {
    matmul_forward((bf16 *)out, (const bf16 *)inp, (const bf16 *)weight, (const bf16 *)bias, alpha, beta, N, IC, OC, ld_out,
                   ld_inp, ld_w, fl_cuda.stream);
}
static void matmul_backward_input_cuda(void *dinp, const void *dout, const void *weight, float alpha, float beta, size_t N,
                                       int IC, int OC, int ld_dinp, int ld_dout, int ld_w) {
    matmul_backward_input((bf16 *)dinp, (const bf16 *)dout, (const bf16 *)weight, alpha, beta, N, IC, OC, ld_dinp, ld_dout,
                          ld_w, fl_cuda.stream);
}
static void matmul_backward_weight_cuda(float *dweight, const void *dout, const void *inp, float alpha, size_t N, int IC,
                                        int OC, int ld_dout, int ld_inp) {
    matmul_backward_weight(dweight, (const bf16 *)dout, (const bf16 *)inp, alpha, N, IC, OC, ld_dout, ld_inp,
                           fl_cuda.stream);
}
static void rope_forward_cuda(void *x, const int32_t *pos, const float *inv_freq, float scale, size_t N, int n_heads,
                              int HS, int RD, int ld) {
    rope_forward((bf16 *)x, pos, inv_freq, scale, N, n_heads, HS, RD, ld, fl_cuda.stream);
}
static void rope_backward_cuda(void *dx, const int32_t *pos, const float *inv_freq, float scale, size_t N, int n_heads,
                               int HS, int RD, int ld) {
    rope_backward((bf16 *)dx, pos, inv_freq, scale, N, n_heads, HS, RD, ld, fl_cuda.stream);
}
static void attention_forward_cuda(void *out, float *lse, const void *q, const void *k, const void *v,
                                   const int32_t *seg_start, int B, int T, int NH, int NKV, int HS, int ld_qkv,
                                   float softcap) {
    attention_forward((bf16 *)out, lse, (const bf16 *)q, (const bf16 *)k, (const bf16 *)v, seg_start, B, T, NH, NKV, HS,
                      ld_qkv, softcap, fl_cuda.stream);
}
static void attention_backward_cuda(void *dq, void *dk, void *dv, const void *dout, const void *out, const float *lse,
                                    const void *q, const void *k, const void *v, const int32_t *seg_start, int B, int T,
                                    int NH, int NKV, int HS, int ld_qkv, float softcap) {
    attention_backward((bf16 *)dq, (bf16 *)dk, (bf16 *)dv, (const bf16 *)dout, (const bf16 *)out, lse, (const bf16 *)q,
                       (const bf16 *)k, (const bf16 *)v, seg_start, B, T, NH, NKV, HS, ld_qkv, softcap, fl_cuda.stream);
}
static void rmsnorm_offset_forward_cuda(void *out, float *rstd, const void *inp, const void *weight, float w_offset,
                                        float eps, size_t N, int C, int ld_out) {
    rmsnorm_offset_forward((bf16 *)out, rstd, (const bf16 *)inp, (const bf16 *)weight, w_offset, eps, N, C, ld_out,
                           fl_cuda.stream);
}
static void rmsnorm_offset_backward_cuda(void *dinp, const void *dout, const void *inp, const void *weight,
                                         float w_offset, const float *rstd, size_t N, int C, int ld_dout) {
    rmsnorm_offset_backward((bf16 *)dinp, (const bf16 *)dout, (const bf16 *)inp, (const bf16 *)weight, w_offset, rstd, N,
                            C, ld_dout, fl_cuda.stream);
}
static void geglu_forward_cuda(void *out, const void *gate_up, size_t N, int FF) {
    geglu_forward((bf16 *)out, (const bf16 *)gate_up, N, FF, fl_cuda.stream);
}
static void geglu_backward_cuda(void *dgate_up, const void *dout, const void *gate_up, size_t N, int FF) {
    geglu_backward((bf16 *)dgate_up, (const bf16 *)dout, (const bf16 *)gate_up, N, FF, fl_cuda.stream);
}
static void scale_2d_cuda(void *x, float alpha, size_t rows, int cols, int ld) {
    scale_2d((bf16 *)x, alpha, rows, cols, ld, fl_cuda.stream);
}
static void swiglu_forward_cuda(void *out, const void *gate_up, size_t N, int FF) {
    swiglu_forward((bf16 *)out, (const bf16 *)gate_up, N, FF, fl_cuda.stream);
}
static void swiglu_backward_cuda(void *dgate_up, const void *dout, const void *gate_up, size_t N, int FF) {
    swiglu_backward((bf16 *)dgate_up, (const bf16 *)dout, (const bf16 *)gate_up, N, FF, fl_cuda.stream);
}
static void dropout_cuda(void *out, const void *inp, float p, const uint64_t *stream, size_t rows, int cols,
                         int ld_inp) {
    dropout((bf16 *)out, (const bf16 *)inp, p, stream, rows, cols, ld_inp, fl_cuda.stream);
}
static void add_inplace_cuda(void *acc, const void *x, size_t rows, int cols, int ld_acc) {
    add_inplace((bf16 *)acc, (const bf16 *)x, rows, cols, ld_acc, fl_cuda.stream);
}

static void scale_rows_cuda(void *x, const float *w, size_t rows, int cols) {
    scale_rows((bf16 *)x, w, rows, cols, fl_cuda.stream);
}
static void lm_head_loss_cuda(void *dinp, float *logits_out, float *token_loss, fl_step_scalars *sc, const void *inp,
                              const int32_t *targets, const void *weight, size_t N, int C, int V) {
    lm_head_loss((bf16 *)dinp, logits_out, token_loss, sc, (const bf16 *)inp, targets, (const bf16 *)weight, N, C, V,
                 fl_cuda.stream);
}
static void lm_head_loss_softcap_cuda(void *dinp, float *logits_out, float *token_loss, fl_step_scalars *sc,
                                      const void *inp, const int32_t *targets, const void *weight, float softcap,
                                      size_t N, int C, int V) {
    lm_head_loss_softcap((bf16 *)dinp, logits_out, token_loss, sc, (const bf16 *)inp, targets, (const bf16 *)weight,
                         softcap, N, C, V, fl_cuda.stream);
}

static void adamw_update_cuda(float *params, void *params_w, float *m, float *v, const float *grads,
                              const fl_step_scalars *sc, float beta1, float beta2, float eps, float weight_decay,
                              size_t n) {
    adamw_update(params, (bf16 *)params_w, m, v, grads, sc, beta1, beta2, eps, weight_decay, n, fl_cuda.stream);
}

static void sum_squares_cuda(double *out, const float *x, size_t n) { sum_squares(out, x, n, fl_cuda.stream); }

static void grad_clip_scale_cuda(fl_step_scalars *sc, float max_norm) { grad_clip_scale(sc, max_norm, fl_cuda.stream); }

/* The card as the driver reports it (cuda_info.h); its peak is a catalog figure the caller looks up. */
static void describe_cuda(fl_device_info *info, int measure_peak) {
    (void)measure_peak;
    memset(info, 0, sizeof *info);
    snprintf(info->name, sizeof info->name, "%s", fl_cuda_device_name());
    info->compute_capability = fl_cuda_compute_capability();
    fl_cuda_mem_info(&info->mem_free, &info->mem_total);
}

static void read_counters_cuda(fl_device_counters *out, int reset_peak) {
    out->peak_bytes = fl_cuda_peak_bytes();
    out->ops = fl_cuda_ops_enqueued();
    if (reset_peak) fl_cuda_reset_peak();
}

static const fl_backend cuda_backend = {
    .name = "cuda",
    .act_size = 2,
    .weight_size = 2,
    .alloc = cuda_alloc,
    .free = cuda_free,
    .upload = cuda_upload,
    .download = cuda_download,
    .copy = cuda_copy,
    .copy_2d = cuda_copy_2d,
    .zero = cuda_zero,
    .synchronize = cuda_synchronize,
    .upload_act = cuda_upload_act,
    .upload_weight = cuda_upload_act, /* weights and activations are both bf16 here */
    .download_act = cuda_download_act,
    .cast_to_weight = cuda_cast_to_weight,
    .cast_to_weight_2d = cuda_cast_to_weight_2d,
    .embedding_forward = embedding_forward_cuda,
    .rmsnorm_forward = rmsnorm_forward_cuda,
    .rmsnorm_backward = rmsnorm_backward_cuda,
    .rmsnorm_offset_forward = rmsnorm_offset_forward_cuda,
    .rmsnorm_offset_backward = rmsnorm_offset_backward_cuda,
    .matmul_forward = matmul_forward_cuda,
    .matmul_backward_input = matmul_backward_input_cuda,
    .matmul_nf4_forward = fl_nf4_cuda_matmul_forward,
    .matmul_nf4_backward_input = fl_nf4_cuda_matmul_backward_input,
    .matmul_backward_weight = matmul_backward_weight_cuda,
    .rope_forward = rope_forward_cuda,
    .rope_backward = rope_backward_cuda,
    .attention_forward = attention_forward_cuda,
    .attention_backward = attention_backward_cuda,
    .swiglu_forward = swiglu_forward_cuda,
    .swiglu_backward = swiglu_backward_cuda,
    .geglu_forward = geglu_forward_cuda,
    .geglu_backward = geglu_backward_cuda,
    .scale_2d = scale_2d_cuda,
    .dropout = dropout_cuda,
    .add_inplace = add_inplace_cuda,
    .scale_rows = scale_rows_cuda,
    .lm_head_loss = lm_head_loss_cuda,
    .lm_head_loss_softcap = lm_head_loss_softcap_cuda,
    .sum_squares = sum_squares_cuda,
    .grad_clip_scale = grad_clip_scale_cuda,
    .adamw_update = adamw_update_cuda,
    .alloc_host = cuda_alloc_host,
    .free_host = cuda_free_host,
    .capture_begin = cuda_capture_begin,
    .capture_end = cuda_capture_end,
    .capture_replay = cuda_capture_replay,
    .capture_free = cuda_capture_free,
    .attention_decode = NULL, /* KV-cache decoding has no CUDA kernel yet: generate runs on the CPU */
    .describe = describe_cuda,
    .read_counters = read_counters_cuda,
};

extern "C" const fl_backend *fl_backend_cuda(void) {
    static int state; /* 0 untried, 1 ready, -1 unusable */
    if (state == 0) state = fl_cuda_init() == 0 ? 1 : -1;
    return state > 0 ? &cuda_backend : NULL;
}
