/* test_generate.c — the KV-cached inference path and sampling: the decoder's logits equal the
 * training forward's (fl_model_logits) at every position, whatever the chunking (prefill, then one
 * token at a time), on HF fixture models with their PEFT adapters (GQA, Qwen2 biases + tied
 * head, llama3 RoPE, Qwen3's q_norm/k_norm, Mistral's sliding window of 32 over 80 positions: the
 * cache keeps every position, each query reads the last 32; Qwen3's sliding layers; Phi-3's fused
 * modules, longrope and window of 64); generation is deterministic for a seed; greedy stories260K reproduces
 * llama2.c's reference output (../shared/data/stories260K/SOURCES.md) when ../shared exists. */
#include <stdlib.h>
#include <unistd.h>
#include <string.h>

#include "common/error.h"
#include "engine/model.h"
#include "infer/decoder.h"
#include "infer/generate.h"
#include "io/file_util.h"
#include "lora/adapter_io.h"
#include "test.h"
#include "tokenizer/tokenizer.h"
#include "train/llama2c.h"

static int load_fixture(fl_model *m, const char *name) {
    char model[256], adapter[256];
    snprintf(model, sizeof model, "tests/fixtures/hf/%s/model", name);
    snprintf(adapter, sizeof adapter, "tests/fixtures/hf/%s/adapter", name);
    fl_lora_config lc;
    if (fl_adapter_load_config(adapter, &lc) || fl_model_init_dir(m, model, fl_backend_cpu(), &lc) ||
        fl_model_load_adapter(m, adapter)) {
        printf("    %s\n", fl_last_error());
        return 1;
    }
    return 0;
}

TEST(generate_kv_cache_logits_match_full_forward) {
    /* qwen3_swa: window 4 on layers 1, 2 only (layer 0 full): the cache reads each layer's own window.
     * phi3_longrope: fused qkv_proj/gate_up_proj LoRA, partial rotary; T 80 passes its
     * original_max_position_embeddings 8 from the first chunk on, so both use the long factors, and its
     * sliding_window 64 binds on every layer. gemma3_sandwich and gemma2_softcap: their sliding layers'
     * windows and Gemma's pieces in the decoder; gemma2_attn_softcap: the attention soft-cap in the
     * decode op; smollm3_nope: the NoPE layer's cached keys unrotated; gemma3_vlm: a vision-language
     * folder's language model; granite_multipliers: Granite's four scalars in the decoder; olmo2_post_norms:
     * no pre-norms and whole-row q/k norms in the decoder; qwen3_yarn: the YaRN frequencies and cos/sin
     * factor in the decoder; olmo3_sliding_yarn: each layer type's RoPE and factor, the window, in the cache;
     * mistral3_vlm: a vision-language folder's untied head; ministral3_llama4: Ministral 3's q factor from
     * position 32 on, across the prefill chunks and in each decode step; gemma_geglu: Gemma 1's norms and
     * scaled embeddings in the decoder */
    const char *names[] = {"llama_gqa", "qwen2_bias_tied", "llama3_rope", "qwen3_qk_norm", "mistral_window", "qwen3_swa",
                           "phi3_longrope", "gemma3_sandwich", "gemma2_softcap", "gemma2_attn_softcap", "smollm3_nope",
                           "gemma3_vlm", "granite_multipliers", "olmo2_post_norms", "qwen3_yarn",
                           "olmo3_sliding_yarn", "mistral3_vlm", "ministral3_llama4", "gemma_geglu"};
    for (int k = 0; k < (int)(sizeof names / sizeof names[0]); k++) {
        fl_model m;
        if (load_fixture(&m, names[k])) { CHECK(0); continue; }
        enum { T = 80 }; /* > the decoder's 64-token chunk, so prefill takes two chunks */
        int V = m.cfg.vocab_size;
        int32_t ids[T];
        for (int t = 0; t < T; t++) ids[t] = (int32_t)((t * 37 + 11) % V);
        float *ref = malloc(sizeof(float) * (size_t)T * V), *got = malloc(sizeof(float) * (size_t)T * V);
        fl_model_logits(&m, ids, 1, T, ref);
        fl_decoder d;
        CHECK(fl_decoder_init(&d, &m, T, 1) == 0);
        /* prefill 70 (two chunks), then 10 one at a time */
        CHECK(fl_decoder_feed(&d, ids, 70, NULL, got) == 0);
        for (int t = 70; t < T; t++) CHECK(fl_decoder_feed(&d, ids + t, 1, got + (size_t)t * V, NULL) == 0);
        double worst = 0, big = 0;
        for (size_t i = 0; i < (size_t)T * V; i++) {
            worst = fmax(worst, fabs(ref[i] - got[i]));
            big = fmax(big, fabs(ref[i]));
        }
        printf("    %s: max |logit diff| %.2e (max |logit| %.2f)\n", names[k], worst, big);
        CHECK(worst < 1e-4 * (1 + big));
        if (m.cfg.sliding_window) { /* the window binds: without it the last positions differ */
            fl_model_config windowed = m.cfg;
            m.cfg.sliding_window = 0;
            fl_model_logits(&m, ids, 1, T, ref);
            m.cfg = windowed;
            double apart = 0;
            for (size_t i = (size_t)(T - 1) * V; i < (size_t)T * V; i++) apart = fmax(apart, fabs(ref[i] - got[i]));
            printf("    %s: full causal attention differs by %.2e at the last position\n", names[k], apart);
            CHECK(apart > 1e-3 * (1 + big));
        }
        /* full cache: a clear error, not an overflow */
        CHECK_EQ_INT(fl_decoder_feed(&d, ids, 1, got, NULL), FL_ERR_INPUT);
        fl_decoder_free(&d);
        free(ref);
        free(got);
        fl_model_free(&m);
    }
}

TEST(generate_fixed_seed_is_deterministic_and_greedy_is_argmax) {
    fl_model m;
    if (load_fixture(&m, "llama_gqa")) { CHECK(0); return; }
    int32_t prompt[4] = {3, 17, 42, 99};
    int32_t out[3][24];
    int n[3], stopped;
    uint64_t seeds[3] = {7, 7, 8};
    for (int r = 0; r < 3; r++) {
        fl_decoder d;
        CHECK(fl_decoder_init(&d, &m, 28, 1) == 0);
        fl_gen_options o = {.max_new = 24, .sampler = {.temperature = 1.0f, .top_p = 0.9f, .seed = seeds[r]}};
        CHECK(fl_generate(&d, prompt, 4, &o, out[r], &n[r], &stopped) == 0);
        fl_decoder_free(&d);
    }
    CHECK_EQ_INT(n[0], 24);
    CHECK(n[0] == n[1] && !memcmp(out[0], out[1], sizeof(int32_t) * (size_t)n[0]));
    CHECK(memcmp(out[0], out[2], sizeof(int32_t) * 24) != 0);
    /* greedy == argmax of the full forward at each step */
    fl_decoder d;
    CHECK(fl_decoder_init(&d, &m, 16, 1) == 0);
    fl_gen_options o = {.max_new = 8, .sampler = {.temperature = 0}};
    int32_t g[8];
    int ng;
    CHECK(fl_generate(&d, prompt, 4, &o, g, &ng, &stopped) == 0);
    fl_decoder_free(&d);
    int32_t seq[12];
    memcpy(seq, prompt, sizeof prompt);
    int V = m.cfg.vocab_size;
    float *logits = malloc(sizeof(float) * 12 * (size_t)V);
    for (int i = 0; i < 8; i++) {
        fl_model_logits(&m, seq, 1, 4 + i, logits);
        const float *last = logits + (size_t)(3 + i) * V;
        int best = 0;
        for (int v = 1; v < V; v++)
            if (last[v] > last[best]) best = v;
        CHECK_EQ_INT(g[i], best);
        seq[4 + i] = best;
    }
    /* a stop id ends generation and is not emitted */
    CHECK(fl_decoder_init(&d, &m, 16, 1) == 0);
    /* a stop id ends generation and is not emitted: rerun seed 7 with its first new token as the stop */
    int first_new = 1;
    while (first_new < 23) {
        int seen = 0;
        for (int j = 0; j < first_new; j++) seen |= out[1][j] == out[1][first_new];
        if (!seen) break;
        first_new++;
    }
    fl_gen_options os = {.max_new = 24, .sampler = {.temperature = 1.0f, .top_p = 0.9f, .seed = 7},
                         .stop_ids = {out[1][first_new]}, .n_stop = 1};
    CHECK(fl_decoder_init(&d, &m, 28, 1) == 0);
    CHECK(fl_generate(&d, prompt, 4, &os, out[0], &ng, &stopped) == 0);
    CHECK(stopped == 1 && ng == first_new);
    fl_decoder_free(&d);
    free(logits);
    fl_model_free(&m);
}

TEST(generate_stories260k_greedy_matches_llama2c) {
    const char *shared = fl_test_shared_dir();
    if (!shared) SKIP("../shared not found");
    char ckpt[512], tokbin[512];
    snprintf(ckpt, sizeof ckpt, "%s/data/stories260K/stories260K.bin", shared);
    snprintf(tokbin, sizeof tokbin, "%s/data/stories260K/tok512.bin", shared);
    if (!fl_file_exists(ckpt)) SKIP("stories260K missing");
    char dir[] = "/tmp/fastlora-s260-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    CHECK(fl_llama2c_convert(ckpt, tokbin, dir, 0) == 0);
    fl_tokenizer *tok;
    CHECK(fl_tokenizer_load(&tok, dir) == 0);
    fl_lora_config lc = fl_lora_config_default();
    lc.rank = 1;
    fl_model m;
    CHECK(fl_model_init_dir(&m, dir, fl_backend_cpu(), &lc) == 0);
    /* llama2.c run.c -t 0 -n 64 (64 positions including the BOS) and -n 48 -i "One day, Tom went to the" */
    const char *prompts[2] = {"", "One day, Tom went to the"};
    const char *want[2] = {"Once upon a time, there was a little girl named Lily. She loved to play outside in the park. "
                           "One day, she saw a big, red ball. She wanted to play with it, but it was too high.\nLily",
                           "One day, Tom went to the park with his mom. They saw a big box with a big box. The box was very "
                           "small and small. Tom wanted"};
    int steps[2] = {64, 48}; /* run.c's -n: positions, prompt included */
    for (int k = 0; k < 2; k++) {
        fl_token_ids p = {0};
        CHECK(fl_tokenizer_encode(tok, prompts[k], strlen(prompts[k]), FL_ENCODE_ADD_SPECIAL, &p) == 0);
        if (!*prompts[k]) p.n = 1; /* llama2.c starts from BOS alone */
        fl_decoder d;
        CHECK(fl_decoder_init(&d, &m, 64, 0) == 0);
        int32_t out[64], all[128];
        int n, stopped;
        fl_gen_options o = {.max_new = steps[k] - (int)p.n + 1, .sampler = {.temperature = 0}, .stop_ids = {1}, .n_stop = 1};
        CHECK(fl_generate(&d, p.ids, (int)p.n, &o, out, &n, &stopped) == 0);
        memcpy(all, p.ids, sizeof(int32_t) * p.n);
        memcpy(all + p.n, out, sizeof(int32_t) * (size_t)n);
        char *text;
        size_t len;
        CHECK(fl_tokenizer_decode(tok, all, p.n + (size_t)n, 1, &text, &len) == 0);
        CHECK_MSG(!strcmp(text, want[k]), "got '%s'", text);
        free(text);
        fl_decoder_free(&d);
        fl_token_ids_free(&p);
    }
    fl_model_free(&m);
    fl_tokenizer_free(tok);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

/* longrope picks its table per forward, as transformers does (the largest position + 1 against
 * original_max_position_embeddings, 8 in phi3_longrope): a 6-token prompt runs on the short factors
 * in the full forward and in the decoder alike, and its logits differ from the first 6 rows of a
 * 12-token forward, which takes the long ones. */
TEST(generate_phi3_longrope_table_per_forward) {
    fl_model m;
    if (load_fixture(&m, "phi3_longrope")) { CHECK(0); return; }
    int V = m.cfg.vocab_size;
    int32_t ids[12];
    for (int t = 0; t < 12; t++) ids[t] = (int32_t)((t * 23 + 5) % V);
    float *short6 = malloc(sizeof(float) * 6 * V), *long12 = malloc(sizeof(float) * 12 * V),
          *dec = malloc(sizeof(float) * 6 * V);
    fl_model_logits(&m, ids, 1, 6, short6);
    fl_model_logits(&m, ids, 1, 12, long12);
    fl_decoder d;
    CHECK(fl_decoder_init(&d, &m, 12, 1) == 0);
    CHECK(fl_decoder_feed(&d, ids, 6, NULL, dec) == 0);
    double same = 0, apart = 0;
    for (size_t i = 0; i < (size_t)6 * V; i++) {
        same = fmax(same, fabs(short6[i] - dec[i]));
        apart = fmax(apart, fabs(short6[i] - long12[i]));
    }
    printf("    6 tokens: decoder vs full forward %.2e; short vs long table %.2e\n", same, apart);
    CHECK(same < 1e-4);
    CHECK(apart > 1e-2);
    fl_decoder_free(&d);
    free(short6); free(long12); free(dec);
    fl_model_free(&m);
}

/* In training the table follows the batch's largest position + 1 too, so a packed row of two
 * 6-token documents (positions 0..5 twice, 12 columns > original 8) runs on the short factors: its
 * loss is the two documents' losses each on its own (f32 sums in another order: 1e-6 relative), and
 * the same row at positions 0..11 (the long factors) is not. */
TEST(generate_phi3_longrope_packed_row_takes_the_short_table) {
    fl_model m;
    if (load_fixture(&m, "phi3_longrope")) { CHECK(0); return; }
    int V = m.cfg.vocab_size;
    int32_t ids[12], tg[12], pos[12], seg[12];
    for (int t = 0; t < 12; t++) {
        ids[t] = (int32_t)((t * 31 + 7) % V);
        tg[t] = t % 6 == 5 ? -100 : (int32_t)(((t + 1) * 31 + 7) % V);
        pos[t] = t % 6;
        seg[t] = t < 6 ? 0 : 6;
    }
    fl_batch packed = {.B = 1, .T = 12, .ids = ids, .targets = tg, .pos = pos, .seg_start = seg};
    fl_batch first = {.B = 1, .T = 6, .ids = ids, .targets = tg}, second = {.B = 1, .T = 6, .ids = ids + 6, .targets = tg + 6};
    fl_batch plain = {.B = 1, .T = 12, .ids = ids, .targets = tg, .seg_start = seg};   /* positions 0..11: long */
    double both = fl_model_forward(&m, &packed, 0.0f).loss_sum;
    double a = fl_model_forward(&m, &first, 0.0f).loss_sum, b = fl_model_forward(&m, &second, 0.0f).loss_sum;
    double as_one = fl_model_forward(&m, &plain, 0.0f).loss_sum;
    printf("    packed %.7f, documents apart %.7f, positions 0..11 %.7f\n", both, a + b, as_one);
    CHECK_CLOSE(both, a + b, 0, 1e-6);
    CHECK(fabs(as_one - both) > 1e-3);
    fl_model_free(&m);
}
