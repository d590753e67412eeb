/* fuzz_yaml_config.c — fuzzes the YAML config reader (`fastlora train --config run.yaml`,
 * src/train/config_yaml.c: our option names and Axolotl's keys, through libyaml): the input is the
 * YAML file. It is applied over the defaults and validated; each step must succeed or fail with an
 * input error (one line). Options that apply are written as train_config.json, which must read back
 * through the JSON reader and write again byte for byte the same (a YAML run repeats from its
 * train_config.json). Not the JSON reader's own harness (fuzz_train_options.c).
 */
/* fuzz-dict: yaml options */
#include "fuzz.h"
#include "fuzz_options_roundtrip.h"

#include "train/config_yaml.h"
#include "train/options.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fl_train_options o;
    fl_train_options_default(&o);
    fl_clear_error();
    FILE *notes = fopen("/dev/null", "w");
    int status = fl_train_options_load_yaml_text(&o, "run.yaml", (const char *)data, size, notes);
    if (notes) fclose(notes);
    fz_check(status, "fl_train_options_load_yaml_text");
    if (status && strchr(fl_last_error(), '\n')) {
        fprintf(stderr, "fuzz: a YAML error of more than one line: %s\n", fl_last_error());
        abort();
    }
    if (!status) fz_options_roundtrip(&o);
    fl_train_options_free(&o);
    return 0;
}
