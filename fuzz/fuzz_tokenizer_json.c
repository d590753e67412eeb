/* fuzz_tokenizer_json.c — fuzzes loading a tokenizer.json folder (src/tokenizer/load_hf.c: the
 * model, normalizer, pre-tokenizer with its regexes, decoder, post-processor and added tokens) with
 * its tokenizer_config.json and chat_template.jinja. The input is up to three files separated by
 * FZ_SEP: tokenizer.json, then tokenizer_config.json, then chat_template.jinja (absent files are
 * not written). A folder that loads is then used: encode a fixed text with every flag, decode every
 * id in [-1, vocab], and render a short chat when the template names a known format.
 */
/* fuzz-dict: json tokenizer chat */
#include "fuzz.h"

#include "fuzz_tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_part p[3];
    int n = fz_split(data, size, p, 3);
    fz_clear();
    fz_write("tok/tokenizer.json", p[0].data, p[0].size);
    if (n > 1) fz_write("tok/tokenizer_config.json", p[1].data, p[1].size);
    if (n > 2) fz_write("tok/chat_template.jinja", p[2].data, p[2].size);
    fz_tokenizer_load_and_use(fz_path("tok"));
    return 0;
}
