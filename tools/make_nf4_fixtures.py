#!/usr/bin/env python3
"""Build the NF4 reference fixtures under tests/fixtures/nf4/ with the real bitsandbytes (CPU).

Run from the repository root (needs torch, bitsandbytes, transformers, safetensors, numpy; CPU only):

    python3 tools/make_nf4_fixtures.py            # writes tests/fixtures/nf4/
    python3 tools/make_nf4_fixtures.py --out DIR  # somewhere else (to diff against the committed copy)

The C tests read only the committed files; this script is not run in CI. Fixed seeds, one thread.

cases.safetensors — one group of tensors per case <c> (bitsandbytes.functional.quantize_4bit(A,
blocksize=64, compress_statistics=True, quant_type="nf4"), i.e. what transformers stores for
BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True)):
    <c>.input            the tensor quantized, in its own dtype (F32 / BF16 / F16), its own 2-D shape
    <c>.packed           U8 [ceil(n/2)]  two codes per byte, flattened row-major order
    <c>.absmax           U8 [ceil(n/64)] the 8-bit codes of (absmax - offset)
    <c>.nested_absmax    F32 [ceil(n/64/256)] the absmax of each 256-block of (absmax - offset)
    <c>.offset           F32 [1]         mean of the absmax (torch's f32 mean)
    <c>.absmax_f32       F32 [ceil(n/64)] the absmax before double quantization (quantize_4bit without
                                         compress_statistics), to check the first stage alone
    <c>.dequant          dequantize_4bit(packed, state) in the input dtype
    <c>.quant_state      U8  the packed JSON bitsandbytes stores as `*.quant_state.bitsandbytes__nf4`
  quant_map              F32 [16]  the NF4 code table
  nested_quant_map       F32 [256] bitsandbytes' 8-bit dynamic map (create_dynamic_map())
  __metadata__["cases"]  comma-separated case names

tiny-bf16/, tiny-nf4/ — a tiny Llama (hidden 64, 2 layers) in bf16, and the same model loaded by
transformers with that BitsAndBytesConfig on the CPU and saved with save_pretrained (the 4-bit layout
of the Hub's pre-quantized checkpoints: U8 `*.weight` of shape (n/2, 1), U8 `*.absmax`, F32
`*.nested_absmax`, `*.quant_map`, `*.nested_quant_map`, U8 `*.quant_state.bitsandbytes__nf4`).
tiny-nf4-logits.safetensors — input_ids I32 [1, 12] and the 4-bit model's logits F32 [1, 12, V].

tiny-f32-nf4/ — a Llama in float32 (hidden 128, FF 256, 2 layers, 4 heads, 2 KV heads, V 96) loaded by
transformers with the same BitsAndBytesConfig but bnb_4bit_compute_dtype=float32 and saved with
save_pretrained before any forward pass (see "CPU repacking" below). Its float32 source is not committed
(0.8 MB): every weight is a formula of its name and index (f32_source_tensor, mirrored by
tests/test_nf4_f32.c, which writes the source folder at test time), so the test quantizes exactly the
values bitsandbytes quantized. The script checks what the issue checked: every projection equals a fresh
quantize_4bit(W, blocksize=64, compress_statistics=True) bit for bit, the float tensors (embeddings,
norms, LM head) are the source's f32 values, and config.json differs from the source's only by
quantization_config.
tiny-f32-nf4-logits.safetensors — from the saved folder reloaded by transformers, in training mode (the
f32 dequantize-then-matmul path): input_ids I32 [2, 16] with logits F32 [2, 16, V], and eval_ids I32
[8, 33] with eval_loss F32 [1] (transformers' shifted mean cross-entropy, 8 x 32 targets).
tiny-phi3-bf16/, tiny-phi3-nf4/ — a tiny Phi3ForCausalLM (hidden 64, FF 128, 2 layers, 4 heads, 2 KV heads,
partial_rotary_factor 0.75, V 96) in bf16 and the same model loaded by transformers with the BitsAndBytesConfig
above (compute dtype bfloat16) and saved: its fused modules self_attn.qkv_proj (128, 64) and mlp.gate_up_proj
(256, 64) are each ONE bitsandbytes NF4 matrix (one offset, 256-block groups over the fused matrix); the script
checks that each equals quantize_4bit(fused bf16 weight) bit for bit and that quantizing q, k, v apart would
not (another offset). tiny-phi3-nf4-adapter/ — a PEFT LoRA (r 4, alpha 8, qkv_proj, o_proj, gate_up_proj,
down_proj; lora_B random normal, std 0.05) on that 4-bit model. tiny-phi3-nf4-expected.safetensors — PEFT's
QLoRA forward and backward on the saved 4-bit folder with f32 compute, in training mode (dropout 0):
input_ids, labels I32 [2, 12] (labels -100 on row 0's first 3 positions), logits F32 [2, 12, V], loss F32 [1]
(transformers' shifted mean cross-entropy), grad.<key> for every adapter tensor <key> (as in
tests/fixtures/hf/README.md).
short-means.safetensors — torch's f32 mean of absmax-like vectors of 1..16 values (values, lengths,
means): below 8 values torch sums in another order than its vector path. Also bnb5.*: quantize_4bit of a
(5, 64) f32 matrix (5 blocks) whose offset depends on that order.

CPU repacking (bitsandbytes 0.50 on a CPU with AVX512_BF16): the first forward of a Linear4bit in eval
mode without grad rewrites its weight into a packed CPU layout with absmax in bfloat16, and
save_pretrained converts it back by re-quantizing those bf16 absmax (new offset, codes and nested
absmax; the packed nibbles stay). A 4-bit folder saved after such a forward is therefore not a fresh
quantize_4bit of the weights. `--only repack` measures this on the f32 model and writes nothing.
"""

import argparse
import json
import os
import shutil
import sys

import numpy as np
import torch
from safetensors.torch import save_file

import bitsandbytes
import bitsandbytes.functional as F


def quantize_case(name, a, out):
    q, st = F.quantize_4bit(a, blocksize=64, compress_statistics=True, quant_type="nf4")
    _, st_plain = F.quantize_4bit(a, blocksize=64, compress_statistics=False, quant_type="nf4")
    deq = F.dequantize_4bit(q, st)
    packed_state = st.as_dict(packed=True)
    out[f"{name}.input"] = a.contiguous()
    out[f"{name}.packed"] = q.reshape(-1).contiguous()
    out[f"{name}.absmax"] = st.absmax.reshape(-1).contiguous()
    out[f"{name}.nested_absmax"] = st.state2.absmax.reshape(-1).contiguous()
    out[f"{name}.offset"] = st.offset.reshape(1).float().contiguous()
    out[f"{name}.absmax_f32"] = st_plain.absmax.reshape(-1).contiguous()
    out[f"{name}.dequant"] = deq.contiguous()
    out[f"{name}.quant_state"] = packed_state["quant_state.bitsandbytes__nf4"].contiguous()
    return st


def nf4_ties():
    """Values exactly on the midpoints between NF4 codes (ties), and the codes themselves."""
    code = F.get_4bit_type("nf4", device="cpu")
    mids = (code[:-1] + code[1:]) / 2
    return torch.cat([code, mids, -mids, torch.nextafter(mids, torch.ones_like(mids)),
                      torch.nextafter(mids, -torch.ones_like(mids))])


def make_cases(out):
    g = torch.Generator().manual_seed(1234)
    cases = []

    def add(name, a):
        cases.append(name)
        quantize_case(name, a, out)

    # random, real-scaled (init std 0.02), all three dtypes
    add("rand_bf16_128x64", (torch.randn(128, 64, generator=g) * 0.02).bfloat16())
    add("rand_f16_96x128", (torch.randn(96, 128, generator=g) * 0.02).half())
    add("rand_f32_64x192", torch.randn(64, 192, generator=g) * 0.02)
    # odd sizes: n not a multiple of 64 (a short last block), odd last dimension, one row
    add("odd_f32_37x53", torch.randn(37, 53, generator=g))
    add("odd_f16_65x130", (torch.randn(65, 130, generator=g) * 3).half())
    add("odd_bf16_1x7", torch.randn(1, 7, generator=g).bfloat16())
    add("odd_bf16_3x101", torch.randn(3, 101, generator=g).bfloat16())
    # real-shaped: rows of SmolLM2 (C = 576) and Qwen2.5-0.5B (C = 896) projections, several
    # 256-blocks of absmax (the last one short)
    add("real_bf16_32x576", (torch.randn(32, 576, generator=g) * 0.04).bfloat16())
    add("real_bf16_24x896", (torch.randn(24, 896, generator=g) * 0.03).bfloat16())
    # rows with very different scales: the absmax spread over many 8-bit codes
    scales = torch.pow(10.0, torch.rand(160, 1, generator=g) * 6 - 4)
    add("scaled_rows_bf16_160x128", (torch.randn(160, 128, generator=g) * scales).bfloat16())
    add("scaled_rows_f32_130x64", torch.randn(130, 64, generator=g) * torch.pow(10.0, torch.rand(130, 1, generator=g) * 8 - 5))
    # zeros: a whole zero tensor, and zero blocks between non-zero ones
    add("zeros_bf16_64x64", torch.zeros(64, 64, dtype=torch.bfloat16))
    z = torch.randn(16, 128, generator=g)
    z[::3] = 0
    z[:, 64:] *= 1e-3
    add("zero_blocks_f32_16x128", z)
    # extremes: f32 max, denormals, huge and tiny in one block, ties on the NF4 midpoints
    ties = nf4_ties()
    ext = torch.zeros(12, 64)
    ext[0, : ties.numel() // 2] = ties[: ties.numel() // 2]
    ext[0, 63] = 1.0
    ext[1, : ties.numel() - ties.numel() // 2] = ties[ties.numel() // 2:]
    ext[1, 62] = -1.0
    ext[2] = torch.randn(64, generator=g).clamp(-3, 3) * 1e38
    ext[2, 5] = torch.finfo(torch.float32).max
    ext[3] = torch.randn(64, generator=g) * 1e-40            # denormals only
    ext[4] = torch.randn(64, generator=g) * 1e-30
    ext[4, 9] = 1e30                                          # one huge value swamps the block
    ext[5, :] = 7.0                                           # constant block
    ext[6, :] = -7.0
    ext[7] = torch.randn(64, generator=g) * 1e-3
    ext[7, 0] = torch.finfo(torch.float32).tiny / 8          # denormal next to normal values
    ext[8, 17] = -2.5                                         # a single non-zero
    ext[9] = torch.linspace(-1, 1, 64)
    ext[10] = ties[:64] * 0.5
    ext[10, 0] = 0.5
    ext[11] = torch.randn(64, generator=g)
    add("extreme_f32_12x64", ext)
    e16 = (torch.randn(8, 64, generator=g)).half()
    e16[0, 3] = 65504.0
    e16[1] = (torch.randn(64, generator=g) * 6e-6).half()   # f16 subnormals
    e16[2, :32] = -65504.0
    e16[3] = ties[:64].half()
    add("extreme_f16_8x64", e16)
    eb = (torch.randn(8, 64, generator=g) * 1e30).bfloat16()
    eb[0, 1] = torch.finfo(torch.bfloat16).max
    eb[1] = (torch.randn(64, generator=g) * 1e-39).bfloat16()
    eb[2] = ties[:64].bfloat16()
    add("extreme_bf16_8x64", eb)

    out["quant_map"] = F.get_4bit_type("nf4", device="cpu").float().contiguous()
    out["nested_quant_map"] = F.create_dynamic_map().float().contiguous()
    return cases


def make_tiny_models(root):
    from transformers import AutoModelForCausalLM, BitsAndBytesConfig, LlamaConfig, LlamaForCausalLM

    torch.manual_seed(7)
    cfg = LlamaConfig(vocab_size=96, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                      tie_word_embeddings=False, rms_norm_eps=1e-6)
    model = LlamaForCausalLM(cfg).to(torch.bfloat16)
    bf16_dir = os.path.join(root, "tiny-bf16")
    nf4_dir = os.path.join(root, "tiny-nf4")
    for d in (bf16_dir, nf4_dir):
        shutil.rmtree(d, ignore_errors=True)
    model.save_pretrained(bf16_dir, safe_serialization=True)
    bnb_cfg = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
                                 bnb_4bit_compute_dtype=torch.bfloat16)
    qmodel = AutoModelForCausalLM.from_pretrained(bf16_dir, quantization_config=bnb_cfg, device_map="cpu")
    qmodel.save_pretrained(nf4_dir, safe_serialization=True)
    for d in (bf16_dir, nf4_dir):
        gen = os.path.join(d, "generation_config.json")
        if os.path.exists(gen):
            os.remove(gen)
    ids = torch.randint(0, cfg.vocab_size, (1, 12), generator=torch.Generator().manual_seed(3))
    # after the save: on an AVX512_BF16 CPU this eval-mode forward repacks the weights (docstring); its
    # bf16 CPU kernel is within the engine test's bf16 tolerance of the dequantize-then-matmul path
    with torch.no_grad():
        logits = qmodel(ids).logits.float()
    save_file({"input_ids": ids.to(torch.int32).contiguous(), "logits": logits.contiguous()},
              os.path.join(root, "tiny-nf4-logits.safetensors"),
              metadata={"bitsandbytes": bitsandbytes.__version__, "torch": torch.__version__})


# ---- the float32 model (tiny-f32-nf4) ---------------------------------------------------------------

F32_CONFIG = dict(vocab_size=96, hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, max_position_embeddings=128, tie_word_embeddings=False, rms_norm_eps=1e-6)
M64 = (1 << 64) - 1


def fl_hash64(x):
    """fastlora's fl_hash64 (src/common/rng.h, splitmix64's finalizer) on a numpy uint64 array."""
    x = x + np.uint64(0x9e3779b97f4a7c15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xbf58476d1ce4e5b9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94d049bb133111eb)
    return x ^ (x >> np.uint64(31))


def fnv1a64(name):
    h = 0xcbf29ce484222325
    for b in name.encode():
        h = ((h ^ b) * 0x100000001b3) & M64
    return h


def f32_source_tensor(name, shape):
    """The source weight `name`: u = fl_rng_uniform(fl_hash64(fnv1a64(name)), i) for element i (row-major), 24
    random bits in [0, 1); a norm weight is 1 + (u - 1/2) / 4 (one f32 rounding), a matrix row r is
    (u - 1/2) * 2^-(3 + r % 5): exact in f32, with block absmax spread over five octaves. Mirrored in
    tests/test_nf4_f32.c (source_value)."""
    n = int(np.prod(shape))
    stream = fl_hash64(np.array([fnv1a64(name)], dtype=np.uint64))[0]
    idx = np.arange(n, dtype=np.uint64)
    with np.errstate(over="ignore"):
        h = fl_hash64(stream ^ (idx * np.uint64(0xd1b54a32d192ed03)))
    u = (h >> np.uint64(40)).astype(np.float32) * np.float32(1.0 / 16777216.0)
    c = u - np.float32(0.5)
    if len(shape) == 1:
        return torch.from_numpy(np.float32(1.0) + c * np.float32(0.25))
    rows = np.arange(n, dtype=np.int64) // shape[1]
    scale = np.ldexp(np.float32(1.0), -(3 + rows % 5)).astype(np.float32)
    return torch.from_numpy((c * scale).astype(np.float32).reshape(shape))


def check_fresh_quantization(qmodel, source):
    """Every projection of the loaded 4-bit model is quantize_4bit(source weight) bit for bit; every float
    tensor is the source's f32 value."""
    import bitsandbytes.nn as bnn
    for name, mod in qmodel.named_modules():
        if isinstance(mod, bnn.Linear4bit):
            w = source[name + ".weight"]
            q, st = F.quantize_4bit(w, blocksize=64, compress_statistics=True, quant_type="nf4")
            qs = mod.weight.quant_state
            same = (torch.equal(q.view(-1), mod.weight.data.view(-1)) and torch.equal(st.absmax, qs.absmax)
                    and torch.equal(st.state2.absmax, qs.state2.absmax) and torch.equal(st.offset, qs.offset))
            assert same, f"{name}: the loaded 4-bit weight is not a fresh quantize_4bit of the source"
    for name, p in qmodel.named_parameters():
        if p.dtype != torch.uint8:
            assert p.dtype == torch.float32 and torch.equal(p.data, source[name]), f"{name}: not the source f32 value"


def write_f32_source(d):
    """The source model (transformers' own LlamaForCausalLM in f32 with the formula weights), saved to d."""
    from transformers import LlamaConfig, LlamaForCausalLM
    model = LlamaForCausalLM(LlamaConfig(**F32_CONFIG)).float()
    sd = {k: f32_source_tensor(k, tuple(v.shape)) for k, v in model.state_dict().items()}
    model.load_state_dict(sd, strict=True)
    model.save_pretrained(d, safe_serialization=True)
    return sd


def load_4bit(d):
    from transformers import AutoModelForCausalLM, BitsAndBytesConfig
    bnb_cfg = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
                                 bnb_4bit_compute_dtype=torch.float32)
    return AutoModelForCausalLM.from_pretrained(d, quantization_config=bnb_cfg, device_map="cpu")


def f32_ids():
    g = torch.Generator().manual_seed(21)
    V = F32_CONFIG["vocab_size"]
    return torch.randint(0, V, (2, 16), generator=g), torch.randint(0, V, (8, 33), generator=g)


def make_f32_model(root):
    import tempfile
    from transformers import AutoModelForCausalLM
    nf4_dir = os.path.join(root, "tiny-f32-nf4")
    shutil.rmtree(nf4_dir, ignore_errors=True)
    with tempfile.TemporaryDirectory() as src:
        source = write_f32_source(src)
        qmodel = load_4bit(src)
        check_fresh_quantization(qmodel, source)
        qmodel.save_pretrained(nf4_dir, safe_serialization=True)   # before any forward: no CPU repacking
        with open(os.path.join(src, "config.json")) as f:
            src_cfg = json.load(f)
    with open(os.path.join(nf4_dir, "config.json")) as f:
        nf4_cfg = json.load(f)
    assert nf4_cfg.pop("quantization_config")["bnb_4bit_compute_dtype"] == "float32"
    assert nf4_cfg == src_cfg, "transformers rewrote config.json fields other than quantization_config"
    gen = os.path.join(nf4_dir, "generation_config.json")
    if os.path.exists(gen):
        os.remove(gen)
    # the reference: the saved folder as transformers reloads it, in training mode (no dropout in this
    # model), where Linear4bit dequantizes in f32 and multiplies; eval mode without grad would take the
    # bf16 CPU kernel on an AVX512_BF16 machine
    model = AutoModelForCausalLM.from_pretrained(nf4_dir, device_map="cpu")
    model.train()
    ids, eval_ids = f32_ids()
    with torch.no_grad():
        logits = model(ids).logits.float()
        eval_loss = model(eval_ids, labels=eval_ids).loss.float().reshape(1)
    save_file({"input_ids": ids.to(torch.int32).contiguous(), "logits": logits.contiguous(),
               "eval_ids": eval_ids.to(torch.int32).contiguous(), "eval_loss": eval_loss.contiguous()},
              os.path.join(root, "tiny-f32-nf4-logits.safetensors"),
              metadata={"bitsandbytes": bitsandbytes.__version__, "torch": torch.__version__,
                        "eval_loss": f"{eval_loss.item():.9f}"})


def report_cpu_repack():
    """What an eval-mode forward before save_pretrained does to the saved folder (writes nothing)."""
    import tempfile
    from transformers import AutoModelForCausalLM
    _, eval_ids = f32_ids()
    with tempfile.TemporaryDirectory() as tmp:
        source = write_f32_source(os.path.join(tmp, "src"))
        losses = {}
        for when in ("before", "after"):
            qmodel = load_4bit(os.path.join(tmp, "src"))
            check_fresh_quantization(qmodel, source)
            if when == "after":
                qmodel.eval()
                with torch.no_grad():
                    qmodel(eval_ids)
            qmodel.save_pretrained(os.path.join(tmp, when))
            model = AutoModelForCausalLM.from_pretrained(os.path.join(tmp, when), device_map="cpu")
            model.train()
            with torch.no_grad():
                losses[when] = model(eval_ids, labels=eval_ids).loss.item()
        from safetensors.torch import load_file
        a, b = (load_file(os.path.join(tmp, w, "model.safetensors")) for w in ("before", "after"))
        changed = sorted({k.rsplit(".weight", 1)[-1] or "weight" for k in a if not torch.equal(a[k], b[k])})
    print(f"saved before an eval forward: eval loss {losses['before']:.7f}; after: {losses['after']:.7f} "
          f"({losses['after'] / losses['before'] - 1:+.2e} relative); tensors that changed: {changed or 'none'}")


# ---- Phi-3: fused modules, each one NF4 matrix (tiny-phi3-*) ----------------------------------------------

PHI3_CONFIG = dict(vocab_size=96, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                   num_key_value_heads=2, max_position_embeddings=128, rms_norm_eps=1e-5, sliding_window=64,
                   rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.75},
                   tie_word_embeddings=False, pad_token_id=0, bos_token_id=1, eos_token_id=2, attention_dropout=0.0)
PHI3_TARGETS = ["qkv_proj", "o_proj", "gate_up_proj", "down_proj"]


def check_fused_quantization(qmodel, source):
    """Each fused module of the loaded 4-bit model is quantize_4bit of the WHOLE fused weight, bit for bit, and
    not what quantizing its q, k, v (gate, up) rows apart gives."""
    check_fresh_quantization_weights(qmodel, source)
    w = source["model.layers.0.self_attn.qkv_proj.weight"]
    QD = PHI3_CONFIG["hidden_size"]
    _, whole = F.quantize_4bit(w, blocksize=64, compress_statistics=True, quant_type="nf4")
    _, q_alone = F.quantize_4bit(w[:QD].contiguous(), blocksize=64, compress_statistics=True, quant_type="nf4")
    assert not torch.equal(whole.offset, q_alone.offset), "q quantized alone has the fused module's offset"


def check_fresh_quantization_weights(qmodel, source):
    import bitsandbytes.nn as bnn
    n = 0
    for name, mod in qmodel.named_modules():
        if isinstance(mod, bnn.Linear4bit):
            q, st = F.quantize_4bit(source[name + ".weight"], blocksize=64, compress_statistics=True, quant_type="nf4")
            qs = mod.weight.quant_state
            assert (torch.equal(q.view(-1), mod.weight.data.view(-1)) and torch.equal(st.absmax, qs.absmax)
                    and torch.equal(st.state2.absmax, qs.state2.absmax) and torch.equal(st.offset, qs.offset)), name
            n += 1
    assert n == 4 * PHI3_CONFIG["num_hidden_layers"], f"{n} Linear4bit modules"


def f32_compute(model):
    """bitsandbytes' f32 path (as tools/peft_roundtrip.py --bnb-compute float32): Linear4bit dequantizes to its
    quant_state dtype, casts to f32 and multiplies; every float parameter in f32."""
    import bitsandbytes.nn as bnn
    for mod in model.modules():
        if isinstance(mod, bnn.Linear4bit):
            mod.compute_dtype = torch.float32
            mod.compute_type_is_set = True
        else:
            for prm in mod.parameters(recurse=False):
                prm.data = prm.data.float()


def make_phi3(root):
    from peft import LoraConfig, get_peft_model
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM, BitsAndBytesConfig, Phi3Config, Phi3ForCausalLM
    bf16_dir, nf4_dir = os.path.join(root, "tiny-phi3-bf16"), os.path.join(root, "tiny-phi3-nf4")
    adapter_dir = os.path.join(root, "tiny-phi3-nf4-adapter")
    for d in (bf16_dir, nf4_dir, adapter_dir):
        shutil.rmtree(d, ignore_errors=True)
    torch.manual_seed(31)
    model = Phi3ForCausalLM(Phi3Config(**PHI3_CONFIG)).to(torch.bfloat16)
    model.save_pretrained(bf16_dir, safe_serialization=True)
    source = load_file(os.path.join(bf16_dir, "model.safetensors"))
    bnb_cfg = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
                                 bnb_4bit_compute_dtype=torch.bfloat16)
    qmodel = AutoModelForCausalLM.from_pretrained(bf16_dir, quantization_config=bnb_cfg, device_map="cpu")
    check_fused_quantization(qmodel, source)
    qmodel.save_pretrained(nf4_dir, safe_serialization=True)   # before any forward: no CPU repacking
    for d in (bf16_dir, nf4_dir):
        gen = os.path.join(d, "generation_config.json")
        if os.path.exists(gen):
            os.remove(gen)
    # PEFT's QLoRA on the saved folder, f32 compute, training mode
    base = AutoModelForCausalLM.from_pretrained(nf4_dir, device_map="cpu", attn_implementation="eager")
    f32_compute(base)
    pm = get_peft_model(base, LoraConfig(r=4, lora_alpha=8, lora_dropout=0.0, target_modules=PHI3_TARGETS,
                                         bias="none", task_type="CAUSAL_LM"))
    g = torch.Generator().manual_seed(32)
    with torch.no_grad():
        for n, prm in pm.named_parameters():
            if "lora_B" in n:
                prm.copy_(0.05 * torch.randn(prm.shape, generator=g))
    pm.save_pretrained(adapter_dir)
    for extra in ("README.md",):
        if os.path.exists(os.path.join(adapter_dir, extra)):
            os.remove(os.path.join(adapter_dir, extra))
    pm.train()
    ids = torch.randint(0, PHI3_CONFIG["vocab_size"], (2, 12), generator=torch.Generator().manual_seed(33))
    labels = ids.clone()
    labels[0, :3] = -100
    out = pm(input_ids=ids, labels=labels)
    out.loss.backward()
    expected = {"input_ids": ids.to(torch.int32).contiguous(), "labels": labels.to(torch.int32).contiguous(),
                "logits": out.logits.detach().float().contiguous(), "loss": out.loss.detach().float().reshape(1)}
    file_keys = set(load_file(os.path.join(adapter_dir, "adapter_model.safetensors")).keys())
    for n, prm in pm.named_parameters():
        if prm.requires_grad:
            key = n.replace(".default", "")
            assert key in file_keys, key
            expected["grad." + key] = prm.grad.detach().float().contiguous()
    assert len(expected) == 4 + len(file_keys)
    save_file(expected, os.path.join(root, "tiny-phi3-nf4-expected.safetensors"),
              metadata={"bitsandbytes": bitsandbytes.__version__, "torch": torch.__version__,
                        "loss": f"{out.loss.item():.9f}"})


# ---- short vectors: torch's mean below one 8-lane load ---------------------------------------------------

def make_short_means(root):
    g = torch.Generator().manual_seed(55)
    values, lengths, means = [], [], []
    for n in range(1, 17):
        for _ in range(4):
            a = torch.rand(n, generator=g) * 0.1 + 0.01
            values.append(a)
            lengths.append(n)
            means.append(a.mean().reshape(1))
    out = {"values": torch.cat(values).contiguous(), "lengths": torch.tensor(lengths, dtype=torch.int32),
           "means": torch.cat(means).contiguous()}
    # a (5, 64) matrix (5 blocks) whose offset differs between the two summation orders: the first seed
    # from 5 on where the left-to-right sum of the 5 absmax gives another mean than torch's
    for seed in range(5, 1000):
        gb = torch.Generator().manual_seed(seed)
        a = torch.randn(5, 64, generator=gb) * torch.tensor([0.5, 1.0, 2.0, 0.25, 3.0]).reshape(5, 1)
        q, st = F.quantize_4bit(a, blocksize=64, compress_statistics=True, quant_type="nf4")
        left_to_right = torch.zeros((), dtype=torch.float32)
        for v in a.abs().amax(1):
            left_to_right = left_to_right + v
        if (left_to_right / 5).item() != st.offset.item():
            break
    out.update({"bnb5.input": a.contiguous(), "bnb5.packed": q.reshape(-1).contiguous(),
                "bnb5.absmax": st.absmax.contiguous(), "bnb5.nested_absmax": st.state2.absmax.contiguous(),
                "bnb5.offset": st.offset.reshape(1).float().contiguous()})
    save_file(out, os.path.join(root, "short-means.safetensors"),
              metadata={"bitsandbytes": bitsandbytes.__version__, "torch": torch.__version__})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="tests/fixtures/nf4")
    ap.add_argument("--only", default="cases,tiny,f32,means,phi3",
                    help="comma-separated parts: cases, tiny, f32, means, phi3, repack (repack: report only)")
    args = ap.parse_args()
    parts = set(args.only.split(","))
    torch.set_num_threads(1)
    os.makedirs(args.out, exist_ok=True)
    if "cases" in parts:
        tensors = {}
        cases = make_cases(tensors)
        meta = {"cases": ",".join(cases), "bitsandbytes": bitsandbytes.__version__, "torch": torch.__version__}
        save_file(tensors, os.path.join(args.out, "cases.safetensors"), metadata=meta)
    if "tiny" in parts:
        make_tiny_models(args.out)
    if "f32" in parts:
        make_f32_model(args.out)
    if "means" in parts:
        make_short_means(args.out)
    if "phi3" in parts:
        make_phi3(args.out)
    if "repack" in parts:
        report_cpu_repack()
    print(f"wrote {args.only} to {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
