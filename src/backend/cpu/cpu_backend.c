/* cpu_backend.c — the CPU reference backend: binds the ops of backend/cpu/ into the interface. */
#include "backend/backend.h"
#include "backend/cpu/cpu_ops.h"

static const fl_backend cpu_backend = {
    .name = "cpu",
    .act_size = sizeof(float),
    .weight_size = sizeof(float),
    .alloc = cpu_alloc,
    .free = cpu_free,
    .upload = cpu_copy,
    .download = cpu_copy,
    .copy = cpu_copy,
    .zero = cpu_zero,
    .synchronize = cpu_synchronize,
    .upload_act = cpu_upload_act,
    .upload_weight = cpu_upload_act,
    .download_act = cpu_download_act,
    .cast_to_weight = cpu_cast_to_weight,
    .embedding_forward = embedding_forward_cpu,
    .rmsnorm_forward = rmsnorm_forward_cpu,
    .rmsnorm_backward = rmsnorm_backward_cpu,
    .matmul_forward = matmul_forward_cpu,
    .matmul_backward_input = matmul_backward_input_cpu,
    .matmul_backward_weight = matmul_backward_weight_cpu,
    .rope_forward = rope_forward_cpu,
    .rope_backward = rope_backward_cpu,
    .attention_forward = attention_forward_cpu,
    .attention_backward = attention_backward_cpu,
    .swiglu_forward = swiglu_forward_cpu,
    .swiglu_backward = swiglu_backward_cpu,
    .dropout = dropout_cpu,
    .add_inplace = add_inplace_cpu,
    .lm_head_loss = lm_head_loss_cpu,
    .adamw_update = adamw_update_cpu,
    .sum_squares = sum_squares_cpu,
};

const fl_backend *fl_backend_cpu(void) { return &cpu_backend; }
