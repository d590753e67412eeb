#!/usr/bin/env python3
"""Checks `fastlora export --gguf` against the real llama.cpp, through the llama-cpp-python
binding pinned below (its wheel builds the llama.cpp sources it vendors).

    python3 tools/llama_cpp_check.py --setup        # once: builds llama-cpp-python==PIN into
                                                    # ~/.cache/fastlora/llama-cpp-venv (~1 h on 2 cores)
    ~/.cache/fastlora/llama-cpp-venv/bin/python tools/llama_cpp_check.py [--out FILE] [--fastlora build/fastlora]

What it checks (each result goes into the JSON written to --out, default
tests/fixtures/gguf/llama_cpp_check.json; exit status 1 when any check fails):

1. Logits. On the HF fixtures tests/fixtures/hf/{llama_gqa, qwen2_bias_tied, llama3_rope} (GQA,
   qwen2 q/k/v biases + tied embeddings + rsLoRA, llama3 RoPE + head_dim != hidden/heads, each with
   its PEFT adapter) and on stories260K (`fastlora convert-llama2c`, real tokenizer, with an adapter
   fastlora trains here for 30 steps), for each type f32, f16, bf16, q8_0: the next-token logits
   llama.cpp computes for a fixed id sequence with (a) the base GGUF + our LoRA GGUF (--lora), (b) our
   merged GGUF, (c) the base GGUF alone, against fastlora's own logits (`generate --logits`, f32 CPU
   reference) of base + adapter (a, b) or base (c). llama.cpp runs with an f32 KV cache and without
   flash attention, so f32 measures the export alone. Tolerances (rel = RMS(diff) / RMS(reference)):
     f32   max |diff| <= 1e-3                  (f32 sums in another order: ~1e-6 relative)
     f16   rel <= 2e-3                         (weights and activations rounded to f16 in ggml's
                                                f16 matmul: 2^-11 ~ 5e-4 per value, compounded)
     bf16  rel <= 1.5e-2                       (2^-8 ~ 4e-3 per weight)
     q8_0  rel <= 4e-2                         (weights and activations in 8-bit blocks: ~0.6% per
                                                value each, compounded over the layers)
   and for f32 the argmax of every position equal to fastlora's (for the rounded types the argmax
   agreement is recorded only: random tiny models have near-ties that rounding flips).
2. Tokenizer. For the real tokenizers in ../shared/models (Qwen2.5-0.5B, SmolLM2-135M-Instruct,
   TinyLlama-1.1B-Chat-v1.0, Llama-3.2-1B) a tiny random model with the real vocabulary size and the
   real tokenizer files is exported; llama.cpp's tokenizer (vocab-only load of our GGUF) must give
   exactly the ids transformers gives (tests/fixtures/tokenizer/<model>.jsonl: with and without the
   special tokens; the rendered chats of <model>.chat.jsonl) — except where llama.cpp's tokenizer
   itself differs from transformers whatever the GGUF says, each such string proved by removing the
   cause (explain_mismatch: no NFC normalizer in llama.cpp; "</s>"-like vocabulary tokens made
   control tokens) and listed. stories260K's tok512 tokenizer, which transformers has no file of,
   is compared with fastlora's own tokenizer on the same strings. Detokenization is recorded only.
3. Chat template. The GGUF's tokenizer.chat_template is byte-identical to the folder's template;
   rendered by llama-cpp-python's Jinja chat formatter from the GGUF metadata alone (template, BOS,
   EOS) it must equal transformers' rendering (the .chat.jsonl fixtures); llama.cpp's own C
   template engine (llama_chat_apply_template, which recognizes the template family and renders it
   natively) is recorded too, with the cases where it differs from transformers.
4. Files. The sha256 of every base and LoRA GGUF checked above that involves no floating-point
   arithmetic order (everything but merged models), so tests/test_export_llama_cpp.c can confirm
   in CI, without llama.cpp, that fastlora still writes exactly the files llama.cpp accepted.
"""

import argparse
import ctypes
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

PIN = "0.3.36"
VENV = os.path.expanduser("~/.cache/fastlora/llama-cpp-venv")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = "tests/fixtures/hf"
TYPES = ["f32", "f16", "bf16", "q8_0"]
TOL = {"f32": {"max_abs": 1e-3, "argmax": 1.0}, "f16": {"rel": 2e-3}, "bf16": {"rel": 1.5e-2}, "q8_0": {"rel": 4e-2}}
TOKENIZER_MODELS = ["Qwen2.5-0.5B", "SmolLM2-135M-Instruct", "TinyLlama-1.1B-Chat-v1.0", "Llama-3.2-1B"]


def setup():
    """Builds the pinned llama-cpp-python (and so llama.cpp) into VENV, CPU only, no extras."""
    if not os.path.exists(os.path.join(VENV, "bin", "python")):
        subprocess.check_call([sys.executable, "-m", "venv", "--system-site-packages", VENV])
    env = dict(os.environ)
    env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 2))
    env["CMAKE_ARGS"] = ("-DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF "
                         "-DLLAMA_BUILD_SERVER=OFF -DLLAMA_CURL=OFF -DGGML_BLAS=OFF -DGGML_NATIVE=ON")
    subprocess.check_call([os.path.join(VENV, "bin", "pip"), "install", "--no-cache-dir", f"llama-cpp-python=={PIN}"], env=env)
    print(f"llama-cpp-python {PIN} in {VENV}; run: {VENV}/bin/python tools/llama_cpp_check.py")


# ---- fastlora ------------------------------------------------------------------------------------

class Fastlora:
    def __init__(self, binary):
        self.bin = binary

    def run(self, *args):
        p = subprocess.run([self.bin, *args], capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
        if p.returncode != 0:
            raise RuntimeError(f"fastlora {' '.join(args)}: {p.stderr.strip()}")
        return p.stdout

    def export(self, out, model, adapter=None, type_="f32", lora_only=False, no_tokenizer=False):
        args = ["export", "--gguf", out, "--model", model, "--type", type_, "--force"]
        if adapter:
            args += ["--adapter", adapter]
        if lora_only:
            args.append("--lora-only")
        if no_tokenizer:
            args.append("--no-tokenizer")
        self.run(*args)
        return {"model": model, "adapter": adapter, "type": type_, "lora_only": lora_only, "no_tokenizer": no_tokenizer}

    def logits(self, model, adapter, ids, tmp):
        import numpy as np
        path = os.path.join(tmp, "logits.f32")
        args = ["generate", "--model", model, "--prompt-ids", " ".join(map(str, ids)), "--logits", path,
                "--dtype", "f32", "--device", "cpu"]
        if adapter:
            args += ["--adapter", adapter]
        self.run(*args)
        return np.fromfile(path, dtype=np.float32).reshape(len(ids), -1)


# ---- llama.cpp -----------------------------------------------------------------------------------

class LlamaCpp:
    def __init__(self):
        import llama_cpp
        self.L = llama_cpp
        self._log_cb = llama_cpp.llama_log_callback(lambda level, text, data: None)
        llama_cpp.llama_log_set(self._log_cb, ctypes.c_void_p(0))
        llama_cpp.llama_backend_init()
        self.version = llama_cpp.__version__
        self.system_info = llama_cpp.llama_print_system_info().decode()

    def load(self, path, vocab_only=False):
        L = self.L
        mp = L.llama_model_default_params()
        mp.vocab_only = vocab_only
        mp.n_gpu_layers = 0
        model = L.llama_model_load_from_file(path.encode(), mp)
        if not model:
            raise RuntimeError(f"llama.cpp could not load {path}")
        return model

    def logits(self, model_path, ids, lora_path=None):
        import numpy as np
        L = self.L
        model = self.load(model_path)
        cp = L.llama_context_default_params()
        cp.n_ctx = cp.n_batch = cp.n_ubatch = max(32, len(ids))
        cp.n_threads = cp.n_threads_batch = 1
        cp.type_k = cp.type_v = 0  # GGML_TYPE_F32: no f16 rounding in the KV cache
        cp.flash_attn_type = 0     # disabled
        ctx = L.llama_init_from_model(model, cp)
        adapter = None
        if lora_path:
            adapter = L.llama_adapter_lora_init(model, lora_path.encode())
            if not adapter:
                raise RuntimeError(f"llama.cpp refused the LoRA {lora_path}")
            arr = (L.llama_adapter_lora_p_ctypes * 1)(adapter)
            L.llama_set_adapters_lora(ctx, arr, 1, (ctypes.c_float * 1)(1.0))
        n = len(ids)
        batch = L.llama_batch_init(n, 0, 1)
        batch.n_tokens = n
        for i, t in enumerate(ids):
            batch.token[i] = t
            batch.pos[i] = i
            batch.n_seq_id[i] = 1
            batch.seq_id[i][0] = 0
            batch.logits[i] = 1
        if L.llama_decode(ctx, batch) != 0:
            raise RuntimeError(f"llama_decode failed on {model_path}")
        V = L.llama_vocab_n_tokens(L.llama_model_get_vocab(model))
        out = np.stack([np.ctypeslib.as_array(L.llama_get_logits_ith(ctx, i), shape=(V,)).copy() for i in range(n)])
        L.llama_batch_free(batch)
        if adapter:
            L.llama_adapter_lora_free(adapter)
        L.llama_free(ctx)
        L.llama_model_free(model)
        return out

    def tokenize(self, model, text, add_special, parse_special=True):
        L = self.L
        vocab = L.llama_model_get_vocab(model)
        data = text.encode("utf-8")
        cap = len(data) + 16
        buf = (L.llama_token * cap)()
        n = L.llama_tokenize(vocab, data, len(data), buf, cap, add_special, parse_special)
        if n < 0:
            raise RuntimeError("llama_tokenize: buffer too small")
        return list(buf[:n])

    def detokenize(self, model, ids, skip_special):
        L = self.L
        arr = (L.llama_token * max(1, len(ids)))(*ids)
        buf = ctypes.create_string_buffer(1 << 16)
        n = L.llama_detokenize(L.llama_model_get_vocab(model), arr, len(ids), buf, len(buf), False, not skip_special)
        return None if n < 0 else buf.raw[:n].decode("utf-8", errors="replace")

    def meta(self, model, key):
        buf = ctypes.create_string_buffer(1 << 16)
        n = self.L.llama_model_meta_val_str(model, key.encode(), buf, len(buf))
        return None if n < 0 else buf.value.decode("utf-8")

    def token_text(self, model, tid):
        L = self.L
        return L.llama_vocab_get_text(L.llama_model_get_vocab(model), tid).decode("utf-8")

    def builtin_chat(self, template, messages, add_ass):
        L = self.L
        msgs = (L.llama_chat_message * len(messages))()
        keep = []
        for i, m in enumerate(messages):
            r, c = m["role"].encode(), m["content"].encode()
            keep += [r, c]
            msgs[i].role, msgs[i].content = r, c
        buf = ctypes.create_string_buffer(1 << 16)
        n = L.llama_chat_apply_template(template.encode(), msgs, len(messages), add_ass, buf, len(buf))
        return None if n < 0 else buf.raw[:n].decode("utf-8")


def compare(ref, got, type_):
    import numpy as np
    d = got.astype(np.float64) - ref.astype(np.float64)
    rel = float(np.sqrt((d ** 2).mean()) / np.sqrt((ref.astype(np.float64) ** 2).mean()))
    agree = float((got.argmax(-1) == ref.argmax(-1)).mean())
    r = {"max_abs": float(np.abs(d).max()), "rel_rms": rel, "argmax_agree": agree}
    t = TOL[type_]
    r["ok"] = bool(agree >= t.get("argmax", 0.0) and (r["max_abs"] <= t["max_abs"] if "max_abs" in t else rel <= t["rel"]))
    return r


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# ---- the models ----------------------------------------------------------------------------------

def stories_with_adapter(fl, tmp):
    """stories260K as an HF folder (fastlora convert-llama2c) and a LoRA fastlora trains on it."""
    data = os.path.join(ROOT, "..", "shared", "data")
    model = os.path.join(tmp, "stories260K")
    fl.run("convert-llama2c", "--checkpoint", os.path.join(data, "stories260K", "stories260K.bin"),
           "--tokenizer", os.path.join(data, "stories260K", "tok512.bin"), "--out", model)
    text = open(os.path.join(data, "tinyshakespeare", "input.txt"), encoding="utf-8").read()[:20000]
    jsonl = os.path.join(tmp, "shakespeare.jsonl")
    with open(jsonl, "w") as f:
        for i in range(0, len(text), 400):
            f.write(json.dumps({"text": text[i:i + 400]}) + "\n")
    run = os.path.join(tmp, "stories-run")
    fl.run("train", "--model", model, "--data", jsonl, "--out", run, "--seq", "64", "--batch", "4", "--max-steps", "30",
           "--lr", "1e-2", "--rank", "8", "--alpha", "16", "--targets", "all", "--device", "cpu", "--dtype", "f32",
           "--seed", "1", "--eval-frac", "0", "--log-every", "100")
    return model, run


def stories_tokenizer_check(fl, lc, model_dir, gguf, results):
    """stories260K's tokenizer (llama2.c tok512, SentencePiece-style): llama.cpp on our GGUF against
    fastlora's own tokenizer on the fixture strings (transformers has no file of it to compare with)."""
    texts = [json.loads(l)["text"] for l in open(os.path.join(ROOT, "tests", "fixtures", "tokenizer", "TinyLlama-1.1B-Chat-v1.0.jsonl"),
                                                 encoding="utf-8") if '"text"' in l]
    texts = [t for t in texts if "\0" not in t]  # a command-line argument cannot hold NUL
    model = lc.load(gguf, vocab_only=True)
    r = {"model": "stories260K (vs fastlora)", "strings": len(texts), "ids_equal": 0, "ids_plain_equal": 0, "unexplained": []}
    for text in texts:
        for special, key in ((True, "ids_equal"), (False, "ids_plain_equal")):
            args = ["tokenize", "--model", model_dir, "--text", text] + ([] if special else ["--no-special"])
            ours = [int(x) for x in fl.run(*args).split()]
            got = lc.tokenize(model, text, add_special=special)
            if got == ours:
                r[key] += 1
            else:
                r["unexplained"].append({"text": text, "add_special": special, "fastlora": ours, "llama_cpp": got})
    r["ok"] = not r["unexplained"]
    results.append(r)
    lc.L.llama_model_free(model)
    print(f"  {r['model']:26s} ids {r['ids_equal']}/{r['strings']}  plain {r['ids_plain_equal']}/{r['strings']} {'ok' if r['ok'] else 'FAIL'}")


def logit_checks(fl, lc, tmp, results, files):
    import numpy as np
    models = [(n, f"{FIX}/{n}/model", f"{FIX}/{n}/adapter", True) for n in ("llama_gqa", "qwen2_bias_tied", "llama3_rope")]
    shared = os.path.join(ROOT, "..", "shared", "data", "stories260K", "stories260K.bin")
    stories = None
    if os.path.exists(shared):
        m, a = stories_with_adapter(fl, tmp)
        models.append(("stories260K", m, a, False))
        stories = m
    else:
        print("  (../shared absent: stories260K skipped)")
    for name, model, adapter, no_tok in models:
        cfg = json.load(open(os.path.join(model, "config.json")))
        rng = np.random.default_rng(7)
        ids = [int(x) for x in rng.integers(0, cfg["vocab_size"], size=24)]
        ref = {"base": fl.logits(model, None, ids, tmp), "adapter": fl.logits(model, adapter, ids, tmp)}
        for t in TYPES:
            base, lora, merged = (os.path.join(tmp, f"{name}-{t}-{k}.gguf") for k in ("base", "lora", "merged"))
            src = {"base": fl.export(base, model, type_=t, no_tokenizer=no_tok),
                   "lora": fl.export(lora, model, adapter, type_=t, lora_only=True)}
            fl.export(merged, model, adapter, type_=t, no_tokenizer=no_tok)
            for kind, path in (("base", base), ("lora", lora)):
                if name == "stories260K":  # rebuilt in C from ../shared; its trained adapter is machine-specific
                    if kind == "lora":
                        continue
                    src[kind]["model"] = "@stories260K"
                files.append({**src[kind], "check": name, "sha256": sha256(path)})
            for variant, got, want in (("base+lora", lc.logits(base, ids, lora), "adapter"),
                                       ("merged", lc.logits(merged, ids), "adapter"),
                                       ("base", lc.logits(base, ids), "base")):
                r = {"model": name, "type": t, "variant": variant, **compare(ref[want], got, t)}
                results.append(r)
                print(f"  {name:16s} {t:5s} {variant:10s} max|d| {r['max_abs']:.2e} rel {r['rel_rms']:.2e} "
                      f"argmax {r['argmax_agree']:.2f} {'ok' if r['ok'] else 'FAIL'}")
    return stories


def tiny_model(shared_model, out):
    """A 1-layer random model with the real vocabulary size and the real tokenizer files."""
    import numpy as np
    from safetensors.numpy import save_file
    os.makedirs(out, exist_ok=True)
    cfg = json.load(open(os.path.join(shared_model, "config.json")))
    cfg.update({"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2,
                "num_key_value_heads": 1, "head_dim": 16, "max_position_embeddings": 512})
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg, f)
    V, C = cfg["vocab_size"], 32
    rng = np.random.default_rng(0)
    w = {"model.embed_tokens.weight": rng.standard_normal((V, C)).astype(np.float32) * 0.02,
         "model.norm.weight": np.ones(C, np.float32),
         "model.layers.0.input_layernorm.weight": np.ones(C, np.float32),
         "model.layers.0.post_attention_layernorm.weight": np.ones(C, np.float32)}
    for p, (o, i) in {"self_attn.q_proj": (32, C), "self_attn.k_proj": (16, C), "self_attn.v_proj": (16, C),
                      "self_attn.o_proj": (C, 32), "mlp.gate_proj": (64, C), "mlp.up_proj": (64, C),
                      "mlp.down_proj": (C, 64)}.items():
        w[f"model.layers.0.{p}.weight"] = rng.standard_normal((o, i)).astype(np.float32) * 0.05
        if cfg.get("model_type") == "qwen2" and p in ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"):
            w[f"model.layers.0.{p}.bias"] = np.zeros(o, np.float32)
    if not cfg.get("tie_word_embeddings", False):
        w["lm_head.weight"] = rng.standard_normal((V, C)).astype(np.float32) * 0.02
    save_file(w, os.path.join(out, "model.safetensors"), metadata={"format": "pt"})
    for f in os.listdir(shared_model):
        src = os.path.join(shared_model, f)
        if f != "config.json" and os.path.isfile(src):
            shutil.copy(src, out)
    if os.path.isdir(os.path.join(shared_model, "original")):
        shutil.copytree(os.path.join(shared_model, "original"), os.path.join(out, "original"))


def explain_mismatch(lc, model, text, add_special, want):
    """Why llama.cpp's ids differ from transformers' although the metadata is right, or None.
    Two behaviours of llama.cpp's tokenizer itself (not of the GGUF) are recognized, each proved by
    making the difference go away: it does not apply a tokenizer.json NFC normalizer (Qwen2), so
    the NFC form of the text must give transformers' ids; and it turns vocabulary tokens that look
    like end-of-generation markers ("</s>", "<|endoftext|>", ...) into control tokens even when the
    model's vocabulary has them as plain text (Qwen2's "</s>" is), so without special-token parsing
    the ids must be transformers'."""
    import unicodedata
    nfc = unicodedata.normalize("NFC", text)
    if nfc != text and lc.tokenize(model, nfc, add_special) == want:
        return "llama.cpp does not NFC-normalize (the NFC text gives transformers' ids)"
    if lc.tokenize(model, text, add_special, parse_special=False) == want:
        return "llama.cpp makes an end-of-generation-looking vocabulary token a control token (parsed as plain text it matches)"
    return None


def tokenizer_checks(fl, lc, tmp, results, templates):
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter
    shared = os.path.join(ROOT, "..", "shared", "models")
    for name in TOKENIZER_MODELS:
        src = os.path.join(shared, name)
        fixture = os.path.join(ROOT, "tests", "fixtures", "tokenizer", f"{name}.jsonl")
        if not os.path.isdir(src) or not os.path.exists(fixture):
            print(f"  {name}: ../shared or fixture absent, skipped")
            continue
        folder = os.path.join(tmp, name)
        tiny_model(src, folder)
        gguf = os.path.join(tmp, f"{name}.gguf")
        fl.export(gguf, folder, type_="f16")
        model = lc.load(gguf, vocab_only=True)
        all_rows = [json.loads(l) for l in open(fixture, encoding="utf-8")]
        rows = [r for r in all_rows if "text" in r]
        decodes = [r for r in all_rows if "decode_ids" in r]
        chats = [json.loads(l) for l in open(fixture.replace(".jsonl", ".chat.jsonl"), encoding="utf-8")]
        r = {"model": name, "strings": len(rows), "ids_equal": 0, "ids_plain_equal": 0, "chats": len(chats),
             "chat_ids_equal": 0, "explained": [], "unexplained": []}
        for row in rows:
            for special, want, key in ((True, row["ids"], "ids_equal"), (False, row["ids_plain"], "ids_plain_equal")):
                got = lc.tokenize(model, row["text"], add_special=special)
                if got == want:
                    r[key] += 1
                    continue
                why = explain_mismatch(lc, model, row["text"], special, want)
                (r["explained"] if why else r["unexplained"]).append(
                    {"text": row["text"], "add_special": special, "hf": want, "llama_cpp": got, "why": why})
        for c in chats:
            got = lc.tokenize(model, c["text"], add_special=False)
            r["chat_ids_equal"] += got == c["ids"]
            if got != c["ids"]:
                r["unexplained"].append({"chat": c["text"][:200], "hf": c["ids"], "llama_cpp": got})
        r["ok"] = not r["unexplained"] and r["chat_ids_equal"] == r["chats"]
        # decoding is recorded, not required: llama.cpp's detokenizer is not transformers' decode
        r.update({"decodes": len(decodes), "decode_equal": 0, "decode_differs": []})
        for d in decodes:
            got = lc.detokenize(model, d["decode_ids"], d.get("skip_special", False))
            if got == d["decoded"]:
                r["decode_equal"] += 1
            else:
                r["decode_differs"].append({"ids": d["decode_ids"], "hf": d["decoded"], "llama_cpp": got})
        results.append(r)
        print(f"  {name:26s} ids {r['ids_equal']}/{r['strings']}  plain {r['ids_plain_equal']}/{r['strings']}  "
              f"chat ids {r['chat_ids_equal']}/{r['chats']}  explained {len(r['explained'])}  unexplained "
              f"{len(r['unexplained'])}  (decode {r['decode_equal']}/{r['decodes']}) {'ok' if r['ok'] else 'FAIL'}")
        # chat template: the GGUF's own, rendered from the GGUF metadata alone
        tmpl = lc.meta(model, "tokenizer.chat_template")
        folder_tmpl = None
        tc = json.load(open(os.path.join(src, "tokenizer_config.json")))
        if os.path.exists(os.path.join(src, "chat_template.jinja")):
            folder_tmpl = open(os.path.join(src, "chat_template.jinja"), encoding="utf-8").read()
        elif isinstance(tc.get("chat_template"), str):
            folder_tmpl = tc["chat_template"]
        t = {"model": name, "template_in_gguf": tmpl is not None, "template_identical": tmpl == folder_tmpl}
        if tmpl is not None:
            bos = lc.token_text(model, int(lc.meta(model, "tokenizer.ggml.bos_token_id")))
            eos = lc.token_text(model, int(lc.meta(model, "tokenizer.ggml.eos_token_id")))
            t.update({"chats": len(chats), "jinja_equal": 0, "builtin_equal": 0, "builtin_differs": []})
            for c in chats:
                fmt = Jinja2ChatFormatter(template=tmpl, bos_token=bos, eos_token=eos,
                                          add_generation_prompt=c["add_generation_prompt"])
                t["jinja_equal"] += fmt(messages=c["messages"]).prompt == c["text"]
                native = lc.builtin_chat(tmpl, c["messages"], c["add_generation_prompt"])
                if native == c["text"]:
                    t["builtin_equal"] += 1
                else:
                    t["builtin_differs"].append({"hf": c["text"], "llama_cpp": native})
            t["ok"] = t["template_identical"] and t["jinja_equal"] == t["chats"]
            print(f"  {name:26s} template identical {t['template_identical']}  jinja {t['jinja_equal']}/{t['chats']}  "
                  f"llama.cpp native {t['builtin_equal']}/{t['chats']} {'ok' if t['ok'] else 'FAIL'}")
        else:
            t["ok"] = folder_tmpl is None
            print(f"  {name:26s} no chat template (folder has {'one' if folder_tmpl else 'none'})")
        templates.append(t)
        lc.L.llama_model_free(model)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--setup", action="store_true", help=f"build llama-cpp-python=={PIN} into {VENV}")
    ap.add_argument("--fastlora", default=os.path.join(ROOT, "build", "fastlora"))
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "fixtures", "gguf", "llama_cpp_check.json"))
    args = ap.parse_args()
    if args.setup:
        return setup()
    os.chdir(ROOT)
    try:
        lc = LlamaCpp()
    except ImportError:
        sys.exit(f"llama_cpp is not importable: run `python3 tools/llama_cpp_check.py --setup`, then {VENV}/bin/python")
    import importlib.metadata as md
    fl = Fastlora(os.path.abspath(args.fastlora))
    report = {"llama_cpp_python": lc.version, "pinned": PIN, "gguf_py": md.version("gguf"), "system_info": lc.system_info,
              "tolerances": TOL, "logits": [], "tokenizer": [], "chat_template": [], "files": []}
    with tempfile.TemporaryDirectory(prefix="fastlora-llama-cpp-") as tmp:
        print("logits (fastlora f32 reference vs llama.cpp):")
        stories = logit_checks(fl, lc, tmp, report["logits"], report["files"])
        print("tokenizer and chat template (transformers fixtures vs llama.cpp on our GGUF):")
        tokenizer_checks(fl, lc, tmp, report["tokenizer"], report["chat_template"])
        if stories:
            stories_tokenizer_check(fl, lc, stories, os.path.join(tmp, "stories260K-f32-base.gguf"), report["tokenizer"])
    report["ok"] = all(r["ok"] for k in ("logits", "tokenizer", "chat_template") for r in report[k])
    with open(args.out, "w") as f:
        json.dump(report, f, indent=1, sort_keys=True)
        f.write("\n")
    print(("all checks passed" if report["ok"] else "SOME CHECKS FAILED") + f" -> {args.out}")
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
