#!/usr/bin/env python3
"""bench_tokenizer.py — encode throughput of fastlora's C tokenizer vs HF `tokenizers` (Rust), both
single-threaded, on the same file, in one run; prints one row per model and the ratio C / HF.

HF side: tokenizers.Tokenizer.encode(text) on the whole file (RAYON_NUM_THREADS=1,
TOKENIZERS_PARALLELISM=false), the same tokenizer the parity fixtures use (tools/
make_tokenizer_fixtures.py: tokenizer.json when present, transformers' Qwen2 pipeline for
vocab.json + merges.txt, TikTokenConverter for Llama-3). C side: `fastlora tokenize --file F
--bench N`. Two figures per side: "cold" = the first encode after loading (empty word caches),
"warm" = best of N runs (caches filled by the earlier runs on both sides). Token counts must agree.
With --paragraphs both sides encode each "\n\n"-separated paragraph as its own call (what a data
loader does) instead of the whole file as one string. Results go in docs/TOKENIZER.md.

Usage: python3 tools/bench_tokenizer.py [--file ../shared/data/tinyshakespeare/input.txt] [--runs 5]
"""
import argparse
import os
import subprocess
import sys
import time

os.environ["RAYON_NUM_THREADS"] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_tokenizer_fixtures as fx  # noqa: E402

MODELS = ("SmolLM2-135M-Instruct", "Qwen2.5-0.5B", "TinyLlama-1.1B-Chat-v1.0", "Llama-3.2-1B")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", default=os.path.join(HERE, "../../shared"))
    ap.add_argument("--file", default=None)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--paragraphs", action="store_true")
    ap.add_argument("--bin", default=os.path.join(HERE, "../build/fastlora"))
    args = ap.parse_args()
    path = args.file or os.path.join(args.shared, "data/tinyshakespeare/input.txt")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    nbytes = len(text.encode("utf-8"))
    pieces = text.split("\n\n") if args.paragraphs else [text]
    mode = f"{len(pieces)} paragraphs, one encode call each" if args.paragraphs else "whole file in one encode call"
    print(f"file {path}: {nbytes} bytes, {mode}, best of {args.runs} runs, single thread")
    print(f"{'model':26s} {'tokens':>7s} | {'cold: HF MB/s':>13s} {'C MB/s':>7s} {'C/HF':>5s} | "
          f"{'warm: HF MB/s':>13s} {'C MB/s':>7s} {'C/HF':>5s}")
    for name in MODELS:
        tok, _, _, _ = fx.load(args.shared, name)
        times = []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            ids = [i for p in pieces for i in tok.encode(p, add_special_tokens=True).ids]
            times.append(time.perf_counter() - t0)
        c = {}
        for label, runs in (("cold", 1), ("warm", args.runs)):
            out = subprocess.run([args.bin, "tokenize", "--model", os.path.join(args.shared, "models", name),
                                  "--file", path, "--bench", str(runs)] + (["--paragraphs"] if args.paragraphs else []),
                                 capture_output=True, text=True, check=True)
            f = out.stdout.split()
            c[label] = float(f[f.index("seconds") + 1])
            if int(f[f.index("tokens") + 1]) != len(ids):
                print(f"{name}: token count differs: C {f[f.index('tokens') + 1]} vs HF {len(ids)}", file=sys.stderr)
                return 1
        row = f"{name:26s} {len(ids):7d}"
        for hf_s, c_s in ((times[0], c["cold"]), (min(times), c["warm"])):
            hf_mbs, c_mbs = nbytes / hf_s / 1e6, nbytes / c_s / 1e6
            row += f" | {hf_mbs:13.2f} {c_mbs:7.2f} {c_mbs / hf_mbs:5.1f}"
        print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
