/* fuzz_tokenizer_bpe_files.c — fuzzes loading a vocab.json + merges.txt folder (Qwen2 / GPT-2
 * style, src/tokenizer/load_hf.c) with the tokenizer_config.json that names its class. The input is
 * three files separated by FZ_SEP: vocab.json, merges.txt, tokenizer_config.json (a missing one is
 * not written, which is itself a case the loader must report). A folder that loads is then used as
 * in fuzz_tokenizer_json.
 */
/* fuzz-dict: json tokenizer */
#include "fuzz.h"

#include "fuzz_tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_part p[3];
    int n = fz_split(data, size, p, 3);
    fz_clear();
    fz_write("tok/vocab.json", p[0].data, p[0].size);
    if (n > 1) fz_write("tok/merges.txt", p[1].data, p[1].size);
    if (n > 2) fz_write("tok/tokenizer_config.json", p[2].data, p[2].size);
    fz_tokenizer_load_and_use(fz_path("tok"));
    return 0;
}
