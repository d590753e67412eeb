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
    with torch.no_grad():
        logits = qmodel(ids).logits.float()
    save_file({"input_ids": ids.to(torch.int32).contiguous(), "logits": logits.contiguous()},
              os.path.join(root, "tiny-nf4-logits.safetensors"),
              metadata={"bitsandbytes": bitsandbytes.__version__, "torch": torch.__version__})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="tests/fixtures/nf4")
    args = ap.parse_args()
    torch.set_num_threads(1)
    os.makedirs(args.out, exist_ok=True)
    tensors = {}
    cases = make_cases(tensors)
    meta = {"cases": ",".join(cases), "bitsandbytes": bitsandbytes.__version__, "torch": torch.__version__}
    save_file(tensors, os.path.join(args.out, "cases.safetensors"), metadata=meta)
    make_tiny_models(args.out)
    print(f"wrote {len(cases)} cases and the tiny models to {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
