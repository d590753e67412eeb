/* flops.h — the training FLOPs of one step, by term: what bench's MFU, plan's predictions and the
 * board divide by. The formula is docs/BENCHMARKS.md's; it counts the work the model needs, not
 * what a kernel happens to do (recomputed activations and padding are not counted).
 * Not here: timing (bench/), peaks (plan/gpu_catalog.h, the backend's description). */
#ifndef FL_ENGINE_FLOPS_H
#define FL_ENGINE_FLOPS_H

#include "lora/lora.h"
#include "model/config.h"

typedef struct {
    double dense;     // frozen matmuls: 4·N_matmul per token (forward 2N, input gradients 2N)
    double attention; // causal attention: 12·keys(T, W)·NH·HS per token per layer (6·T·NH·HS without a window)
    double lora;      // 6·R·(IC + OC) per adapted projection per token
    double total;     // the sum
} fl_flop_terms;

/* The mean number of keys a query sees in a sequence of T positions under a window of W (0: none):
 * the continuous form of (1/T)·Σ_t min(t + 1, W), i.e. T/2 for full causal attention (the 6·T of the
 * attention term is 12 FLOPs times these T/2 keys) and W − W²/(2T) when W < T. */
double fl_attention_mean_keys(int T, int W);

/* The terms for a step of B sequences of T tokens. */
fl_flop_terms fl_model_flop_terms(const fl_model_config *cfg, const fl_lora_config *lc, int B, int T);

/* fl_model_flop_terms(...).total */
double fl_model_flops_per_step(const fl_model_config *cfg, const fl_lora_config *lc, int B, int T);

#endif
