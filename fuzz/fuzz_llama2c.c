/* fuzz_llama2c.c — fuzzes `fastlora convert-llama2c` (src/train/llama2c.c): a llama2.c checkpoint
 * (.bin: 7 int32 sizes, then f32 tensors) and optionally its tokenizer (.bin: max length, then
 * score, length, bytes per token). The input is one or two files separated by FZ_SEP: the
 * checkpoint, then the tokenizer. The conversion must succeed or fail with an input error; a folder
 * it writes must then load: config.json, the weights against it, and the tokenizer (used as in
 * fuzz_tokenizer_json).
 */
/* fuzz-dict: tokenizer */
#include "fuzz.h"

#include "fuzz_tokenizer.h"
#include "model/config.h"
#include "model/weights.h"
#include "train/llama2c.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_part p[2];
    int n = fz_split(data, size, p, 2);
    fz_clear();
    const char *ckpt = fz_write("model.bin", p[0].data, p[0].size);
    const char *tok = n > 1 ? fz_write("tok.bin", p[1].data, p[1].size) : NULL;
    const char *out = fz_path("out");
    fl_clear_error();
    int status = fl_llama2c_convert(ckpt, tok, out, 0);
    fz_check(status, "fl_llama2c_convert");
    if (status) return 0;
    fl_model_config cfg;
    fl_base_weights w;
    if (fl_config_load(&cfg, fz_path("out/config.json")) || fl_weights_load(&w, &cfg, out, fl_backend_cpu(), (fl_weights_reserve){0, 0})) {
        fprintf(stderr, "fuzz: the converted model does not load: %s\n", fl_last_error());
        abort();
    }
    fl_weights_free(&w);
    if (tok) {
        fl_tokenizer *t;
        if (fl_tokenizer_load(&t, out)) {
            fprintf(stderr, "fuzz: the converted tokenizer does not load: %s\n", fl_last_error());
            abort();
        }
        fz_tokenizer_use(t);
        fl_tokenizer_free(t);
    }
    return 0;
}
