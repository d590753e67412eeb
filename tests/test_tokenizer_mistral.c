/* test_tokenizer_mistral.c — parity of the C tokenizer with Hugging Face on Mistral's real
 * tokenizers: v1 (SentencePiece BPE, legacy normalizer), v3 (SentencePiece BPE with control tokens,
 * Metaspace "first") and Tekken (Nemo's tiktoken-style byte-level BPE), as the committed fixtures
 * tests/fixtures/tokenizer/{mistral-v1,mistral-v3,tekken-240718}.jsonl give their ids. The tokenizer
 * folders are not committed (Tekken's tokenizer.json is 15 MB): tools/make_mistral_tokenizers.py
 * writes them from mistral-common's files into build/mistral-tokenizers/<name> (.ci/run does), or
 * $FASTLORA_MISTRAL_TOKENIZERS/<name>; a test SKIPs when its folder is absent. Also: the GGUF
 * pre-tokenizer name the export gives Tekken. Not here: the fixture comparison itself
 * (tokenizer_parity.c), the GGUF metadata of the ../shared models (test_export_vocab.c).
 */
#include "test.h"
#include "tokenizer_parity.h"

#include "common/error.h"
#include "export/export_internal.h"
#include "tokenizer/tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The converted folder `name`, or NULL: *present says whether the folder is there (a load that
 * fails records a test failure). */
static fl_tokenizer *load_mistral(const char *name, int *present) {
    const char *root = getenv("FASTLORA_MISTRAL_TOKENIZERS");
    char dir[512], json[600];
    snprintf(dir, sizeof dir, "%s/%s", root && *root ? root : "build/mistral-tokenizers", name);
    snprintf(json, sizeof json, "%s/tokenizer.json", dir);
    struct stat st;
    *present = stat(json, &st) == 0;
    if (!*present) return NULL;
    fl_tokenizer *tok = NULL;
    if (fl_tokenizer_load(&tok, dir)) fl_test_fail(__FILE__, __LINE__, "load %s: %s", dir, fl_last_error());
    return tok;
}

#define NO_FOLDER "no converted tokenizer folder (python3 tools/make_mistral_tokenizers.py --out build/mistral-tokenizers)"

static void check_mistral(const char *name) {
    int present;
    fl_tokenizer *tok = load_mistral(name, &present);
    if (!present) SKIP(NO_FOLDER);
    if (!tok) return;
    tokenizer_parity_check(tok, name);
    fl_tokenizer_free(tok);
}

/* Mistral 7B v0.1: Prepend("▁") + Replace(" ", "▁"), byte fallback, <s> in front */
TEST(tokenizer_parity_mistral_v1) { check_mistral("mistral-v1"); }
/* v3: Metaspace(prepend_scheme "first"): only the text at offset 0 gets the "▁" prefix; [INST] ..
 * [control_N] split out as special added tokens, [REFERENCE_DOC_N] as plain ones */
TEST(tokenizer_parity_mistral_v3) { check_mistral("mistral-v3"); }
/* Tekken: Split on its regex (\p{Lu}/\p{Ll}/\p{M} classes, "/" after punctuation), ByteLevel,
 * ignore_merges, 1000 special tokens before the ranks */
TEST(tokenizer_parity_tekken) { check_mistral("tekken-240718"); }

/* Special ids and sizes as mistral-common's files define them. */
TEST(tokenizer_mistral_special_ids) {
    struct { const char *name; int vocab; const char *tok; int id; } cases[] = {
        {"mistral-v1", 32000, "<0x0A>", 13},
        {"mistral-v3", 32768, "[INST]", 3},
        {"tekken-240718", 131072, "[/INST]", 4},
    };
    int seen = 0, present;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fl_tokenizer *tok = load_mistral(cases[i].name, &present);
        seen += present;
        if (!tok) continue;
        CHECK_EQ_INT(fl_tokenizer_bos_id(tok), 1);
        CHECK_EQ_INT(fl_tokenizer_eos_id(tok), 2);
        CHECK_EQ_INT(fl_tokenizer_vocab_size(tok), cases[i].vocab);
        CHECK_EQ_INT(fl_tokenizer_token_to_id(tok, cases[i].tok), cases[i].id);
        fl_tokenizer_free(tok);
    }
    if (!seen) SKIP(NO_FOLDER);
}

/* The GGUF export names Tekken's pre-tokenizer as llama.cpp's converter does: the sha256 of our ids of
 * its check text is the hash convert_hf_to_gguf.py lists for Mistral-Nemo-Base-2407, "tekken" (so our
 * ids on that text equal those of HF's real Nemo tokenizer). */
TEST(tokenizer_mistral_gguf_pre_tekken) {
    int present;
    fl_tokenizer *tok = load_mistral("tekken-240718", &present);
    if (!present) SKIP(NO_FOLDER);
    if (!tok) return;
    char hash[65];
    const char *pre = fl_gguf_pre_tokenizer_name(tok, hash);
    CHECK_MSG(pre && !strcmp(pre, "tekken"), "pre-tokenizer '%s', hash %s", pre ? pre : "(none)", hash);
    fl_tokenizer_free(tok);
}
