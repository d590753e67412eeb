/* sanitize.cu — small, quick runs of the kernels with shared memory and tricky indexing, for
 * compute-sanitizer (memcheck: out-of-bounds and misaligned accesses; racecheck: shared-memory
 * hazards): the attention forward and backward through the backend's dispatch over a fused q|k|v
 * buffer with unused columns (mma at HS 64/128 with GQA, MQA, packed documents and ragged tiles;
 * simple at HS 16) and the fused LM head with its gradient and f32 logits. Each result is also
 * checked against the CPU op, so a run that the tools pass but that computes garbage still fails.
 * Sizes are tiny: instrumented kernels run 10-100x slower. scripts/device-check runs it under both tools. */
#include "lab.h"

static void attention(const fl_backend *cu, const char *variant, int B, int T, int NH, int NKV, int HS) {
    fl_cuda_set_attention_variant(variant);
    size_t N = (size_t)B * T, nq = N * NH * HS, nkv = N * NKV * HS;
    int QD = NH * HS, KVD = NKV * HS, ld = QD + 2 * KVD + 8; /* q | k | v | 8 unused columns */
    auto q = lab_rand(nq, 11, -2, 2), k = lab_rand(nkv, 12, -2, 2), v = lab_rand(nkv, 13), dout = lab_rand(nq, 14);
    auto qkv = lab_pack_qkv(q, k, v, N, QD, KVD, ld);
    std::vector<int32_t> seg(N);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) seg[(size_t)b * T + t] = b % 2 ? t - t % 37 : 0;
    std::vector<float> out(nq), lse(N * NH), dqkv(N * ld, 0.0f);
    const float *qh = qkv.data(), *kh = qh + QD, *vh = kh + KVD;
    attention_forward_cpu(out.data(), lse.data(), qh, kh, vh, seg.data(), B, T, NH, NKV, HS, ld, 0.0f);
    attention_backward_cpu(dqkv.data(), dqkv.data() + QD, dqkv.data() + QD + KVD, dout.data(), out.data(), lse.data(), qh,
                           kh, vh, seg.data(), B, T, NH, NKV, HS, ld, 0.0f);
    bf16 *qkv_d = lab_dev_bf16(qkv), *do_d = lab_dev_bf16(dout), *o_d, *dqkv_d;
    float *lse_d;
    CUDA_CHECK(cudaMalloc(&o_d, nq * 2));
    CUDA_CHECK(cudaMalloc(&dqkv_d, N * ld * 2));
    CUDA_CHECK(cudaMalloc(&lse_d, N * NH * 4));
    lab_memset(dqkv_d, 0, N * ld * 2); /* the unused columns stay 0, as the CPU's */
    int32_t *seg_d = lab_dev(seg);
    bf16 *q_d = qkv_d, *k_d = q_d + QD, *v_d = k_d + KVD, *dq_d = dqkv_d, *dk_d = dq_d + QD, *dv_d = dk_d + KVD;
    cu->attention_forward(o_d, lse_d, q_d, k_d, v_d, seg_d, B, T, NH, NKV, HS, ld, 0.0f);
    cu->attention_backward(dq_d, dk_d, dv_d, do_d, o_d, lse_d, q_d, k_d, v_d, seg_d, B, T, NH, NKV, HS, ld, 0.0f);
    char name[96];
    snprintf(name, sizeof name, "attention %s B=%d T=%d NH=%d NKV=%d HS=%d out", variant, B, T, NH, NKV, HS);
    lab_check(name, lab_rel_err(lab_host_bf16(o_d, nq), out), 2e-2);
    /* the GPU backward differentiates its own forward: compare loosely with the CPU's */
    lab_check("  dq|dk|dv", lab_rel_err(lab_host_bf16(dqkv_d, N * ld), dqkv), 3e-2);
    for (void *p : {(void *)qkv_d, (void *)do_d, (void *)o_d, (void *)dqkv_d, (void *)lse_d, (void *)seg_d})
        CUDA_CHECK(cudaFree(p));
}

static void lm_head(const fl_backend *cu, size_t N, int C, int V) {
    auto x = lab_rand(N * C, 21), w = lab_rand((size_t)V * C, 22, -0.2f, 0.2f);
    std::vector<int32_t> tg(N);
    for (size_t i = 0; i < N; i++) tg[i] = i % 5 == 2 ? -100 : (int32_t)(fl_hash64(i) % V);
    std::vector<float> dx(N * C), logits(N * V);
    fl_step_scalars sc_cpu = {}, sc_gpu = {};
    sc_cpu.grad_scale = 0.01f;
    lm_head_loss_cpu(dx.data(), logits.data(), NULL, &sc_cpu, x.data(), tg.data(), w.data(), N, C, V);
    bf16 *x_d = lab_dev_bf16(x), *w_d = lab_dev_bf16(w), *dx_d;
    float *logits_d;
    fl_step_scalars *sc_d;
    CUDA_CHECK(cudaMalloc(&dx_d, N * C * 2));
    CUDA_CHECK(cudaMalloc(&logits_d, N * V * 4));
    CUDA_CHECK(cudaMalloc(&sc_d, sizeof *sc_d));
    /* through the backend's stream (lab.h): a plain cudaMemcpy / cudaMemset runs on the legacy default
     * stream, which the non-blocking stream of the kernels does not wait for */
    lab_copy(sc_d, &sc_cpu, sizeof *sc_d, cudaMemcpyHostToDevice); /* grad_scale, zero sums */
    lab_memset(&sc_d->loss_sum, 0, 2 * sizeof(double));
    int32_t *tg_d = lab_dev(tg);
    cu->lm_head_loss(dx_d, logits_d, NULL, sc_d, x_d, tg_d, w_d, N, C, V);
    cu->synchronize();
    lab_copy(&sc_gpu, sc_d, sizeof sc_gpu, cudaMemcpyDeviceToHost);
    char name[96];
    snprintf(name, sizeof name, "lm_head N=%zu C=%d V=%d loss (count %.0f/%.0f)", N, C, V, sc_gpu.n_counted, sc_cpu.n_counted);
    lab_check(name, sc_gpu.n_counted == sc_cpu.n_counted ? fabs(sc_gpu.loss_sum - sc_cpu.loss_sum) / fabs(sc_cpu.loss_sum)
                                                         : INFINITY, 2e-3);
    lab_check("  logits", lab_rel_err(lab_host_f32(logits_d, N * V), logits), 1e-5);
    lab_check("  dinp", lab_rel_err(lab_host_bf16(dx_d, N * C), dx), 2e-2);
    for (void *p : {(void *)x_d, (void *)w_d, (void *)dx_d, (void *)logits_d, (void *)tg_d, (void *)sc_d})
        CUDA_CHECK(cudaFree(p));
}

int main(void) {
    lab_init();
    const fl_backend *cu = fl_backend_cuda();
    attention(cu, "mma", 2, 77, 6, 2, 64);   /* GQA 3:1, documents in row 1, ragged tiles */
    attention(cu, "mma", 1, 70, 2, 1, 128);  /* MQA at HS 128 */
    attention(cu, "simple", 2, 40, 4, 2, 16);
    lm_head(cu, 130, 64, 3000);
    printf("sanitize: %s\n", lab_failures ? "FAILED" : "all checks passed");
    return lab_failures ? 1 : 0;
}
