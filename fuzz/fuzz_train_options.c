/* fuzz_train_options.c — fuzzes the training options file (`fastlora train --config run.json`,
 * src/train/options.c): the input is the JSON file. It is applied over the defaults and validated;
 * each step must succeed or fail with an input error. Options that apply are written back as
 * train_config.json, read again over fresh defaults and written again: the two files are equal
 * byte for byte (the file repeats the run).
 */
/* fuzz-dict: json options */
#include "fuzz.h"

#include "train/options.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fz_write("run.json", data, size);
    fl_train_options o;
    fl_train_options_default(&o);
    fl_clear_error();
    int status = fl_train_options_load_json(&o, path);
    fz_check(status, "fl_train_options_load_json");
    if (!status) {
        fl_clear_error();
        fz_check(fl_train_options_validate(&o), "fl_train_options_validate");
        const char *first = fz_path("first.json"), *second = fz_path("second.json");
        if (fl_train_options_save_json(&o, first)) abort();
        fl_train_options again;
        fl_train_options_default(&again);
        if (fl_train_options_load_json(&again, first)) {
            fprintf(stderr, "fuzz: train_config.json does not read back: %s\n", fl_last_error());
            abort();
        }
        if (fl_train_options_save_json(&again, second)) abort();
        size_t na, nb;
        char *a = (char *)fz_slurp(first, &na), *b = (char *)fz_slurp(second, &nb);
        if (na != nb || memcmp(a, b, na)) {
            fprintf(stderr, "fuzz: train_config.json changes when read and written again:\n%s\n---\n%s\n", a, b);
            abort();
        }
        free(a);
        free(b);
        fl_train_options_free(&again);
    }
    fl_train_options_free(&o);
    return 0;
}
