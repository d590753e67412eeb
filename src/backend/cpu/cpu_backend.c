/* cpu_backend.c — the two CPU backends, binding the ops of backend/cpu/ into the interface:
 *   "cpu"       the reference: f32 weights and activations, f32 GEMMs (cpu_sgemm: OpenBLAS's
 *               sgemm, or oneDNN's f32 matmul where it measured faster) — the readable spec that
 *               the Hugging Face fixtures and finite-difference tests check;
 *   "cpu-bf16"  the fast one: frozen matrices and the LoRA compute copy in bf16, activations and
 *               all accumulation in f32, GEMMs on AVX512-BF16 (gemm_bf16.h) — the numerics of a
 *               bf16 GPU run (and of transformers with bf16 weights), at 2-4x the sgemm rate;
 *               its attention's tile products on bf16 operands where AVX512_BF16 runs them
 *               (cpu_attention_bf16.c).
 * Every op not listed separately is shared. */
#include "backend/backend.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/cpu_decode.h"
#include "backend/cpu/cpu_device.h"

#define CPU_SHARED_OPS                                   \
    .act_size = sizeof(float),                           \
    .alloc = cpu_alloc,                                  \
    .free = cpu_free,                                    \
    .upload = cpu_copy,                                  \
    .download = cpu_copy,                                \
    .copy = cpu_copy,                                    \
    .copy_2d = cpu_copy_2d,                              \
    .zero = cpu_zero,                                    \
    .synchronize = cpu_synchronize,                      \
    .upload_act = cpu_upload_act,                        \
    .download_act = cpu_download_act,                    \
    .rmsnorm_forward = rmsnorm_forward_cpu,              \
    .rmsnorm_backward = rmsnorm_backward_cpu,            \
    .rmsnorm_offset_forward = rmsnorm_offset_forward_cpu, \
    .rmsnorm_offset_backward = rmsnorm_offset_backward_cpu, \
    .geglu_forward = geglu_forward_cpu,                  \
    .geglu_backward = geglu_backward_cpu,                \
    .scale_2d = scale_2d_cpu,                            \
    .matmul_backward_weight = matmul_backward_weight_cpu, \
    .rope_forward = rope_forward_cpu,                    \
    .rope_backward = rope_backward_cpu,                  \
    .swiglu_forward = swiglu_forward_cpu,                \
    .swiglu_backward = swiglu_backward_cpu,              \
    .dropout = dropout_cpu,                              \
    .add_inplace = add_inplace_cpu,                      \
    .scale_rows = scale_rows_cpu,                        \
    .sum_squares = sum_squares_cpu,                      \
    .grad_clip_scale = grad_clip_scale_cpu,              \
    .attention_decode = attention_decode_cpu,           \
    .read_counters = fl_cpu_read_counters

static const fl_backend cpu_backend = {
    CPU_SHARED_OPS,
    .name = "cpu",
    .weight_size = sizeof(float),
    .describe = fl_cpu_describe_f32,
    .upload_weight = cpu_upload_act,
    .cast_to_weight = cpu_cast_to_weight,
    .cast_to_weight_2d = cpu_cast_to_weight_2d,
    .embedding_forward = embedding_forward_cpu,
    .attention_forward = attention_forward_cpu,
    .attention_backward = attention_backward_cpu,
    .matmul_forward = matmul_forward_cpu,
    .matmul_backward_input = matmul_backward_input_cpu,
    .matmul_nf4_forward = matmul_nf4_forward_cpu,
    .matmul_nf4_backward_input = matmul_nf4_backward_input_cpu,
    .lm_head_loss = lm_head_loss_cpu,
    .lm_head_loss_softcap = lm_head_loss_softcap_cpu,
    .adamw_update = adamw_update_cpu,
};

static const fl_backend cpu_bf16_backend = {
    CPU_SHARED_OPS,
    .name = "cpu-bf16",
    .weight_size = sizeof(uint16_t),
    .describe = fl_cpu_describe_bf16,
    .upload_weight = cpu_upload_weight_bf16,
    .cast_to_weight = cpu_cast_to_weight_bf16,
    .cast_to_weight_2d = cpu_cast_to_weight_2d_bf16,
    .embedding_forward = embedding_forward_cpu_bf16,
    .attention_forward = attention_forward_cpu_bf16,
    .attention_backward = attention_backward_cpu_bf16,
    .matmul_forward = matmul_forward_cpu_bf16,
    .matmul_backward_input = matmul_backward_input_cpu_bf16,
    .matmul_nf4_forward = matmul_nf4_forward_cpu_bf16,
    .matmul_nf4_backward_input = matmul_nf4_backward_input_cpu_bf16,
    .lm_head_loss = lm_head_loss_cpu_bf16,
    .lm_head_loss_softcap = lm_head_loss_softcap_cpu_bf16,
    .adamw_update = adamw_update_cpu_bf16,
};

const fl_backend *fl_backend_cpu(void) { return &cpu_backend; }
const fl_backend *fl_backend_cpu_bf16(void) { return &cpu_bf16_backend; }
