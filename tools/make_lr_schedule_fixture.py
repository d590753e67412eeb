#!/usr/bin/env python3
"""Write tests/fixtures/train/lr_schedules.json: the learning rate of every optimizer step, as
transformers' own schedulers give it, for the C test train_lr_schedule_matches_transformers.

Run from the repository root (needs torch and transformers; CPU only, a second):

    python3 tools/make_lr_schedule_fixture.py              # writes tests/fixtures/train/lr_schedules.json
    python3 tools/make_lr_schedule_fixture.py --out FILE   # somewhere else (to diff against the committed copy)

For each case the lr used by optimizer step s (s = 0 .. total-1) is what the HF Trainer uses: the
scheduler's value before that step's optimizer.step(), then scheduler.step() (LambdaLR starts at
lambda(0)). fastlora's names map to transformers' functions:
    cosine, min_lr_ratio 0   get_cosine_schedule_with_warmup
    cosine, min_lr_ratio r   get_cosine_with_min_lr_schedule_with_warmup(min_lr_rate=r)
    linear                   get_linear_schedule_with_warmup (transformers has no linear floor)
    constant                 get_constant_schedule_with_warmup
"warmup_from_ratio" holds TrainingArguments.get_warmup_steps(total) for a fractional warmup
(transformers 5 reads warmup_steps < 1 as a ratio of the steps: ceil(total * ratio)).
Running it twice gives the same file (no randomness; floats printed with repr, which round-trips).
"""

import argparse
import json
import tempfile

import torch
import transformers
from transformers import TrainingArguments
from transformers.optimization import (
    get_constant_schedule_with_warmup,
    get_cosine_schedule_with_warmup,
    get_cosine_with_min_lr_schedule_with_warmup,
    get_linear_schedule_with_warmup,
)

LR = 2e-4
STEPS = [(1, 0), (1, 1), (2, 0), (2, 1), (3, 5), (5, 0), (5, 2), (7, 7), (10, 3), (40, 0), (50, 5)]
RATIOS = [(10, 0.1), (1, 0.1), (7, 0.3), (100, 0.03), (3, 0.5), (9, 1.0 / 3.0)]


def lrs_of(schedule, total, warmup, min_lr_ratio):
    param = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([param], lr=LR)
    if schedule == "cosine" and min_lr_ratio > 0:
        sched = get_cosine_with_min_lr_schedule_with_warmup(opt, warmup, total, min_lr_rate=min_lr_ratio)
    elif schedule == "cosine":
        sched = get_cosine_schedule_with_warmup(opt, warmup, total)
    elif schedule == "linear":
        sched = get_linear_schedule_with_warmup(opt, warmup, total)
    else:
        sched = get_constant_schedule_with_warmup(opt, warmup)
    out = []
    for _ in range(total):
        out.append(float(sched.get_last_lr()[0]))
        opt.step()
        sched.step()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="tests/fixtures/train/lr_schedules.json")
    args = ap.parse_args()
    cases = []
    for total, warmup in STEPS:
        for schedule, ratio in (("cosine", 0.0), ("cosine", 0.1), ("linear", 0.0), ("constant", 0.0)):
            cases.append({"schedule": schedule, "lr": LR, "total": total, "warmup": warmup, "min_lr_ratio": ratio,
                          "lrs": lrs_of(schedule, total, warmup, ratio)})
    warmups = []
    with tempfile.TemporaryDirectory() as tmp:
        for total, ratio in RATIOS:
            ta = TrainingArguments(output_dir=tmp, warmup_steps=ratio, report_to=[])
            warmups.append({"total": total, "ratio": ratio, "warmup": ta.get_warmup_steps(total)})
    doc = {"made_by": "tools/make_lr_schedule_fixture.py", "transformers": transformers.__version__,
           "torch": torch.__version__, "cases": cases, "warmup_from_ratio": warmups}
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(f"wrote {args.out}: {len(cases)} schedules, {sum(len(c['lrs']) for c in cases)} steps")


if __name__ == "__main__":
    main()
