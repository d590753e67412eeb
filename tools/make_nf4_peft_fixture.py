#!/usr/bin/env python3
"""The QLoRA round trip fixture: an adapter trained by fastlora on the 4-bit tiny Llama, and the logits
PEFT computes with it on top of the bitsandbytes-quantized model.

    python3 tools/make_nf4_peft_fixture.py [--fastlora build/fastlora] [--out tests/fixtures/nf4]
                                          [--model tests/fixtures/nf4/tiny-nf4] [--steps 30]

1. writes a tokens file of seeded random ids (vocabulary 96) and trains with
   `fastlora train --model tests/fixtures/nf4/tiny-nf4` (the bitsandbytes checkpoint of
   tools/make_nf4_fixtures.py: NF4 as stored) for 30 steps (--steps), rank 4, all seven projections, f32 (the
   CPU reference backend), lr 1e-2 so that B is far from zero; copies adapter_config.json and
   adapter_model.safetensors to OUT/tiny-nf4-adapter/;
2. runs tools/peft_roundtrip.py (PeftModel.from_pretrained on transformers + bitsandbytes) on 2 x 12 ids
   with --bnb-compute float32 and bfloat16 and stores both in OUT/tiny-nf4-peft-logits.safetensors:
   input_ids I32 [2, 12], logits_f32 and logits_bf16 F32 [2, 12, 96]; the versions in its metadata.
tests/test_nf4_engine.c checks fastlora's logits with that adapter against both (and, when torch,
transformers, peft and bitsandbytes are installed, repeats steps 1-2 live).
"""
import argparse
import os
import shutil
import struct
import subprocess
import sys
import tempfile


def write_tokens(path, docs):
    ends, total = [], 0
    for d in docs:
        total += len(d)
        ends.append(total)
    with open(path, "wb") as f:
        f.write(b"FLTOKv1\0")
        f.write(struct.pack("<QQ", len(docs), total))
        f.write(struct.pack(f"<{len(ends)}Q", *ends))
        for d in docs:
            f.write(struct.pack(f"<{len(d)}I", *d))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fastlora", default="build/fastlora")
    ap.add_argument("--out", default="tests/fixtures/nf4")
    ap.add_argument("--model", default="tests/fixtures/nf4/tiny-nf4")
    ap.add_argument("--steps", type=int, default=30)
    args = ap.parse_args()
    import random

    import bitsandbytes
    import peft
    import torch
    import transformers
    from safetensors.torch import load_file, save_file

    model = args.model
    rng = random.Random(12)
    docs = [[rng.randrange(96) for _ in range(rng.randrange(20, 60))] for _ in range(40)]
    with tempfile.TemporaryDirectory() as tmp:
        tokens = os.path.join(tmp, "train.tokens")
        write_tokens(tokens, docs)
        run = os.path.join(tmp, "run")
        subprocess.run([args.fastlora, "train", "--model", model, "--data", tokens, "--out", run, "--seq", "16",
                        "--batch", "4", "--max-steps", str(args.steps), "--lr", "1e-2", "--rank", "4", "--alpha", "8",
                        "--dtype", "f32", "--device", "cpu", "--save-every", "0", "--eval-every", "0"], check=True)
        adapter = os.path.join(args.out, "tiny-nf4-adapter")
        os.makedirs(adapter, exist_ok=True)
        for name in ("adapter_config.json", "adapter_model.safetensors"):
            shutil.copy(os.path.join(run, name), os.path.join(adapter, name))
        ids = torch.tensor([[rng.randrange(96) for _ in range(12)] for _ in range(2)], dtype=torch.int32)
        ids_path = os.path.join(tmp, "ids.safetensors")
        save_file({"input_ids": ids}, ids_path)
        out = {"input_ids": ids}
        for dtype in ("float32", "bfloat16"):
            logits = os.path.join(tmp, f"{dtype}.safetensors")
            subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "peft_roundtrip.py"), "--model",
                            model, "--adapter", adapter, "--ids", ids_path, "--out", logits, "--bnb-compute", dtype,
                            "--threads", "1"], check=True)
            out["logits_f32" if dtype == "float32" else "logits_bf16"] = load_file(logits)["logits"]
        save_file(out, os.path.join(args.out, "tiny-nf4-peft-logits.safetensors"),
                  metadata={"torch": torch.__version__, "transformers": transformers.__version__,
                            "peft": peft.__version__, "bitsandbytes": bitsandbytes.__version__})
    print(f"wrote {adapter} and {os.path.join(args.out, 'tiny-nf4-peft-logits.safetensors')}", file=sys.stderr)


if __name__ == "__main__":
    main()
