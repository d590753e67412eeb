/* test_tokenizer.c — parity of the C tokenizer with Hugging Face on the committed fixtures
 * (tests/fixtures/tokenizer/<model>.jsonl, written by tools/make_tokenizer_fixtures.py):
 * every id of every hard string and prose page, with and without special tokens, every decode.
 * The tokenizer files come from ../shared/models (SKIP when absent). */
#include "test.h"

#include "tokenizer/tokenizer.h"
#include "common/error.h"

#include <jansson.h>
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

static int ids_equal(const fl_token_ids *got, json_t *want) {
    if (got->n != json_array_size(want)) return 0;
    for (size_t i = 0; i < got->n; i++)
        if (got->ids[i] != json_integer_value(json_array_get(want, i))) return 0;
    return 1;
}

static void print_ids_diff(const char *what, const char *text, const fl_token_ids *got, json_t *want) {
    printf("    %s mismatch on \"%.60s\": got %zu ids, want %zu\n      got :", what, text, got->n, json_array_size(want));
    size_t i = 0;
    while (i < got->n && i < json_array_size(want) && got->ids[i] == json_integer_value(json_array_get(want, i))) i++;
    size_t from = i > 3 ? i - 3 : 0;
    for (size_t k = from; k < got->n && k < from + 10; k++) printf(" %d", got->ids[k]);
    printf("\n      want:");
    for (size_t k = from; k < json_array_size(want) && k < from + 10; k++) printf(" %lld", (long long)json_integer_value(json_array_get(want, k)));
    printf("   (first difference at %zu)\n", i);
}

/* Index of the first token whose original byte range differs from HF's (a flat list of start, end
 * pairs, HF's character offsets in bytes), or got->n when all are equal. */
static size_t offsets_differ(const fl_token_ids *got, json_t *want) {
    if (json_array_size(want) != 2 * got->n) return 0;
    for (size_t i = 0; i < 2 * got->n; i++)
        if (got->offsets[i] != json_integer_value(json_array_get(want, i))) return i / 2;
    return got->n;
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

/* Checks every fixture line of `model`; returns the number of strings checked. */
static void check_parity(const char *model) {
    fl_tokenizer *tok = strcmp(model, "Qwen3") ? load_shared(model) : load_qwen3();
    if (!tok) { if (!fl_test_shared_dir()) SKIP("../shared not found"); return; }
    char path[512];
    snprintf(path, sizeof path, "tests/fixtures/tokenizer/%s.jsonl", model);
    FILE *f = fopen(path, "r");
    CHECK_MSG(f != NULL, "cannot open %s", path);
    if (!f) { fl_tokenizer_free(tok); return; }
    char *line = NULL;
    size_t cap = 0;
    int n_text = 0, n_decode = 0, n_offsets = 0, bad = 0;
    while (getline(&line, &cap, f) > 0) {
        json_error_t err;
        json_t *row = json_loads(line, JSON_ALLOW_NUL, &err);
        CHECK_MSG(row != NULL, "%s: bad fixture line: %s", path, err.text);
        if (!row) continue;
        json_t *text = json_object_get(row, "text");
        if (json_object_get(row, "bad_json")) { // for the CLI's JSONL mode (test_tokenizer_cli.c)
            json_decref(row);
            continue;
        }
        if (text) {
            const char *s = json_string_value(text);
            size_t len = json_string_length(text);
            fl_token_ids ids = {.want_offsets = 1}, plain = {0}; // offsets: no word cache; plain: cached
            CHECK_EQ_INT(fl_tokenizer_encode(tok, s, len, FL_ENCODE_ADD_SPECIAL, &ids), 0);
            CHECK_EQ_INT(fl_tokenizer_encode(tok, s, len, 0, &plain), 0);
            json_t *offsets = json_object_get(row, "offsets");
            if (!ids_equal(&ids, json_object_get(row, "ids"))) {
                if (bad++ < 8) print_ids_diff("ids", s, &ids, json_object_get(row, "ids"));
            } else if (!ids_equal(&plain, json_object_get(row, "ids_plain"))) {
                if (bad++ < 8) print_ids_diff("ids_plain", s, &plain, json_object_get(row, "ids_plain"));
            } else if (offsets) {
                size_t k = offsets_differ(&ids, offsets);
                if (k < ids.n && bad++ < 8)
                    printf("    offsets mismatch on \"%.60s\" at token %zu: got [%u, %u), want [%lld, %lld)\n", s, k,
                           ids.offsets[2 * k], ids.offsets[2 * k + 1], (long long)json_integer_value(json_array_get(offsets, 2 * k)),
                           (long long)json_integer_value(json_array_get(offsets, 2 * k + 1)));
                n_offsets += offsets != NULL;
            }
            char *dec;
            size_t dl;
            CHECK_EQ_INT(fl_tokenizer_decode(tok, ids.ids, ids.n, 0, &dec, &dl), 0);
            const char *want = json_string_value(json_object_get(row, "decoded"));
            if (dl != json_string_length(json_object_get(row, "decoded")) || memcmp(dec, want, dl)) {
                if (bad++ < 8) printf("    decode mismatch on \"%.60s\":\n      got : \"%.80s\"\n      want: \"%.80s\"\n", s, dec, want);
            }
            free(dec);
            fl_token_ids_free(&ids);
            fl_token_ids_free(&plain);
            n_text++;
        } else {
            json_t *arr = json_object_get(row, "decode_ids");
            int skip = json_is_true(json_object_get(row, "skip_special"));
            size_t n = json_array_size(arr);
            int32_t *ids = malloc((n + 1) * sizeof *ids);
            for (size_t i = 0; i < n; i++) ids[i] = (int32_t)json_integer_value(json_array_get(arr, i));
            char *dec;
            size_t dl;
            CHECK_EQ_INT(fl_tokenizer_decode(tok, ids, n, skip, &dec, &dl), 0);
            const char *want = json_string_value(json_object_get(row, "decoded"));
            if (dl != json_string_length(json_object_get(row, "decoded")) || memcmp(dec, want, dl)) {
                if (bad++ < 8) printf("    decode_ids mismatch: got \"%.80s\" want \"%.80s\"\n", dec, want);
            }
            free(dec);
            free(ids);
            n_decode++;
        }
        json_decref(row);
    }
    free(line);
    fclose(f);
    printf("    %s: %d strings (%d with offsets), %d decode cases, %d mismatches\n", model, n_text, n_offsets, n_decode, bad);
    CHECK_EQ_INT(bad, 0);
    CHECK(n_text > 50);
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

/* Split's MergedWithPrevious (Gemma's pre-tokenizer Split(" ")): a match right after a gap joins it,
 * one after a match or at the start stays alone. The ids are HF tokenizers 0.23's on this file. */
TEST(tokenizer_split_merged_with_previous) {
    char dir[] = "/tmp/fastlora-split-XXXXXX", path[64];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f) return;
    fputs("{\"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"String\": \" \"}, \"behavior\": "
          "\"MergedWithPrevious\", \"invert\": false}, \"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, "
          "\" \": 2, \"a \": 3}, \"merges\": [[\"a\", \" \"]]}}", f);
    fclose(f);
    fl_tokenizer *tok = NULL;
    CHECK_MSG(fl_tokenizer_load(&tok, dir) == 0, "%s", fl_last_error());
    remove(path);
    rmdir(dir);
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
