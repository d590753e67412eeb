/* fuzz_tokenizer.h — what the tokenizer harnesses share.
 * - fz_tokenizer_load_and_use (fuzz_tokenizer_json, _bpe_files, _tiktoken): load a folder, and when
 *   it loads, use it: encode a fixed text with each flag combination (ids inside the vocabulary,
 *   offsets inside the text), decode those ids, every id below min(vocab, 4096) and out-of-range
 *   ones, and render a chat when the template is a known format (spans inside the text and ids).
 * - fz_real_tokenizers (fuzz_tokenizer_encode, fuzz_chat): the real tokenizers of ../shared/models
 *   and the tiny test tokenizer, loaded once per process.
 * - fz_check_rendered: the invariants of a rendered chat.
 */
#ifndef FL_FUZZ_TOKENIZER_H
#define FL_FUZZ_TOKENIZER_H

#include "fuzz.h"

#include "tokenizer/tokenizer.h"

static const char fz_sample_text[] =
    "Hello world! <|im_start|>user\n Ünïcödé 你好 1234567 \t\n  <s></s> ▁x <|endoftext|><|eot_id|>\xF0\x9F\x98\x80 e\xCC\x81";

/* Ids inside the vocabulary; offsets (when asked) inside the text, start <= end, starts not decreasing. */
static inline void fz_check_ids(const fl_tokenizer *tok, const fl_token_ids *ids, size_t text_len) {
    int32_t V = fl_tokenizer_vocab_size(tok);
    for (size_t i = 0; i < ids->n; i++) {
        if (ids->ids[i] < 0 || ids->ids[i] >= V) {
            fprintf(stderr, "fuzz: id %d outside the vocabulary (%d)\n", ids->ids[i], V);
            abort();
        }
        if (ids->want_offsets && (ids->offsets[2 * i] > ids->offsets[2 * i + 1] || ids->offsets[2 * i + 1] > text_len ||
                                  (i && ids->offsets[2 * i] < ids->offsets[2 * i - 2]))) {
            fprintf(stderr, "fuzz: offsets [%u, %u) of id %zu outside the text (%zu bytes) or before the last start\n",
                    ids->offsets[2 * i], ids->offsets[2 * i + 1], i, text_len);
            abort();
        }
    }
}

static inline void fz_decode(const fl_tokenizer *tok, const int32_t *ids, size_t n, int skip_special) {
    char *text = NULL;
    size_t len = 0;
    fl_clear_error();
    int status = fl_tokenizer_decode(tok, ids, n, skip_special, &text, &len);
    fz_check(status, "fl_tokenizer_decode");
    if (!status && (!text || strlen(text) > len)) abort();
    free(text);
}

static inline void fz_check_rendered(const fl_tokenizer *tok, const fl_chat_rendered *r) {
    fz_check_ids(tok, &r->ids, r->len);
    if (!r->text || strlen(r->text) > r->len) abort();
    for (size_t s = 0; s < r->n_spans; s++)
        if (r->assistant_bytes[s].start > r->assistant_bytes[s].end || r->assistant_bytes[s].end > r->len ||
            r->assistant_tokens[s].start > r->assistant_tokens[s].end || r->assistant_tokens[s].end > r->ids.n)
            abort();
}

static inline void fz_tokenizer_use(fl_tokenizer *tok) {
    int32_t V = fl_tokenizer_vocab_size(tok);
    if (V < 0 || fl_tokenizer_bos_id(tok) >= V || fl_tokenizer_eos_id(tok) >= V || !fl_tokenizer_kind(tok)) abort();
    size_t len = strlen(fz_sample_text);
    for (int flags = 0; flags < 4; flags++) {
        fl_token_ids ids = {0};
        ids.want_offsets = flags & 1;
        fl_clear_error();
        int status = fl_tokenizer_encode(tok, fz_sample_text, len, flags, &ids);
        fz_check(status, "fl_tokenizer_encode");
        if (!status) {
            fz_check_ids(tok, &ids, len);
            fz_decode(tok, ids.ids, ids.n, flags >> 1);
        }
        fl_token_ids_free(&ids);
    }
    size_t n = V < 4096 ? (size_t)V : 4096;
    int32_t *all = malloc((n + 3) * sizeof *all);
    for (size_t i = 0; i < n; i++) all[i] = (int32_t)i;
    fz_decode(tok, all, n, 0);
    fz_decode(tok, all, n, 1);
    int32_t bad[3] = {-1, V, INT32_MAX};
    for (int i = 0; i < 3; i++) fz_decode(tok, &bad[i], 1, 0);
    free(all);
    fl_chat_format format;
    fl_clear_error();
    if (fl_tokenizer_chat_format(tok, &format) == 0) {
        fl_chat_message msgs[3] = {{"system", "Be brief.", 0}, {"user", "Hi <|im_end|>", 0}, {"assistant", " Hello! ", 0}};
        for (int gen = 0; gen < 2; gen++) {
            fl_chat_rendered r;
            fl_clear_error();
            int status = fl_tokenizer_chat_render(tok, FL_CHAT_AUTO, msgs + gen, 3 - (size_t)gen, gen, &r);
            fz_check(status, "fl_tokenizer_chat_render");
            if (status) continue;
            fz_check_rendered(tok, &r);
            fl_chat_rendered_free(&r);
        }
    }
}

/* Loads dir; a failure must be an input error (and leave no tokenizer); a success is used. */
static inline void fz_tokenizer_load_and_use(const char *dir) {
    fl_tokenizer *tok = (fl_tokenizer *)1;
    fl_clear_error();
    int status = fl_tokenizer_load(&tok, dir);
    fz_check(status, "fl_tokenizer_load");
    if (status) {
        if (tok) abort();
        return;
    }
    fz_tokenizer_use(tok);
    fl_tokenizer_free(tok);
}

/* ---- the real tokenizers ---------------------------------------------------------------------- */

typedef struct {
    const char *name;
    fl_tokenizer *tok;
    int roundtrip; /* byte-level, all 256 bytes, no normalizer: decode(encode(text)) == text (valid UTF-8) */
} fz_model;

/* Loads (once) the tokenizers that are present; returns how many (the test tokenizer at least). */
static inline int fz_real_tokenizers(fz_model **out) {
    static fz_model models[8];
    static int n = -1;
    if (n < 0) {
        static const struct { const char *dir; int roundtrip; } all[] = {
            {"tests/fixtures/train/tok", 1},
            {"models/SmolLM2-135M-Instruct", 0}, /* lacks some control bytes: HF drops them too */
            {"models/TinyLlama-1.1B-Chat-v1.0", 0},
            {"models/Llama-3.2-1B", 1},
            {"models/Qwen2.5-0.5B", 0},
        };
        const char *shared = fz_shared_dir();
        n = 0;
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
            char dir[512];
            int in_shared = !strncmp(all[i].dir, "models/", 7);
            if (in_shared && !shared) continue;
            snprintf(dir, sizeof dir, "%s%s%s", in_shared ? shared : "", in_shared ? "/" : "", all[i].dir);
            fl_tokenizer *tok;
            if (fl_tokenizer_load(&tok, dir)) {
                fprintf(stderr, "fuzz: %s not used: %s\n", dir, fl_last_error());
                continue;
            }
            models[n++] = (fz_model){all[i].dir, tok, all[i].roundtrip};
        }
        if (n == 0) {
            fprintf(stderr, "fuzz: no tokenizer loaded (run from the project root)\n");
            abort();
        }
    }
    *out = models;
    return n;
}

#endif
