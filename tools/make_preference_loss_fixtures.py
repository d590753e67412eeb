#!/usr/bin/env python3
"""Writes tests/fixtures/pref/losses.json: the preference losses of single pairs as TRL 1.16's own
code computes them, with their gradients by autograd:
  - dpo, ipo: DPOTrainer._compute_loss (loss_type "sigmoid" / "ipo") on a tiny trainer, with
    precomputed reference log-probs and a stand-in model whose per-token log-probs are leaf
    tensors: the loss, ∂loss/∂(Σ completion log-probs) from their gradient, and the metrics TRL
    logs (rewards/chosen, rewards/rejected, rewards/margins, rewards/accuracies, logps/*);
  - orpo: ORPOTrainer.odds_ratio_loss (the preference term; TRL subtracts its mean from the NLL);
  - simpo: CPOTrainer.cpo_loss with loss_type "simpo" (label_smoothing 0, alpha 0).
Log-prob sums are drawn over a range that includes long, unlikely completions, near-equal sides
and lopsided ones; completion lengths 1 to 40.

usage: tools/make_preference_loss_fixtures.py   (from the repository root)
"""
import json
import random
import tempfile
from types import SimpleNamespace

import torch
import trl
from datasets import Dataset
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
from trl import DPOConfig, DPOTrainer
from trl.experimental.cpo import CPOTrainer
from trl.experimental.orpo import ORPOTrainer

OUT = "tests/fixtures/pref/losses.json"


def tiny_model(vocab):
    cfg = LlamaConfig(vocab_size=vocab, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=256)
    torch.manual_seed(0)
    return LlamaForCausalLM(cfg)


def dpo_case(trainer, logp, ref, n):
    T = max(n) + 2  # one prompt token, then the completion, padded
    completion_mask = torch.zeros(2, T, dtype=torch.long)
    for s in range(2):
        completion_mask[s, 1:1 + n[s]] = 1
    # per-token log-probs of the shifted labels: the sum spread evenly over the completion tokens
    lp = torch.zeros(2, T - 1, dtype=torch.float64)
    for s in range(2):
        lp[s, :n[s]] = logp[s] / n[s]
    lp.requires_grad_(True)

    def model(**kwargs):
        return SimpleNamespace(log_probs=lp, entropy=torch.zeros(2, T - 1), mean_logits=torch.zeros(2, T - 1),
                               is_top1=torch.zeros(2, T - 1, dtype=torch.bool))

    inputs = {"input_ids": torch.ones(2, T, dtype=torch.long), "attention_mask": torch.ones(2, T, dtype=torch.long),
              "completion_mask": completion_mask, "ref_chosen_logps": torch.tensor([ref[0]], dtype=torch.float64),
              "ref_rejected_logps": torch.tensor([ref[1]], dtype=torch.float64)}
    from collections import defaultdict
    trainer._metrics = {"train": defaultdict(list), "eval": defaultdict(list)}
    loss = trainer._compute_loss(model, inputs, return_outputs=False)
    loss.backward()
    g = lp.grad
    m = {k: v[-1] for k, v in trainer._metrics["train"].items() if k.startswith(("rewards/", "logps/"))}
    return float(loss), [float(g[0, 0]), float(g[1, 0])], m


def main():
    rng = random.Random(1202)
    tok = PreTrainedTokenizerFast(tokenizer_file="tests/fixtures/train/tok/tokenizer.json", eos_token="<|im_end|>")
    tok.pad_token = tok.eos_token
    cases = []
    draws = []
    for _ in range(24):
        n = [rng.randint(1, 40), rng.randint(1, 40)]
        logp = [-rng.uniform(0.01, 3.0) * n[0], -rng.uniform(0.01, 3.0) * n[1]]
        ref = [logp[0] + rng.uniform(-4, 4), logp[1] + rng.uniform(-4, 4)]
        draws.append((logp, ref, n))
    draws.append(([-5.0, -5.0], [-5.0, -5.0], [3, 3]))        # equal sides
    draws.append(([-0.001, -80.0], [-9.0, -1.0], [1, 40]))     # lopsided
    with tempfile.TemporaryDirectory() as d:
        for loss_type, name in (("sigmoid", "dpo"), ("ipo", "ipo")):
            for beta in (0.1, 0.5):
                args = DPOConfig(output_dir=d, loss_type=[loss_type], beta=beta, report_to=[], use_cpu=True,
                                 precompute_ref_log_probs=False)
                trainer = DPOTrainer(model=tiny_model(len(tok)), ref_model=tiny_model(len(tok)), args=args, processing_class=tok,
                                     train_dataset=Dataset.from_list([{"prompt": "a", "chosen": "b", "rejected": "c"}]))
                trainer.precompute_ref_logps = True
                for logp, ref, n in draws:
                    loss, g, m = dpo_case(trainer, logp, ref, n)
                    cases.append({"objective": name, "beta": beta, "simpo_gamma": 0.0, "logp": logp, "ref_logp": ref,
                                  "n_tokens": n, "loss": loss, "dloss": g, "metrics": m})
    for beta in (0.1, 0.25):
        ns = SimpleNamespace(beta=beta, accelerator=SimpleNamespace(device="cpu"))
        for logp, _, n in draws:
            x = torch.tensor(logp, dtype=torch.float64, requires_grad=True)
            mean = x / torch.tensor(n, dtype=torch.float64)
            losses, rc, rr, _, log_odds = ORPOTrainer.odds_ratio_loss(ns, mean[:1], mean[1:])
            term = -losses.mean()  # what the ORPO loss adds to the NLL
            term.backward()
            cases.append({"objective": "orpo", "beta": beta, "simpo_gamma": 0.0, "logp": logp, "ref_logp": [0, 0], "n_tokens": n,
                          "loss": float(term), "dloss": x.grad.tolist(), "reward": [float(rc), float(rr)],
                          "log_odds": float(log_odds)})
    for beta, gamma in ((0.1, 0.5), (2.0, 1.4)):
        ns = SimpleNamespace(beta=beta, simpo_gamma=gamma, alpha=0.0, label_smoothing=0.0, loss_type="simpo",
                             accelerator=SimpleNamespace(device="cpu"))
        for logp, _, n in draws:
            x = torch.tensor(logp, dtype=torch.float64, requires_grad=True)
            mean = x / torch.tensor(n, dtype=torch.float64)
            losses, rc, rr = CPOTrainer.cpo_loss(ns, mean[:1], mean[1:])
            losses.mean().backward()
            cases.append({"objective": "simpo", "beta": beta, "simpo_gamma": gamma, "logp": logp, "ref_logp": [0, 0],
                          "n_tokens": n, "loss": float(losses.mean()), "dloss": x.grad.tolist(), "reward": [float(rc), float(rr)]})
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump({"trl": trl.__version__, "cases": cases}, f, indent=0)
    print(f"{len(cases)} cases")


if __name__ == "__main__":
    main()
