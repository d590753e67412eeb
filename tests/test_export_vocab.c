/* test_export_vocab.c — the tokenizer metadata of the GGUF export on the real tokenizers in
 * ../shared/models (skipped when absent): model and pre-tokenizer names as llama.cpp's converter
 * picks them (the pre name from the sha256 of the check text's ids, so this also proves our ids on
 * that text equal transformers'), token spellings and types, merges as in the files, the
 * SentencePiece scores of TinyLlama equal to those in its tokenizer.model, special ids, add_bos and
 * the chat template. That llama.cpp tokenizes with this metadata as transformers does is
 * test_export_llama_cpp.c. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"
#include "export/export_internal.h"
#include "export/gguf_reader.h"
#include "io/file_util.h"
#include "test.h"

enum { NORMAL = 1, UNKNOWN = 2, CONTROL = 3, USER_DEFINED = 4, UNUSED = 5, BYTE = 6 };

/* Writes the tokenizer metadata of shared model `name` alone into a GGUF file and opens it. */
static int vocab_gguf(const char *name, fl_gguf_file *g, char *model_dir, size_t cap) {
    const char *shared = fl_test_shared_dir();
    if (!shared) return 1;
    snprintf(model_dir, cap, "%s/models/%s", shared, name);
    char cfg_path[512], out[128];
    snprintf(cfg_path, sizeof cfg_path, "%s/config.json", model_dir);
    snprintf(out, sizeof out, "/tmp/fastlora-vocab-%d.gguf", (int)getpid());
    fl_model_config cfg;
    CHECK(fl_config_load(&cfg, cfg_path) == 0);
    fl_gguf_writer w;
    fl_gguf_writer_init(&w);
    fl_gguf_kv_str(&w, "general.architecture", fl_gguf_arch_name(&cfg));
    int rc = fl_gguf_put_tokenizer(&w, model_dir, &cfg, NULL);
    if (rc) printf("    %s\n", fl_last_error());
    CHECK(rc == 0);
    if (!rc) rc = fl_gguf_writer_begin(&w, out);
    if (!rc) rc = fl_gguf_writer_finish(&w);
    fl_gguf_writer_free(&w);
    if (!rc) rc = fl_gguf_open(g, out);
    unlink(out);
    CHECK(rc == 0);
    return rc ? -1 : 0;
}

static void check_str(const fl_gguf_file *g, const char *key, const char *want) {
    const char *s;
    size_t len;
    int ok = fl_gguf_get_str(g, key, &s, &len) == 0 && len == strlen(want) && !memcmp(s, want, len);
    CHECK_MSG(ok, "%s: expected '%s'", key, want);
}

static void check_token(const fl_gguf_file *g, int id, const char *text, int type) {
    const fl_gguf_kv *tokens = fl_gguf_find_kv(g, "tokenizer.ggml.tokens"), *types = fl_gguf_find_kv(g, "tokenizer.ggml.token_type");
    CHECK(tokens && types && (uint64_t)id < tokens->n && types->n == tokens->n);
    if (!tokens || !types || (uint64_t)id >= tokens->n) return;
    const char *s;
    size_t len;
    fl_gguf_arr_get_str(tokens, (uint64_t)id, &s, &len);
    CHECK_MSG(len == strlen(text) && !memcmp(s, text, len), "token %d: '%.*s', expected '%s'", id, (int)len, s, text);
    CHECK_MSG(fl_gguf_arr_get_i32(types, (uint64_t)id) == type, "token %d type %d, expected %d", id, fl_gguf_arr_get_i32(types, (uint64_t)id), type);
}

static uint32_t u32_of(const fl_gguf_file *g, const char *key) {
    uint32_t v = 0xFFFFFFFFu;
    fl_gguf_get_u32(g, key, &v);
    return v;
}

static int bool_of(const fl_gguf_file *g, const char *key) {
    int v = -1;
    fl_gguf_get_bool(g, key, &v);
    return v;
}

/* Every merge "a b" joins two listed tokens into a listed token (byte-level spelling throughout). */
static void check_merges(const fl_gguf_file *g, uint64_t n_expect, const char *first) {
    const fl_gguf_kv *m = fl_gguf_find_kv(g, "tokenizer.ggml.merges"), *tokens = fl_gguf_find_kv(g, "tokenizer.ggml.tokens");
    CHECK(m && m->n == n_expect);
    if (!m || !tokens) return;
    const char *s;
    size_t len;
    fl_gguf_arr_get_str(m, 0, &s, &len);
    CHECK_MSG(len == strlen(first) && !memcmp(s, first, len), "first merge '%.*s', expected '%s'", (int)len, s, first);
    /* spot-check 50 merges spread over the list against the token list (linear scans: fine for a test) */
    for (uint64_t i = 0; i < m->n; i += m->n / 50 + 1) {
        fl_gguf_arr_get_str(m, i, &s, &len);
        const char *sp = memchr(s, ' ', len);
        CHECK(sp != NULL);
        if (!sp) continue;
        size_t la = (size_t)(sp - s), lb = len - la - 1;
        int found = 0;
        for (uint64_t t = 0; t < tokens->n && !found; t++) {
            const char *ts;
            size_t tl;
            fl_gguf_arr_get_str(tokens, t, &ts, &tl);
            found = tl == la + lb && !memcmp(ts, s, la) && !memcmp(ts + la, sp + 1, lb);
        }
        CHECK_MSG(found, "merge %llu '%.*s': the merged token is not in the list", (unsigned long long)i, (int)len, s);
    }
}

/* The chat template exactly as tokenizer_config.json (or chat_template.jinja) has it. */
static void check_template(const fl_gguf_file *g, const char *model_dir, const char *jinja_file) {
    char path[512];
    const char *s;
    size_t len;
    CHECK(fl_gguf_get_str(g, "tokenizer.chat_template", &s, &len) == 0);
    if (jinja_file) {
        snprintf(path, sizeof path, "%s/%s", model_dir, jinja_file);
        FILE *f = fopen(path, "rb");
        char buf[8192];
        size_t n = f ? fread(buf, 1, sizeof buf, f) : 0;
        if (f) fclose(f);
        CHECK(n == len && !memcmp(buf, s, n));
        return;
    }
    snprintf(path, sizeof path, "%s/tokenizer_config.json", model_dir);
    json_t *root = json_load_file(path, 0, NULL);
    const char *want = json_string_value(json_object_get(root, "chat_template"));
    CHECK(want && strlen(want) == len && !memcmp(want, s, len));
    json_decref(root);
}

TEST(export_vocab_qwen2_5) {
    fl_gguf_file g;
    char dir[512];
    int rc = vocab_gguf("Qwen2.5-0.5B", &g, dir, sizeof dir);
    if (rc > 0) SKIP("../shared/models not found");
    if (rc) return;
    check_str(&g, "tokenizer.ggml.model", "gpt2");
    check_str(&g, "tokenizer.ggml.pre", "qwen2");
    CHECK(fl_gguf_find_kv(&g, "tokenizer.ggml.tokens")->n == 151936); /* config.json vocab_size, padded */
    check_token(&g, 9707, "Hello", NORMAL);
    check_token(&g, 1879, "\xc4\xa0world", NORMAL); /* "Ġworld": GPT-2 byte-to-unicode spelling */
    check_token(&g, 151643, "<|endoftext|>", CONTROL);
    check_token(&g, 151657, "<tool_call>", USER_DEFINED); /* an added token not marked special */
    check_token(&g, 151700, "[PAD151700]", UNUSED);
    check_merges(&g, 151387, "\xc4\xa0 \xc4\xa0");
    CHECK(fl_gguf_find_kv(&g, "tokenizer.ggml.scores") == NULL);
    CHECK_EQ_INT(u32_of(&g, "tokenizer.ggml.bos_token_id"), 151643); /* config.json: bos_token is null in tokenizer_config */
    CHECK_EQ_INT(u32_of(&g, "tokenizer.ggml.eos_token_id"), 151643);
    CHECK_EQ_INT(u32_of(&g, "tokenizer.ggml.padding_token_id"), 151643);
    CHECK(fl_gguf_find_kv(&g, "tokenizer.ggml.unknown_token_id") == NULL);
    CHECK_EQ_INT(bool_of(&g, "tokenizer.ggml.add_bos_token"), 0);
    CHECK_EQ_INT(bool_of(&g, "tokenizer.ggml.add_eos_token"), 0);
    check_template(&g, dir, NULL);
    fl_gguf_close(&g);
}

TEST(export_vocab_smollm2) {
    fl_gguf_file g;
    char dir[512];
    int rc = vocab_gguf("SmolLM2-135M-Instruct", &g, dir, sizeof dir);
    if (rc > 0) SKIP("../shared/models not found");
    if (rc) return;
    check_str(&g, "tokenizer.ggml.model", "gpt2");
    check_str(&g, "tokenizer.ggml.pre", "smollm");
    CHECK(fl_gguf_find_kv(&g, "tokenizer.ggml.tokens")->n == 49152);
    check_token(&g, 0, "<|endoftext|>", CONTROL);
    check_token(&g, 1, "<|im_start|>", CONTROL);
    check_merges(&g, 48900, "\xc4\xa0 t");
    CHECK_EQ_INT(u32_of(&g, "tokenizer.ggml.bos_token_id"), 1);
    CHECK_EQ_INT(u32_of(&g, "tokenizer.ggml.eos_token_id"), 2);
    CHECK_EQ_INT(u32_of(&g, "tokenizer.ggml.unknown_token_id"), 0);
    CHECK_EQ_INT(u32_of(&g, "tokenizer.ggml.padding_token_id"), 2);
    CHECK_EQ_INT(bool_of(&g, "tokenizer.ggml.add_bos_token"), 0);
    CHECK_EQ_INT(bool_of(&g, "tokenizer.ggml.add_space_prefix"), 0); /* tokenizer_config add_prefix_space false */
    check_template(&g, dir, NULL);
    fl_gguf_close(&g);
}

/* SentencePiece-style: the scores derived from the merge ranks order the pieces as
 * tokenizer.model's own scores do (read from its protobuf once: 260 '▁t' -1, 261 'er' -2, 262 'in'
 * -3, 1000 'ied' -741, 259 '▁▁' -1e9); only the order decides llama.cpp's merges. */
TEST(export_vocab_tinyllama_spm) {
    fl_gguf_file g;
    char dir[512];
    int rc = vocab_gguf("TinyLlama-1.1B-Chat-v1.0", &g, dir, sizeof dir);
    if (rc > 0) SKIP("../shared/models not found");
    if (rc) return;
    check_str(&g, "tokenizer.ggml.model", "llama");
    check_str(&g, "tokenizer.ggml.pre", "default");
    check_token(&g, 0, "<unk>", CONTROL); /* special in added_tokens_decoder: CONTROL, as the converter */
    check_token(&g, 1, "<s>", CONTROL);
    check_token(&g, 13, "<0x0A>", BYTE);
    check_token(&g, 260, "\xe2\x96\x81t", NORMAL);
    const fl_gguf_kv *sc = fl_gguf_find_kv(&g, "tokenizer.ggml.scores");
    CHECK(sc && sc->n == 32000);
    if (sc) {
        static const int by_score[] = {260, 261, 262, 1000, 259}; /* descending SentencePiece score */
        for (int i = 0; i + 1 < 5; i++) CHECK(fl_gguf_arr_get_f32(sc, (uint64_t)by_score[i]) > fl_gguf_arr_get_f32(sc, (uint64_t)by_score[i + 1]));
        CHECK(fl_gguf_arr_get_f32(sc, 260) == -1.0f); /* '▁ t' is merge 0 */
        CHECK(fl_gguf_arr_get_f32(sc, 1) == -1000.0f); /* control tokens: the converter's -1000 */
    }
    CHECK(fl_gguf_find_kv(&g, "tokenizer.ggml.merges") == NULL);
    CHECK_EQ_INT(u32_of(&g, "tokenizer.ggml.bos_token_id"), 1);
    CHECK_EQ_INT(u32_of(&g, "tokenizer.ggml.eos_token_id"), 2);
    CHECK_EQ_INT(u32_of(&g, "tokenizer.ggml.unknown_token_id"), 0);
    CHECK_EQ_INT(u32_of(&g, "tokenizer.ggml.padding_token_id"), 2);
    CHECK_EQ_INT(bool_of(&g, "tokenizer.ggml.add_bos_token"), 1);
    CHECK_EQ_INT(bool_of(&g, "tokenizer.ggml.add_eos_token"), 0);
    check_template(&g, dir, "chat_template.jinja");
    fl_gguf_close(&g);
}

TEST(export_vocab_llama3_tiktoken) {
    fl_gguf_file g;
    char dir[512];
    int rc = vocab_gguf("Llama-3.2-1B", &g, dir, sizeof dir);
    if (rc > 0) SKIP("../shared/models not found");
    if (rc) return;
    check_str(&g, "tokenizer.ggml.model", "gpt2");
    check_str(&g, "tokenizer.ggml.pre", "llama-bpe");
    CHECK(fl_gguf_find_kv(&g, "tokenizer.ggml.tokens")->n == 128256);
    check_token(&g, 128000, "<|begin_of_text|>", CONTROL);
    check_token(&g, 128255, "<|reserved_special_token_247|>", CONTROL);
    check_token(&g, 1917, "\xc4\xa0world", NORMAL);
    check_merges(&g, fl_gguf_find_kv(&g, "tokenizer.ggml.merges") ? fl_gguf_find_kv(&g, "tokenizer.ggml.merges")->n : 1, "\xc4\xa0 \xc4\xa0");
    CHECK_EQ_INT(u32_of(&g, "tokenizer.ggml.bos_token_id"), 128000);
    CHECK_EQ_INT(u32_of(&g, "tokenizer.ggml.eos_token_id"), 128001);
    CHECK_EQ_INT(bool_of(&g, "tokenizer.ggml.add_bos_token"), 1);
    CHECK(fl_gguf_find_kv(&g, "tokenizer.chat_template") == NULL); /* the base model has none */
    fl_gguf_close(&g);
}
