/* bench_run.h — `fastlora bench` as a library: LoRA training throughput on a fixed batch.
 *
 * The definition (docs/BENCHMARKS.md, first section; printed with every result): batch B x T of
 * token ids drawn from a seeded RNG over the vocabulary, every token trained (targets are the next
 * ids of the same random stream), LoRA rank R / alpha on the chosen projections (default all
 * seven), frozen base weights in the backend's weight type (bf16 on CUDA; bf16 or f32 on the CPU,
 * --dtype), AdamW on the LoRA parameters; `warmup` steps untimed, then the median of `steps` timed
 * steps, each forward + backward + optimizer step with the device synchronized; train tok/s =
 * B·T / median step time.
 *
 * fl_bench_run prints train tok/s (median, min–max), ms/step, the FLOP count (engine/flops.h) and
 * MFU (GPU: of the card's dense bf16 peak from data/gpus.csv; CPU: of the backend's measured sgemm
 * rate, labelled as such), peak memory, the device as the backend describes it, and the published
 * board's figure and our ratio where it has this weights x device. A sweep tries batch sizes /
 * sequence lengths, skipping those whose predicted memory does not fit, and names the fastest.
 * json_path appends one record per run (bench/records.h). Ctrl-C stops after the current step and
 * prints what was measured. Under mpirun/srun (dist/dist.h, joined by the caller): see
 * bench_point.h. Not the trainer: no data, no checkpoints. Not the option parsing (cli/cmd_bench.c). */
#ifndef FL_BENCH_RUN_H
#define FL_BENCH_RUN_H

#include <stdint.h>

#define FL_BENCH_DEFINITION "fastlora-bench-1"

typedef struct {
    const char *model_dir, *preset;   /* exactly one (the command defaults preset to smollm2-135m) */
    const char *targets, *json_path, *device, *dtype, *weights, *reference_path, *quant;
    const char *mem_limit;            /* as typed (NULL: none given); mem_limit_bytes is its value */
    const char *objective;            /* NULL or "sft": next-token loss; dpo, ipo, orpo, simpo: --batch pairs, 2 rows each */
    double mem_limit_bytes;           /* 0: available RAM / free device memory */
    int batch, seq, rank, steps, warmup, threads, rslora, no_sgemm, recompute; /* seq 0: 2048 GPU, 256 CPU */
    uint64_t seed;
    float alpha, dropout;
    char sweep_spec[512];             /* the sweep's words as given, "" when there is none */
    int sweep_batch[32], n_sweep_batch, sweep_seq[32], n_sweep_seq; /* 0 values: batch / seq alone */
} fl_bench_options;

/* Runs the benchmark o describes (filling its defaults in place), printing as it goes; errors are
 * one "fastlora: bench: ..." line on stderr. Returns 0, 2 for bad input or a setting that does not
 * fit, 130 when interrupted, or a loader's status. */
int fl_bench_run(fl_bench_options *o);

#endif
