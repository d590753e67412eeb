/* fuzz_preference.c — fuzzes preference rows (src/train/preference_data.c): any JSON as a row, the
 * first input byte picking the tokenizer (low 3 bits, fuzz_tokenizer.h's real ones), max_length
 * (bits 3-6: 0, or 8..120 tokens) and the rules (bit 7: DPO's, ORPO's). Checks: a row gives a pair, a counted drop, or an input error
 * with one line; a pair's ids lie in the vocabulary, its prompt is shorter than max_length and no
 * longer than either sequence, and no sequence exceeds max_length.
 */
/* fuzz-dict: json chat */
#include "fuzz.h"

#include <jansson.h>

#include "fuzz_tokenizer.h"
#include "train/preference_data.h"

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
    fl_pref_options opt = {.max_length = (data[0] >> 3 & 15) * 8, .chat_now = 1700000000,
                           .rules = data[0] >> 7 ? FL_PREF_TOKENIZE_ORPO : FL_PREF_TOKENIZE_DPO};
    json_t *row = json_loadb((const char *)data + 1, size - 1, JSON_ALLOW_NUL | JSON_DECODE_ANY, NULL);
    if (!row) return 0;
    fl_pref_pair p;
    fl_clear_error();
    int rc = fl_pref_encode_row(row, m->tok, &opt, &p);
    if (rc != FL_PREF_DROPPED) fz_check(rc, "fl_pref_encode_row");
    if (rc == 0) {
        int32_t V = fl_tokenizer_vocab_size(m->tok);
        for (int s = 0; s < 2; s++) {
            if (p.prompt_len[s] > p.n[s] || (opt.max_length && (p.n[s] > opt.max_length || p.prompt_len[s] >= opt.max_length))) {
                fprintf(stderr, "fuzz: sequence %d: prompt %d of %d tokens (max_length %d)\n", s, p.prompt_len[s], p.n[s], opt.max_length);
                abort();
            }
            for (int t = 0; t < p.n[s]; t++)
                if (p.ids[s][t] < 0 || p.ids[s][t] >= V) abort();
        }
        fl_pref_pair_free(&p);
    }
    json_decref(row);
    return 0;
}
