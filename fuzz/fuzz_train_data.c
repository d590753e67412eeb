/* fuzz_train_data.c — fuzzes the training data readers (src/train/data.c): JSONL files with rows
 * of every shape (text, prompt/completion, alpaca, messages, and anything else), JSON-array files,
 * binary tokens files, plain text, and the --fields renames. The first input byte sets the options:
 * bits 0-2 the format (auto, text, prompt, messages, alpaca, tokens; 6 = auto with 100-byte lines at
 * most; 7 = plain text: bits 3 and 5 pick text-file, text-paragraphs, text-lines, or auto on a file
 * named *.txt), bit 3 --strict, bit 4 an EOS id, bit 5 the vocabulary check, bits 6-7 the tokenizer
 * (the test tokenizer, SmolLM2, TinyLlama, Llama-3.2, as present). The rest is the data file, or a
 * --fields spec, FZ_SEP, the data file. Checks: the load succeeds or fails with an input error; the
 * documents have >= 2 ids inside the vocabulary, 0/1 masks, and the dataset's counts add up; they
 * survive a round trip through the tokens format.
 */
/* fuzz-dict: json data chat */
#include "fuzz.h"

#include "fuzz_tokenizer.h"
#include "train/data.h"

static void check_dataset(const fl_dataset *ds, int32_t vocab) {
    size_t tokens = 0, targets = 0;
    for (size_t d = 0; d < ds->n_docs; d++) {
        const fl_doc *doc = &ds->docs[d];
        if (doc->n < 2) { fprintf(stderr, "fuzz: document %zu has %d ids\n", d, doc->n); abort(); }
        for (int i = 0; i < doc->n; i++) {
            if (doc->ids[i] < 0 || (vocab > 0 && doc->ids[i] >= vocab) || doc->mask[i] > 1) abort();
            if (i) targets += doc->mask[i];
        }
        tokens += (size_t)doc->n;
    }
    if (tokens != ds->n_tokens || targets != ds->n_targets || ds->n_docs + ds->n_bad > ds->n_lines) abort();
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
    fl_tokenizer *tok = models[(data[0] >> 6) % (n_models < 4 ? n_models : 4)].tok;
    fl_data_options opt = fl_data_options_default();
    int f = data[0] & 7, text_kind = (data[0] >> 3 & 1) | (data[0] >> 5 & 1) << 1;
    static const fl_data_format text_formats[4] = {FL_DATA_TEXT_FILE, FL_DATA_TEXT_PARAGRAPHS, FL_DATA_TEXT_LINES,
                                                   FL_DATA_AUTO};
    opt.format = f < 6 ? (fl_data_format)f : f == 6 ? FL_DATA_AUTO : text_formats[text_kind];
    if (f == 6) opt.max_line_bytes = 100;
    opt.strict = data[0] >> 3 & 1;
    opt.eos_id = data[0] >> 4 & 1 ? (fl_tokenizer_eos_id(tok) >= 0 ? fl_tokenizer_eos_id(tok) : 2) : -1;
    opt.vocab_size = data[0] >> 5 & 1 ? fl_tokenizer_vocab_size(tok) : 0;
    opt.log = fz_devnull();
    fz_part p[2];
    int n = fz_split(data + 1, size - 1, p, 2);
    fl_clear_error();
    if (n == 2) {
        char *spec = fz_strndup(&p[0]);
        int status = fl_data_parse_field_map(spec, &opt);
        free(spec);
        fz_check(status, "fl_data_parse_field_map");
        if (status) return 0;
    }
    const char *path = fz_write(f == 7 && text_kind == 3 ? "data.txt" : "data.jsonl", p[n - 1].data, p[n - 1].size);
    fl_dataset ds = {0};
    fl_clear_error();
    int status = fl_dataset_load(&ds, path, tok, &opt);
    fz_check(status, "fl_dataset_load");
    check_dataset(&ds, opt.vocab_size);
    if (!status && ds.n_docs) {
        const char *bin = fz_path("data.tokens");
        if (fl_tokens_file_write(bin, &ds)) abort();
        fl_dataset back = {0};
        fl_data_options t = fl_data_options_default();
        t.format = FL_DATA_TOKENS;
        if (fl_dataset_load(&back, bin, NULL, &t)) { fprintf(stderr, "fuzz: tokens file: %s\n", fl_last_error()); abort(); }
        if (back.n_docs != ds.n_docs || back.n_tokens != ds.n_tokens) abort();
        for (size_t d = 0; d < ds.n_docs; d++)
            if (back.docs[d].n != ds.docs[d].n || memcmp(back.docs[d].ids, ds.docs[d].ids, 4 * (size_t)ds.docs[d].n)) abort();
        fl_dataset_free(&back);
    }
    fl_dataset_free(&ds);
    return 0;
}
