#!/usr/bin/env python3
"""make_gemma_tokenizer_fixture.py — writes tests/fixtures/tokenizer/gemma_pipeline/: a small tokenizer
with Gemma's pipeline, and its parity lines, from Hugging Face `tokenizers` / `transformers`.

Gemma's real tokenizer.json (262k entries, ~33 MB) is not available here, so the pipeline is taken
from transformers' GemmaTokenizer (tokenization_gemma.py, which builds the same pipeline Gemma's file
has): SentencePiece-style BPE with byte fallback and fuse_unk, the normalizer Replace(" ", "▁") and no
dummy prefix, the pre-tokenizer Split(" ", merged_with_previous), the decoder Replace("▁", " ") +
ByteFallback + Fuse, and the special tokens <pad> 0, <eos> 1, <bos> 2, <unk> 3, <mask> 4 with <bos>
added in front. Its vocabulary is learnt here (tokenizers' BpeTrainer on tiny Shakespeare, 1024 entries:
the five specials, the 256 <0xNN> byte tokens, then merges), so the file stays small.

Writes gemma_pipeline/tokenizer.json (+ tokenizer_config.json, from save_pretrained) and
gemma_pipeline.jsonl in the format of make_tokenizer_fixtures.py (its strings, four prose pages cut to
1500 characters, same fields).

Usage: python3 tools/make_gemma_tokenizer_fixture.py [--shared ../shared]
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_tokenizer_fixtures as mtf  # noqa: E402  (HARD, HOSTILE, BAD_BYTES, PARTIAL_TEXTS, prose)


def build(shared, out_dir):
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers
    from transformers import GemmaTokenizer
    specials = ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>"]
    bytes_ = [f"<0x{b:02X}>" for b in range(256)]
    t = Tokenizer(models.BPE(unk_token="<unk>", fuse_unk=True, byte_fallback=True))
    t.normalizer = normalizers.Replace(" ", "▁")
    t.pre_tokenizer = pre_tokenizers.Split(pattern=" ", behavior="merged_with_previous", invert=False)
    trainer = trainers.BpeTrainer(vocab_size=1024, special_tokens=specials + bytes_, show_progress=False)
    with open(os.path.join(shared, "data/tinyshakespeare/input.txt"), encoding="utf-8") as f:
        text = f.read()
    t.train_from_iterator([text[i:i + 2000] for i in range(0, 400000, 2000)], trainer=trainer)
    model = json.loads(t.to_str())["model"]
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in model["merges"]]
    hf = GemmaTokenizer(vocab=model["vocab"], merges=merges, add_bos_token=True)
    hf.save_pretrained(out_dir)
    return Tokenizer.from_file(os.path.join(out_dir, "tokenizer.json"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", default=os.path.join(HERE, "../../shared"))
    ap.add_argument("--out", default=os.path.join(HERE, "../tests/fixtures/tokenizer"))
    args = ap.parse_args()
    folder = os.path.join(args.out, "gemma_pipeline")
    os.makedirs(folder, exist_ok=True)
    tok = build(args.shared, folder)
    vocab = tok.get_vocab()
    byte_ids = [vocab[f"<0x{b:02X}>"] for b in range(256)]
    lines = []
    for text in mtf.HARD + mtf.HOSTILE + [p[:1500] for p in mtf.prose(args.shared)[:4]]:
        e = tok.encode(text, add_special_tokens=True)
        line = {"text": text, "ids": e.ids, "ids_plain": tok.encode(text, add_special_tokens=False).ids,
                "decoded": tok.decode(e.ids, skip_special_tokens=False)}
        if text in mtf.HARD or text in mtf.HOSTILE:
            line["offsets"] = mtf.byte_offsets(text, e.offsets)
        lines.append(line)
    for seq in mtf.BAD_BYTES:
        ids = [byte_ids[b] for b in seq]
        lines.append({"decode_ids": ids, "decoded": tok.decode(ids, skip_special_tokens=False)})
    for text in mtf.PARTIAL_TEXTS:
        ids = tok.encode(text, add_special_tokens=False).ids
        for cut in range(1, min(len(ids), 6)):
            for part in (ids[cut:], ids[:-cut]):
                lines.append({"decode_ids": part, "decoded": tok.decode(part, skip_special_tokens=False)})
    ids = tok.encode("<bos>hi<eos>", add_special_tokens=True).ids
    lines.append({"decode_ids": ids, "skip_special": True, "decoded": tok.decode(ids, skip_special_tokens=True)})
    with open(os.path.join(args.out, "gemma_pipeline.jsonl"), "w", encoding="utf-8") as f:
        for line in lines:
            f.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")
    print(f"gemma_pipeline: {len(lines)} lines, vocab {tok.get_vocab_size()}")


if __name__ == "__main__":
    sys.exit(main())
