/* trainer.h — the training loop: data in, PEFT adapter out.
 *
 *   fl_train_options o; fl_train_options_default(&o); o.data = "train.jsonl"; o.out = "run1";
 *   fl_model m; fl_model_init_dir(&m, "SmolLM2-135M", fl_backend_cpu(), &lora_cfg);
 *   fl_train_result r; int rc = fl_train_run(&o, &m, tok, &r);
 *
 * One optimizer step = grad_accum micro-batches of B rows × T positions; the loss of the step is
 * Σ(token losses) / Σ(counted tokens) over ALL its micro-batches, and each micro-batch's backward is
 * scaled by 1 / (counted tokens of the whole step) — so 1×8 and 8×1 give the same gradient (the
 * per-micro-batch-mean accumulation bug does not exist here). Then NaN/Inf check, clipping, AdamW
 * at the scheduled lr. An epoch ends with a partial step, as in the HF Trainer: the last step of an
 * epoch takes the rows that are left (fewer micro-batches, the last one padded), so each epoch
 * trains every target token of the data exactly once and never wraps into the next; an epoch of R
 * rows is ceil(R / (B·grad_accum)) steps, and --epochs E is the sum of those over the E epochs
 * (each epoch packs its own shuffle, so R may differ a little from epoch to epoch). Eval every eval_every steps (and before the first step, and at the end),
 * checkpoints every save_every steps, at the end and on Ctrl-C (SIGINT). Writes into OUT:
 * adapter_config.json + adapter_model.safetensors (final), checkpoints/step-N/, metrics.jsonl,
 * loss.svg, train_config.json. Returns 0; 130 when interrupted (checkpoint saved); 1 when the loss
 * or gradients became NaN/Inf (nothing saved past the last good checkpoint); 2 for bad input.
 * Several ranks (mpirun/srun, dist/dist.h; docs/DISTRIBUTED.md): a step is grad_accum micro-batches
 * per rank, dealt round-robin (micro-batch i of the step to rank i mod ranks) from the same packed
 * rows on every rank; the LoRA gradients and the loss are summed over the ranks once per step, so
 * the update is the one-process step with ranks x grad_accum micro-batches. Rank 0 alone writes
 * OUT and prints; a resume needs the same rows per step (batch x grad_accum x ranks), any rank count.
 * Not data loading (train/data.h) or packing (train/batch.h).
 */
#ifndef FL_TRAIN_TRAINER_H
#define FL_TRAIN_TRAINER_H

#include "engine/model.h"
#include "tokenizer/tokenizer.h"
#include "train/batch.h"
#include "train/options.h"

typedef struct {
    int steps;                 /* optimizer steps done in total */
    uint64_t tokens;           /* target tokens trained in total (resumed runs: since the start) */
    double last_loss;          /* loss of the last step */
    double first_eval_loss;    /* eval loss before training (NAN: no eval) */
    double last_eval_loss;     /* eval loss at the end (NAN: no eval) */
    size_t n_train_docs, n_eval_docs, n_bad_lines;
} fl_train_result;

/* Forward + backward over n_micro micro-batches, gradients (+=) normalized by the counted tokens of
 * all of them. Returns the summed stats (loss = Σ loss / Σ counted). Micro-batch i of the step draws
 * dropout stream m->micro_step + i + 1, and m->micro_step moves on by n_micro. */
fl_step_stats fl_train_accumulate(fl_model *m, const fl_batch *micro, int n_micro);
/* The share of rank `rank` of `ranks` in a step: only micro-batches i with i mod ranks == rank run,
 * with the dropout streams and the 1 / (counted tokens of ALL n_micro) scale the one-process step
 * gives them, so the sum of the ranks' gradients is that step's gradient. Returns this rank's sums. */
fl_step_stats fl_train_accumulate_share(fl_model *m, const fl_batch *micro, int n_micro, int rank, int ranks);

/* Mean eval loss over the first max_rows rows (0: all), B rows per forward, no dropout. The dropout
 * stream counter is left as it was. */
double fl_train_eval_loss(fl_model *m, const fl_rows *rows, const fl_dataset *ds, int B, size_t max_rows,
                          size_t *n_tokens);

int fl_train_run(const fl_train_options *opt, fl_model *m, fl_tokenizer *tok, fl_train_result *res);

#endif
