/* test_dist_plan.c — `plan --gpus N`: the ring all-reduce cost against hand arithmetic, the link
 * chosen from the catalog (NVLink within its domain, PCIe past it), and what N GPUs change in a plan
 * (aggregate tok/s, time, cost of all N) — consistent with the one-GPU plan of the same request. */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "plan/plan.h"
#include "test.h"

static const fl_gpu_spec *find(const fl_gpu_catalog *cat, const char *name) {
    const fl_gpu_spec *g = fl_gpu_catalog_find(cat, name);
    CHECK_MSG(g != NULL, "%s not in data/gpus.csv", name);
    return g;
}

TEST(dist_plan_allreduce_cost_by_hand) {
    fl_gpu_catalog cat;
    if (fl_gpu_catalog_load(&cat, "data/gpus.csv")) SKIP("data/gpus.csv not found");
    const fl_gpu_spec *h100 = find(&cat, "H100 SXM"), *pcie = find(&cat, "H100 PCIe"), *l40s = find(&cat, "L40S");
    if (!h100 || !pcie || !l40s) { fl_gpu_catalog_free(&cat); return; }
    char link[32];
    /* 1 GB over 8 H100 SXM: NVLink 900 GB/s both ways -> 450 one way x 0.8 = 360 GB/s;
     * 2 x 7/8 x 1e9 / 360e9 = 4.8611 ms, + 14 hops x 10 us = 0.14 ms -> 5.0011 ms */
    double t = fl_plan_allreduce_seconds(h100, 8, 1e9, link, sizeof link);
    CHECK_CLOSE(t, 5.0011e-3, 1e-7, 0);
    CHECK(!strcmp(link, "NVLink"));
    /* H100 PCIe: a 2-way NVLink bridge; 8 GPUs go over PCIe Gen5 (128 -> 64 x 0.8 = 51.2 GB/s):
     * 1.75e9 / 51.2e9 = 34.1797 ms + 0.14 ms */
    t = fl_plan_allreduce_seconds(pcie, 8, 1e9, link, sizeof link);
    CHECK_CLOSE(t, 34.3197e-3, 1e-7, 0);
    CHECK(!strcmp(link, "PCIe"));
    /* ... and 2 of them over the bridge (600 -> 300 x 0.8 = 240 GB/s): 1e9 / 240e9 + 2 x 10 us */
    t = fl_plan_allreduce_seconds(pcie, 2, 1e9, link, sizeof link);
    CHECK_CLOSE(t, 4.1667e-3 + 20e-6, 1e-7, 0);
    CHECK(!strcmp(link, "NVLink"));
    /* no NVLink (L40S, PCIe Gen4: 64 -> 25.6 GB/s), and one GPU costs nothing */
    t = fl_plan_allreduce_seconds(l40s, 4, 1e9, link, sizeof link);
    CHECK_CLOSE(t, 2.0 * 3 / 4 * 1e9 / 25.6e9 + 6 * 10e-6, 1e-9, 0);
    CHECK_EQ_INT(fl_plan_allreduce_seconds(l40s, 1, 1e9, link, sizeof link) == 0, 1);
    fl_gpu_catalog_free(&cat);
}

TEST(dist_plan_gpus_scale_time_and_cost) {
    fl_gpu_catalog cat;
    if (fl_gpu_catalog_load(&cat, "data/gpus.csv")) SKIP("data/gpus.csv not found");
    const fl_gpu_spec *g = find(&cat, "H100 SXM");
    if (!g) { fl_gpu_catalog_free(&cat); return; }
    fl_plan_request rq = fl_plan_request_default();
    CHECK_EQ_INT(fl_config_preset(&rq.cfg, "qwen2.5-1.5b"), 0);
    CHECK_EQ_INT(fl_lora_parse_targets("all", &rq.lc.target_mask), 0);
    rq.batch = 4;
    rq.seq = 1024;
    rq.tokens = 1e8;
    fl_plan_result one, eight;
    fl_plan_gpu(&rq, g, NULL, &one);
    rq.gpus = 8;
    fl_plan_gpu(&rq, g, NULL, &eight);
    CHECK(one.fits && eight.fits);
    /* the per-GPU rate is the one-GPU plan's; a step adds the all-reduce of 4 bytes per LoRA parameter */
    CHECK_CLOSE(eight.tok_s_one, one.tok_s, 0, 1e-12);
    double step_tokens = 4.0 * 1024, step_s = step_tokens / one.tok_s;
    double ar = fl_plan_allreduce_seconds(g, 8, 4.0 * (double)fl_lora_param_count(&rq.cfg, &rq.lc), eight.link,
                                          sizeof eight.link);
    CHECK_CLOSE(eight.allreduce_s, ar, 0, 1e-12);
    CHECK_CLOSE(eight.tok_s, 8 * step_tokens / (step_s + ar), 0, 1e-12);
    CHECK(eight.scaling > 0.5 && eight.scaling < 1);
    /* time: the tokens at the aggregate rate; cost: 8 GPUs for that time */
    CHECK_CLOSE(eight.time_s, one.time_s / (8 * eight.scaling), 0, 1e-9);
    CHECK_CLOSE(eight.cost_usd, eight.time_s / 3600 * 8 * g->price_usd_hr, 0, 1e-9);
    printf("    qwen2.5-1.5b r16 on 8 x H100 SXM: %.0f tok/s (one %.0f), all-reduce %.2f ms, scaling %.3f\n", eight.tok_s,
           one.tok_s, eight.allreduce_s * 1e3, eight.scaling);
    fl_gpu_catalog_free(&cat);
}

TEST(dist_plan_bad_input_gpus) {
    const char *bin = getenv("FASTLORA_BIN");
    if (!bin || access(bin, X_OK) != 0) SKIP("FASTLORA_BIN not set");
    const char *bad[] = {"0", "-3", "5000"};
    for (int i = 0; i < 3; i++) {
        char cmd[512];
        snprintf(cmd, sizeof cmd, "%s plan --preset smollm2-135m --gpus %s 2>&1 | grep -q 'gpus: expected an integer in 1..4096'; "
                 "exit $?", bin, bad[i]);
        CHECK_MSG(system(cmd) == 0, "--gpus %s not refused with the message", bad[i]);
        snprintf(cmd, sizeof cmd, "%s plan --preset smollm2-135m --gpus %s >/dev/null 2>&1", bin, bad[i]);
        int rc = system(cmd);
        CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 2);
    }
}
