#!/usr/bin/env python3
"""Writes tests/fixtures/chat/generation_masks.json: transformers' assistant_masks
(apply_chat_template(tokenize=True, return_dict=True, return_assistant_tokens_mask=True)) for
templates whose {% generation %} blocks sit where a span is not simply the block's text: inside a
macro, a set block, a filter block, a call block, another generation block, a loop, or a block
whose output is never written, with multi-byte text before and inside the spans (transformers
counts characters; fastlora counts bytes). Also the plain top-level form, for contrast. For
tests/test_chat_generation_masks.c; the tokenizer is tests/fixtures/train/tok.

usage: tools/make_generation_mask_fixtures.py   (from the repository root)
"""
import json

import transformers
from transformers import PreTrainedTokenizerFast

OUT = "tests/fixtures/chat/generation_masks.json"
TOK = "tests/fixtures/train/tok/tokenizer.json"

LOOP = "{% for m in messages %}{% if m.role == 'assistant' %}BODY{% else %}<u>{{ m.content }}</u>{% endif %}{% endfor %}"
TEMPLATES = [
    ("top_level", LOOP.replace("BODY", "<a>{% generation %}{{ m.content }}</a>{% endgeneration %}")),
    ("in_macro", "{% macro say(x) %}[{% generation %}{{ x }}{% endgeneration %}]{% endmacro %}"
                 + LOOP.replace("BODY", "<a>{{ say(m.content) }}</a>")),
    ("two_in_macro", "{% macro say(x) %}{% generation %}{{ x }}{% endgeneration %}|{% generation %}ok{% endgeneration %}{% endmacro %}"
                     + LOOP.replace("BODY", "<a>{{ say(m.content) }}</a>")),
    ("in_set_block_unused", LOOP.replace("BODY", "{% set unused %}{% generation %}{{ m.content * 3 }}{% endgeneration %}{% endset %}<a>{{ m.content }}</a>")),
    ("in_set_block_used", LOOP.replace("BODY", "{% set s %}{% generation %}{{ m.content }}{% endgeneration %}{% endset %}<a>{{ s }}</a>")),
    ("in_filter_block", LOOP.replace("BODY", "<a>{% filter upper %}{% generation %}{{ m.content }}{% endgeneration %}{% endfilter %}</a>")),
    ("in_call_block", "{% macro wrap() %}({{ caller() }}){% endmacro %}"
                      + LOOP.replace("BODY", "<a>{% call wrap() %}{% generation %}{{ m.content }}{% endgeneration %}{% endcall %}</a>")),
    ("nested", LOOP.replace("BODY", "<a>{% generation %}{{ m.content }}{% generation %}é!{% endgeneration %}{% endgeneration %}</a>")),
    ("past_the_end", "{% set x %}{% generation %}{{ messages[-1].content * 40 }}{% endgeneration %}{% endset %}"
                     + LOOP.replace("BODY", "<a>{{ m.content }}</a>")),
    ("empty_then_real", LOOP.replace("BODY", "{% generation %}{% endgeneration %}<a>{% generation %}{{ m.content }}{% endgeneration %}</a>")),
]
CONVERSATIONS = [
    [{"role": "user", "content": "héllo wörld"}, {"role": "assistant", "content": "grüße 🙂 ok"}],
    [{"role": "user", "content": "1+1?"}, {"role": "assistant", "content": "2"}, {"role": "user", "content": "日本?"},
     {"role": "assistant", "content": "はい、日本です"}],
    [{"role": "assistant", "content": "first"}, {"role": "user", "content": "ÅÅ"}, {"role": "assistant", "content": ""}],
]


def main():
    tok = PreTrainedTokenizerFast(tokenizer_file=TOK)
    rows = []
    for name, template in TEMPLATES:
        for i, msgs in enumerate(CONVERSATIONS):
            out = tok.apply_chat_template(msgs, chat_template=template, tokenize=True, return_dict=True,
                                          return_assistant_tokens_mask=True)
            text = tok.apply_chat_template(msgs, chat_template=template, tokenize=False)
            rows.append({"name": name, "template": template, "conversation": i, "messages": msgs, "text": text,
                         "ids": list(out["input_ids"]), "assistant_masks": list(out["assistant_masks"])})
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump({"transformers": transformers.__version__, "tokenizer": TOK, "cases": rows}, f, ensure_ascii=False, indent=0)
    print(f"{len(rows)} cases, {sum(sum(r['assistant_masks']) for r in rows)} masked tokens")


if __name__ == "__main__":
    main()
