/* test_cuda_real_sizes.c — the CUDA kernels at the sizes the benchmark runs, where the HF fixtures
 * (head sizes 8/16, T <= 64: the simple kernels) never go: T = 2048 on the real grid, GQA 6:1
 * (Qwen2.5-1.5B) and 7:1 (Qwen2.5-7B), head size 64 MHA through the direct-write dK/dV path
 * (SmolLM2), and a model-level step where the tensor-core attention runs, against the CPU. Each
 * attention check has the relative L2 and the per-(query, head) maximum error (test_cuda_ops.c's
 * cases). Compiled only with CUDA; every test SKIPs without a GPU. Names start with cuda_big_:
 * device-check gives them 3x the op tests' cap (the CPU reference dominates their time). */
#ifdef FL_HAVE_CUDA

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/cuda/cuda_info.h"
#include "common/rng.h"
#include "engine/model.h"
#include "test.h"

/* test_cuda_ops.c */
void cuda_attention_case(const fl_backend *cu, const char *variant, int B, int T, int NH, int NKV, int HS, int gap);
void cuda_attn_bwd_qkv_case(const fl_backend *cu, int B, int T, int NH, int NKV, int HS, int docs);

#define CUDA_OR_SKIP(be) const fl_backend *be = fl_backend_cuda(); if (!be) SKIP("no CUDA device")

TEST(cuda_big_attention_t2048_gqa6) {
    CUDA_OR_SKIP(cu);
    cuda_attention_case(cu, "mma", 1, 2048, 12, 2, 128, 0); /* Qwen2.5-1.5B: 12 heads over 2, HS 128 */
    cuda_attn_bwd_qkv_case(cu, 1, 2048, 12, 2, 128, 1);
}

TEST(cuda_big_attention_t2048_gqa7) {
    CUDA_OR_SKIP(cu);
    cuda_attention_case(cu, "mma", 1, 2048, 14, 2, 128, 0); /* Qwen2.5-7B's group of 7 (half its 28 heads) */
    cuda_attn_bwd_qkv_case(cu, 1, 2048, 14, 2, 128, 1);
}

TEST(cuda_big_attention_t2048_mha_hs64) {
    CUDA_OR_SKIP(cu);
    cuda_attention_case(cu, "mma", 1, 2048, 8, 8, 64, 0); /* SmolLM2: MHA, HS 64, dK/dV written directly */
    cuda_attn_bwd_qkv_case(cu, 2, 1024, 8, 8, 64, 1);
}

/* One forward + backward of a model whose attention takes the tensor-core kernels (HS 64, GQA 3:1,
 * T = 256: whole and ragged tiles), CUDA vs the CPU from the same random init and batch: the loss
 * within 2e-2 relative, every LoRA gradient within 5e-2 relative L2 (bf16 through every layer, as
 * test_cuda_ops.c's fixture tests). */
TEST(cuda_big_model_tensor_core_attention) {
    CUDA_OR_SKIP(cu);
    fl_model_config cfg = {.arch = FL_ARCH_LLAMA, .vocab_size = 2000, .hidden_size = 384, .intermediate_size = 1024,
                           .n_layers = 2, .n_heads = 6, .n_kv_heads = 2, .head_dim = 64, .max_position_embeddings = 1024,
                           .rope_theta = 10000.0, .rms_norm_eps = 1e-6f};
    fl_lora_config lc = fl_lora_config_default();
    lc.rank = 8;
    fl_model g, c;
    fl_model_init_random(&g, &cfg, 9, cu, &lc);
    fl_model_init_random(&c, &cfg, 9, fl_backend_cpu_bf16(), &lc);
    int B = 2, T = 250;
    size_t N = (size_t)B * T;
    int32_t *buf = malloc(sizeof(int32_t) * 4 * N), *ids = buf, *tg = buf + N, *pos = buf + 2 * N, *seg = buf + 3 * N;
    for (size_t t = 0; t < N; t++) {
        ids[t] = (int32_t)(fl_hash64(t * 13 + 1) % cfg.vocab_size);
        tg[t] = (int32_t)(fl_hash64(t * 17 + 5) % cfg.vocab_size);
        int doc = t >= (size_t)T && (int)(t % T) >= 100 ? 100 : 0; /* row 1: two documents */
        pos[t] = (int32_t)(t % T) - doc;
        seg[t] = doc;
    }
    fl_batch batch = {.B = B, .T = T, .ids = ids, .targets = tg, .pos = pos, .seg_start = seg};
    fl_step_stats sg = fl_model_forward(&g, &batch, 0.0f), sc = fl_model_forward(&c, &batch, 0.0f);
    fl_model_backward(&g);
    fl_model_backward(&c);
    CHECK_MSG(fabs(sg.loss - sc.loss) <= 2e-2 * fabs(sc.loss), "loss cuda %.5f vs cpu-bf16 %.5f", sg.loss, sc.loss);
    size_t n = g.grads.n;
    float *hg = malloc(sizeof(float) * n), *hc = malloc(sizeof(float) * n);
    g.grads.be->download(hg, g.grads.data, sizeof(float) * n);
    c.grads.be->download(hc, c.grads.data, sizeof(float) * n);
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        num += ((double)hg[i] - hc[i]) * ((double)hg[i] - hc[i]);
        den += (double)hc[i] * hc[i];
    }
    CHECK_MSG(hg[0] == hg[0] && sqrt(num / (den > 0 ? den : 1)) <= 5e-2, "LoRA grads rel err %.3g",
              sqrt(num / (den > 0 ? den : 1)));
    free(hg); free(hc); free(buf);
    fl_model_free(&g);
    fl_model_free(&c);
}

#endif /* FL_HAVE_CUDA */
