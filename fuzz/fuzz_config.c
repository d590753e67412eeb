/* fuzz_config.c — fuzzes config.json parsing (src/model/config.c, fl_config_load): the input is a
 * whole config.json. A rejected file must be an input error; an accepted one goes through what
 * every command computes from a config before it allocates anything — parameter counts, the RoPE
 * frequencies, the LoRA parameter count and the planner's memory table (train, plan, bench) — where
 * UBSan sees any integer overflow the limits let through. Not the weights (fuzz_model_weights).
 */
/* fuzz-dict: json config */
#include "fuzz.h"

#include "engine/model.h"
#include "lora/lora.h"
#include "model/config.h"
#include "plan/plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fz_write("config.json", data, size);
    fl_model_config cfg;
    fl_clear_error();
    int status = fl_config_load(&cfg, path);
    fz_check(status, "fl_config_load");
    if (status) return 0;
    if (cfg.head_dim <= 0 || cfg.head_dim > FL_MAX_HEAD_DIM || cfg.head_dim % 2) abort();
    volatile int64_t sink = fl_config_matmul_params(&cfg) + fl_config_total_params(&cfg);
    float inv_freq[FL_MAX_HEAD_DIM / 2];
    fl_rope_inv_freq(&cfg, inv_freq);
    fl_lora_config lc = fl_lora_config_default();
    sink += (int64_t)fl_lora_param_count(&cfg, &lc);
    fl_plan_memory cpu = fl_plan_memory_compute(&cfg, &lc, 4, 512, FL_TARGET_CPU, 0);
    fl_plan_memory gpu = fl_plan_memory_compute(&cfg, &lc, 4, 512, FL_TARGET_CUDA, 1);
    sink += (int64_t)(cpu.total > 0) + (int64_t)(gpu.total > 0);
    (void)sink;
    return 0;
}
