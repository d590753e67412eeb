#!/usr/bin/env python3
"""Checks `fastlora export --gguf` against the real llama.cpp, through the llama-cpp-python
binding pinned below (its wheel builds the llama.cpp sources it vendors).

    python3 tools/llama_cpp_check.py --setup        # once: builds llama-cpp-python==PIN into
                                                    # ~/.cache/fastlora/llama-cpp-venv (~15 min on 2 cores)
                                                    # and keeps the llama.cpp sources it vendors there
                                                    # (its convert_hf_to_gguf.py: --converter's default)
    ~/.cache/fastlora/llama-cpp-venv/bin/python tools/llama_cpp_check.py [--out FILE] [--fastlora build/fastlora]

What it checks (each result goes into the JSON written to --out, default
tests/fixtures/gguf/llama_cpp_check.json; exit status 1 when any check fails):

1. Logits. On the HF fixtures tests/fixtures/hf/{llama_gqa, qwen2_bias_tied, llama3_rope,
   qwen3_qk_norm, phi3_longrope, gemma3_vlm, smollm3_nope, gemma_geglu, olmo2_post_norms,
   granite_multipliers, mistral3_vlm, mistral_window} (GQA, qwen2 q/k/v biases + tied embeddings +
   rsLoRA, llama3 RoPE + head_dim != hidden/heads, qwen3 q/k norms, phi3 fused modules + partial
   rotary + longrope, the language model of a Gemma3ForConditionalGeneration, SmolLM3's NoPE layer,
   Gemma 1's GeGLU and (1 + w) norms, OLMo 2's post-norms and whole-row q/k norms, Granite's four
   multipliers, the language model of a Mistral3ForConditionalGeneration with its untied head, Mistral
   as llama (its window longer than the ids); each with its PEFT adapter), on
   tests/fixtures/gguf/models/{gemma3,gemma2,qwen3_yarn,olmo3}_llama_cpp (the gemma3_sandwich and
   gemma2_attn_softcap fixtures with query_pre_attn_scalar = head_dim, the scale llama.cpp's gemma
   graphs use; qwen3_yarn and olmo3_sliding_yarn with YaRN's beta_fast 32, the only betas llama.cpp's
   qwen3 / olmo2 graphs take, and OLMo 3's sliding layers' rope_theta equal to the full layers', the
   one base llama.cpp's olmo2 graph reads; with those fixtures' adapters) and on stories260K (`fastlora convert-llama2c`, real tokenizer, with an adapter
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
     f32, Gemma  rel <= 2e-3                 (ggml's CPU GELU goes through an f16 table; the cause is
                                                removed in the check: transformers with that GELU vs
                                                llama.cpp, base, must meet the f32 bound)
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
   is compared with fastlora's own tokenizer on the same strings; Gemma's pipeline
   (tests/fixtures/tokenizer/gemma_pipeline, exported with a tiny gemma3 model) with transformers'
   ids of tests/fixtures/tokenizer/gemma_pipeline.jsonl. Detokenization is recorded only.
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
CONVERTER_SRC = os.path.join(VENV, "llama.cpp")   # the pinned wheel's llama.cpp sources (--setup)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = "tests/fixtures/hf"
GGUF_MODELS = "tests/fixtures/gguf/models"
TYPES = ["f32", "f16", "bf16", "q8_0"]
TOL = {"f32": {"max_abs": 1e-3, "argmax": 1.0}, "f32_gelu": {"rel": 2e-3, "argmax": 1.0}, "f16": {"rel": 2e-3}, "bf16": {"rel": 1.5e-2}, "q8_0": {"rel": 4e-2}}
TOKENIZER_MODELS = ["Qwen2.5-0.5B", "SmolLM2-135M-Instruct", "TinyLlama-1.1B-Chat-v1.0", "Llama-3.2-1B"]
# Mistral's real tokenizers, as tools/make_mistral_tokenizers.py builds them from mistral-common's files
MISTRAL_TOKENIZERS = ["mistral-v1", "mistral-v3", "tekken-240718"]
MISTRAL_DIR = "build/mistral-tokenizers"


def setup():
    """Builds the pinned llama-cpp-python (and so llama.cpp) into VENV, CPU only, no extras."""
    if not os.path.exists(os.path.join(VENV, "bin", "python")):
        subprocess.check_call([sys.executable, "-m", "venv", "--system-site-packages", VENV])
    env = dict(os.environ)
    env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 2))
    env["CMAKE_ARGS"] = ("-DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF "
                         "-DLLAMA_BUILD_SERVER=OFF -DLLAMA_CURL=OFF -DGGML_BLAS=OFF -DGGML_NATIVE=ON")
    subprocess.check_call([os.path.join(VENV, "bin", "pip"), "install", "--no-cache-dir", f"llama-cpp-python=={PIN}"], env=env)
    # what the check reads with (torch + transformers, optional, for the Gemma GELU cause and --converter)
    subprocess.check_call([os.path.join(VENV, "bin", "pip"), "install", "--no-cache-dir", "numpy", "safetensors", "gguf",
                           "tokenizers", "transformers==5.24.0", "tiktoken"])
    # the llama.cpp sources the wheel was built from, for --converter (its convert_hf_to_gguf.py)
    with tempfile.TemporaryDirectory() as sdist:
        subprocess.check_call([os.path.join(VENV, "bin", "pip"), "download", "--no-deps", "--no-binary", ":all:",
                               "-d", sdist, f"llama-cpp-python=={PIN}"])
        import tarfile
        with tarfile.open(os.path.join(sdist, f"llama_cpp_python-{PIN}.tar.gz")) as tar:
            prefix = f"llama_cpp_python-{PIN}/vendor/llama.cpp/"
            members = [m for m in tar.getmembers() if m.name.startswith(prefix) and (m.isfile() or m.isdir())]
            for m in members:
                m.name = m.name[len(prefix):]
            shutil.rmtree(CONVERTER_SRC, ignore_errors=True)
            tar.extractall(CONVERTER_SRC, members=[m for m in members if m.name], filter="data")
    print(f"llama-cpp-python {PIN} in {VENV} (llama.cpp sources in {CONVERTER_SRC}); "
          f"run: {VENV}/bin/python tools/llama_cpp_check.py")


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
        # llama.cpp's Unicode table lookup (src/unicode.h: unicode_cpt_flags_from_cpt, a 16-bit flag
        # struct: 0x1 undefined, 0x2 \p{N}, 0x4 \p{L}, ...), exported by libllama under its C++ name
        lib = ctypes.CDLL(os.path.join(os.path.dirname(llama_cpp.__file__), "lib", "libllama.so"))
        self.cpt_flags = lib._Z26unicode_cpt_flags_from_cptj
        self.cpt_flags.restype, self.cpt_flags.argtypes = ctypes.c_uint16, [ctypes.c_uint32]

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

    def detokenize(self, model, ids, skip_special, raw=False):
        """llama.cpp's bytes for ids, as text the usual way (one U+FFFD per maximal invalid subpart)."""
        L = self.L
        arr = (L.llama_token * max(1, len(ids)))(*ids)
        buf = ctypes.create_string_buffer(1 << 16)
        n = L.llama_detokenize(L.llama_model_get_vocab(model), arr, len(ids), buf, len(buf), False, not skip_special)
        if n < 0:
            return None
        return buf.raw[:n] if raw else buf.raw[:n].decode("utf-8", errors="replace")

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


def gelu_type(model, type_):
    """Gemma's MLP runs GELU, which ggml's CPU backend looks up in an f16 table (GGML_GELU_FP16:
    input and output rounded to f16), so its f32 export is checked at f16's bound."""
    return "f32_gelu" if type_ == "f32" and model.startswith("gemma") else type_


def gelu_table_removed(model, ids, got):
    """The cause of the Gemma f32 differences, removed: transformers' logits with the MLP's GELU taken
    the way ggml's table takes it (f16 in, tanh GELU in f32, f16 out; x <= -10 -> 0, x >= 10 -> x)
    must be llama.cpp's to the f32 bound. Needs torch + transformers; recorded as not run without."""
    import numpy as np
    try:
        import torch
        import transformers
    except ImportError:
        return {"run": False}

    class TableGelu(torch.nn.Module):
        def forward(self, x):
            y = torch.nn.functional.gelu(x.half().float(), approximate="tanh").half().float()
            return torch.where(x <= -10, torch.zeros_like(x), torch.where(x >= 10, x, y))

    m = transformers.AutoModelForCausalLM.from_pretrained(model, dtype=torch.float32, attn_implementation="eager").eval()
    for layer in getattr(m.model, "language_model", m.model).layers:   # a vision-language model's text layers
        layer.mlp.act_fn = TableGelu()
    with torch.no_grad():
        hf = m(torch.tensor([ids])).logits[0].numpy()
    d = np.abs(got.astype(np.float64) - hf)
    return {"run": True, "max_abs": float(d.max()), "positions_over_1e-5": int((d.max(-1) > 1e-5).sum()),
            "ok": bool(d.max() <= TOL["f32"]["max_abs"])}


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
    models = [(n, f"{FIX}/{n}/model", f"{FIX}/{n}/adapter", True)
              for n in ("llama_gqa", "qwen2_bias_tied", "llama3_rope", "qwen3_qk_norm", "phi3_longrope", "gemma3_vlm",
                        "smollm3_nope", "gemma_geglu", "olmo2_post_norms", "granite_multipliers", "mistral3_vlm",
                        "mistral_window")]
    # Gemma: the fixtures' query_pre_attn_scalar (20) set to head_dim, the scale llama.cpp's gemma
    # graphs apply (they do not read the key); YaRN: beta_fast 32, the only value llama.cpp's qwen3
    # and olmo2 graphs take (their loaders read no betas); OLMo 3: also the sliding layers' rope_theta
    # set to the full layers', the one base llama.cpp's olmo2 graph has: tests/fixtures/gguf/models,
    # with the HF fixtures' adapters
    models += [(f"{v}_llama_cpp", f"{GGUF_MODELS}/{v}_llama_cpp", f"{FIX}/{n}/adapter", True)
               for v, n in (("gemma3", "gemma3_sandwich"), ("gemma2", "gemma2_attn_softcap"),
                            ("qwen3_yarn", "qwen3_yarn"), ("olmo3", "olmo3_sliding_yarn"))]
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
        ids = [int(x) for x in rng.integers(0, cfg.get("text_config", cfg)["vocab_size"], size=24)]
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
                r = {"model": name, "type": t, "variant": variant, **compare(ref[want], got, gelu_type(name, t))}
                if gelu_type(name, t) == "f32_gelu" and variant == "base":
                    r["gelu_table_removed"] = gelu_table_removed(model, ids, got)
                    r["ok"] = r["ok"] and r["gelu_table_removed"].get("ok", True)
                results.append(r)
                print(f"  {name:16s} {t:5s} {variant:10s} max|d| {r['max_abs']:.2e} rel {r['rel_rms']:.2e} "
                      f"argmax {r['argmax_agree']:.2f} {'ok' if r['ok'] else 'FAIL'}")
    return stories


def gemma_tokenizer_check(fl, lc, tmp, results):
    """Gemma's tokenizer pipeline (tests/fixtures/tokenizer/gemma_pipeline: Replace(" ", "▁"), no dummy
    prefix, byte fallback, <bos>; Gemma's own 262k vocabulary is not available here) exported with a
    tiny random gemma3 model: llama.cpp's SentencePiece tokenizer on our GGUF against transformers'
    ids (tests/fixtures/tokenizer/gemma_pipeline.jsonl), with and without the special tokens."""
    src = os.path.join(ROOT, "tests", "fixtures", "tokenizer", "gemma_pipeline")
    out = os.path.join(tmp, "gemma_pipeline")
    os.makedirs(out, exist_ok=True)
    cfg = json.load(open(os.path.join(GGUF_MODELS, "gemma3_llama_cpp", "config.json")))
    cfg.update({"vocab_size": tokenizer_ids(src), "num_hidden_layers": 1, "layer_types": ["full_attention"]})
    json.dump(cfg, open(os.path.join(out, "config.json"), "w"))
    save_random_weights(cfg, os.path.join(out, "model.safetensors"))
    for f in os.listdir(src):
        shutil.copy(os.path.join(src, f), out)
    gguf = os.path.join(tmp, "gemma_pipeline.gguf")
    fl.export(gguf, out, type_="f16")
    model = lc.load(gguf, vocab_only=True)
    rows = [json.loads(l) for l in open(os.path.join(ROOT, "tests", "fixtures", "tokenizer", "gemma_pipeline.jsonl"),
                                        encoding="utf-8")]
    rows = [r for r in rows if "text" in r and "\0" not in r["text"]]
    r = {"model": "gemma_pipeline", "strings": len(rows), "ids_equal": 0, "ids_plain_equal": 0, "unexplained": []}
    for row in rows:
        for special, key, want in ((True, "ids_equal", row["ids"]), (False, "ids_plain_equal", row["ids_plain"])):
            got = lc.tokenize(model, row["text"], add_special=special)
            if got == want:
                r[key] += 1
            else:
                r["unexplained"].append({"text": row["text"], "add_special": special, "transformers": want, "llama_cpp": got})
    r["ok"] = not r["unexplained"]
    results.append(r)
    lc.L.llama_model_free(model)
    print(f"  {r['model']:26s} ids {r['ids_equal']}/{r['strings']}  plain {r['ids_plain_equal']}/{r['strings']} "
          f"{'ok' if r['ok'] else 'FAIL'}")


def gguf_without_space_prefix(fl, folder, tmp, name):
    """The tiny model's GGUF again with tokenizer.ggml.add_space_prefix false (tokenizer_config.json's
    add_prefix_space false, which the export writes for a llama model): for the metaspace_first cause."""
    other = os.path.join(tmp, name + "-no-prefix")
    shutil.copytree(folder, other)
    tc_path = os.path.join(other, "tokenizer_config.json")
    tc = json.load(open(tc_path))
    tc["add_prefix_space"] = False
    json.dump(tc, open(tc_path, "w"))
    out = os.path.join(tmp, name + "-no-prefix.gguf")
    fl.export(out, other, type_="f16")
    return out


def tokenizer_ids(folder):
    """How many ids a folder's tokenizer.json names (its vocabulary and added tokens)."""
    tok = json.load(open(os.path.join(folder, "tokenizer.json"), encoding="utf-8"))
    return 1 + max(list(tok["model"]["vocab"].values()) + [t["id"] for t in tok["added_tokens"]])


def save_random_weights(cfg, path):
    """Random weights of a 1-layer model of config cfg (the tensors fastlora's loader reads for its
    family: Gemma's four norms and q/k norms, stored as w - 1; Qwen2's q/k/v biases; an untied head)."""
    import numpy as np
    from safetensors.numpy import save_file
    V, C, FF = cfg["vocab_size"], cfg["hidden_size"], cfg["intermediate_size"]
    H, KV = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    HS = cfg.get("head_dim") or C // H
    gemma = cfg.get("model_type", "").startswith("gemma")
    unit = 0.0 if gemma else 1.0
    rng = np.random.default_rng(0)
    w = {"model.embed_tokens.weight": rng.standard_normal((V, C)).astype(np.float32) * 0.02,
         "model.norm.weight": np.full(C, unit, np.float32)}
    norms = ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
             "post_feedforward_layernorm") if gemma else ("input_layernorm", "post_attention_layernorm")
    for n in norms:
        w[f"model.layers.0.{n}.weight"] = np.full(C, unit, np.float32)
    if gemma:
        for n in ("q_norm", "k_norm"):
            w[f"model.layers.0.self_attn.{n}.weight"] = np.zeros(HS, np.float32)
    for p, shape in {"self_attn.q_proj": (H * HS, C), "self_attn.k_proj": (KV * HS, C), "self_attn.v_proj": (KV * HS, C),
                     "self_attn.o_proj": (C, H * HS), "mlp.gate_proj": (FF, C), "mlp.up_proj": (FF, C),
                     "mlp.down_proj": (C, FF)}.items():
        w[f"model.layers.0.{p}.weight"] = rng.standard_normal(shape).astype(np.float32) * 0.05
        if cfg.get("model_type") == "qwen2" and p in ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"):
            w[f"model.layers.0.{p}.bias"] = np.zeros(shape[0], np.float32)
    if not cfg.get("tie_word_embeddings", False):
        w["lm_head.weight"] = rng.standard_normal((V, C)).astype(np.float32) * 0.02
    save_file(w, path, metadata={"format": "pt"})


def tiny_model(shared_model, out):
    """A 1-layer random model with the real vocabulary size and the real tokenizer files (a Mistral
    config for a tokenizer folder without one)."""
    os.makedirs(out, exist_ok=True)
    if os.path.exists(os.path.join(shared_model, "config.json")):
        cfg = json.load(open(os.path.join(shared_model, "config.json")))
    else:
        cfg = {"architectures": ["MistralForCausalLM"], "model_type": "mistral", "vocab_size": tokenizer_ids(shared_model),
               "rms_norm_eps": 1e-5, "rope_theta": 1e6, "tie_word_embeddings": False, "bos_token_id": 1, "eos_token_id": 2}
    cfg.update({"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2,
                "num_key_value_heads": 1, "head_dim": 16, "max_position_embeddings": 512})
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg, f)
    save_random_weights(cfg, os.path.join(out, "model.safetensors"))
    for f in os.listdir(shared_model):
        src = os.path.join(shared_model, f)
        if f != "config.json" and os.path.isfile(src):
            shutil.copy(src, out)
    if os.path.isdir(os.path.join(shared_model, "original")):
        shutil.copytree(os.path.join(shared_model, "original"), os.path.join(out, "original"))


# ---- why llama.cpp's tokenizer differs from transformers -------------------------------------------
#
# Each cause is a behaviour of llama.cpp's tokenizer itself, whatever the GGUF says (a GGUF made by
# llama.cpp's own convert_hf_to_gguf.py behaves identically: see converter_check). A difference is
# explained only when removing its causes — and nothing else — gives transformers' result exactly;
# the smallest set of causes that does is recorded. Anything else is unexplained and fails the check.

CAUSES = {
    "nfc": "llama.cpp does not run the tokenizer's normalizer (Qwen2's NFC, Unicode 9.0 tables in "
           "transformers): the text normalized by transformers' own normalizer gives transformers' ids",
    "eog_control": "llama.cpp makes a vocabulary token that looks like an end-of-generation marker a control "
                   "token by its text ('</s>' in Qwen2's vocabulary, plain text for transformers): parsing only "
                   "transformers' added tokens as special gives transformers' ids",
    "unicode_15_1": "code points that are \\p{L} / \\p{N} / \\p{M} for transformers' regex engine (Oniguruma, "
                    "Unicode 16.0) and not in llama.cpp's own tables (Unicode 15.1): cut where transformers' "
                    "pre-tokenizer cuts around them, llama.cpp gives transformers' ids",
    "byte_fallback": "llama.cpp returns the bytes of byte tokens that are not valid UTF-8; transformers' "
                     "ByteFallback decoder writes one U+FFFD per byte of such a run (not per maximal bad "
                     "subpart): that rule applied to llama.cpp's own bytes gives transformers' text",
    "metaspace_first": "llama.cpp's SentencePiece tokenizer puts its \"▁\" before every text fragment that "
                       "starts the input or follows a special token, even one starting with a space; "
                       "transformers' Metaspace(prepend_scheme=\"first\") (Mistral v0.3's tokenizer.json) "
                       "puts one only before the input's first fragment and only when it does not start with "
                       "a space: llama.cpp on the same GGUF without add_space_prefix, given that rule's "
                       "text fragment by fragment, gives transformers' ids",
    "llama_cpp_itself": "no removable cause found, and llama.cpp gives the same ids on the GGUF its own "
                        "convert_hf_to_gguf.py makes of the folder (--converter only): llama.cpp's tokenizer, "
                        "whatever the file (Tekken's regex on scripts with combining marks)",
    "space_after_special": "llama.cpp strips the SentencePiece leading space only from the first token, here "
                           "a special token it does not print; transformers drops special tokens first: "
                           "without them llama.cpp's text is transformers'",
}


class Reference:
    """transformers' tokenizer as the fixtures were made (tools/make_tokenizer_fixtures.py), with what
    llama.cpp does differently for this vocabulary: its added tokens, the vocabulary tokens llama.cpp
    made control tokens that transformers does not, and the code points their regexes class apart."""

    def __init__(self, lc, model, name, folder=None, model_no_prefix=None):
        import make_tokenizer_fixtures as mtf
        from tokenizers import Regex, Tokenizer, pre_tokenizers
        self.lc, self.model, self.model_no_prefix = lc, model, model_no_prefix
        if folder:   # a folder's tokenizer.json is the spec (the Mistral folders)
            self.tok = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
        else:
            self.tok = mtf.load(os.path.join(ROOT, "..", "shared"), name)[0]
        pre = json.loads(self.tok.to_str()).get("pre_tokenizer") or {}
        self.metaspace_first = pre.get("type") == "Metaspace" and pre.get("prepend_scheme") == "first"
        added = self.tok.get_added_tokens_decoder()
        self.added = sorted({t.content for t in added.values()}, key=len, reverse=True)
        L = lc.L
        vocab = L.llama_model_get_vocab(model)
        real = len(self.tok.get_vocab())  # the GGUF's [PAD<id>] fillers beyond it are not transformers'
        self.forced_control = [lc.token_text(model, i) for i in range(real)
                               if L.llama_vocab_get_attr(vocab, i) & L.LLAMA_TOKEN_ATTR_CONTROL and i not in added]
        self._is = {k: pre_tokenizers.Split(Regex(rf"\p{{{k}}}"), "removed") for k in "LNM"}
        self._apart = {}

    def hf_class(self, c):
        return tuple(not self._is[k].pre_tokenize_str(c) for k in "LNM")

    def classed_apart(self, text):
        """The code points of text whose \\p{L} / \\p{N} / \\p{M} membership differs between
        transformers' Oniguruma and llama.cpp's unicode_cpt_flags_from_cpt."""
        out = []
        for c in sorted(set(text)):
            if c not in self._apart:
                f = self.lc.cpt_flags(ord(c))
                self._apart[c] = self.hf_class(c) != (bool(f & 4), bool(f & 2), bool(f & 16))
            if self._apart[c]:
                out.append(c)
        return out

    def split_added(self, text):
        """(start, end, is_added_token) spans of text, cut at transformers' added tokens."""
        spans, i, start = [], 0, 0
        while i < len(text):
            m = next((a for a in self.added if text.startswith(a, i)), None)
            if m is None:
                i += 1
                continue
            if start < i:
                spans.append((start, i, False))
            spans.append((i, i + len(m), True))
            i = start = i + len(m)
        if start < len(text):
            spans.append((start, len(text), False))
        return spans


def tokenize_without(ref, text, add_special, causes):
    """llama.cpp's ids for text with the given causes removed."""
    lc, model = ref.lc, ref.model
    if "nfc" in causes and ref.tok.normalizer is not None:
        text = ref.tok.normalizer.normalize_str(text)
    spans = ref.split_added(text)
    cuts = {0, len(text)}
    if "eog_control" in causes:
        cuts |= {x for a, b, _ in spans for x in (a, b)}
    if "unicode_15_1" in causes:
        apart = set(ref.classed_apart(text))
        for a, b, is_added in spans:
            if is_added:
                continue
            for _, (x, y) in ref.tok.pre_tokenizer.pre_tokenize_str(text[a:b]):
                if apart & set(text[a + x:a + y]):
                    cuts |= {a + x, a + y}
    added = {(a, b) for a, b, is_added in spans if is_added}
    if "metaspace_first" in causes:   # fragment by fragment on the file without add_space_prefix
        model = ref.model_no_prefix
        if not (spans and spans[0][2]) and text and not text.startswith((" ", "\u2581")):
            text, spans = " " + text, [(a + 1 if a else 0, b + 1, t) for a, b, t in spans]
            cuts = {c + 1 if c else 0 for c in cuts}
            added = {(a + 1, b + 1) for a, b in added}
    ids = lc.tokenize(model, "", add_special)  # BOS where llama.cpp adds one (none of these adds EOS)
    cuts = sorted(cuts)
    for a, b in zip(cuts, cuts[1:]):
        parse = (a, b) in added if "eog_control" in causes else True
        ids += lc.tokenize(model, text[a:b], False, parse_special=parse)
    return ids


def explain_ids(ref, text, add_special, want):
    """The smallest set of causes whose removal gives transformers' ids, or None."""
    import itertools
    present = []
    if ref.tok.normalizer is not None and ref.tok.normalizer.normalize_str(text) != text:
        present.append("nfc")
    if any(t in text for t in ref.forced_control):
        present.append("eog_control")
    if ref.tok.pre_tokenizer is not None and ref.classed_apart(text):   # a regex pre-tokenizer classes them
        present.append("unicode_15_1")
    if ref.metaspace_first and ref.model_no_prefix is not None:
        present.append("metaspace_first")
    for k in range(1, len(present) + 1):
        for causes in itertools.combinations(present, k):
            if tokenize_without(ref, text, add_special, causes) == want:
                return list(causes)
    return None


def decode_without(ref, ids, skip_special, causes):
    """llama.cpp's text for ids with the given causes removed."""
    lc, L = ref.lc, ref.lc.L
    vocab = L.llama_model_get_vocab(ref.model)
    if "space_after_special" in causes:
        ids = [t for t in ids if not L.llama_vocab_get_attr(vocab, t) & L.LLAMA_TOKEN_ATTR_CONTROL]
    if "byte_fallback" not in causes:
        return lc.detokenize(ref.model, ids, skip_special)
    text, run, prev = "", b"", b""
    for k, t in enumerate(ids):  # each token's bytes as llama.cpp writes them in this sequence
        cur = lc.detokenize(ref.model, ids[:k + 1], skip_special, raw=True)
        piece, prev = cur[len(prev):], cur
        if L.llama_vocab_get_attr(vocab, t) & L.LLAMA_TOKEN_ATTR_BYTE:
            run += piece
            continue
        text += byte_fallback(run) + piece.decode("utf-8", errors="replace")
        run = b""
    return text + byte_fallback(run)


def byte_fallback(run):
    """transformers' ByteFallback decoder on the bytes of a run of byte tokens."""
    try:
        return run.decode("utf-8")
    except UnicodeDecodeError:
        return "\ufffd" * len(run)


def explain_decode(ref, ids, skip_special, want):
    """The smallest set of decode causes whose removal gives transformers' text, or None."""
    import itertools
    L = ref.lc.L
    vocab = L.llama_model_get_vocab(ref.model)
    attrs = [L.llama_vocab_get_attr(vocab, t) for t in ids]
    present = []
    if any(a & L.LLAMA_TOKEN_ATTR_BYTE for a in attrs):
        present.append("byte_fallback")
    if skip_special and attrs and attrs[0] & L.LLAMA_TOKEN_ATTR_CONTROL:
        present.append("space_after_special")
    for k in range(1, len(present) + 1):
        for causes in itertools.combinations(present, k):
            if decode_without(ref, ids, skip_special, causes) == want:
                return list(causes)
    return None


def tokenizer_compare(ref, all_rows, chats):
    """llama.cpp's ids and texts on ref.model against transformers' (the fixture rows and chats):
    counts, each difference with its causes (explained) or none (unexplained), and every llama.cpp
    output in order (for converter_check)."""
    lc, model = ref.lc, ref.model
    rows = [x for x in all_rows if "text" in x]
    decodes = [x for x in all_rows if "decode_ids" in x]
    r = {"strings": len(rows), "ids_equal": 0, "ids_plain_equal": 0, "chats": len(chats), "chat_ids_equal": 0,
         "decodes": len(decodes), "decode_equal": 0, "explained": [], "unexplained": [],
         "forced_control": ref.forced_control}
    outputs = []

    def record(entry, key, got, want, causes):
        entry["case"] = len(outputs)   # the index of this case among `outputs`
        outputs.append(got)
        if got == want:
            r[key] += 1
            return
        entry.update({"hf": want, "llama_cpp": got, "causes": causes})
        if causes and "unicode_15_1" in causes:
            entry["code_points"] = [f"U+{ord(c):04X}" for c in ref.classed_apart(entry.get("text") or entry["chat"])]
        (r["explained"] if causes else r["unexplained"]).append(entry)

    for row in rows:
        for special, want, key in ((True, row["ids"], "ids_equal"), (False, row["ids_plain"], "ids_plain_equal")):
            got = lc.tokenize(model, row["text"], add_special=special)
            causes = None if got == want else explain_ids(ref, row["text"], special, want)
            record({"text": row["text"], "add_special": special}, key, got, want, causes)
    for c in chats:
        got = lc.tokenize(model, c["text"], add_special=False)
        causes = None if got == c["ids"] else explain_ids(ref, c["text"], False, c["ids"])
        record({"chat": c["text"]}, "chat_ids_equal", got, c["ids"], causes)
    for d in decodes:
        skip = d.get("skip_special", False)
        got = lc.detokenize(model, d["decode_ids"], skip)
        causes = None if got == d["decoded"] else explain_decode(ref, d["decode_ids"], skip, d["decoded"])
        record({"decode_ids": d["decode_ids"], "skip_special": skip}, "decode_equal", got, d["decoded"], causes)
    r["by_cause"] = {k: sum(k in e["causes"] for e in r["explained"]) for k in CAUSES
                     if any(k in e["causes"] for e in r["explained"])}
    r["ok"] = not r["unexplained"]
    return r, outputs


def gguf_tokenizer_meta(path):
    """The tokenizer.* keys of a GGUF, read with gguf-py."""
    from gguf import GGUFReader
    out = {}
    for k, f in GGUFReader(path).fields.items():
        if k.startswith("tokenizer."):
            v = f.contents()
            out[k] = v.tolist() if hasattr(v, "tolist") else v
    return out


def converter_check(lc, converter, folder, ref, all_rows, chats, ours, our_outputs, tmp):
    """The GGUF that llama.cpp's own converter (convert_hf_to_gguf.py --vocab-only from the llama.cpp
    source tree converter["src"], run by converter["python"]) makes of the same folder: its tokenizer
    metadata against ours, and llama.cpp's tokenizer on it against llama.cpp's on ours, case by case.
    Equal results mean each difference from transformers comes with llama.cpp's own conversion too."""
    import copy
    src = converter["src"]
    name = os.path.basename(folder)
    conv_folder = folder
    if not os.path.exists(os.path.join(folder, "tokenizer.json")) and os.path.exists(os.path.join(folder, "original")):
        # Llama-3.x with only tiktoken's original/tokenizer.model: the converter reads tokenizer.json,
        # so it gets the one transformers' TikTokenConverter writes (the fixtures' reference)
        conv_folder = folder + "-converter"
        shutil.copytree(folder, conv_folder, dirs_exist_ok=True)
        ref.tok.save(os.path.join(conv_folder, "tokenizer.json"))
    out = os.path.join(tmp, f"{name}.converter.gguf")
    env = {**os.environ, "PYTHONPATH": os.path.join(src, "gguf-py")}
    p = subprocess.run([converter["python"], os.path.join(src, "convert_hf_to_gguf.py"), "--vocab-only",
                        "--outfile", out, conv_folder], capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise RuntimeError(f"convert_hf_to_gguf.py on {name}: {p.stderr.strip()[-2000:]}")
    a, b = gguf_tokenizer_meta(ours), gguf_tokenizer_meta(out)
    meta = {}
    for k in sorted(set(a) | set(b)):
        if a.get(k) == b.get(k):
            continue
        if isinstance(a.get(k), list) and isinstance(b.get(k), list) and len(a[k]) == len(b[k]):
            meta[k] = f"{sum(x != y for x, y in zip(a[k], b[k]))} of {len(a[k])} values differ"
        else:
            meta[k] = {"fastlora": str(a.get(k))[:200], "converter": str(b.get(k))[:200]}
    model = lc.load(out, vocab_only=True)
    ref2 = copy.copy(ref)
    ref2.model = model
    r2, outputs = tokenizer_compare(ref2, all_rows, chats)
    lc.L.llama_model_free(model)
    same = sum(x == y for x, y in zip(outputs, our_outputs))
    return {"tokenizer_meta_differs": meta, "cases": len(outputs), "same_llama_cpp_results": same, "outputs": outputs,
            "ids_equal": r2["ids_equal"], "ids_plain_equal": r2["ids_plain_equal"], "chat_ids_equal": r2["chat_ids_equal"],
            "decode_equal": r2["decode_equal"], "by_cause": r2["by_cause"], "unexplained": len(r2["unexplained"]),
            "ok": same == len(outputs) == len(our_outputs)}


def tokenizer_checks(fl, lc, tmp, results, templates, converter=None):
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter
    shared = os.path.join(ROOT, "..", "shared", "models")
    sources = [(n, os.path.join(shared, n), False) for n in TOKENIZER_MODELS]
    sources += [(n, os.path.join(ROOT, MISTRAL_DIR, n), True) for n in MISTRAL_TOKENIZERS]
    for name, src, mistral in sources:
        fixture = os.path.join(ROOT, "tests", "fixtures", "tokenizer", f"{name}.jsonl")
        if not os.path.isdir(src) or not os.path.exists(fixture):
            print(f"  {name}: {'the converted folder (tools/make_mistral_tokenizers.py)' if mistral else '../shared'}"
                  " or fixture absent, skipped")
            continue
        folder = os.path.join(tmp, name)
        tiny_model(src, folder)
        gguf = os.path.join(tmp, f"{name}.gguf")
        fl.export(gguf, folder, type_="f16")
        model = lc.load(gguf, vocab_only=True)
        all_rows = [json.loads(l) for l in open(fixture, encoding="utf-8")]
        chat_path = fixture.replace(".jsonl", ".chat.jsonl")
        chats = [json.loads(l) for l in open(chat_path, encoding="utf-8")] if os.path.exists(chat_path) else []
        no_prefix = None
        pre = (json.load(open(os.path.join(src, "tokenizer.json"), encoding="utf-8")).get("pre_tokenizer") or {}) if mistral else {}
        if pre.get("type") == "Metaspace":
            no_prefix = lc.load(gguf_without_space_prefix(fl, folder, tmp, name), vocab_only=True)
        ref = Reference(lc, model, name, folder=src if mistral else None, model_no_prefix=no_prefix)
        r, outputs = tokenizer_compare(ref, all_rows, chats)
        r["model"] = name
        if converter:
            r["converter"] = converter_check(lc, converter, folder, ref, all_rows, chats, gguf, outputs, tmp)
            conv_outputs = r["converter"].pop("outputs")
            # what no narrower cause explains but llama.cpp does on its own converter's file too
            for e in [e for e in r["unexplained"] if conv_outputs[e["case"]] == e["llama_cpp"]]:
                e["causes"] = ["llama_cpp_itself"]
                r["unexplained"].remove(e)
                r["explained"].append(e)
                r["by_cause"]["llama_cpp_itself"] = r["by_cause"].get("llama_cpp_itself", 0) + 1
            r["ok"] = not r["unexplained"] and r["converter"]["ok"]
        results.append(r)
        print(f"  {name:26s} ids {r['ids_equal']}/{r['strings']}  plain {r['ids_plain_equal']}/{r['strings']}  "
              f"chat ids {r['chat_ids_equal']}/{r['chats']}  decode {r['decode_equal']}/{r['decodes']}  "
              f"explained {len(r['explained'])} {r['by_cause']}  unexplained {len(r['unexplained'])}"
              f"{'  converter ' + ('same' if r['converter']['ok'] else 'DIFFERS') if converter else ''} "
              f"{'ok' if r['ok'] else 'FAIL'}")
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
        if no_prefix is not None:
            lc.L.llama_model_free(no_prefix)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--setup", action="store_true", help=f"build llama-cpp-python=={PIN} into {VENV}")
    ap.add_argument("--fastlora", default=os.path.join(ROOT, "build", "fastlora"))
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "fixtures", "gguf", "llama_cpp_check.json"))
    ap.add_argument("--converter", metavar="LLAMA_CPP_DIR",
                    default=CONVERTER_SRC if os.path.exists(os.path.join(CONVERTER_SRC, "convert_hf_to_gguf.py")) else None,
                    help="also convert each tokenizer folder with this llama.cpp tree's convert_hf_to_gguf.py "
                         "--vocab-only and require llama.cpp's results on that file to equal those on ours "
                         f"(default: {CONVERTER_SRC}, where --setup puts the pinned wheel's sources, when there); "
                         "without it a difference llama.cpp's own tokenizer makes cannot be told from ours")
    ap.add_argument("--no-converter", dest="converter", action="store_const", const=None)
    ap.add_argument("--converter-python", default=sys.executable,
                    help="the Python that runs the converter (needs torch, transformers, sentencepiece)")
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
              "tokenizers": md.version("tokenizers"), "transformers": md.version("transformers"), "causes": CAUSES,
              "tolerances": TOL, "logits": [], "tokenizer": [], "chat_template": [], "files": []}
    with tempfile.TemporaryDirectory(prefix="fastlora-llama-cpp-") as tmp:
        print("logits (fastlora f32 reference vs llama.cpp):")
        stories = logit_checks(fl, lc, tmp, report["logits"], report["files"])
        print("tokenizer and chat template (transformers fixtures vs llama.cpp on our GGUF):")
        converter = {"src": os.path.abspath(args.converter), "python": args.converter_python} if args.converter else None
        tokenizer_checks(fl, lc, tmp, report["tokenizer"], report["chat_template"], converter)
        gemma_tokenizer_check(fl, lc, tmp, report["tokenizer"])
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
