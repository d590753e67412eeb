/* cpu_matmul_nf4.c — the NF4-weight matmuls of the two CPU backends (backend.h): the reference
 * `cpu` multiplies f32 tiles of the dequantized weight by sgemm, `cpu-bf16` bf16 tiles by the bf16
 * GEMM (backend/cpu/gemm_nf4.h does the tiling and the dequantization). The bias, when given, is
 * written first so the GEMM accumulates onto it, as in cpu_matmul.c. */
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/gemm_nf4.h"

void matmul_nf4_forward_cpu(void *out, const void *inp, const fl_nf4_weight *w, const void *bias, float alpha,
                            float beta, size_t N, int ld_out, int ld_inp) {
    if (bias) {
        cpu_prefill_bias(out, bias, beta, N, (int)w->rows, ld_out);
        beta = 1.0f;
    }
    fl_gemm_nf4_f32_nt((int)N, alpha, inp, ld_inp, w, beta, out, ld_out);
}

void matmul_nf4_backward_input_cpu(void *dinp, const void *dout, const fl_nf4_weight *w, float alpha, float beta,
                                   size_t N, int ld_dinp, int ld_dout) {
    fl_gemm_nf4_f32_nn((int)N, alpha, dout, ld_dout, w, beta, dinp, ld_dinp);
}

void matmul_nf4_forward_cpu_bf16(void *out, const void *inp, const fl_nf4_weight *w, const void *bias, float alpha,
                                 float beta, size_t N, int ld_out, int ld_inp) {
    if (bias) {
        cpu_prefill_bias(out, bias, beta, N, (int)w->rows, ld_out);
        beta = 1.0f;
    }
    fl_gemm_nf4_nt((int)N, alpha, inp, ld_inp, w, beta, out, ld_out);
}

void matmul_nf4_backward_input_cpu_bf16(void *dinp, const void *dout, const fl_nf4_weight *w, float alpha, float beta,
                                        size_t N, int ld_dinp, int ld_dout) {
    fl_gemm_nf4_nn((int)N, alpha, dout, ld_dout, w, beta, dinp, ld_dinp);
}
