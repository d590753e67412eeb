#!/usr/bin/env python3
"""Writes tests/fixtures/pref/dpo_rows.json and orpo_rows.json: preference rows tokenized by TRL
1.16's trainers. dpo_rows.json: by the DPOTrainer
itself (its _prepare_dataset: prompt extraction when a row has no prompt, EOS appended to standard
completions, prompt and prompt+completion tokenized apart, the prompt cut at the common prefix of
the ids, rows whose prompt fills max_length dropped) and then its DataCollatorForPreference
(keep_start truncation at max_length): per row the prompt+chosen and prompt+rejected ids and their
completion masks, or "dropped". Standard and conversational rows, implicit prompts, a prompt whose
last characters merge into the completion's first token, completions that already end in EOS, a
space before the split, tools and chat_template_kwargs, multi-byte text, long rows.
orpo_rows.json: the same rows through ORPOTrainer and CPOTrainer (maybe_extract_prompt,
maybe_apply_chat_template, their tokenize_row: BOS/EOS ids, per-side prompt ids, truncation of the
completion), the sequences and labels they build; a row TRL cannot train (a prompt that fills
max_length leaves an empty completion) is recorded as "dropped".

Tokenizers: tests/fixtures/train/tok (ChatML template, EOS <|im_end|>, no BOS) and, when
../shared is present, ../shared/models/TinyLlama-1.1B-Chat-v1.0 (a post-processor that adds BOS to standard
rows). The model is a tiny random Llama (TRL needs one to build the trainer; its weights do not
matter to tokenization).

usage: tools/make_preference_fixtures.py   (from the repository root)
"""
import json
import os
import tempfile

import torch
import transformers
import trl
from datasets import Dataset
from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
from trl import DPOConfig, DPOTrainer
from trl.experimental.cpo import CPOConfig, CPOTrainer
from trl.experimental.orpo import ORPOConfig, ORPOTrainer

OUT = "tests/fixtures/pref/dpo_rows.json"
OUT_ORPO = "tests/fixtures/pref/orpo_rows.json"
SHARED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "models")
MAX_LENGTH = 96

U, A = "user", "assistant"


def msgs(*pairs):
    return [{"role": r, "content": c} for r, c in pairs]


STANDARD = [
    {"prompt": "The sky is", "chosen": " blue.", "rejected": " green."},
    {"prompt": "2 + 2 =", "chosen": " 4", "rejected": " 5"},
    {"prompt": "Say hi", "chosen": "hi<|im_end|>", "rejected": "no"},  # chosen already ends in EOS
    {"prompt": "Merge: abc", "chosen": "def", "rejected": "xyz"},  # the prompt's last token may merge
    {"prompt": "Grüße aus Zürich —", "chosen": " schön 🙂", "rejected": " hässlich"},
    {"prompt": "Long " * 60, "chosen": " tail", "rejected": " other tail"},  # prompt fills max_length: dropped
    {"prompt": "Short", "chosen": " a very long completion " * 16, "rejected": " b"},  # truncated
    {"chosen": "Q: why? A: because", "rejected": "Q: why? A: no"},  # implicit prompt
    {"chosen": "Common prefix then good", "rejected": "Common prefix then bad"},  # space before the split
    {"chosen": "same start", "rejected": "same start and more"},  # one a prefix of the other
]
CONVERSATIONAL = [
    {"prompt": msgs((U, "What color is the sky?")), "chosen": msgs((A, "Blue.")), "rejected": msgs((A, "Green."))},
    {"prompt": msgs(("system", "Be terse."), (U, "Hi"), (A, "Hello"), (U, "2+2?")), "chosen": msgs((A, "4")),
     "rejected": msgs((A, "Four, I think, but let me explain at length why that is so."))},
    {"prompt": msgs((U, "日本語?")), "chosen": msgs((A, "はい")), "rejected": msgs((A, "いいえ"))},
    {"chosen": msgs((U, "Where is the sun?"), (A, "In the sky.")),
     "rejected": msgs((U, "Where is the sun?"), (A, "In the sea."))},  # implicit prompt
    {"prompt": msgs((U, "x " * 60)), "chosen": msgs((A, "y")), "rejected": msgs((A, "z"))},  # dropped
    {"prompt": msgs((U, "Tell me")), "chosen": msgs((A, "a " * 60)), "rejected": msgs((A, "b"))},  # truncated
]

ORPO_EXTRA_STANDARD = [
    {"prompt": "Ends in EOS", "chosen": " yes<|im_end|>", "rejected": " no</s>"},
    {"prompt": "", "chosen": "empty prompt", "rejected": "also empty"},
]
ORPO_EXTRA = ORPO_EXTRA_STANDARD + [
    {"prompt": msgs((U, "Use the tool")), "chosen": msgs((A, "ok")), "rejected": msgs((A, "no")),
     "chat_template_kwargs": {"enable_thinking": False}},
]


def tiny_model(vocab):
    cfg = LlamaConfig(vocab_size=vocab, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=256)
    torch.manual_seed(0)
    return LlamaForCausalLM(cfg)


def run(tok, rows, name):
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    out = []
    with tempfile.TemporaryDirectory() as d:
        for i, row in enumerate(rows):
            args = DPOConfig(output_dir=d, max_length=MAX_LENGTH, report_to=[], per_device_train_batch_size=1,
                             dataset_num_proc=None, use_cpu=True)
            try:
                trainer = DPOTrainer(model=tiny_model(len(tok)), ref_model=tiny_model(len(tok)), args=args, processing_class=tok,
                                     train_dataset=Dataset.from_list([row]))
            except Exception as e:  # noqa: BLE001 - TRL refusing a row is part of the spec
                out.append({"tokenizer": name, "row": row, "error": f"{type(e).__name__}: {e}"[:200]})
                continue
            ds = trainer.train_dataset
            if len(ds) == 0:
                out.append({"tokenizer": name, "row": row, "dropped": True})
                continue
            ex = {k: ds[0][k] for k in ("prompt_ids", "chosen_ids", "rejected_ids")}
            batch = trainer.data_collator([ex])
            seqs = []
            for s in range(2):
                n = int(batch["attention_mask"][s].sum())
                seqs.append({"ids": batch["input_ids"][s][:n].tolist(), "completion_mask": batch["completion_mask"][s][:n].tolist()})
            out.append({"tokenizer": name, "row": row, "prompt_ids": ex["prompt_ids"], "chosen": seqs[0], "rejected": seqs[1]})
    return out


def run_orpo(tok, rows, name):
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    out = []
    with tempfile.TemporaryDirectory() as d:
        for trainer_cls, cfg_cls, kind in ((ORPOTrainer, ORPOConfig, "orpo"), (CPOTrainer, CPOConfig, "cpo")):
            for row in rows:
                extra = {"loss_type": "simpo"} if kind == "cpo" else {}
                args = cfg_cls(output_dir=d, max_length=MAX_LENGTH, report_to=[], per_device_train_batch_size=1, use_cpu=True, **extra)
                case = {"tokenizer": name, "trainer": kind, "row": row}
                try:
                    trainer = trainer_cls(model=tiny_model(len(tok)), args=args, processing_class=tok,
                                          train_dataset=Dataset.from_list([row]))
                except Exception as e:  # noqa: BLE001 - TRL refusing a row is part of the spec
                    case["error"] = f"{type(e).__name__}: {e}"[:200]
                    out.append(case)
                    continue
                ex = trainer.train_dataset[0]
                for side in ("chosen", "rejected"):
                    labels = ex[side + "_labels"]
                    case[side] = {"ids": ex[side + "_input_ids"], "completion_mask": [int(l != -100) for l in labels]}
                if not any(case["chosen"]["completion_mask"]) or not any(case["rejected"]["completion_mask"]):
                    case = {"tokenizer": name, "trainer": kind, "row": row, "dropped": True}
                out.append(case)
    return out


def main():
    cases = []
    tok = PreTrainedTokenizerFast(tokenizer_file="tests/fixtures/train/tok/tokenizer.json", eos_token="<|im_end|>",
                                  chat_template=json.load(open("tests/fixtures/train/tok/tokenizer_config.json"))["chat_template"])
    cases += run(tok, STANDARD + CONVERSATIONAL, "tests/fixtures/train/tok")
    llama = os.path.join(SHARED, "TinyLlama-1.1B-Chat-v1.0")
    if os.path.isdir(llama):
        cases += run(AutoTokenizer.from_pretrained(llama), STANDARD, "../shared/models/TinyLlama-1.1B-Chat-v1.0")
    orpo = run_orpo(PreTrainedTokenizerFast(tokenizer_file="tests/fixtures/train/tok/tokenizer.json", eos_token="<|im_end|>",
                                            chat_template=tok.chat_template), STANDARD + CONVERSATIONAL + ORPO_EXTRA,
                    "tests/fixtures/train/tok")
    if os.path.isdir(llama):
        orpo += run_orpo(AutoTokenizer.from_pretrained(llama), STANDARD + ORPO_EXTRA_STANDARD, "../shared/models/TinyLlama-1.1B-Chat-v1.0")
    with open(OUT_ORPO, "w", encoding="utf-8") as f:
        json.dump({"trl": trl.__version__, "transformers": transformers.__version__, "max_length": MAX_LENGTH,
                   "cases": orpo}, f, ensure_ascii=False, indent=0)
    print(f"orpo/cpo: {len(orpo)} cases: {sum('dropped' in c for c in orpo)} dropped, {sum('error' in c for c in orpo)} refused")
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump({"trl": trl.__version__, "transformers": transformers.__version__, "max_length": MAX_LENGTH,
                   "cases": cases}, f, ensure_ascii=False, indent=0)
    print(f"{len(cases)} cases: {sum('dropped' in c for c in cases)} dropped, {sum('error' in c for c in cases)} refused")


if __name__ == "__main__":
    main()
