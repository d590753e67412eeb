/* test_plan.c — the planner: memory arithmetic against hand counts (two presets), consistency with
 * the engine's tables, fit / largest micro-batch / recompute, the roofline's FLOPs, calibration
 * from bench records, time formatting, and the JSON document's shape. */
#include <jansson.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/error.h"
#include "engine/activations.h"
#include "engine/flops.h"
#include "engine/model.h"
#include "plan/plan.h"
#include "plan/plan_report.h"
#include "backend/cpu/cpu_plan.h"
#include "test.h"

#define FIX "tests/fixtures/plan/"

static fl_lora_config lora_r16(void) {
    fl_lora_config lc = fl_lora_config_default();   /* r 16, all seven projections */
    lc.rank = 16;
    return lc;
}

/* SmolLM2-135M on CUDA at B=4, T=512, r=16, every category counted by hand. */
TEST(plan_memory_hand_count_smollm2_135m_cuda) {
    fl_model_config cfg;
    CHECK_EQ_INT(fl_config_preset(&cfg, "smollm2-135m"), 0);
    fl_lora_config lc = lora_r16();
    /* V 49152, C 576, FF 1536, L 30, NH 9, NKV 3, HS 64 (QD 576, KVD 192), tied.
     * per layer: q,o 576x576 = 331776 each; k,v 192x576 = 110592 each; gate,up,down 1536x576 =
     * 884736 each; 2 norms x 576 -> 3540096; x30 = 106202880; embedding 28311552; final norm 576 */
    double params = 134515008.0;
    CHECK_EQ_INT(fl_config_total_params(&cfg), (long long)params);
    /* LoRA r16 per layer: q,o 16(576+576)=18432; k,v 16(576+192)=12288; gate,up,down 16(576+1536)=33792 */
    double P = 30 * (2 * 18432 + 2 * 12288 + 3 * 33792.0);
    CHECK_EQ_INT(P, 4884480);
    CHECK_EQ_INT(fl_lora_param_count(&cfg, &lc), 4884480);
    fl_plan_memory m = fl_plan_memory_compute(&cfg, &lc, 4, 512, FL_TARGET_CUDA, 0);
    /* bf16, every tensor already 64-byte aligned; the fused q/k/v (960 rows) and gate/up (3072 rows)
     * matrices have 3R = 48 and 2R = 32 reserved columns for the LoRA B compute copy */
    double reserved = 30 * (960 * 48 + 3072 * 32.0);
    CHECK_CLOSE(m.weights, (params + reserved) * 2, 0, 0);
    CHECK_CLOSE(m.lora_params, P * (4 + 2), 0, 0);          /* f32 master + bf16 compute copy */
    CHECK_CLOSE(m.lora_grads, P * 4, 0, 0);
    CHECK_CLOSE(m.adamw, P * 8, 0, 0);
    /* activations, N = 2048, W = 1536, bf16 unless f32/i32:
     * residual 31·N·C·2 = 73138176; residual_mid, att: 30·N·576·2 = 70778880 each; x_attn (norm
     * output | x·Aᵀ of q, k, v) 30·N·(576 + 48)·2 = 76677120, x_mlp 30·N·(576 + 32)·2 = 74711040,
     * xa_o, xa_down 30·N·16·2 = 1966080 each; qkv 30·N·960·2 = 117964800; gate_up 30·N·3072·2 =
     * 377487360; rstd_attn, rstd_mlp: 30·N·4 = 245760 each; lse 30·N·9·4 = 2211840;
     * x_final, dx_final, dresidual: N·576·2 = 2359296 each; dx N·(576 + 48)·2 = 2555904;
     * rstd_final N·4 = 8192; dqkv N·960·2 = 3932160; dgate_up N·3072·2 = 12582912;
     * dwide, wide, dropped, lora_tmp: N·1536·2 = 6291456 each; dlora_xa N·16·2 = 65536;
     * ids, targets, pos, seg_start, win_start: N·4 = 8192 each */
    double act = 73138176.0 + 2 * 70778880.0 + 76677120.0 + 74711040.0 + 2 * 1966080.0 + 117964800.0 +
                 377487360.0 + 2 * 245760.0 + 2211840.0 + 3 * 2359296.0 + 2555904.0 + 8192.0 + 3932160.0 +
                 12582912.0 + 4 * 6291456.0 + 65536.0 + 5 * 8192.0;
    CHECK_CLOSE(act, 919601152.0, 0, 0);
    CHECK_CLOSE(m.activations, act, 0, 0);
    CHECK_CLOSE((double)fl_activations_bytes(&cfg, 16, 4, 512, 2, 0), act, 0, 0);   /* the engine agrees */
    /* CUDA LM head (backend/cuda/cuda_plan.h): 256 MiB / (V·2) = 2730 rows -> 2688 -> all N = 2048
     * rows of bf16 logits + N f32 losses */
    CHECK_CLOSE(m.logits, 2048.0 * 49152 * 2 + 2048 * 4, 0, 0);
    CHECK_CLOSE(m.attn_ws, 4.0 * 9 * 512 * 4, 0, 0);          /* D = rowsum(dout*out), (B, NH, T) f32 */
    CHECK_CLOSE(m.gemm_ws, (32 + 64 + 1) * 1048576.0, 0, 0);  /* cuBLASLt 32 MiB + staging 64 MiB + 1 MiB */
    CHECK_CLOSE(m.context, 500 * 1048576.0, 0, 0);
    double total = (params + reserved) * 2 + P * 18 + act + m.logits + m.attn_ws + m.gemm_ws + m.context;
    CHECK_CLOSE(m.total, total, 0, 1e-15);
    /* recompute (engine/activations.h, LS = 1): the 29 other layers' per-layer tensors are gone —
     * residual_mid, att 2359296 each, x_attn 2555904, x_mlp 2490368, xa_o, xa_down 65536 each, qkv
     * 3932160, gate_up 12582912, rstd_attn, rstd_mlp 8192 each, lse 73728: 26501120 per layer */
    CHECK_CLOSE(m.activations_recompute, act - 29 * 26501120.0, 0, 0);
    CHECK_CLOSE((double)fl_activations_bytes(&cfg, 16, 4, 512, 2, 1), m.activations_recompute, 0, 0);
    CHECK(m.activations_recompute < act / 5);
    fl_plan_memory rc = fl_plan_memory_compute(&cfg, &lc, 4, 512, FL_TARGET_CUDA, FL_PLAN_RECOMPUTE);
    CHECK_CLOSE(rc.total, m.total - act + m.activations_recompute, 0, 1e-15);
}

/* Qwen2.5-7B on the CPU (f32): untied head, q/k/v biases. */
TEST(plan_memory_hand_count_qwen25_7b_cpu) {
    fl_model_config cfg;
    CHECK_EQ_INT(fl_config_preset(&cfg, "qwen2.5-7b"), 0);
    fl_lora_config lc = lora_r16();
    /* V 152064, C 3584, FF 18944, L 28, QD 3584, KVD 512. per layer: q,o 3584² = 12845056 each;
     * k,v 512·3584 = 1835008 each; gate,up,down 18944·3584 = 67895296 each; norms 2·3584; biases
     * 3584+512+512 -> 233057792; x28 = 6525618176; embedding + head 2·152064·3584 = 1089994752; norm 3584 */
    double params = 7615616512.0;
    CHECK_EQ_INT(fl_config_total_params(&cfg), (long long)params);
    /* LoRA: q,o 16(3584+3584) = 114688; k,v 16(3584+512) = 65536; gate,up,down 16(3584+18944) = 360448 */
    double P = 28 * (2 * 114688 + 2 * 65536 + 3 * 360448.0);
    CHECK_EQ_INT(fl_lora_param_count(&cfg, &lc), (long long)P);
    fl_plan_memory m = fl_plan_memory_compute(&cfg, &lc, 1, 256, FL_TARGET_CPU, 0);
    /* + the fused q/k/v (4608 rows) and gate/up (37888 rows) matrices' 48 and 32 reserved columns */
    CHECK_CLOSE(m.weights, (params + 28 * (4608 * 48 + 37888 * 32.0)) * 4, 0, 0);
    CHECK_CLOSE(m.lora_params, P * 4, 0, 0);     /* the compute copy aliases the f32 master on the CPU */
    CHECK_CLOSE(m.lora_grads + m.adamw, P * 12, 0, 0);
    CHECK_CLOSE(m.activations, (double)fl_activations_bytes(&cfg, 16, 1, 256, 4, 0), 0, 0);
    /* cpu_plan.h: 128 MiB / (4·152064) = 220 rows of f32 logits, under 512, so a chunk may take
     * 512 rows (297 MiB, within 512 MiB): N = 256 runs as one chunk */
    CHECK_CLOSE(m.logits, 256.0 * 152064 * 4, 0, 0);
    CHECK_EQ_INT(fl_cpu_lm_head_chunk_rows(256, 152064), 256);
    CHECK_EQ_INT(fl_cpu_lm_head_chunk_rows(2048, 151936), 512);  /* four of 512 */
    CHECK_EQ_INT(fl_cpu_lm_head_chunk_rows(1000, 151936), 500);  /* two equal chunks of <= 512 */
    CHECK_EQ_INT(fl_cpu_lm_head_chunk_rows(1024, 49152), 512);   /* 682 by the 128 MiB budget: two of 512 */
    CHECK_EQ_INT(fl_cpu_lm_head_chunk_rows(4096, 32000), 1024);  /* 1048 by the 128 MiB budget: four of 1024 */
    CHECK_EQ_INT(fl_cpu_lm_head_chunk_rows(2000, 400000), 334);  /* 512 MiB / 1.6 MB = 335 rows: six of 334 */
    CHECK_EQ_INT(fl_cpu_lm_head_chunk_rows(1000, 4000000), 63);  /* huge V: 16 chunks of <= 64 rows */
    CHECK_EQ_INT(fl_cpu_lm_head_chunk_rows(30, 4000000), 30);
    CHECK(m.context == 0 && m.gemm_ws == 0);
}

static fl_gpu_spec fake_gpu(double usable_gib) {
    fl_gpu_spec g;
    memset(&g, 0, sizeof g);
    snprintf(g.name, sizeof g.name, "Test GPU");
    snprintf(g.short_name, sizeof g.short_name, "Test");
    g.vram_gb = usable_gib * 1.0737;
    g.usable_mib = usable_gib * 1024;
    g.mem_bw_gbs = 1000;
    g.bf16_dense_tflops = 100;
    g.price_usd_hr = 1.0;
    g.sms = g.l2_mb = g.year = g.tdp_w = -1;
    return g;
}

TEST(plan_fit_max_batch_and_recompute) {
    fl_plan_request rq = fl_plan_request_default();
    CHECK_EQ_INT(fl_config_preset(&rq.cfg, "qwen2.5-7b"), 0);
    rq.batch = 8;
    rq.seq = 4096;
    rq.tokens = 1e6;
    fl_gpu_spec big = fake_gpu(140), small = fake_gpu(20), tiny = fake_gpu(14);
    fl_plan_result r;
    fl_plan_gpu(&rq, &big, NULL, &r);
    CHECK(r.fits && r.max_batch >= 1);
    double usable = 140 * 1073741824.0;
    /* max_batch is the last B that fits */
    CHECK(fl_plan_memory_compute(&rq.cfg, &rq.lc, r.max_batch, 4096, FL_TARGET_CUDA, 0).total <= usable);
    CHECK(fl_plan_memory_compute(&rq.cfg, &rq.lc, r.max_batch + 1, 4096, FL_TARGET_CUDA, 0).total > usable);
    CHECK(r.max_batch_recompute > r.max_batch);
    CHECK(r.micro_batch * r.grad_accum >= 8);
    /* 7B bf16 weights (15.2 GB) + B=1 x 4096 activations do not fit 20 GiB; recompute does */
    fl_plan_gpu(&rq, &small, NULL, &r);
    CHECK_EQ_INT(r.max_batch, 0);
    CHECK(r.max_batch_recompute >= 1);
    CHECK(r.recompute_needed && r.recompute && r.fits);
    CHECK_STR_CONTAINS(r.note, "recompute");
    rq.recompute = FL_RECOMPUTE_OFF;
    fl_plan_gpu(&rq, &small, NULL, &r);
    CHECK(!r.fits && r.time_s < 0);
    CHECK_STR_CONTAINS(r.note, "does not fit");
    rq.recompute = FL_RECOMPUTE_AUTO;
    fl_plan_gpu(&rq, &tiny, NULL, &r);
    CHECK(!r.fits && r.max_batch_recompute == 0);
}

TEST(plan_step_flops_match_the_engine) {
    fl_model_config cfg;
    CHECK_EQ_INT(fl_config_preset(&cfg, "qwen2.5-1.5b"), 0);
    fl_lora_config lc = lora_r16();
    fl_plan_device d = {.peak_tflops = 989, .mem_bw_gbs = 3350, .compute_eff = 0.5, .bw_eff = 0.7, .launch_us = 4,
                        .step_overhead_ms = 0.5};
    fl_plan_step s = fl_plan_step_time(&cfg, &lc, 4, 1024, 2, 0, &d);
    CHECK_CLOSE(s.gemm_flops + s.attn_flops, fl_model_flops_per_step(&cfg, &lc, 4, 1024), 0, 1e-12);
    /* recompute (engine/model.c) reruns the forward of layers 0 .. L-2 without the down projection's
     * frozen product and its B product: per token and layer 2·(Σ_{p≠down} IC·OC + R·Σ_p IC +
     * R·Σ_{p≠down} OC). qwen2.5-1.5b: C 1536, KVD 256, FF 8960, L 28: IC·OC q,o 2359296 each, k,v
     * 393216 each, gate,up 13762560 each -> 33030144; Σ IC = 6·1536 + 8960 = 18176; Σ_{p≠down} OC
     * = 2·1536 + 2·256 + 2·8960 = 21504; R = 16 -> 33030144 + 16·(18176 + 21504) = 33665024 */
    fl_plan_step r = fl_plan_step_time(&cfg, &lc, 4, 1024, 2, FL_PLAN_RECOMPUTE, &d);
    CHECK_CLOSE(r.gemm_flops - s.gemm_flops, 27.0 * 4096 * 2 * 33665024.0, 0, 1e-12);
    /* and the attention forward (a third of its FLOPs) of those 27 layers */
    CHECK_CLOSE(r.attn_flops, s.attn_flops * (1 + 27.0 / (3 * 28)), 0, 1e-12);
    CHECK(r.step_s > s.step_s);
    /* NF4 adds the dequantization traffic, not FLOPs */
    fl_plan_step q = fl_plan_step_time(&cfg, &lc, 4, 1024, 2, FL_PLAN_NF4, &d);
    CHECK_CLOSE(q.gemm_flops, s.gemm_flops, 0, 1e-15);
    CHECK(q.elementwise_bytes > s.elementwise_bytes && q.step_s > s.step_s);
    /* faster device, faster step; higher efficiency, faster step */
    fl_plan_device d2 = d;
    d2.compute_eff = 0.8;
    CHECK(fl_plan_step_time(&cfg, &lc, 4, 1024, 2, 0, &d2).step_s < s.step_s);
    /* the solver inverts the model */
    int clamped;
    double eff = fl_plan_solve_efficiency(&cfg, &lc, 4, 1024, 2, 0, &d, s.step_s, &clamped);
    CHECK_CLOSE(eff, 0.5, 1e-6, 0);
    CHECK(!clamped);
}

TEST(plan_records_calibrate_and_measure) {
    fl_gpu_catalog cat;
    if (fl_gpu_catalog_load(&cat, "data/gpus.csv")) SKIP("data/gpus.csv not found");
    fl_plan_calibration cal;
    CHECK_EQ_INT(fl_plan_calibration_load(&cal, FIX "records.jsonl", &cat), 0);
    CHECK_EQ_INT(cal.n, 1);            /* the peer tool's record and the unknown model are skipped */
    CHECK_EQ_INT(cal.n_skipped, 2);
    CHECK_STR_CONTAINS(cal.notes, "line 2: another tool's record");
    CHECK_STR_CONTAINS(cal.notes, "line 3: unknown model");
    CHECK_EQ_INT(cal.n_cuda, 1);
    fl_plan_request rq = fl_plan_request_default();
    CHECK_EQ_INT(fl_config_preset(&rq.cfg, "smollm2-135m"), 0);
    rq.batch = 4;
    rq.seq = 512;
    rq.tokens = 120000.0 * 3600;   /* one hour at the measured rate */
    const fl_gpu_spec *h100 = fl_gpu_catalog_find(&cat, "H100 SXM"), *l4 = fl_gpu_catalog_find(&cat, "L4");
    fl_plan_result r;
    fl_plan_gpu(&rq, h100, &cal, &r);
    CHECK(r.measured);
    CHECK_CLOSE(r.tok_s, 120000.0, 0, 1e-12);
    CHECK_STR_CONTAINS(r.tok_s_source, "measured");
    CHECK_CLOSE(r.time_s, 3600, 0, 1e-9);
    CHECK_CLOSE(r.cost_usd, 2.69, 0, 1e-9);
    /* the calibrated model reproduces the record it was calibrated on */
    fl_plan_device d = fl_plan_device_for(h100, FL_TARGET_CUDA, &cal, (char[160]){0}, 160);
    CHECK_CLOSE(fl_plan_step_time(&rq.cfg, &rq.lc, 4, 512, 2, 0, &d).tok_s, 120000.0, 0, 1e-3);
    fl_plan_gpu(&rq, l4, &cal, &r);
    CHECK(!r.measured);
    CHECK_STR_CONTAINS(r.tok_s_source, "calibrated on 1 CUDA record");
    rq.seq = 256;   /* another run on the H100: modelled, calibrated on this device */
    fl_plan_gpu(&rq, h100, &cal, &r);
    CHECK(!r.measured);
    CHECK_STR_CONTAINS(r.tok_s_source, "of this device");
    fl_plan_calibration_free(&cal);
    fl_gpu_catalog_free(&cat);
}

/* A record carries its run's quant and recompute (bench --json writes both): the efficiency is
 * solved with them, the --check memory column models them, and a record is the measurement only
 * of a plan with the same ones. Before, every record was taken as a float base without recompute:
 * an NF4 + recompute record calibrated the float model and stood in for the float run. */
TEST(plan_records_keep_quant_and_recompute) {
    fl_gpu_catalog cat;
    if (fl_gpu_catalog_load(&cat, "data/gpus.csv")) SKIP("data/gpus.csv not found");
    fl_plan_calibration cal;
    CHECK_EQ_INT(fl_plan_calibration_load(&cal, FIX "records-nf4.jsonl", &cat), 0);
    CHECK_EQ_INT(cal.n, 2);
    CHECK_STR_CONTAINS(cal.notes, "line 3: unknown quant");
    CHECK_EQ_INT(cal.recs[0].mode, 0);
    CHECK_EQ_INT(cal.recs[1].mode, FL_PLAN_NF4 | FL_PLAN_RECOMPUTE);
    const fl_gpu_spec *h100 = fl_gpu_catalog_find(&cat, "H100 SXM");
    /* the solved efficiency reproduces the NF4 + recompute record's step time with its own mode */
    fl_plan_device d = fl_plan_device_for(h100, FL_TARGET_CUDA, NULL, (char[160]){0}, 160);
    d.compute_eff = cal.recs[1].efficiency;
    CHECK(cal.recs[1].efficiency > 0.01 && cal.recs[1].efficiency < 1.0);   /* not clamped */
    CHECK_CLOSE(fl_plan_step_time(&cal.recs[1].cfg, &cal.recs[1].lc, 4, 512, 2, FL_PLAN_NF4 | FL_PLAN_RECOMPUTE, &d).step_s,
                29.2571429e-3, 0, 1e-6);
    fl_plan_request rq = fl_plan_request_default();
    CHECK_EQ_INT(fl_config_preset(&rq.cfg, "smollm2-135m"), 0);
    rq.batch = 4;
    rq.seq = 512;
    rq.tokens = 1e6;
    fl_plan_result r;
    rq.quant = FL_QUANT_NF4;
    rq.recompute = FL_RECOMPUTE_ON;
    fl_plan_gpu(&rq, h100, &cal, &r);
    CHECK(r.measured);
    CHECK_CLOSE(r.tok_s, 70000.0, 0, 1e-12);
    rq.quant = FL_QUANT_NONE;
    rq.recompute = FL_RECOMPUTE_OFF;
    fl_plan_gpu(&rq, h100, &cal, &r);
    CHECK(r.measured);
    CHECK_CLOSE(r.tok_s, 120000.0, 0, 1e-12);
    rq.recompute = FL_RECOMPUTE_ON;   /* float base with recompute: no record of that run */
    fl_plan_gpu(&rq, h100, &cal, &r);
    CHECK(!r.measured);
    fl_plan_calibration_free(&cal);
    fl_gpu_catalog_free(&cat);
}

TEST(plan_records_bad_input) {
    fl_gpu_catalog cat;
    memset(&cat, 0, sizeof cat);
    fl_plan_calibration cal;
    CHECK_EQ_INT(fl_plan_calibration_load(&cal, FIX "bad_records.jsonl", &cat), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "bad_records.jsonl:2: record: expected one JSON object per line");
    CHECK_EQ_INT(fl_plan_calibration_load(&cal, FIX "missing.jsonl", &cat), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "cannot read " FIX "missing.jsonl: No such file or directory");
    /* a record the board rejects is an error here too, with the board's message */
    CHECK_EQ_INT(fl_plan_calibration_load(&cal, "tests/fixtures/board/bad.jsonl", &cat), FL_ERR_INPUT);
    CHECK_STR_CONTAINS(fl_last_error(), "tests/fixtures/board/bad.jsonl:2: train_tok_s: expected a number > 0, got \"fast\"");
    CHECK_STR_CONTAINS(fl_last_error(), "more bad records");
}

TEST(plan_format_duration) {
    char b[96];
    fl_plan_format_duration(130 * 60, 1, b, sizeof b);
    CHECK(!strcmp(b, "2 h 10 min — an evening"));
    fl_plan_format_duration(3.5 * 86400, 1, b, sizeof b);
    CHECK(!strcmp(b, "3.5 days — a week"));
    fl_plan_format_duration(45, 1, b, sizeof b);
    CHECK(!strcmp(b, "45 s — a moment"));
    fl_plan_format_duration(12 * 60, 1, b, sizeof b);
    CHECK(!strcmp(b, "12 min — a coffee break"));
    fl_plan_format_duration(40 * 60, 0, b, sizeof b);
    CHECK(!strcmp(b, "40 min"));
    fl_plan_format_duration(3600 * 9, 1, b, sizeof b);
    CHECK(!strcmp(b, "9 h — overnight"));
    fl_plan_format_duration(3600 * 30, 1, b, sizeof b);
    CHECK(!strcmp(b, "1.2 days — a weekend"));
    fl_plan_format_duration(86400 * 20, 1, b, sizeof b);
    CHECK(!strcmp(b, "20.0 days — a month"));
    fl_plan_format_duration(86400 * 365.25 * 2.5e40, 1, b, sizeof b);
    CHECK(!strcmp(b, "2.5e+40 years — longer than a year"));   /* no 50-digit day counts */
    fl_plan_format_duration(3599.9, 0, b, sizeof b);
    CHECK(!strcmp(b, "1 h"));   /* no "60 min" */
    fl_plan_format_duration(-1, 1, b, sizeof b);
    CHECK(!strcmp(b, "-"));
    fl_plan_format_bytes(512 * 1048576.0, b, sizeof b);
    CHECK(!strcmp(b, "512.0 MiB"));
    fl_plan_format_bytes(13.5 * 1073741824.0, b, sizeof b);
    CHECK(!strcmp(b, "13.50 GiB"));
}

TEST(plan_json_shape_and_ranking) {
    fl_gpu_catalog cat;
    if (fl_gpu_catalog_load(&cat, "data/gpus.csv")) SKIP("data/gpus.csv not found");
    fl_plan_report rep;
    memset(&rep, 0, sizeof rep);
    rep.rq = fl_plan_request_default();
    CHECK_EQ_INT(fl_config_preset(&rep.rq.cfg, "qwen2.5-7b"), 0);
    rep.rq.tokens = 1e8;
    rep.rq.seq = 2048;
    snprintf(rep.model_label, sizeof rep.model_label, "qwen2.5-7b (preset)");
    fl_plan_result res[3];
    const char *names[3] = {"H100 SXM", "RTX 4090", "T4"};
    for (int i = 0; i < 3; i++) fl_plan_gpu(&rep.rq, fl_gpu_catalog_find(&cat, names[i]), NULL, &res[i]);
    rep.res = res;
    rep.n = 3;
    json_t *j = fl_plan_report_json(&rep);
    CHECK(json_is_string(json_object_get(j, "tool")));
    CHECK(json_is_object(json_object_get(j, "request")));
    CHECK(json_is_number(json_object_get(json_object_get(j, "memory"), "total")));
    CHECK(json_is_number(json_object_get(json_object_get(j, "memory"), "activations_recompute")));
    json_t *gpus = json_object_get(j, "gpus");
    CHECK_EQ_INT(json_array_size(gpus), 3);
    json_t *h = json_array_get(gpus, 0);
    CHECK(json_is_true(json_object_get(h, "fits")));
    CHECK(json_is_number(json_object_get(json_object_get(h, "throughput"), "train_tok_s")));
    CHECK(json_is_string(json_object_get(h, "time_human")));
    CHECK(json_is_number(json_object_get(h, "cost_usd")));
    CHECK(json_is_number(json_object_get(json_object_get(h, "memory"), "weights")));
    json_t *t4 = json_array_get(gpus, 2);   /* 15 GiB: 7B weights alone are 15.2 GB */
    CHECK(json_is_false(json_object_get(t4, "fits")));
    CHECK(json_is_null(json_object_get(t4, "time_s")));
    json_t *by_time = json_object_get(json_object_get(j, "ranking"), "by_time");
    CHECK(json_array_size(by_time) >= 1);
    CHECK(!strcmp(json_string_value(json_array_get(by_time, 0)), "NVIDIA H100 SXM5 80GB HBM3"));
    const char *rec = json_string_value(json_object_get(j, "recommendation"));
    CHECK_STR_CONTAINS(rec, "Fastest: H100 SXM");
    CHECK_STR_CONTAINS(rec, "Does not fit: T4");
    CHECK_STR_CONTAINS(rec, "default GEMM efficiency");
    json_decref(j);
    /* the HTML page: written atomically, self-contained, with SVG charts */
    char path[] = "/tmp/fastlora_plan_test.html";
    CHECK_EQ_INT(fl_plan_report_html(&rep, path), 0);
    FILE *f = fopen(path, "r");
    static char page[1 << 17];
    size_t n = f ? fread(page, 1, sizeof page - 1, f) : 0;
    page[n] = 0;
    if (f) fclose(f);
    CHECK_STR_CONTAINS(page, "<svg");
    CHECK_STR_CONTAINS(page, "Memory per GPU");
    CHECK(!strstr(page, "<script") && !strstr(page, "http://cdn"));
    remove(path);
    fl_gpu_catalog_free(&cat);
}

TEST(plan_cli_json) {
    const char *bin = getenv("FASTLORA_BIN");
    if (!bin || access(bin, X_OK) != 0) SKIP("FASTLORA_BIN not set");
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s plan --preset smollm2-135m --tokens 10M --gpu 'NVIDIA L4' --json > /tmp/fl_plan.json 2>&1", bin);
    CHECK_EQ_INT(system(cmd), 0);
    json_error_t e;
    json_t *j = json_load_file("/tmp/fl_plan.json", 0, &e);
    CHECK(j != NULL);
    CHECK_EQ_INT(json_array_size(json_object_get(j, "gpus")), 1);
    json_decref(j);
    snprintf(cmd, sizeof cmd, "%s plan --preset smollm2-135m --recompute sometimes > /dev/null 2>&1", bin);
    int rc = system(cmd);
    CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 2);
}

/* NF4 (--quant nf4): the base as weights.c lays it out — the seven projections in NF4 with double
 * quantization, each in its own 64-aligned block (quant/nf4.c's layout: packed nibbles, one 8-bit code
 * per 64 values, one f32 per 256 codes, the 1 KiB dynamic map), embeddings and vectors as before. */
TEST(plan_memory_nf4_hand_count_qwen25_7b_cuda) {
    fl_model_config cfg;
    CHECK_EQ_INT(fl_config_preset(&cfg, "qwen2.5-7b"), 0);
    fl_lora_config lc = lora_r16();
    /* q, o 3584²: 6422528 + 200704 + 784·4 = 3136 + 1024 = 6627392; k, v 512·3584: 917504 + 28672 +
     * 448 + 1024 = 947648; gate, up, down 18944·3584: 33947648 + 1060864 + 16576 + 1024 = 35026112;
     * per layer 120228416, + 2 norms (7168 each) + biases (4608·2 = 9216); embed + head
     * 2·152064·3584·2 = 2179989504; final norm 7168 */
    double weights = 2179989504.0 + 7168 + 28 * (14336 + 9216 + 120228416.0);
    fl_plan_memory m = fl_plan_memory_compute(&cfg, &lc, 4, 1024, FL_TARGET_CUDA, FL_PLAN_NF4);
    CHECK_CLOSE(m.weights, weights, 0, 0);
    CHECK_CLOSE((double)fl_weights_bytes(&cfg, 2, 2, fl_model_weights_reserve(&lc), FL_QUANT_NF4), weights, 0, 0);
    /* the dequantized tile: 64 MiB of bf16 rows of gate (3584 columns): 9362 rows (cuda_plan.h) */
    fl_plan_memory f = fl_plan_memory_compute(&cfg, &lc, 4, 1024, FL_TARGET_CUDA, 0);
    CHECK_CLOSE(m.gemm_ws - f.gemm_ws, 9362.0 * 3584 * 2, 0, 0);
    CHECK(m.weights < f.weights / 2.5);
}

/* The board's question: Qwen2.5-7B, LoRA r16 on all projections at 4 x 1024, NF4 + recompute fits
 * every 16 GB and 24 GB card of the catalog at that micro-batch; in bf16 without recompute none of
 * them holds the 4 x 1024 step (the 24 GB cards fit only smaller micro-batches with accumulation). */
TEST(plan_qwen25_7b_nf4_recompute_fits_16_and_24_gb_cards) {
    fl_gpu_catalog cat;
    if (fl_gpu_catalog_load(&cat, "data/gpus.csv")) SKIP("data/gpus.csv not found");
    fl_plan_request rq = fl_plan_request_default();
    CHECK_EQ_INT(fl_config_preset(&rq.cfg, "qwen2.5-7b"), 0);
    int checked = 0;
    for (int i = 0; i < cat.n; i++) {
        const fl_gpu_spec *g = &cat.gpus[i];
        if (g->vram_gb > 24.5) continue;
        fl_plan_result r;
        rq.quant = FL_QUANT_NF4;
        rq.recompute = FL_RECOMPUTE_ON;
        fl_plan_gpu(&rq, g, NULL, &r);
        CHECK_MSG(r.fits && r.micro_batch == 4 && r.mem.total <= r.usable_bytes, "%s: NF4 + recompute does not fit",
                  g->short_name);
        rq.quant = FL_QUANT_NONE;
        rq.recompute = FL_RECOMPUTE_OFF;
        fl_plan_gpu(&rq, g, NULL, &r);
        CHECK_MSG(!r.fits_requested && (!r.fits || r.micro_batch < 4), "%s: bf16 without recompute fits 4 x 1024",
                  g->short_name);
        checked++;
    }
    CHECK(checked >= 8);   /* T4, V100 16GB, RTX 2000 Ada, RTX 4000 Ada, A10, A10G, L4, RTX 3090, RTX 4090 */
    fl_gpu_catalog_free(&cat);
}
