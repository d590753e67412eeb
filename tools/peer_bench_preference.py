#!/usr/bin/env python3
"""TRL peer benchmark for preference tuning: the same training run as `fastlora train --objective`, timed
step by step, for the side-by-side figures of docs/BENCHMARKS.md.

    python3 tools/peer_bench_preference.py --model /tmp/s260 --data /tmp/pairs.jsonl --objective dpo \\
        --batch 8 --seq 256 --steps 40 --warmup 5 --threads 1

TRL 1.16's DPOTrainer (dpo, ipo) or trl.experimental ORPOTrainer / CPOTrainer (orpo, simpo) on an HF model
folder (weights loaded, --dtype float32 or bfloat16 on the CPU), a fresh PEFT LoRA (r, alpha, dropout 0, every linear of the
Llama layers), the model's tokenizer, sequential sampling, AdamW at a constant lr, max_length = --seq,
precompute_ref_log_probs False (TRL's default: the reference forward in every step; fastlora computes it
once per pair, the first time the pair is seen, which over the first epoch is the same work).
Steps after --warmup are timed by a callback (on_step_begin .. on_step_end); prints one JSON line:
{"tool": "trl", "objective", "batch", "seq", "steps", "warmup", "threads", "pairs_per_s", "ms_per_step",
 "step_ms": [...], "versions": {...}}.
"""
import argparse
import json
import statistics
import time

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--objective", default="dpo", choices=["dpo", "ipo", "orpo", "simpo"])
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rank", type=int, default=8)
    ap.add_argument("--alpha", type=float, default=16)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--beta", type=float, default=0.1)
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"],
                    help="the frozen base weights (the LoRA parameters stay float32, PEFT's default)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)

    import datasets
    import peft
    import transformers
    import trl
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback

    tok = AutoTokenizer.from_pretrained(a.model)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    model = AutoModelForCausalLM.from_pretrained(a.model, dtype=getattr(torch, a.dtype))
    lora = LoraConfig(r=a.rank, lora_alpha=a.alpha, lora_dropout=0.0, bias="none", task_type="CAUSAL_LM",
                      target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"])
    model = get_peft_model(model, lora)
    rows = [json.loads(l) for l in open(a.data, encoding="utf-8")]
    ds = datasets.Dataset.from_list(rows[: a.batch * (a.steps + 1)])

    common = dict(output_dir="/tmp/peer-pref-out", per_device_train_batch_size=a.batch, gradient_accumulation_steps=1,
                  max_steps=a.steps, learning_rate=a.lr, lr_scheduler_type="constant", warmup_steps=0,
                  logging_steps=10 ** 9, save_strategy="no", report_to="none", bf16=False, fp16=False,
                  gradient_checkpointing=False, use_cpu=True, dataloader_num_workers=0, seed=1,
                  train_sampling_strategy="sequential", max_length=a.seq, beta=a.beta)
    if a.objective in ("dpo", "ipo"):
        cfg = trl.DPOConfig(loss_type=a.objective if a.objective == "ipo" else "sigmoid", **common)
        trainer_cls = trl.DPOTrainer
    elif a.objective == "orpo":
        from trl.experimental.orpo import ORPOConfig, ORPOTrainer
        cfg, trainer_cls = ORPOConfig(max_completion_length=None, **common), ORPOTrainer
    else:
        from trl.experimental.cpo import CPOConfig, CPOTrainer
        cfg, trainer_cls = CPOConfig(loss_type="simpo", cpo_alpha=0.0, max_completion_length=None, **common), CPOTrainer

    times = []

    class Timer(TrainerCallback):
        def on_step_begin(self, args, state, control, **kw):
            self.t0 = time.perf_counter()

        def on_step_end(self, args, state, control, **kw):
            times.append(time.perf_counter() - self.t0)

    trainer = trainer_cls(model=model, args=cfg, train_dataset=ds, processing_class=tok, callbacks=[Timer()])
    trainer.train()
    timed = times[a.warmup:]
    med = statistics.median(timed)
    print(json.dumps({"tool": "trl", "objective": a.objective, "dtype": a.dtype, "batch": a.batch, "seq": a.seq, "steps": len(timed),
                      "warmup": a.warmup, "threads": a.threads, "pairs_per_s": a.batch / med, "ms_per_step": med * 1e3,
                      "step_ms": [round(t * 1e3, 2) for t in timed],
                      "versions": {"trl": trl.__version__, "transformers": transformers.__version__,
                                   "peft": peft.__version__, "torch": torch.__version__}}))


if __name__ == "__main__":
    main()
