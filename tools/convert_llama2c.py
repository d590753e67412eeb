#!/usr/bin/env python3
"""convert_llama2c.py — a karpathy/llama2.c checkpoint (legacy v0 .bin, e.g. stories260K) as a
Hugging Face Llama folder, checked against llama2.c's own math.

The C side has the same converter (`fastlora convert-llama2c`, src/train/llama2c.c) so that tests
and users need no Python; this script is the independent reference:

    python3 tools/convert_llama2c.py --checkpoint ../shared/data/stories260K/stories260K.bin \
        [--tokenizer-model ../shared/data/stories260K/tok512.model] --out /tmp/s260-py \
        [--compare /tmp/s260-c]        # a folder written by `fastlora convert-llama2c`

What it does:
  1. reads the header and the f32 tensors; q/k rows go from llama2.c's interleaved RoPE pairs
     (2j, 2j+1) to HF's rotate-half pairs (j, j+hs/2): w.reshape(nh, hs/2, 2, dim).transpose(1, 2)
     (llama2.c export.py permute_original);
  2. writes config.json + model.safetensors (F32), and, when sentencepiece + transformers are
     installed and --tokenizer-model is given, tokenizer.json via transformers' LlamaConverter;
  3. verifies: a numpy forward written the llama2.c way (run.c: interleaved RoPE, unpermuted
     weights) against a numpy forward written the HF way (rotate_half, permuted weights) and,
     when transformers is installed, against LlamaForCausalLM on the written folder — max |logit
     difference| must be < 1e-4; with --compare, every tensor must equal the C converter's.
Needs numpy (and safetensors for writing). Exit status 1 when a check fails.
"""
import argparse, json, os, struct, sys

import numpy as np


def read_checkpoint(path):
    raw = open(path, "rb").read()
    dim, hidden, L, nh, nkv, vocab, seq = struct.unpack("<7i", raw[:28])
    shared = vocab > 0
    V = abs(vocab)
    hs = dim // nh
    kvd = nkv * hs
    f = np.frombuffer(raw, dtype="<f4", offset=28)
    sizes = [("emb", (V, dim)), ("rms_att", (L, dim)), ("wq", (L, dim, dim)), ("wk", (L, kvd, dim)),
             ("wv", (L, kvd, dim)), ("wo", (L, dim, dim)), ("rms_ffn", (L, dim)), ("w1", (L, hidden, dim)),
             ("w2", (L, dim, hidden)), ("w3", (L, hidden, dim)), ("rms_final", (dim,)),
             ("freq_real", (seq, hs // 2)), ("freq_imag", (seq, hs // 2))]
    if not shared:
        sizes.append(("wcls", (V, dim)))
    w, off = {}, 0
    for name, shape in sizes:
        n = int(np.prod(shape))
        w[name] = f[off:off + n].reshape(shape).astype(np.float32)
        off += n
    if off != f.size:
        sys.exit(f"{path}: {f.size} floats, the header implies {off}")
    cfg = dict(dim=dim, hidden=hidden, L=L, nh=nh, nkv=nkv, V=V, seq=seq, hs=hs, shared=shared)
    return cfg, w


def permute(w, n_heads):
    d1, d2 = w.shape
    return w.reshape(n_heads, d1 // n_heads // 2, 2, d2).transpose(0, 2, 1, 3).reshape(d1, d2)


def hf_tensors(cfg, w):
    t = {"model.embed_tokens.weight": w["emb"], "model.norm.weight": w["rms_final"]}
    for l in range(cfg["L"]):
        p = f"model.layers.{l}."
        t[p + "input_layernorm.weight"] = w["rms_att"][l]
        t[p + "self_attn.q_proj.weight"] = permute(w["wq"][l], cfg["nh"])
        t[p + "self_attn.k_proj.weight"] = permute(w["wk"][l], cfg["nkv"])
        t[p + "self_attn.v_proj.weight"] = w["wv"][l]
        t[p + "self_attn.o_proj.weight"] = w["wo"][l]
        t[p + "post_attention_layernorm.weight"] = w["rms_ffn"][l]
        t[p + "mlp.gate_proj.weight"] = w["w1"][l]
        t[p + "mlp.down_proj.weight"] = w["w2"][l]
        t[p + "mlp.up_proj.weight"] = w["w3"][l]
    if not cfg["shared"]:
        t["lm_head.weight"] = w["wcls"]
    return {k: np.ascontiguousarray(v) for k, v in t.items()}


def rmsnorm(x, g, eps=1e-5):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * g


def forward_llama2c(cfg, w, ids):
    """run.c's forward, token by token with a KV cache, interleaved RoPE (float64)."""
    dim, hs, nh, nkv = cfg["dim"], cfg["hs"], cfg["nh"], cfg["nkv"]
    kc = np.zeros((cfg["L"], len(ids), nkv * hs)); vc = np.zeros_like(kc)
    out = []
    for pos, tok in enumerate(ids):
        x = w["emb"][tok].astype(np.float64)
        for l in range(cfg["L"]):
            xb = rmsnorm(x, w["rms_att"][l])
            q, k, v = w["wq"][l] @ xb, w["wk"][l] @ xb, w["wv"][l] @ xb
            for vec in (q, k):
                for i in range(0, vec.size, 2):
                    fr = 1.0 / 10000.0 ** ((i % hs) / hs)
                    c, s = np.cos(pos * fr), np.sin(pos * fr)
                    a, b = vec[i], vec[i + 1]
                    vec[i], vec[i + 1] = a * c - b * s, a * s + b * c
            kc[l, pos], vc[l, pos] = k, v
            att = np.zeros(dim)
            for h in range(nh):
                kh = h // (nh // nkv)
                qh = q[h * hs:(h + 1) * hs]
                sc = kc[l, :pos + 1, kh * hs:(kh + 1) * hs] @ qh / np.sqrt(hs)
                p = np.exp(sc - sc.max()); p /= p.sum()
                att[h * hs:(h + 1) * hs] = p @ vc[l, :pos + 1, kh * hs:(kh + 1) * hs]
            x = x + w["wo"][l] @ att
            xb = rmsnorm(x, w["rms_ffn"][l])
            g, u = w["w1"][l] @ xb, w["w3"][l] @ xb
            x = x + w["w2"][l] @ (g / (1 + np.exp(-g)) * u)
        x = rmsnorm(x, w["rms_final"])
        out.append((w["emb"] if cfg["shared"] else w["wcls"]) @ x)
    return np.array(out)


def forward_hf(cfg, t, ids):
    """transformers' Llama math (rotate_half) on the converted tensors (float64)."""
    T, hs, nh, nkv = len(ids), cfg["hs"], cfg["nh"], cfg["nkv"]
    inv = 1.0 / 10000.0 ** (np.arange(0, hs, 2) / hs)
    ang = np.outer(np.arange(T), inv)
    cos, sin = np.cos(np.concatenate([ang, ang], 1)), np.sin(np.concatenate([ang, ang], 1))
    rot = lambda x: x * cos[:, None] + np.concatenate([-x[..., hs // 2:], x[..., :hs // 2]], -1) * sin[:, None]
    x = t["model.embed_tokens.weight"][ids].astype(np.float64)
    mask = np.triu(np.full((T, T), -np.inf), 1)
    for l in range(cfg["L"]):
        p = f"model.layers.{l}."
        xb = rmsnorm(x, t[p + "input_layernorm.weight"])
        q = rot((xb @ t[p + "self_attn.q_proj.weight"].T).reshape(T, nh, hs))
        k = rot((xb @ t[p + "self_attn.k_proj.weight"].T).reshape(T, nkv, hs))
        v = (xb @ t[p + "self_attn.v_proj.weight"].T).reshape(T, nkv, hs)
        att = np.zeros((T, nh, hs))
        for h in range(nh):
            kh = h // (nh // nkv)
            s = q[:, h] @ k[:, kh].T / np.sqrt(hs) + mask
            pr = np.exp(s - s.max(-1, keepdims=True)); pr /= pr.sum(-1, keepdims=True)
            att[:, h] = pr @ v[:, kh]
        x = x + att.reshape(T, -1) @ t[p + "self_attn.o_proj.weight"].T
        xb = rmsnorm(x, t[p + "post_attention_layernorm.weight"])
        g, u = xb @ t[p + "mlp.gate_proj.weight"].T, xb @ t[p + "mlp.up_proj.weight"].T
        x = x + (g / (1 + np.exp(-g)) * u) @ t[p + "mlp.down_proj.weight"].T
    x = rmsnorm(x, t["model.norm.weight"])
    return x @ t.get("lm_head.weight", t["model.embed_tokens.weight"]).T


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--tokenizer-model", help="SentencePiece .model (e.g. tok512.model)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--compare", help="a folder written by `fastlora convert-llama2c`: tensors must be equal")
    a = ap.parse_args()
    cfg, w = read_checkpoint(a.checkpoint)
    t = hf_tensors(cfg, w)
    os.makedirs(a.out, exist_ok=True)
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": cfg["dim"],
              "intermediate_size": cfg["hidden"], "num_hidden_layers": cfg["L"], "num_attention_heads": cfg["nh"],
              "num_key_value_heads": cfg["nkv"], "head_dim": cfg["hs"], "vocab_size": cfg["V"],
              "max_position_embeddings": cfg["seq"], "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
              "hidden_act": "silu", "attention_bias": False, "mlp_bias": False,
              "tie_word_embeddings": cfg["shared"], "bos_token_id": 1, "eos_token_id": 2, "torch_dtype": "float32"}
    json.dump(config, open(os.path.join(a.out, "config.json"), "w"), indent=2)
    from safetensors.numpy import save_file
    save_file(t, os.path.join(a.out, "model.safetensors"), metadata={"format": "pt"})
    ok = True
    if a.tokenizer_model:
        try:
            from transformers import LlamaTokenizerFast
            tok = LlamaTokenizerFast(vocab_file=a.tokenizer_model, legacy=False, from_slow=True)
            tok.save_pretrained(a.out)
            print(f"tokenizer: {a.out}/tokenizer.json (transformers LlamaConverter)")
        except Exception as e:  # sentencepiece / protobuf missing
            print(f"tokenizer: not written ({type(e).__name__}: {e}); `fastlora convert-llama2c --tokenizer tok512.bin` writes one")
    ids = [1, 403, 407, 261, 378, 267, 429, 273, 379, 289, 18, 12]  # "<s>Once upon a time ..." style ids
    ids = [i % cfg["V"] for i in ids]
    ref = forward_llama2c(cfg, w, ids)
    hf = forward_hf(cfg, t, ids)
    d = np.abs(ref - hf).max()
    print(f"llama2.c math vs HF math on the converted weights: max |logit diff| {d:.2e} (max |logit| {np.abs(ref).max():.2f})")
    ok &= d < 1e-4
    try:
        import torch
        from transformers import LlamaForCausalLM
        m = LlamaForCausalLM.from_pretrained(a.out, torch_dtype=torch.float32).eval()
        with torch.no_grad():
            lt = m(torch.tensor([ids])).logits[0].double().numpy()
        d = np.abs(ref - lt).max()
        print(f"llama2.c math vs transformers LlamaForCausalLM: max |logit diff| {d:.2e}")
        ok &= d < 1e-3
    except ImportError:
        print("transformers/torch not installed: skipped the LlamaForCausalLM check")
    if a.compare:
        from safetensors.numpy import load_file
        c = load_file(os.path.join(a.compare, "model.safetensors"))
        same = set(c) == set(t) and all(np.array_equal(c[k], t[k]) for k in t)
        print(f"--compare {a.compare}: tensors {'identical' if same else 'DIFFER'}")
        ok &= same
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
