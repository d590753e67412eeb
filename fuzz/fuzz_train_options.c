/* fuzz_train_options.c — fuzzes the training options file (`fastlora train --config run.json`,
 * src/train/options.c): the input is the JSON file. It is applied over the defaults and validated;
 * each step must succeed or fail with an input error. Options that apply are written back as
 * train_config.json, read again over fresh defaults and written again: the two files are equal
 * byte for byte (the file repeats the run).
 */
/* fuzz-dict: json options */
#include "fuzz.h"
#include "fuzz_options_roundtrip.h"

#include "train/options.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fz_write("run.json", data, size);
    fl_train_options o;
    fl_train_options_default(&o);
    fl_clear_error();
    int status = fl_train_options_load_json(&o, path);
    fz_check(status, "fl_train_options_load_json");
    if (!status) fz_options_roundtrip(&o);
    fl_train_options_free(&o);
    return 0;
}
