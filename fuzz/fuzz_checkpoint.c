/* fuzz_checkpoint.c — fuzzes what `train --resume` reads (src/train/checkpoint.c,
 * src/train/metrics.c): a run folder with checkpoints/step-00000010/{trainer_state.json,
 * optimizer.safetensors, adapter_config.json, adapter_model.safetensors} and metrics.jsonl. The
 * input is up to five files separated by FZ_SEP in that order; an EMPTY part stands for the valid
 * file of a checkpoint saved at start-up from a tiny model (r 4, every projection), so an input can
 * corrupt one file and keep the rest. Resume = find the checkpoint, load it into the model, reopen
 * metrics.jsonl cut back to the checkpoint's step and draw the loss curve; each step must succeed
 * or fail with an input error. With FZ_SEEDS_OUT set it writes one seed per file and exits.
 */
/* fuzz-dict: json safetensors lora */
#include "fuzz.h"

#include "engine/model.h"
#include "train/checkpoint.h"
#include "train/metrics.h"

static fl_model model;
static const char *names[5] = {"trainer_state.json", "optimizer.safetensors", "adapter_config.json",
                               "adapter_model.safetensors", "metrics.jsonl"};
static uint8_t *valid[5];
static size_t valid_size[5];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    fl_model_config c;
    memset(&c, 0, sizeof c);
    c.vocab_size = 64;
    c.hidden_size = 32;
    c.intermediate_size = 48;
    c.n_layers = 2;
    c.n_heads = 4;
    c.n_kv_heads = 2;
    c.head_dim = 8;
    c.max_position_embeddings = 128;
    c.rope_theta = 10000.0;
    c.rms_norm_eps = 1e-5f;
    fl_lora_config lc = fl_lora_config_default();
    lc.rank = 4;
    lc.alpha = 8;
    fl_model_init_random(&model, &c, 5, fl_backend_cpu(), &lc);
    fl_train_state st = {.step = 10, .adam_step = 10, .micro_step = 20, .epoch = 0, .row = 40, .tokens = 5000,
                         .n_params = model.lora.n, .seed = 1234};
    char *saved = NULL;
    if (fl_checkpoint_save(fz_path("init"), &model, &st, "fuzz/base", 3, 0, &saved)) {
        fprintf(stderr, "fuzz: saving the valid checkpoint: %s\n", fl_last_error());
        abort();
    }
    for (int i = 0; i < 4; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", saved, names[i]);
        valid[i] = fz_slurp(path, &valid_size[i]);
    }
    free(saved);
    static const char metrics[] =
        "{\"step\": 5, \"loss\": 3.5, \"lr\": 0.0002, \"grad_norm\": 1.5, \"tokens\": 2500, \"tok_per_s\": 1000.0}\n"
        "{\"step\": 10, \"loss\": 3.25, \"lr\": 0.0002, \"grad_norm\": 1.25, \"tokens\": 5000, \"tok_per_s\": 1000.0}\n"
        "{\"step\": 10, \"eval_loss\": 3.3, \"eval_tokens\": 800}\n"
        "{\"step\": 15, \"loss\": 3.0, \"lr\": 0.0002, \"grad_norm\": 1.0, \"tokens\": 7500, \"tok_per_s\": 1000.0}\n";
    valid[4] = (uint8_t *)metrics;
    valid_size[4] = sizeof metrics - 1;
    fz_clear();
    if (fz_seeds_out()) { /* one seed per file: that file given, the others empty (= valid) */
        for (int i = 0; i < 5; i++) {
            fz_part p[5] = {{0}};
            p[i] = (fz_part){valid[i], valid_size[i]};
            fz_write_seed(names[i], p, i + 1);
        }
        exit(0);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_part p[5];
    int n = fz_split(data, size, p, 5);
    fz_clear();
    for (int i = 0; i < 5; i++) {
        char name[128];
        snprintf(name, sizeof name, i == 4 ? "run/%s" : "run/checkpoints/step-00000010/%s", names[i]);
        int given = i < n && p[i].size > 0;
        fz_write(name, given ? p[i].data : valid[i], given ? p[i].size : valid_size[i]);
    }
    const char *run = fz_path("run");
    char *dir = NULL;
    fl_clear_error();
    int status = fl_checkpoint_find(run, &dir);
    fz_check(status, "fl_checkpoint_find");
    if (status) return 0;
    fl_train_state st;
    fl_clear_error();
    status = fl_checkpoint_load(dir, &model, &st);
    fz_check(status, "fl_checkpoint_load");
    free(dir);
    if (status) return 0;
    if (st.step < 0 || st.adam_step < 0 || st.n_params != model.lora.n) abort();
    fl_metrics mt;
    fl_clear_error();
    status = fl_metrics_open(&mt, run, st.step);
    fz_check(status, "fl_metrics_open");
    if (!status) {
        fl_clear_error();
        status = fl_metrics_write_svg(&mt, fz_path("run/loss.svg"), "fuzz");
        fz_check(status, "fl_metrics_write_svg");
        fl_metrics_close(&mt);
    }
    return 0;
}
