#!/usr/bin/env python3
"""make_mistral_tokenizers.py — Hugging Face tokenizer folders for Mistral's real tokenizers, and
the parity fixtures tests/fixtures/tokenizer/<name>.jsonl that the C tokenizer is checked against.

mistral-common (pip) ships Mistral's own tokenizer files; this script converts them with
transformers' converters into the tokenizer.json + tokenizer_config.json that HF's mistralai repos
hold, since those repos are not reachable from here:

  mistral-v1     tokenizer.model.v1 (Mistral 7B v0.1/v0.2, Mixtral 8x7B: SentencePiece BPE, 32000
                 pieces, byte fallback) through LlamaConverter with legacy=True: normalizer
                 Prepend("▁") + Replace(" ", "▁"), no pre-tokenizer — the pipeline HF's
                 convert_mistral_weights_to_hf.py made (LlamaTokenizerFast(tokenizer.model) with its
                 default legacy=True; llama.cpp issue 7094 reports "legacy": true for v0.1/v0.2)
  mistral-v3     mistral_instruct_tokenizer_240323.model.v3 (v3: 32768 pieces, control tokens [INST],
                 [/INST], [TOOL_CALLS], ... [control_N] as special added tokens, user-defined
                 [REFERENCE_DOC_N] as plain added tokens) with legacy=False: Metaspace(prepend_scheme
                 "first", split false), no normalizer — the non-legacy form that Mistral's own v3 chat
                 template assumes (mistral-common issue 3: "[INST] " + content gives mistral-common's
                 "[INST]▁content" only when the text after an added token gets no dummy prefix) and
                 the one transformers 5 builds for every Llama-family SentencePiece tokenizer
  tekken-240718  tekken_240718.json (Mistral Nemo's Tekken: tiktoken-style byte-level BPE, 1000
                 special tokens then 130072 ranks) through transformers' MistralConverter (Split on
                 the tekken regex, ByteLevel without regex, ignore_merges), as
                 mistralai/Mistral-Nemo-Base-2407's tokenizer.json; tekken_240911.json holds the same
                 ranks, pattern and special tokens, so the same folder stands for it
Every folder gets TemplateProcessing "<s> $A" (add_bos_token, as LlamaTokenizerFast and
TokenizersBackend build it), <unk>/<s>/</s> as bos/eos/unk, and a tokenizer_config.json laid out as
the repos' are. The output is deterministic: the same files on every run.

Checks, printed (and failing the run when they fail):
  * the converted tekken folder loaded by transformers' AutoTokenizer gives llama.cpp's chkhsh of
    Mistral-Nemo-Base-2407 (sha256 of str(encode(chktxt))): it equals HF's real Nemo tokenizer there;
  * each folder's ids (tokenizers.Tokenizer of its tokenizer.json — the file is the spec, as in
    make_tokenizer_fixtures.py) against AutoTokenizer's and mistral-common's own tokenizer
    (SentencePiece / Tekkenizer) on the plain strings: agreement counts, every disagreement listed
    with its cause (never a failure: the references differ by design where the cause says so).

With --fixtures it also writes tests/fixtures/tokenizer/<name>.jsonl in make_tokenizer_fixtures.py's
format, over its strings (HARD, HOSTILE, prose of ../shared) plus MISTRAL_TEXTS around the control
tokens.

Usage: python3 tools/make_mistral_tokenizers.py [--out build/mistral-tokenizers] [--fixtures]
       [--only mistral-v1,...] [--shared ../shared]
Needs: transformers, tokenizers, sentencepiece, protobuf, mistral-common (pinned in .ci/run).
"""
import argparse
import hashlib
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_tokenizer_fixtures import HARD, HOSTILE, fixture_lines, prose, write_jsonl  # noqa: E402

# name: (file in mistral_common/data, kind, legacy)
SOURCES = {
    "mistral-v1": ("tokenizer.model.v1", "spm", True),
    "mistral-v3": ("mistral_instruct_tokenizer_240323.model.v3", "spm", False),
    "tekken-240718": ("tekken_240718.json", "tekken", None),
}

# llama.cpp's convert_hf_to_gguf.py: the pre-tokenizer hash of mistralai/Mistral-Nemo-Base-2407
NEMO_CHKHSH = "63b97e4253352e6f357cc59ea5b583e3a680eaeaf2632188c2b952de2588485e"
# convert_hf_to_gguf_update.py's CHK_TXT (= src/export/gguf_vocab.c check_text)
CHK_TXT = (
    "\n \n\n \n\n\n \t \t\t \t\n  \n   \n    \n     \n🚀 (normal) 😶\u200d🌫️ (multiple emojis concatenated) "
    "✅ 🦙🦙 3 33 333 3333 33333 333333 3333333 33333333 3.3 3..3 3...3 កាន់តែពិសេសអាច😁 ?我想在apple工作1314151天～ "
    "------======= нещо на Български ''''''```````\"\"\"\"......!!!!!!?????? I've been 'told he's there, 'RE you "
    "sure? 'M not sure I'll make it, 'D you like some tea? We'Ve a'lL"
)

# Strings around Mistral's control tokens (v3 and tekken specials; for v1 they are plain text).
MISTRAL_TEXTS = [
    "[INST] What is 2+2? [/INST] 4</s>[INST] And 3*3? [/INST]",
    "<s>[INST]Hello, how are you?[/INST]Fine, and you?</s>[INST]I'm doing great![/INST]",
    "<s>[INST] Hello[/INST] Hi there!</s>[INST] How are you?[/INST] Fine.</s>",
    " [INST] leading space, trailing [/INST] ",
    "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {\"x\": 1}}]</s>",
    "[AVAILABLE_TOOLS][{\"type\": \"function\"}][/AVAILABLE_TOOLS][INST]hi[/INST]",
    "[TOOL_RESULTS]{\"content\": 4}[/TOOL_RESULTS]",
    "[PREFIX]def f():[SUFFIX]    return 1[MIDDLE]",
    "[IMG][IMG_BREAK][IMG_END] [SYSTEM_PROMPT]sys[/SYSTEM_PROMPT]",
    "[control_12] [control_748] <SPECIAL_20> <SPECIAL_999> <SPECIAL_1000>",
    "[REFERENCE_DOC_0] doc [REFERENCE_DOC_19]x[REFERENCE_DOC_20]",
    "[INST[INST]] [/INST [inst] [ INST] [INST",
    "▁[INST]▁x ▁ [/INST]▁",
    "中文[INST]😀[/INST]\n\n[INST]\t[/INST]",
    "</s></s><s><unk>[INST]",
]


def data_dir():
    import mistral_common
    return os.path.join(os.path.dirname(mistral_common.__file__), "data")


def bos_post_processor():
    """TemplateProcessing "<s>:0 $A:0" as LlamaTokenizerFast / TokenizersBackend.update_post_processor."""
    from tokenizers import processors
    return processors.TemplateProcessing(single="<s>:0 $A:0", pair="<s>:0 $A:0 <s>:1 $B:1",
                                         special_tokens=[("<s>", 1)])


def convert_spm(path, legacy):
    """transformers' LlamaConverter on a SentencePiece BPE model. transformers 5 changed
    SentencePieceExtractor.extract to return kwargs, which breaks SpmConverter's BPE branch; the
    extractor here gives it (vocab, merges) again, the merges from transformers' own generate_merges
    ranked by piece score, as the 4.x extractor that made the repos' files did."""
    from tokenizers import AddedToken
    from transformers.convert_slow_tokenizer import LlamaConverter, SentencePieceExtractor
    from transformers.tokenization_utils_base import generate_merges

    class Extractor(SentencePieceExtractor):
        def extract(self, vocab_scores=None):
            vocab = {p.piece: i for i, p in enumerate(self.proto.pieces)}
            return vocab, generate_merges(vocab, vocab_scores)

    class Converter(LlamaConverter):
        SpmExtractor = Extractor

    class Original:  # the slow tokenizer's attributes LlamaConverter reads
        vocab_file = path
        add_prefix_space = True

        def convert_ids_to_tokens(self, i):
            return ("<unk>", "<s>", "</s>")[i]

    original = Original()
    original.legacy = legacy
    tok = Converter(original).converted()
    # PreTrainedTokenizerFast adds unk_token as a special token (the converter adds only control and
    # user-defined pieces)
    tok.add_special_tokens([AddedToken("<unk>", normalized=False, special=True)])
    tok.post_processor = bos_post_processor()
    return tok


def convert_tekken(path):
    from transformers.integrations.mistral.tokenizer import MistralConverter
    tok = MistralConverter(vocab_file=path).converted()
    tok.post_processor = bos_post_processor()
    return tok


def tokenizer_config(tok, kind, legacy):
    added = {}
    for i, t in sorted(tok.get_added_tokens_decoder().items()):
        added[str(i)] = {"content": t.content, "lstrip": t.lstrip, "normalized": t.normalized, "rstrip": t.rstrip,
                         "single_word": t.single_word, "special": t.special}
    cfg = {"add_bos_token": True, "add_eos_token": False, "added_tokens_decoder": added, "bos_token": "<s>",
           "clean_up_tokenization_spaces": False, "eos_token": "</s>"}
    if kind == "spm":
        cfg.update({"legacy": legacy, "model_max_length": 1000000000000000019884624838656, "pad_token": None,
                    "sp_model_kwargs": {}, "spaces_between_special_tokens": False, "tokenizer_class": "LlamaTokenizer",
                    "unk_token": "<unk>", "use_default_system_prompt": False})
    else:
        cfg.update({"model_max_length": 1000000000000000019884624838656, "tokenizer_class": "PreTrainedTokenizerFast",
                    "unk_token": "<unk>"})
    return cfg


def build(name, out):
    """Writes out/<name>/{tokenizer.json, tokenizer_config.json}; returns (Tokenizer, folder)."""
    fname, kind, legacy = SOURCES[name]
    path = os.path.join(data_dir(), fname)
    tok = convert_spm(path, legacy) if kind == "spm" else convert_tekken(path)
    folder = os.path.join(out, name)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
        f.write(tok.to_str(pretty=True) + "\n")
    with open(os.path.join(folder, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        f.write(json.dumps(tokenizer_config(tok, kind, legacy), ensure_ascii=False, indent=2) + "\n")
    if kind == "spm":   # mistralai's HF repos ship the SentencePiece model beside tokenizer.json
        shutil.copyfile(path, os.path.join(folder, "tokenizer.model"))
    print(f"{name}: {folder} ({tok.get_vocab_size()} tokens, from {fname})")
    return folder


def mistral_common_encoder(name):
    """encode(text) -> ids of mistral-common's own tokenizer for `name`, without BOS/EOS."""
    fname, kind, _ = SOURCES[name]
    path = os.path.join(data_dir(), fname)
    if kind == "spm":
        from mistral_common.tokens.tokenizers.sentencepiece import SentencePieceTokenizer
        mc = SentencePieceTokenizer(path)
    else:
        from mistral_common.tokens.tokenizers.tekken import Tekkenizer
        mc = Tekkenizer.from_file(path)
    return lambda text: mc.encode(text, bos=False, eos=False)


def mistral_common_cause(name, text, tok):
    """Why mistral-common may differ from the HF file on `text`, or None when no known cause applies."""
    kind, legacy = SOURCES[name][1], SOURCES[name][2]
    added = tok.get_added_tokens_decoder().values()
    if any(t.special and t.content in text for t in added):
        return "control token in the text: HF matches it as an added token, mistral-common encodes it as text"
    if kind == "spm" and not legacy and text[:1] in (" ", "▁"):
        return "Metaspace(prepend_scheme=first) adds no dummy prefix to text starting with ' '/'▁'; SentencePiece does"
    if kind == "spm" and any(text.startswith(t.content) for t in added):
        return ("user-defined piece at the start: SentencePiece puts its dummy prefix before it, HF splits the added "
                "token out first and prefixes nothing")
    return None


def auto_tokenizer_cause(name, text, tok):
    """Why transformers' AutoTokenizer may differ from the HF file on `text`, or None."""
    kind, legacy = SOURCES[name][1], SOURCES[name][2]
    starts = [text] + [text.split(t.content, 1)[1] for t in tok.get_added_tokens_decoder().values() if t.content in text]
    if kind == "spm" and legacy and any(s[:1] in (" ", "▁") for s in starts):
        return ("transformers 5's LlamaTokenizer rebuilds legacy=True as Metaspace(prepend_scheme=always), which adds "
                "no '▁' where the text or a segment after an added token starts with ' '/'▁'; the file's Prepend does")
    return None


def compare(name, folder, texts, tok):
    """Agreement of the file's plain ids with AutoTokenizer's and mistral-common's; prints every
    disagreement with its cause. Returns the counts."""
    from transformers import AutoTokenizer
    auto = AutoTokenizer.from_pretrained(folder)
    mc = mistral_common_encoder(name)
    counts = {"strings": len(texts), "auto_differ": 0, "auto_unexplained": 0, "mc_differ": 0, "mc_unexplained": 0}
    for text in texts:
        ids = tok.encode(text, add_special_tokens=True).ids
        plain = tok.encode(text, add_special_tokens=False).ids
        for ref, key, ref_ids, why in (("AutoTokenizer", "auto", auto.encode(text), auto_tokenizer_cause),
                                       ("mistral-common", "mc", mc(text), mistral_common_cause)):
            if ref_ids != (ids if key == "auto" else plain):
                cause = why(name, text, tok)
                counts[key + "_differ"] += 1
                counts[key + "_unexplained"] += cause is None
                print(f"  {name}: {ref} differs on {text[:50]!r}: {cause or 'UNEXPLAINED'}")
    print(f"{name}: {counts['strings']} strings; AutoTokenizer differs on {counts['auto_differ']} "
          f"({counts['auto_unexplained']} unexplained), mistral-common on {counts['mc_differ']} "
          f"({counts['mc_unexplained']} unexplained)")
    return auto, counts


def check_chkhsh(name, auto):
    h = hashlib.sha256(str(auto.encode(CHK_TXT)).encode()).hexdigest()
    ok = h == NEMO_CHKHSH
    print(f"{name}: chkhsh {h} {'== Mistral-Nemo-Base-2407 (llama.cpp: tekken)' if ok else '!= ' + NEMO_CHKHSH}")
    return ok


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(here, "../build/mistral-tokenizers"))
    ap.add_argument("--fixtures", action="store_true", help="also write tests/fixtures/tokenizer/<name>.jsonl")
    ap.add_argument("--fixtures-dir", default=os.path.join(here, "../tests/fixtures/tokenizer"))
    ap.add_argument("--shared", default=os.path.join(here, "../../shared"))
    ap.add_argument("--only", default=None, help="comma-separated names: " + ",".join(SOURCES))
    ap.add_argument("--no-checks", action="store_true", help="only write the folders")
    args = ap.parse_args()
    from tokenizers import Tokenizer
    ok = True
    for name in SOURCES:
        if args.only and name not in args.only.split(","):
            continue
        folder = build(name, args.out)
        if args.no_checks and not args.fixtures:
            continue
        tok = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
        have_prose = os.path.isdir(os.path.join(args.shared, "data"))
        if args.fixtures and not have_prose:
            sys.exit(f"{args.shared}/data: not found (the fixtures hold its prose pages)")
        texts = HARD + HOSTILE + MISTRAL_TEXTS + (prose(args.shared) if have_prose else [])
        auto, _ = compare(name, folder, texts, tok)
        if SOURCES[name][1] == "tekken":
            ok &= check_chkhsh(name, auto)
        if args.fixtures:
            lines = fixture_lines(tok, texts, set(HARD + HOSTILE + MISTRAL_TEXTS))
            os.makedirs(args.fixtures_dir, exist_ok=True)
            path = os.path.join(args.fixtures_dir, name + ".jsonl")
            write_jsonl(path, lines)
            print(f"{name}: {path}: {len(lines)} lines")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
