#!/usr/bin/env python3
"""make_tokenizer_fixtures.py — writes tests/fixtures/tokenizer/*.jsonl, the parity fixtures of the C
tokenizer (src/tokenizer/), from Hugging Face `tokenizers` / `transformers`.

For every real tokenizer in ../shared/models it writes `<name>.jsonl`: one JSON object per line,
    {"text": str, "ids": [...], "ids_plain": [...], "decoded": str, "offsets": [s0, e0, s1, e1, ...]}
for the strings of HARD, HOSTILE (multilingual and hostile) and a few prose pages, where `ids` =
encode(text, add_special_tokens=True), `ids_plain` = add_special_tokens=False, `decoded` =
decode(ids, skip_special_tokens=False), `offsets` = the byte range of each token of `ids` (HF's
character offsets in UTF-8 bytes; only for HARD and HOSTILE, and left out where HF's own are off:
see write_model); plus lines {"decode_ids": [...], "decoded": str} for id sequences that cut
multi-byte characters (partial tokens) or spell invalid UTF-8 byte by byte (BAD_BYTES), lines
{"bad_json": str} for JSON lines HF cannot encode (lone surrogates), and `<name>.chat.jsonl` with
    {"messages": [...], "add_generation_prompt": bool, "text": str, "ids": [...]}
rendered by transformers' `apply_chat_template` (tokenize=False), ids = encode(text,
add_special_tokens=False) with the folder's tokenizer.json (what apply_chat_template(tokenize=True)
does, but with the file's pipeline: see load()).

Llama-3.2-1B: ../shared has only original/tokenizer.model (tiktoken) — its tokenizer.json is not
available. The reference is built here with transformers' TikTokenConverter (the converter that made
Meta's tokenizer.json: byte-level BPE, merges derived from tiktoken ranks, ignore_merges=True) plus
a TemplateProcessing post-processor adding <|begin_of_text|>, and every encoding is cross-checked
against `tiktoken` itself (pip install tiktoken). The base model has no chat template, so the chat
fixtures use the Llama-3 Instruct template written below (LLAMA3_TEMPLATE, Meta-Llama-3-8B-Instruct).

Qwen3: Qwen3 uses the Qwen2/Qwen2.5 byte-level BPE (151643 tokens, the same pre-tokenizer; its own
vocab.json and merges.txt are not in ../shared, so they are not compared byte for byte) with four
more added tokens, ids 151665..151668: <tool_response>,
</tool_response>, <think>, </think>, all "special": false (Qwen3's tokenizer_config.json
added_tokens_decoder, as quoted for Qwen3-4B in github.com/akougkas/warpio-cli
warpio-docs/ai-docs/model_cards/qwen3:4b.md). No Qwen3 tokenizer.json (~11 MB) can be committed, so
tests/fixtures/tokenizer/Qwen3/tokenizer_config.json is written here: Qwen2.5-0.5B-Instruct's from
../shared with those four entries added and no chat template; the reference is transformers' tokenizer
of ../shared/models/Qwen2.5-0.5B/{vocab.json,merges.txt} with that file, and Qwen3.jsonl adds strings
around the think and tool tokens (QWEN3_TEXTS). The C test assembles the same folder.

Usage: python3 tools/make_tokenizer_fixtures.py [--shared ../shared]
"""
import argparse
import json
import os
import sys

HARD = [
    "",
    " ",
    "   ",
    "\t",
    "\n",
    "Hello world",
    " Hello world",
    "Hello  world   with    runs of     spaces",
    "trailing spaces   ",
    "   leading spaces",
    "tabs\tand\t\ttabs\t \tmixed",
    "line\nbreaks\n\nand\n\n\nmore\n",
    "windows\r\nline\r\nendings\r\n\r\n",
    "lone\rcarriage return",
    "  \n  \n\t\n x",
    "12345 1234567890 3.14159 -42 1,000,000 0x1F 2024-01-31",
    "99999999999999999999999999",
    "a1b2c3 d4e5 x86_64 GPT4o",
    "I'm you're he's we've they'll I'd it's don't",
    "I'M YOU'RE HE'S WE'VE THEY'LL I'D IT'S DON'T",
    "'s 's 'S 'tis 're 'RE 'll 'LL",
    "Long\u017fs 'ſ 'K '\u212a",
    "!!! ??? ... --- *** ((( ))) [[[ ]]] {{{ }}} ;;; ::: ,,, @@@ ### $$$ %%% ^^^ &&&",
    "a.b,c;d:e!f?g(h)i[j]k{l}m<n>o/p\\q|r~s`t",
    "def f(x):\n    return x**2 + 1  # comment\n\n\nclass A:\n\tpass\n",
    "<html><body class=\"x\">Hi &amp; bye</body></html>",
    "emoji 😀😃😄 👍🏽 🇺🇸 🇯🇵",
    "family 👨‍👩‍👧‍👦 and 🏳️‍🌈 ZWJ",
    "中文测试：你好，世界！这是一个句子。",
    "日本語のテキスト、カタカナとひらがな。",
    "한국어 텍스트 안녕하세요",
    "العربية: مرحبا بالعالم ١٢٣٤",
    "עברית שלום",
    "Ελληνικά και русский язык",
    "हिन्दी पाठ और संख्या १२३",
    "ไทย ภาษา",
    "combining: e\u0301 a\u0300 o\u0308 n\u0303 A\u030a",
    "precomposed: é à ö ñ Å",
    "NFC-sensitive: \u212b \u2126 \u1e9b\u0323 q\u0307\u0323 \u0071\u0323\u0307",
    "Hangul jamo: \u1100\u1161\u11a8 \u1112\u1161\u11ab",
    "Åström café naïve résumé coöperate",
    "invalid-looking: \ufffd \ufffd\ufffd <0xFF> <0x0A> \\xff\\xfe",
    "bytes: \x00\x01\x02\x7f \x1b[31mred\x1b[0m",
    "nbsp:\u00a0x\u00a0\u00a0y thin\u2009space ideo\u3000space nel\u0085x ls\u2028x zwsp\u200bx",
    "soft\u00adhyphen and \ufeffBOM and \u200d joiner",
    "separators\x1c\x1d\x1e\x1f x \u180e y \u2029 z \u1680 w",
    "NFC across specials: e<|im_end|>\u0301 <s>\u0301",
    "Hello\u0085\u0085world \u0085 x",
    "math: ∑∫√∞ ≠ ≤ ≥ ∀x∈ℝ",
    "superscripts ² ³ ¹ ½ ¼ Ⅻ ⑦ 𝟘𝟙",
    "fullwidth ＡＢＣ１２３",
    "ꙮ 𐍈 𝄞 🀄",
    "Special <|endoftext|> inside <|im_start|>user text<|im_end|> here",
    "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n",
    "<s> start </s> end <unk> unk",
    "text</s>after <s>x",
    "<|begin_of_text|>Hello<|eot_id|><|start_header_id|>user<|end_header_id|>",
    "<|reserved_special_token_5|> and <|python_tag|>",
    "<tool_call>\n{\"name\": \"f\"}\n</tool_call>",
    "<|im_start|><|im_start|><|im_end|>",
    "<|im_start",
    "▁already▁has▁metaspace ▁",
    "ĠĠ Ċ ċ characters from byte-level map",
    "a" * 300,
    "ab" * 200 + " " + "xyz" * 100,
    " " * 50 + "x" + "\n" * 20,
    "The quick brown fox jumps over the lazy dog. THE QUICK BROWN FOX!",
    "https://example.com/path?query=1&b=2#frag user@example.org",
    "snake_case camelCase PascalCase kebab-case SCREAMING_CASE",
]

# A second, multilingual and hostile corpus: scripts, emoji sequences, combining marks (including
# those that Unicode 9.0, the version of HF's NFC, does not know), letters and digits of Unicode
# 15 to 17 (HF's regexes know 16.0, its Digits 17.0), NUL and control characters, very long words
# and whitespace runs.
HOSTILE = [
    "北京是中华人民共和国的首都，也是全国的政治、文化中心。他说：“我们明天见！”",
    "東京都は日本の首都です。ｶﾀｶﾅ半角とひらがな、漢字が混ざった文章。",
    "𠀀𠀁𪚥 (CJK Ext B) 丽 丸 (compatibility ideographs: NFC maps them) \uf900\uf9dc",
    "대한민국의 수도는 서울입니다. 한글 자모: \u1100\u1161\u11a8 \u1100\u1176 ﾡﾢ",
    "ภาษาไทยไม่มีการเว้นวรรคระหว่างคำ น้ำ ๑๒๓",
    "اللُّغَةُ العَرَبِيَّةُ جميلة ـــ ١٢٣ ۴۵۶ \u200fRTL\u200e فارسی یک",
    "नमस्ते दुनिया क़ ख़ \u0915\u093c ड़ \u0958\u0959 ॐ १२३",
    "emoji 👩🏽‍💻 🧑‍🤝‍🧑 🏴󠁧󠁢󠁳󠁣󠁴󠁿 1️⃣ ❤️ 👍🏿 🇫🇷🇩🇪",
    "Z̷̢̛̖̼͇̭a̶̧̠͖l̴̰̓g̵̳̈́o̸̡̮̐ text ệ ǘ ḗ \u05e9\u05c1\u05bc \u0061\u0316\u0301\u0300\u0315",
    "Tiếng Việt có dấu: người, được, nước, thuỷ",
    # combining marks assigned after Unicode 9.0: HF's NFC leaves them unordered (ccc 0)
    "marks after 9.0: x\u1ac1\u0316 x\u0898\u0316 x\u08d3\u0316 a\u0301\u1ac1 e\U00010f46\u0316 \U00011935\U00011930",
    "Sogdian \U00010f30\U00010f46\U00010f47 Hanifi Rohingya \U00010d00\U00010d24\U00010d25\u0316 Dives Akuru \U00011935\U00011930",
    # letters and digits of Unicode 15.0 (Kawi, Nag Mundari, CJK Ext H), 16.0 (Garay, Sunuwar), 17.0
    "new letters: a\U00011f04b \U0001e4d0\U0001e4d1 \U00031350\U00031351 \U00010d50x \U00011bc0y \u1c89z",
    "new digits: 1\U00011f50 2 \U00010d40\U00010d41 \U0001e4f0 \U00016d70 3\U0001e5f1",
    "NUL\x00inside\x00\x00text \x00",
    "C0 \x01\x02\x03\x04\x05\x06\x07\x08 \x0b\x0c \x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x16\x17\x18\x19\x1a\x1b\x7f",
    "C1 \x80\x81\x85\x8d\x9f \u00ad\u061c\u2066\u2069\ufeff\ufff9\U000e0001",
    "\x16\x16",
    "\x16",
    "a\x16\x16",
    "supercalifragilisticexpialidocious" * 20,
    "x" * 2000,
    "9" * 500,
    "abc123" * 80,
    "的" * 300,
    "😀" * 120,
    " " * 2000 + "end",
    "\n" * 300,
    "\t \n" * 100,
    "\u3000" * 100 + "x\u00a0\u00a0\u00a0y" + "\u2028" * 20,
    "\r\n\r\n  \r \r\r\n\n\r x",
    "mixed 中文English123русский😀عربي١٢३",
    "'S 'T 'RE 'Ve 'M 'LL 'D 'ſ 'K'K",
    "\ufffd\ufffd \U0010fffd \U000f0000 \ue000 private use",
    "\u0301 leading combining mark and \u200d leading ZWJ",
    "▁ ▁▁ ▁x x▁ ▁<s>▁",
]

# Lines that are malformed JSON for a strict reader (lone surrogates): HF's encode refuses them too.
BAD_JSON_LINES = ['{"text": "lone \\ud800 surrogate"}', '{"text": "\\udc00 low"}', '{"text": "pair \\ud83d"}']

# ids that spell invalid UTF-8 when decoded byte by byte: HF replaces each maximal bad subpart by U+FFFD
BAD_BYTES = [[0xFF], [0xC3], [0xE4, 0xB8], [0xED, 0xA0, 0x80], [0xF0, 0x9F, 0x98, 0x61], [0xC0, 0xAF],
             [0xF4, 0x90, 0x80, 0x80], [0x80, 0x80, 0x61], [0x61, 0xE2, 0x82, 0x62, 0xC3, 0xA9]]

PARTIAL_TEXTS = ["😀 héllo 中文", "👨‍👩‍👧 ok", "é"]

CONVERSATIONS = [
    [{"role": "user", "content": "Hello!"}, {"role": "assistant", "content": "Hi there. How can I help?"}],
    [{"role": "system", "content": "You are a terse assistant."},
     {"role": "user", "content": "What is 2+2?"}, {"role": "assistant", "content": "4"},
     {"role": "user", "content": "And 3*3?"}, {"role": "assistant", "content": "9, since 3 × 3 = 9."}],
    [{"role": "user", "content": "Write a haiku\nabout the sea."},
     {"role": "assistant", "content": "Waves fold into foam,\n\nsalt wind keeps the old promise —\n  gulls write it in air."}],
    [{"role": "system", "content": "Réponds en français. 日本語もOK 😀"},
     {"role": "user", "content": "  leading and trailing spaces  "},
     {"role": "assistant", "content": "\nSure: <not a token> and a tab\there.\n"}],
    [{"role": "user", "content": "Only a question, no answer yet."}],
    [{"role": "user", "content": "Q1"}, {"role": "assistant", "content": "A1"},
     {"role": "system", "content": "Late system note."},
     {"role": "user", "content": "Q2"}, {"role": "assistant", "content": ""}],
    [{"role": "user", "content": "NUL\x00in content \x16\x16 中文"},
     {"role": "assistant", "content": "\x00 \u1100\u1161 ok\u0301 \U00011f04"}],
    # an assistant turn opening the conversation (a generation prompt written inside the loop
    # writes none before it)
    [{"role": "assistant", "content": "I start."}, {"role": "user", "content": "Then me."},
     {"role": "assistant", "content": "\nDone."}],
]

QWEN3_ADDED = [(151665, "<tool_response>"), (151666, "</tool_response>"), (151667, "<think>"), (151668, "</think>")]
QWEN3_TEXTS = [
    "<think>\n\n</think>\n\n",
    "<|im_start|>assistant\n<think>\nLet me think: 2 + 2.\n</think>\n\nIt is 4.<|im_end|>",
    "a<think>b</think>c",
    " <think> spaced </think> ",
    "<think<think>>think>",
    "</think></think><think>",
    "<tool_call>\n{\"name\": \"f\"}\n</tool_call><tool_response>\nok\n</tool_response>",
    "<THINK> <Think> < think> <think > think </ think>",
    "中文<think>推理</think>答案 😀",
]


LLAMA3_TEMPLATE = (
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
    "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + "
    "'<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}"
    "{{ content }}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}"
)
LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                  r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def prose(shared):
    out = []
    with open(os.path.join(shared, "data/tinyshakespeare/input.txt"), encoding="utf-8") as f:
        text = f.read()
    for start in (0, 200000, 700000):  # three "pages" of ~6 KB each
        out.append(text[start:start + 6000])
    with open(os.path.join(shared, "data/gsm8k/train.jsonl"), encoding="utf-8") as f:
        for i, line in enumerate(f):
            if i >= 12:
                break
            row = json.loads(line)
            out.append(row["question"] + "\n" + row["answer"])
    return out


def llama3_reference(shared):
    """(tokenizers.Tokenizer, transformers tokenizer, tiktoken.Encoding) for Llama-3.2-1B."""
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe
    from tokenizers import processors
    from transformers import PreTrainedTokenizerFast
    from transformers.convert_slow_tokenizer import TikTokenConverter

    folder = os.path.join(shared, "models/Llama-3.2-1B")
    path = os.path.join(folder, "original/tokenizer.model")
    with open(os.path.join(folder, "tokenizer_config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    specials = sorted(((int(k), v["content"]) for k, v in cfg["added_tokens_decoder"].items()))
    tok = TikTokenConverter(vocab_file=path, pattern=LLAMA3_PATTERN,
                            extra_special_tokens=[s for _, s in specials]).converted()
    for i, s in specials:
        assert tok.token_to_id(s) == i, (s, tok.token_to_id(s), i)
    tok.post_processor = processors.TemplateProcessing(
        single="<|begin_of_text|> $A", pair="<|begin_of_text|> $A <|begin_of_text|> $B",
        special_tokens=[("<|begin_of_text|>", 128000)])
    hf = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=cfg["bos_token"], eos_token=cfg["eos_token"])
    ranks = load_tiktoken_bpe(path)
    enc = tiktoken.Encoding(name="llama3", pat_str=LLAMA3_PATTERN, mergeable_ranks=ranks,
                            special_tokens={s: i for i, s in specials})
    return tok, hf, enc


def qwen3_folder(shared, outdir):
    """Writes outdir/Qwen3/tokenizer_config.json; returns a temp folder with it and Qwen2.5's vocab."""
    import tempfile
    with open(os.path.join(shared, "models/Qwen2.5-0.5B-Instruct/tokenizer_config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    cfg.pop("chat_template", None)
    for i, content in QWEN3_ADDED:
        cfg["added_tokens_decoder"][str(i)] = {"content": content, "lstrip": False, "normalized": False,
                                               "rstrip": False, "single_word": False, "special": False}
    os.makedirs(os.path.join(outdir, "Qwen3"), exist_ok=True)
    with open(os.path.join(outdir, "Qwen3/tokenizer_config.json"), "w", encoding="utf-8") as f:
        f.write(json.dumps(cfg, ensure_ascii=False, indent=2) + "\n")
    folder = tempfile.mkdtemp(prefix="qwen3-tok-")
    for name in ("vocab.json", "merges.txt"):
        os.symlink(os.path.join(os.path.abspath(shared), "models/Qwen2.5-0.5B", name), os.path.join(folder, name))
    os.symlink(os.path.abspath(os.path.join(outdir, "Qwen3/tokenizer_config.json")),
               os.path.join(folder, "tokenizer_config.json"))
    return folder


def load(shared, name, outdir=None):
    """(tokenizers.Tokenizer, transformers tokenizer, chat template or None, tiktoken or None)."""
    from transformers import AutoTokenizer
    folder = os.path.join(shared, "models", name)
    if name == "Qwen3":
        folder = qwen3_folder(shared, outdir)
        hf = AutoTokenizer.from_pretrained(folder)
        added = {t.content: i for i, t in hf.backend_tokenizer.get_added_tokens_decoder().items()}
        assert all(added.get(c) == i for i, c in QWEN3_ADDED), added
        return hf.backend_tokenizer, hf, None, None
    if name == "Llama-3.2-1B":
        tok, hf, enc = llama3_reference(shared)
        return tok, hf, LLAMA3_TEMPLATE, enc
    hf = AutoTokenizer.from_pretrained(folder)
    tok = hf.backend_tokenizer
    if os.path.exists(os.path.join(folder, "tokenizer.json")):
        # The file is the spec. transformers 5 rebuilds some pipelines from the vocabulary instead
        # (LlamaTokenizer: Metaspace(prepend_scheme="first") and no per-segment "▁" prepend), so for
        # TinyLlama its ids differ from the file's after special tokens and on leading spaces.
        from tokenizers import Tokenizer
        tok = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    return tok, hf, hf.chat_template, None


def byte_offsets(text, offsets):
    """HF's character offsets as UTF-8 byte offsets of text."""
    pos = [0]
    for c in text:
        pos.append(pos[-1] + len(c.encode("utf-8")))
    return [x for a, b in offsets for x in (pos[a], pos[b])]


def byte_token_ids(tok):
    """id of the token that is exactly byte b (byte-level: its GPT-2 character; else <0xNN>), or None."""
    vocab = tok.get_vocab()
    if "<0x41>" in vocab:
        return [vocab.get(f"<0x{b:02X}>") for b in range(256)]
    printable = [b for b in range(256) if 33 <= b <= 126 or 161 <= b <= 172 or 174 <= b <= 255]
    cps, extra = {}, 0
    for b in range(256):
        if b in printable:
            cps[b] = b
        else:
            cps[b] = 256 + extra
            extra += 1
    return [vocab.get(chr(cps[b])) for b in range(256)]


def fixture_lines(tok, texts, with_offsets, enc=None):
    """The parity lines of tokenizers.Tokenizer `tok` (format: this file's docstring): one per text
    (offsets for those in `with_offsets`), then the bad-JSON, bad-byte, partial and skip-special
    decode cases. `enc`: a tiktoken Encoding every plain encoding is checked against."""
    byte_ids = byte_token_ids(tok)
    is_nfc = "NFC" in str(tok.normalizer)
    lines = []
    tiktoken_differs = 0
    for text in texts:
        e = tok.encode(text, add_special_tokens=True)
        ids = e.ids
        plain = tok.encode(text, add_special_tokens=False).ids
        if enc is not None:  # Llama-3: HF reference must equal tiktoken itself
            ref = enc.encode(text, allowed_special="all")
            if text in HOSTILE and plain != ref:
                tiktoken_differs += 1  # tiktoken's regex crate and HF's Oniguruma know other Unicode versions
                print(f"  tiktoken differs from HF tokenizers on {text[:40]!r}")
            else:
                assert plain == ref, (text, plain, ref)
        decoded = tok.decode(ids, skip_special_tokens=False)
        line = {"text": text, "ids": ids, "ids_plain": plain, "decoded": decoded}
        # HF's offsets are off after a byte without a token (SmolLM2 lacks a few control bytes: the
        # dropped byte is not counted, later tokens shift left) and after NFC changed the text (a
        # composed character keeps only its base's range, later ones shift): not a reference there.
        dropped = any(byte_ids[b] is None for b in text.encode("utf-8"))
        nfc_changed = is_nfc and tok.normalizer.normalize_str(text) != text
        if text in with_offsets and not dropped and not nfc_changed:
            line["offsets"] = byte_offsets(text, e.offsets)
        lines.append(line)
    for line in BAD_JSON_LINES:
        try:
            tok.encode(json.loads(line)["text"])
            raise AssertionError("HF encoded a lone surrogate: " + line)
        except (TypeError, UnicodeError, Exception) as err:
            if isinstance(err, AssertionError):
                raise
        lines.append({"bad_json": line})
    for seq in BAD_BYTES:
        if all(byte_ids[b] is not None for b in seq):
            ids = [byte_ids[b] for b in seq]
            lines.append({"decode_ids": ids, "decoded": tok.decode(ids, skip_special_tokens=False)})
    for text in PARTIAL_TEXTS:
        ids = tok.encode(text, add_special_tokens=False).ids
        for cut in range(1, min(len(ids), 6)):
            for part in (ids[cut:], ids[:-cut]):
                lines.append({"decode_ids": part, "decoded": tok.decode(part, skip_special_tokens=False)})
    # Special tokens skipped on decode.
    sample = "<|im_start|>user\nhi<|im_end|>" if "im_start" in str(tok.get_added_tokens_decoder()) else "<s>hi</s>"
    ids = tok.encode(sample, add_special_tokens=True).ids
    lines.append({"decode_ids": ids, "skip_special": True, "decoded": tok.decode(ids, skip_special_tokens=True)})
    return lines


def write_jsonl(path, lines):
    with open(path, "w", encoding="utf-8") as f:
        for line in lines:
            f.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")


def write_model(shared, name, outdir):
    tok, hf, template, enc = load(shared, name, outdir)
    texts = HARD + HOSTILE + (QWEN3_TEXTS if name == "Qwen3" else []) + prose(shared)
    with_offsets = set(HARD + HOSTILE + (QWEN3_TEXTS if name == "Qwen3" else []))
    lines = fixture_lines(tok, texts, with_offsets, enc)
    write_jsonl(os.path.join(outdir, name + ".jsonl"), lines)
    n = len(lines)
    if template:
        chats = []
        for conv in CONVERSATIONS:
            for gen in (False, True):
                if gen and conv[-1]["role"] == "assistant":
                    continue
                text = hf.apply_chat_template(conv, chat_template=template, tokenize=False,
                                              add_generation_prompt=gen)
                # apply_chat_template(tokenize=True) = encode(text, add_special_tokens=False).
                ids = tok.encode(text, add_special_tokens=False).ids
                chats.append({"messages": conv, "add_generation_prompt": gen, "text": text, "ids": list(ids)})
        with open(os.path.join(outdir, name + ".chat.jsonl"), "w", encoding="utf-8") as f:
            for c in chats:
                f.write(json.dumps(c, ensure_ascii=False, separators=(",", ":")) + "\n")
        n += len(chats)
    print(f"{name}: {n} lines")


def main():
    ap = argparse.ArgumentParser()
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--shared", default=os.path.join(here, "../../shared"))
    ap.add_argument("--out", default=os.path.join(here, "../tests/fixtures/tokenizer"))
    ap.add_argument("--only", default=None, help="comma-separated names")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name in ("SmolLM2-135M-Instruct", "Qwen2.5-0.5B", "TinyLlama-1.1B-Chat-v1.0", "Llama-3.2-1B", "Qwen3"):
        if args.only and name not in args.only.split(","):
            continue
        write_model(args.shared, name, args.out)


if __name__ == "__main__":
    sys.exit(main())
