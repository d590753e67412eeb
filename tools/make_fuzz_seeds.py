#!/usr/bin/env python3
"""make_fuzz_seeds.py — writes the small tokenizer seeds of fuzz/seeds/ from the real tokenizers
in ../shared/models: each model's files cut to its first ids (vocabulary by id, the merges whose
two parts and result survive, every added token), so the fuzzer starts from the real layouts
(SmolLM2 and TinyLlama tokenizer.json, Qwen2.5 and SmolLM2 vocab.json + merges.txt) at a few
kilobytes instead of megabytes. Parts of a multi-file seed are joined with the harnesses'
separator "\\n@@@@\\n" (fuzz/fuzz.h). Run once when the layouts change; the output is committed.

Usage: python3 tools/make_fuzz_seeds.py [--shared ../shared] [--keep 400]
"""
import argparse
import json
import os

SEP = b"\n@@@@\n"
HERE = os.path.dirname(os.path.abspath(__file__))
SEEDS = os.path.join(HERE, "..", "fuzz", "seeds")


def cut_vocab(vocab, keep, extra_ids):
    return {t: i for t, i in vocab.items() if i < keep or i in extra_ids}


def cut_merges(merges, vocab):
    out = []
    for m in merges:
        left, right = m.split(" ", 1) if isinstance(m, str) else m
        if left in vocab and right in vocab and left + right in vocab:
            out.append(m)
    return out


def write(target, name, parts):
    os.makedirs(os.path.join(SEEDS, target), exist_ok=True)
    with open(os.path.join(SEEDS, target, name), "wb") as f:
        f.write(SEP.join(parts))
    print(target, name, sum(len(p) for p in parts), "bytes")


def tokenizer_json(shared, model, keep, name):
    d = os.path.join(shared, "models", model)
    with open(os.path.join(d, "tokenizer.json"), encoding="utf-8") as f:
        tj = json.load(f)
    added = {t["id"] for t in tj.get("added_tokens", [])}
    tj["model"]["vocab"] = cut_vocab(tj["model"]["vocab"], keep, added)
    tj["model"]["merges"] = cut_merges(tj["model"]["merges"], tj["model"]["vocab"])
    parts = [json.dumps(tj, ensure_ascii=False).encode()]
    cfg = os.path.join(d, "tokenizer_config.json")
    if os.path.exists(cfg):
        parts.append(open(cfg, "rb").read())
    jinja = os.path.join(d, "chat_template.jinja")
    if os.path.exists(jinja):
        parts.append(open(jinja, "rb").read())
    write("tokenizer_json", name, parts)


def vocab_merges(shared, model, keep, name):
    d = os.path.join(shared, "models", model)
    with open(os.path.join(d, "vocab.json"), encoding="utf-8") as f:
        vocab = json.load(f)
    cfg_bytes = open(os.path.join(d, "tokenizer_config.json"), "rb").read()
    cfg = json.loads(cfg_bytes)
    added = {int(k) for k in cfg.get("added_tokens_decoder", {})}
    vocab = cut_vocab(vocab, keep, added)
    with open(os.path.join(d, "merges.txt"), encoding="utf-8") as f:
        lines = f.read().split("\n")
    head = [lines[0]] if lines and lines[0].startswith("#version") else []
    merges = cut_merges([ln for ln in lines[len(head):] if ln], vocab)
    write("tokenizer_bpe_files", name,
          [json.dumps(vocab, ensure_ascii=False).encode(), "\n".join(head + merges).encode() + b"\n", cfg_bytes])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", default=os.path.join(HERE, "..", "..", "shared"))
    ap.add_argument("--keep", type=int, default=400)
    a = ap.parse_args()
    tokenizer_json(a.shared, "SmolLM2-135M-Instruct", a.keep, "smollm2-cut")
    tokenizer_json(a.shared, "TinyLlama-1.1B-Chat-v1.0", a.keep, "tinyllama-cut")
    vocab_merges(a.shared, "Qwen2.5-0.5B", a.keep, "qwen2.5-cut")
    vocab_merges(a.shared, "SmolLM2-135M-Instruct", a.keep, "smollm2-cut")


if __name__ == "__main__":
    main()
