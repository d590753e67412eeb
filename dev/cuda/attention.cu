/* attention.cu — the attention kernels standalone: the mma forward and the simple forward/backward
 * against the CPU reference (causal, GQA, packed documents), then timed at the benchmark shapes
 * (4 x 2048, the heads of Qwen2.5-1.5B and TinyLlama-1.1B) in causal TFLOP/s:
 * forward 4·B·NH·HS·T²/2, backward 2.5x that (the dq/dkv split recomputes QKᵀ and dO·Vᵀ: 7 of 5 matmuls
 * are counted as the usual 5 for comparison with FlashAttention's figures). */
#include "lab.h"

/* q (N, NH·HS), k and v (N, NKV·HS) side by side in one (N, ld) buffer, as the engine stores them */
static std::vector<float> pack_qkv(const std::vector<float> &q, const std::vector<float> &k, const std::vector<float> &v,
                                   size_t N, int QD, int KVD, int ld) {
    std::vector<float> qkv(N * ld, 0.0f);
    for (size_t n = 0; n < N; n++) {
        std::copy(q.begin() + n * QD, q.begin() + (n + 1) * QD, qkv.begin() + n * ld);
        std::copy(k.begin() + n * KVD, k.begin() + (n + 1) * KVD, qkv.begin() + n * ld + QD);
        std::copy(v.begin() + n * KVD, v.begin() + (n + 1) * KVD, qkv.begin() + n * ld + QD + KVD);
    }
    return qkv;
}

static void validate(int B, int T, int NH, int NKV, int HS) {
    size_t N = (size_t)B * T, nq = N * NH * HS, nkv = N * NKV * HS;
    int QD = NH * HS, KVD = NKV * HS, ld = QD + 2 * KVD;
    auto q = lab_rand(nq, 1, -2, 2), k = lab_rand(nkv, 2, -2, 2), v = lab_rand(nkv, 3), dout = lab_rand(nq, 4);
    auto qkv = pack_qkv(q, k, v, N, QD, KVD, ld);
    std::vector<int32_t> seg(N);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) seg[(size_t)b * T + t] = b == 0 ? 0 : (t < T / 3 ? 0 : t < T / 2 ? T / 3 : T / 2);
    std::vector<float> out(nq), lse(N * NH);
    std::vector<float> dqkv(N * ld);
    attention_forward_cpu(out.data(), lse.data(), qkv.data(), qkv.data() + QD, qkv.data() + QD + KVD, seg.data(), B, T, NH,
                          NKV, HS, ld);
    attention_backward_cpu(dqkv.data(), dqkv.data() + QD, dqkv.data() + QD + KVD, dout.data(), out.data(), lse.data(),
                           qkv.data(), qkv.data() + QD, qkv.data() + QD + KVD, seg.data(), B, T, NH, NKV, HS, ld);
    bf16 *qkv_d = lab_dev_bf16(qkv), *do_d = lab_dev_bf16(dout), *q_d = qkv_d, *k_d = qkv_d + QD, *v_d = k_d + KVD;
    bf16 *o_d = lab_dev_bf16(out), *dqkv_d;
    CUDA_CHECK(cudaMalloc(&dqkv_d, N * ld * 2));
    bf16 *dq_d = dqkv_d, *dk_d = dqkv_d + QD, *dv_d = dk_d + KVD;
    float *lse_d = lab_dev(lse);
    int32_t *seg_d = lab_dev(seg);
    char name[128];
    for (int variant = 0; variant < 2; variant++) {
        if (variant == 0 && !fl_cuda_attn_mma_supported(HS)) continue;
        lab_poison(o_d, nq * 2);
        lab_poison(lse_d, N * NH * 4);
        if (variant == 0) attention_forward_mma(o_d, lse_d, q_d, k_d, v_d, seg_d, B, T, NH, NKV, HS, ld, fl_cuda.stream);
        else attention_forward_simple(o_d, lse_d, q_d, k_d, v_d, seg_d, B, T, NH, NKV, HS, ld, fl_cuda.stream);
        snprintf(name, sizeof name, "fwd %s T=%d NH=%d NKV=%d HS=%d out", variant ? "simple" : "mma", T, NH, NKV, HS);
        lab_check(name, lab_rel_err(lab_host_bf16(o_d, nq), out), 2e-2);
        snprintf(name, sizeof name, "fwd %s T=%d HS=%d lse", variant ? "simple" : "mma", T, HS);
        lab_check(name, lab_rel_err(lab_host_f32(lse_d, N * NH), lse), 1e-3);
    }
    lab_copy(lse_d, lse.data(), N * NH * 4, cudaMemcpyHostToDevice);
    bf16 *o_ref = lab_dev_bf16(out);
    lab_poison(dqkv_d, N * ld * 2);
    attention_backward_simple(dq_d, dk_d, dv_d, do_d, o_ref, lse_d, q_d, k_d, v_d, seg_d, B, T, NH, NKV, HS, ld,
                              fl_cuda.stream);
    snprintf(name, sizeof name, "bwd simple T=%d HS=%d dq|dk|dv", T, HS);
    lab_check(name, lab_rel_err(lab_host_bf16(dqkv_d, N * ld), dqkv), 2e-2);
    for (void *p : {(void *)qkv_d, (void *)do_d, (void *)o_d, (void *)o_ref, (void *)dqkv_d, (void *)lse_d, (void *)seg_d})
        CUDA_CHECK(cudaFree(p));
}

static void timing(const char *model, int B, int T, int NH, int NKV, int HS) {
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
    double t_mma = fl_cuda_attn_mma_supported(HS)
                       ? lab_time_ms([&] { attention_forward_mma(o, lse, q, k, v, seg, B, T, NH, NKV, HS, ld, s); }, 10)
                       : 0;
    double t_simple = lab_time_ms([&] { attention_forward_simple(o, lse, q, k, v, seg, B, T, NH, NKV, HS, ld, s); }, 5);
    double t_bwd = lab_time_ms(
        [&] { attention_backward_simple(dq, dk, dv, dout, o, lse, q, k, v, seg, B, T, NH, NKV, HS, ld, s); }, 3);
    printf("%-16s B=%d T=%d NH=%d NKV=%d HS=%d: fwd mma %.3f ms (%.0f TFLOP/s), fwd simple %.3f ms (%.1f), "
           "bwd simple %.3f ms (%.1f TFLOP/s)\n",
           model, B, T, NH, NKV, HS, t_mma, t_mma > 0 ? flops_fwd / t_mma / 1e9 : 0.0, t_simple,
           flops_fwd / t_simple / 1e9, t_bwd, 2.5 * flops_fwd / t_bwd / 1e9);
    for (void *p : {(void *)q, (void *)o, (void *)dout, (void *)dq, (void *)lse, (void *)seg})
        CUDA_CHECK(cudaFree(p));
}

int main(void) {
    lab_init();
    validate(2, 256, 8, 2, 64);
    validate(2, 200, 4, 4, 128);
    validate(1, 77, 4, 2, 96);
    timing("qwen2.5-1.5b", 4, 2048, 12, 2, 128);
    timing("tinyllama-1.1b", 4, 2048, 32, 4, 64);
    printf("attention lab: %s\n", lab_failures ? "FAILED" : "all checks passed");
    return lab_failures ? 1 : 0;
}
