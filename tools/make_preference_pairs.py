#!/usr/bin/env python3
"""Writes preference pairs out of tiny Shakespeare for the end-to-end preference proof of
docs/TRAINING.md: each pair's prompt is a stretch of the play (ending at a word boundary), its
chosen completion the text that really follows, its rejected completion an equally long stretch
from somewhere else in the play. A model that learns the play's continuity prefers the real
continuation; both sides are Shakespeare, so a preference for the genre alone does not help.

usage: tools/make_preference_pairs.py ../shared/data/tinyshakespeare/input.txt OUT.jsonl [--pairs N] [--seed S]
(standard rows {"prompt", "chosen", "rejected"}; nothing derived from ../shared is committed)
"""
import argparse
import json
import random


def cut_at_word(text, start, length):
    """text[start:start+length] moved to begin and end at a space (no word cut in two)."""
    s = text.find(" ", start)
    e = text.rfind(" ", s + 1, s + length)
    return s, e


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("input")
    ap.add_argument("out")
    ap.add_argument("--pairs", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--prompt-chars", type=int, default=120)
    ap.add_argument("--completion-chars", type=int, default=60)
    a = ap.parse_args()
    text = open(a.input, encoding="utf-8").read()
    rng = random.Random(a.seed)
    n = len(text) - 4 * (a.prompt_chars + a.completion_chars)
    with open(a.out, "w", encoding="utf-8") as f:
        for _ in range(a.pairs):
            ps, pe = cut_at_word(text, rng.randrange(n), a.prompt_chars)
            cs, ce = cut_at_word(text, pe, a.completion_chars)
            other = rng.randrange(n)
            while abs(other - pe) < 10 * a.completion_chars:
                other = rng.randrange(n)
            rs, re_ = cut_at_word(text, other, a.completion_chars)
            row = {"prompt": text[ps + 1:pe], "chosen": text[cs:ce], "rejected": text[rs:re_]}
            if row["chosen"] != row["rejected"]:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
