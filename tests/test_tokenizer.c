/* test_tokenizer.c — parity of the C tokenizer with Hugging Face on the committed fixtures
 * (tests/fixtures/tokenizer/<model>.jsonl, written by tools/make_tokenizer_fixtures.py):
 * every id of every hard string and prose page, with and without special tokens, every decode
 * (the comparison: tokenizer_parity.c). The tokenizer files come from ../shared/models (SKIP when
 * absent). Also special ids, round trips, and the Split / Metaspace pre-tokenizers on small files
 * against HF's ids. Mistral's tokenizers: test_tokenizer_mistral.c. */
#include "test.h"
#include "tokenizer_parity.h"

#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_internal.h"
#include "common/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static fl_tokenizer *load_shared(const char *model) {
    const char *shared = fl_test_shared_dir();
    char dir[512];
    if (!strcmp(model, "gemma_pipeline")) /* committed: tools/make_gemma_tokenizer_fixture.py */
        snprintf(dir, sizeof dir, "tests/fixtures/tokenizer/%s", model);
    else if (!shared) return NULL;
    else snprintf(dir, sizeof dir, "%s/models/%s", shared, model);
    fl_tokenizer *tok = NULL;
    if (fl_tokenizer_load(&tok, dir)) {
        fl_test_fail(__FILE__, __LINE__, "load %s: %s", dir, fl_last_error());
        return NULL;
    }
    return tok;
}

/* Qwen3's tokenizer: Qwen2.5's vocab.json and merges.txt (../shared) with Qwen3's tokenizer_config.json
 * (tests/fixtures/tokenizer/Qwen3/: four more added tokens, <tool_response> .. </think>), in a temp
 * folder as tools/make_tokenizer_fixtures.py assembles it; NULL when ../shared is absent. */
static fl_tokenizer *load_qwen3(void) {
    const char *shared = fl_test_shared_dir();
    if (!shared) return NULL;
    char dir[] = "/tmp/fastlora-qwen3-tok-XXXXXX", src[640], dst[640], cwd[512];
    CHECK(mkdtemp(dir) != NULL && getcwd(cwd, sizeof cwd) != NULL);
    const char *names[] = {"vocab.json", "merges.txt", "tokenizer_config.json"};
    for (int i = 0; i < 3; i++) {
        if (i < 2)   /* the links live in /tmp: a relative ../shared is taken from the working directory */
            snprintf(src, sizeof src, "%s%s%s/models/Qwen2.5-0.5B/%s", shared[0] == '/' ? "" : cwd,
                     shared[0] == '/' ? "" : "/", shared, names[i]);
        else snprintf(src, sizeof src, "%s/tests/fixtures/tokenizer/Qwen3/%s", cwd, names[i]);
        snprintf(dst, sizeof dst, "%s/%s", dir, names[i]);
        CHECK_MSG(symlink(src, dst) == 0, "symlink %s", dst);
    }
    fl_tokenizer *tok = NULL;
    if (fl_tokenizer_load(&tok, dir)) fl_test_fail(__FILE__, __LINE__, "load %s: %s", dir, fl_last_error());
    for (int i = 0; i < 3; i++) {
        snprintf(dst, sizeof dst, "%s/%s", dir, names[i]);
        unlink(dst);
    }
    rmdir(dir);
    return tok;
}

/* Checks every fixture line of `model` (tests/fixtures/tokenizer/<model>.jsonl). */
static void check_parity(const char *model) {
    fl_tokenizer *tok = strcmp(model, "Qwen3") ? load_shared(model) : load_qwen3();
    if (!tok) { if (!fl_test_shared_dir()) SKIP("../shared not found"); return; }
    tokenizer_parity_check(tok, model);
    fl_tokenizer_free(tok);
}

TEST(tokenizer_parity_smollm2) { check_parity("SmolLM2-135M-Instruct"); }
TEST(tokenizer_parity_qwen25) { check_parity("Qwen2.5-0.5B"); }
TEST(tokenizer_parity_tinyllama) { check_parity("TinyLlama-1.1B-Chat-v1.0"); }
TEST(tokenizer_parity_llama3) { check_parity("Llama-3.2-1B"); }
/* Gemma's pipeline (transformers' GemmaTokenizer: Replace(" ", "▁") without a dummy prefix, Split on
 * " ", BPE with byte fallback and fuse_unk, <bos> in front) on a small learnt vocabulary: Gemma's own
 * 262k-entry tokenizer.json is not available here */
TEST(tokenizer_parity_gemma_pipeline) { check_parity("gemma_pipeline"); }
/* Qwen3: Qwen2.5's BPE with <think>, </think>, <tool_response>, </tool_response> as added tokens
 * ("special": false: kept on decode with skip_special), strings around them included */
TEST(tokenizer_parity_qwen3) { check_parity("Qwen3"); }

/* Special ids and the post-processor, from the table in formats.md section 5. */
TEST(tokenizer_special_ids) {
    struct { const char *model; int bos, eos, vocab; const char *tok; int id; } cases[] = {
        {"Qwen2.5-0.5B", -1, 151643, 151665, "<|im_end|>", 151645},
        {"SmolLM2-135M-Instruct", 1, 2, 49152, "<|endoftext|>", 0},
        {"TinyLlama-1.1B-Chat-v1.0", 1, 2, 32000, "<0x0A>", 13},
        {"Llama-3.2-1B", 128000, 128001, 128256, "<|eot_id|>", 128009},
    };
    if (!fl_test_shared_dir()) SKIP("../shared not found");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fl_tokenizer *tok = load_shared(cases[i].model);
        if (!tok) continue;
        CHECK_EQ_INT(fl_tokenizer_bos_id(tok), cases[i].bos);
        CHECK_EQ_INT(fl_tokenizer_eos_id(tok), cases[i].eos);
        CHECK_EQ_INT(fl_tokenizer_vocab_size(tok), cases[i].vocab);
        CHECK_EQ_INT(fl_tokenizer_token_to_id(tok, cases[i].tok), cases[i].id);
        fl_tokenizer_free(tok);
    }
}

/* Round trip: decode(encode(text)) == text for valid UTF-8 (byte-level models, and TinyLlama
 * whose decoder strips exactly the prepended space). */
TEST(tokenizer_round_trip) {
    const char *models[] = {"Qwen2.5-0.5B", "SmolLM2-135M-Instruct", "Llama-3.2-1B", "TinyLlama-1.1B-Chat-v1.0"};
    const char *texts[] = {"plain text", "  two leading spaces\r\n", "😀 emoji, 中文, e\xCC\x81", "tab\tnew\nline",
                           "x<|im_end|>y"};
    if (!fl_test_shared_dir()) SKIP("../shared not found");
    for (size_t m = 0; m < 4; m++) {
        fl_tokenizer *tok = load_shared(models[m]);
        if (!tok) continue;
        for (size_t t = 0; t < sizeof texts / sizeof texts[0]; t++) {
            fl_token_ids ids = {0};
            CHECK_EQ_INT(fl_tokenizer_encode(tok, texts[t], strlen(texts[t]), FL_ENCODE_SPLIT_SPECIAL, &ids), 0);
            char *dec;
            size_t dl;
            CHECK_EQ_INT(fl_tokenizer_decode(tok, ids.ids, ids.n, 0, &dec, &dl), 0);
            int nfc_changes = m == 0 && strstr(texts[t], "e\xCC\x81"); // Qwen normalizes to NFC
            if (!nfc_changes) CHECK_MSG(!strcmp(dec, texts[t]), "%s: \"%s\" -> \"%s\"", models[m], texts[t], dec);
            free(dec);
            fl_token_ids_free(&ids);
        }
        fl_tokenizer_free(tok);
    }
}

/* The tokenizer of a folder holding only tokenizer.json = `json`, or NULL (a failure recorded). */
static fl_tokenizer *load_json_text(const char *json) {
    char dir[] = "/tmp/fastlora-tokjson-XXXXXX", path[64];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f) return NULL;
    fputs(json, f);
    fclose(f);
    fl_tokenizer *tok = NULL;
    CHECK_MSG(fl_tokenizer_load(&tok, dir) == 0, "%s", fl_last_error());
    remove(path);
    rmdir(dir);
    return tok;
}

/* Split's MergedWithPrevious (Gemma's pre-tokenizer Split(" ")): a match right after a gap joins it,
 * one after a match or at the start stays alone. The ids are HF tokenizers 0.23's on this file. */
TEST(tokenizer_split_merged_with_previous) {
    fl_tokenizer *tok = load_json_text("{\"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"String\": \" \"}, "
                                       "\"behavior\": \"MergedWithPrevious\", \"invert\": false}, \"model\": {\"type\": "
                                       "\"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \" \": 2, \"a \": 3}, \"merges\": [[\"a\", \" \"]]}}");
    if (!tok) return;
    const struct { const char *text; int n; int32_t ids[4]; } cases[] = {
        {"a a  b", 4, {3, 3, 2, 1}}, {" a", 2, {2, 0}}, {"a b ", 3, {3, 1, 2}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fl_token_ids ids = {0};
        CHECK_EQ_INT(fl_tokenizer_encode(tok, cases[i].text, strlen(cases[i].text), 0, &ids), 0);
        CHECK_MSG(ids.n == (size_t)cases[i].n && !memcmp(ids.ids, cases[i].ids, sizeof(int32_t) * ids.n),
                  "'%s': %zu ids", cases[i].text, ids.n);
        fl_token_ids_free(&ids);
    }
    fl_tokenizer_free(tok);
}

/* The Metaspace pre-tokenizer, each prepend_scheme, split true and false, and the form of files older
 * than prepend_scheme (add_prefix_space, split implied): ' ' -> "▁", "▁" in front unless the rewritten
 * segment starts with one ("always": every segment between added tokens, "first": only at offset 0),
 * split=true cutting before each "▁" (a "▁" after a "▁" stays alone). The vocabulary merges "a▁" first,
 * so a split shows. The ids are HF tokenizers 0.23's on these files. */
TEST(tokenizer_metaspace_schemes) {
    const char *texts[] = {"a b", " a", "<s>a", "a<s> b", "\xE2\x96\x81" "a", "a  b", "b<s>", "aa a"};
    const struct { const char *pre; int32_t ids[8][3]; } cases[] = {
        {"\"prepend_scheme\": \"always\", \"split\": false",
         {{0, 6, 2}, {3, -1}, {4, 3, -1}, {3, 4, 5}, {3, -1}, {0, 6, 5}, {5, 4, -1}, {3, 6, 1}}},
        {"\"prepend_scheme\": \"first\", \"split\": false",
         {{0, 6, 2}, {3, -1}, {4, 1, -1}, {3, 4, 5}, {3, -1}, {0, 6, 5}, {5, 4, -1}, {3, 6, 1}}},
        {"\"prepend_scheme\": \"never\", \"split\": false",
         {{6, 2, -1}, {3, -1}, {4, 1, -1}, {1, 4, 5}, {3, -1}, {6, 5, -1}, {2, 4, -1}, {1, 6, 1}}},
        {"\"prepend_scheme\": \"always\", \"split\": true",
         {{3, 5, -1}, {3, -1}, {4, 3, -1}, {3, 4, 5}, {3, -1}, {3, 0, 5}, {5, 4, -1}, {3, 1, 3}}},
        {"\"add_prefix_space\": true",
         {{3, 5, -1}, {3, -1}, {4, 3, -1}, {3, 4, 5}, {3, -1}, {3, 0, 5}, {5, 4, -1}, {3, 1, 3}}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char json[1024];
        snprintf(json, sizeof json, "{\"added_tokens\": [{\"id\": 4, \"content\": \"<s>\", \"special\": true}], "
                 "\"pre_tokenizer\": {\"type\": \"Metaspace\", \"replacement\": \"\xE2\x96\x81\", %s}, \"model\": "
                 "{\"type\": \"BPE\", \"vocab\": {\"\xE2\x96\x81\": 0, \"a\": 1, \"b\": 2, \"\xE2\x96\x81" "a\": 3, "
                 "\"<s>\": 4, \"\xE2\x96\x81" "b\": 5, \"a\xE2\x96\x81\": 6}, \"merges\": [[\"a\", \"\xE2\x96\x81\"], "
                 "[\"\xE2\x96\x81\", \"a\"], [\"\xE2\x96\x81\", \"b\"]]}}", cases[c].pre);
        fl_tokenizer *tok = load_json_text(json);
        if (!tok) continue;
        for (size_t t = 0; t < sizeof texts / sizeof texts[0]; t++) {
            size_t n = 0;
            while (n < 3 && cases[c].ids[t][n] >= 0) n++;
            fl_token_ids ids = {0};
            CHECK_EQ_INT(fl_tokenizer_encode(tok, texts[t], strlen(texts[t]), 0, &ids), 0);
            CHECK_MSG(ids.n == n && !memcmp(ids.ids, cases[c].ids[t], n * sizeof(int32_t)), "%s on '%s': %zu ids (%d %d %d)",
                      cases[c].pre, texts[t], ids.n, ids.n > 0 ? ids.ids[0] : -1, ids.n > 1 ? ids.ids[1] : -1,
                      ids.n > 2 ? ids.ids[2] : -1);
            fl_token_ids_free(&ids);
        }
        fl_tokenizer_free(tok);
    }
}

/* The vocabulary's byte store: an empty token set first (the arena not yet allocated) is stored
 * and found like any other, then a non-empty one after it (a fuzz_tokenizer_json finding: the
 * first set copied zero bytes to a null arena). */
TEST(tokenizer_vocab_empty_token_first) {
    fl_vocab v;
    fl_vocab_init(&v);
    CHECK_EQ_INT(fl_vocab_set(&v, 0, "", 0), 0);
    CHECK_EQ_INT(fl_vocab_set(&v, 1, "ab", 2), 0);
    CHECK_EQ_INT(fl_vocab_find(&v, "", 0), 0);
    CHECK_EQ_INT(fl_vocab_find(&v, "ab", 2), 1);
    int32_t len = -1;
    CHECK(fl_vocab_bytes(&v, 0, &len) != NULL && len == 0);
    CHECK_EQ_INT(fl_vocab_set(&v, 0, "x", 1), 1); /* id 0 already holds another token */
    fl_vocab_free(&v);
}
