/* attention.cu — the attention kernels standalone: the mma (tensor-core) forward and backward and
 * the simple forward/backward, each validated against the CPU reference (causal, GQA, packed
 * documents, odd T) on fresh random inputs with poisoned outputs, then timed at the benchmark
 * shapes (4 x 2048, the heads of the board's four models) in causal TFLOP/s: forward
 * 4·B·NH·HS·T²/2, backward 2.5x that (the usual five products; the mma backward computes seven,
 * the split into a dK/dV and a dQ pass recomputes Q·Kᵀ and dO·Vᵀ). q, k, v (and dq, dk, dv) sit
 * side by side in one (N, ld_qkv) buffer, as the engine's fused q/k/v projection stores them.
 *
 * The lines "attn_ms MODEL fwd X bwd Y" are what scripts/device-check puts in its table. */
#include "lab.h"

static void validate(int B, int T, int NH, int NKV, int HS) {
    size_t N = (size_t)B * T, nq = N * NH * HS, nkv = N * NKV * HS;
    int QD = NH * HS, KVD = NKV * HS, ld = QD + 2 * KVD;
    auto q = lab_rand(nq, 1 + T, -2, 2), k = lab_rand(nkv, 2 + T, -2, 2), v = lab_rand(nkv, 3 + T);
    auto dout = lab_rand(nq, 4 + T);
    auto qkv = lab_pack_qkv(q, k, v, N, QD, KVD, ld);
    std::vector<int32_t> seg(N);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) seg[(size_t)b * T + t] = b == 0 ? 0 : (t < T / 3 ? 0 : t < T / 2 ? T / 3 : T / 2);
    std::vector<float> out(nq), lse(N * NH), dqkv(N * ld);
    attention_forward_cpu(out.data(), lse.data(), qkv.data(), qkv.data() + QD, qkv.data() + QD + KVD, seg.data(), B, T, NH,
                          NKV, HS, ld, 0.0f);
    attention_backward_cpu(dqkv.data(), dqkv.data() + QD, dqkv.data() + QD + KVD, dout.data(), out.data(), lse.data(),
                           qkv.data(), qkv.data() + QD, qkv.data() + QD + KVD, seg.data(), B, T, NH, NKV, HS, ld, 0.0f);
    bf16 *qkv_d = lab_dev_bf16(qkv), *do_d = lab_dev_bf16(dout), *q_d = qkv_d, *k_d = qkv_d + QD, *v_d = k_d + KVD;
    bf16 *o_d = lab_dev_bf16(out), *dqkv_d;
    CUDA_CHECK(cudaMalloc(&dqkv_d, N * ld * 2));
    bf16 *dq_d = dqkv_d, *dk_d = dqkv_d + QD, *dv_d = dk_d + KVD;
    float *lse_d = lab_dev(lse);
    int32_t *seg_d = lab_dev(seg);
    char name[128];
    const int mma = fl_cuda_attn_mma_supported(HS);
    for (int variant = 0; variant < 2; variant++) {
        if (variant == 0 && !mma) continue;
        const char *vn = variant ? "simple" : "mma";
        lab_poison(o_d, nq * 2);
        lab_poison(lse_d, N * NH * 4);
        if (variant == 0)
            attention_forward_mma(o_d, lse_d, q_d, k_d, v_d, seg_d, B, T, NH, NKV, HS, ld, 0.0f, fl_cuda.stream);
        else attention_forward_simple(o_d, lse_d, q_d, k_d, v_d, seg_d, B, T, NH, NKV, HS, ld, 0.0f, fl_cuda.stream);
        snprintf(name, sizeof name, "fwd %s B=%d T=%d NH=%d NKV=%d HS=%d out", vn, B, T, NH, NKV, HS);
        lab_check(name, lab_rel_err(lab_host_bf16(o_d, nq), out), 2e-2);
        snprintf(name, sizeof name, "fwd %s T=%d HS=%d lse", vn, T, HS);
        lab_check(name, lab_rel_err(lab_host_f32(lse_d, N * NH), lse), 1e-3);
    }
    /* the backward from the CPU's out and lse, so both sides differentiate the same forward */
    lab_copy(lse_d, lse.data(), N * NH * 4, cudaMemcpyHostToDevice);
    bf16 *o_ref = lab_dev_bf16(out);
    for (int variant = 0; variant < 2; variant++) {
        if (variant == 0 && !mma) continue;
        const char *vn = variant ? "simple" : "mma";
        lab_poison(dqkv_d, N * ld * 2);
        if (variant == 0)
            attention_backward_mma(dq_d, dk_d, dv_d, do_d, o_ref, lse_d, q_d, k_d, v_d, seg_d, B, T, NH, NKV, HS, ld,
                                   0.0f, fl_cuda.stream);
        else
            attention_backward_simple(dq_d, dk_d, dv_d, do_d, o_ref, lse_d, q_d, k_d, v_d, seg_d, B, T, NH, NKV, HS, ld,
                                      0.0f, fl_cuda.stream);
        snprintf(name, sizeof name, "bwd %s T=%d NH=%d NKV=%d HS=%d dq|dk|dv", vn, T, NH, NKV, HS);
        lab_check(name, lab_rel_err(lab_host_bf16(dqkv_d, N * ld), dqkv), 2e-2);
    }
    for (void *p : {(void *)qkv_d, (void *)do_d, (void *)o_d, (void *)o_ref, (void *)dqkv_d, (void *)lse_d, (void *)seg_d})
        CUDA_CHECK(cudaFree(p));
}

static void timing(const char *model, int B, int T, int NH, int NKV, int HS, int with_simple) {
    size_t N = (size_t)B * T, nq = N * NH * HS;
    int ld = (NH + 2 * NKV) * HS;
    bf16 *q = lab_dev_bf16(lab_rand(N * ld, 5)), *k = q + NH * HS, *v = k + NKV * HS;
    bf16 *o = lab_dev_bf16(lab_rand(nq, 8)), *dout = lab_dev_bf16(lab_rand(nq, 9)), *dq;
    CUDA_CHECK(cudaMalloc(&dq, N * ld * 2));
    bf16 *dk = dq + NH * HS, *dv = dk + NKV * HS;
    float *lse;
    CUDA_CHECK(cudaMalloc(&lse, N * NH * 4));
    int32_t *seg = lab_dev(std::vector<int32_t>(N, 0));
    double flops_fwd = 4.0 * B * NH * HS * (double)T * T / 2;
    cudaStream_t s = fl_cuda.stream;
    /* a real lse (the forward's) so the backward's exponentials see realistic values */
    attention_forward_simple(o, lse, q, k, v, seg, B, T, NH, NKV, HS, ld, 0.0f, s);
    double t_fwd = lab_time_ms([&] { attention_forward_mma(o, lse, q, k, v, seg, B, T, NH, NKV, HS, ld, 0.0f, s); }, 10);
    attention_forward_mma(o, lse, q, k, v, seg, B, T, NH, NKV, HS, ld, 0.0f, s);
    double t_bwd = lab_time_ms(
        [&] { attention_backward_mma(dq, dk, dv, dout, o, lse, q, k, v, seg, B, T, NH, NKV, HS, ld, 0.0f, s); }, 10);
    printf("%-16s B=%d T=%d NH=%d NKV=%d HS=%d: fwd mma %.3f ms (%.0f TFLOP/s), bwd mma %.3f ms (%.0f TFLOP/s)", model,
           B, T, NH, NKV, HS, t_fwd, flops_fwd / t_fwd / 1e9, t_bwd, 2.5 * flops_fwd / t_bwd / 1e9);
    if (with_simple) {
        double t_sf = lab_time_ms([&] { attention_forward_simple(o, lse, q, k, v, seg, B, T, NH, NKV, HS, ld, 0.0f, s); }, 3);
        double t_sb = lab_time_ms(
            [&] { attention_backward_simple(dq, dk, dv, dout, o, lse, q, k, v, seg, B, T, NH, NKV, HS, ld, 0.0f, s); }, 3);
        printf(", simple fwd %.3f ms, simple bwd %.3f ms", t_sf, t_sb);
    }
    printf("\nattn_ms %s fwd %.3f bwd %.3f\n", model, t_fwd, t_bwd);
    fflush(stdout);
    for (void *p : {(void *)q, (void *)o, (void *)dout, (void *)dq, (void *)lse, (void *)seg})
        CUDA_CHECK(cudaFree(p));
}

int main(int argc, char **argv) {
    lab_init();
    int validate_only = argc > 1 && !strcmp(argv[1], "--validate");
    validate(2, 256, 8, 2, 64);     /* GQA 4:1 */
    validate(2, 77, 12, 2, 64);     /* Qwen2.5-1.5B's group of 6 at HS 64, odd T */
    validate(2, 200, 4, 4, 128);    /* MHA, ragged last tile */
    validate(3, 130, 6, 1, 128);    /* MQA, B = 3 */
    validate(1, 77, 4, 2, 96);      /* a head size only the simple kernels take */
    if (!validate_only) {
        timing("qwen2.5-1.5b", 4, 2048, 12, 2, 128, 1);
        timing("smollm2-1.7b", 4, 2048, 32, 32, 64, 0);
        timing("tinyllama-1.1b", 4, 2048, 32, 4, 64, 0);
        timing("qwen2.5-7b", 4, 2048, 28, 4, 128, 0);
    }
    printf("attention lab: %s\n", lab_failures ? "FAILED" : "all checks passed");
    return lab_failures ? 1 : 0;
}
