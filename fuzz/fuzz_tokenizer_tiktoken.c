/* fuzz_tokenizer_tiktoken.c — fuzzes loading a tiktoken tokenizer.model (Llama-3 style: one
 * `base64 rank` line per token, merges derived from the ranks; src/tokenizer/load_hf.c) with the
 * tokenizer_config.json that supplies its special tokens. The input is two files separated by
 * FZ_SEP: tokenizer.model, then tokenizer_config.json. A folder that loads is then used as in
 * fuzz_tokenizer_json.
 */
/* fuzz-dict: json tokenizer */
#include "fuzz.h"

#include "fuzz_tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_part p[2];
    int n = fz_split(data, size, p, 2);
    fz_clear();
    fz_write("tok/tokenizer.model", p[0].data, p[0].size);
    if (n > 1) fz_write("tok/tokenizer_config.json", p[1].data, p[1].size);
    fz_tokenizer_load_and_use(fz_path("tok"));
    return 0;
}
