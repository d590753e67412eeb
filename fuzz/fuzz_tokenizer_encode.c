/* fuzz_tokenizer_encode.c — fuzzes encoding and decoding with the real tokenizers (Qwen2.5,
 * SmolLM2, TinyLlama, Llama-3.2 from ../shared/models, and the tiny test tokenizer), each loaded
 * once. The first input byte picks the tokenizer (low 3 bits) and the mode (bit 3: decode, bit 4:
 * FL_ENCODE_ADD_SPECIAL, bit 5: FL_ENCODE_SPLIT_SPECIAL, bit 6: skip_special when decoding); the
 * rest is the text to encode, or little-endian int32 ids to decode. Checks: encode fails only with
 * an input error, and only for invalid UTF-8; ids lie in the vocabulary and offsets in the text;
 * encoding again (word cache warm) and with offsets gives the same ids; for byte-level tokenizers
 * without a normalizer, decode(encode(text)) is the text; decode returns valid UTF-8.
 */
/* fuzz-dict: tokenizer chat */
#include "fuzz.h"

#include "fuzz_tokenizer.h"

/* Independent of src/tokenizer: 1 when s[0, n) is valid UTF-8 (no overlongs, surrogates, > U+10FFFF). */
static int valid_utf8(const unsigned char *s, size_t n) {
    static const uint32_t min_cp[4] = {0, 0x80, 0x800, 0x10000};
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        size_t need = c < 0x80 ? 0 : (c & 0xE0) == 0xC0 ? 1 : (c & 0xF0) == 0xE0 ? 2 : (c & 0xF8) == 0xF0 ? 3 : 4;
        if (need == 4 || need > n - i - 1) return 0;
        uint32_t cp = need == 0 ? c : need == 1 ? c & 0x1F : need == 2 ? c & 0x0F : c & 0x07;
        for (size_t k = 1; k <= need; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return 0;
            cp = cp << 6 | (s[i + k] & 0x3F);
        }
        if (cp < min_cp[need] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
        i += need + 1;
    }
    return 1;
}

static void encode_ids(fl_tokenizer *tok, const char *text, size_t len, int flags, int offsets, fl_token_ids *ids) {
    memset(ids, 0, sizeof *ids);
    ids->want_offsets = offsets;
    fl_clear_error();
    int status = fl_tokenizer_encode(tok, text, len, flags, ids);
    fz_check(status, "fl_tokenizer_encode");
    if (status && valid_utf8((const unsigned char *)text, len)) {
        fprintf(stderr, "fuzz: valid UTF-8 rejected: %s\n", fl_last_error());
        abort();
    }
    if (status) ids->n = SIZE_MAX; /* marks a rejected text */
    else fz_check_ids(tok, ids, len);
}

/* The tokenizers load here, before the clock of -timeout starts. */
int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    fz_model *models;
    fz_real_tokenizers(&models);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    fz_model *models;
    int n_models = fz_real_tokenizers(&models);
    const fz_model *m = &models[(data[0] & 7) % n_models];
    int decode = data[0] >> 3 & 1, flags = (data[0] >> 4 & 1 ? FL_ENCODE_ADD_SPECIAL : 0) |
                                         (data[0] >> 5 & 1 ? FL_ENCODE_SPLIT_SPECIAL : 0);
    int skip = data[0] >> 6 & 1;
    data++;
    size--;
    if (decode) {
        size_t n = size / 4;
        int32_t *ids = malloc((n ? n : 1) * sizeof *ids);
        memcpy(ids, data, n * 4);
        char *text = NULL;
        size_t len = 0;
        fl_clear_error();
        int status = fl_tokenizer_decode(m->tok, ids, n, skip, &text, &len);
        fz_check(status, "fl_tokenizer_decode");
        if (!status && (!text || strlen(text) > len || !valid_utf8((const unsigned char *)text, len))) abort();
        free(text);
        free(ids);
        return 0;
    }
    char *text = malloc(size + 1); /* a copy of exactly the text: ASan sees a read past its end */
    memcpy(text, data, size);
    fl_token_ids a, b, c;
    encode_ids(m->tok, text, size, flags, 1, &a);
    encode_ids(m->tok, text, size, flags, 0, &b);
    encode_ids(m->tok, text, size, flags, 1, &c);
    if (a.n != b.n || a.n != c.n) abort();
    if (a.n != SIZE_MAX) {
        if (a.n && (memcmp(a.ids, b.ids, a.n * 4) || memcmp(a.ids, c.ids, a.n * 4) || memcmp(a.offsets, c.offsets, a.n * 8))) {
            fprintf(stderr, "fuzz: %s: encoding the same text twice gave different ids\n", m->name);
            abort();
        }
        char *back = NULL;
        size_t len = 0;
        fl_clear_error();
        if (fl_tokenizer_decode(m->tok, a.ids, a.n, 0, &back, &len)) {
            fprintf(stderr, "fuzz: %s: decoding encoded ids failed: %s\n", m->name, fl_last_error());
            abort();
        }
        if (m->roundtrip && !(flags & FL_ENCODE_ADD_SPECIAL) && (len != size || memcmp(back, text, size))) {
            fprintf(stderr, "fuzz: %s: decode(encode(text)) differs from the text\n", m->name);
            abort();
        }
        free(back);
    }
    if (a.n == SIZE_MAX) a.n = b.n = c.n = 0;
    fl_token_ids_free(&a);
    fl_token_ids_free(&b);
    fl_token_ids_free(&c);
    free(text);
    return 0;
}
