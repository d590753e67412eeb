#!/usr/bin/env python3
"""Load an HF model + a PEFT LoRA adapter (e.g. one written by fastlora) and write the logits.

    python3 tools/peft_roundtrip.py --model DIR --adapter DIR --ids FILE.safetensors --out FILE.safetensors

--model    HF model folder (config.json + *.safetensors), loaded in float32 with eager attention.
--adapter  PEFT adapter folder (adapter_config.json + adapter_model.safetensors), loaded with
           PeftModel.from_pretrained.
--ids      safetensors file with `input_ids` (I32 or I64, [B,T]); optional `labels` ([B,T], -100 = ignored).
--out      written with `logits` F32 [B,T,V] (eval mode, no attention_mask, positions 0..T-1) and, when the ids
           file has `labels`, `loss` F32 [1] (transformers' shifted mean cross-entropy).
--bnb-compute  for a bitsandbytes 4-bit (NF4) --model: the compute dtype. bfloat16 (default): as transformers
           loads the checkpoint (bnb_4bit_compute_dtype bfloat16, bf16 activations, eval mode). float32: every
           parameter that is not 4-bit cast to f32 and the 4-bit layers computing in f32 through bitsandbytes'
           dequantize-then-matmul path (the f32 products code·scale times f32 activations: the path training
           takes, forced by inputs that require grad; eval mode would pick its fused CPU inference kernel).

Fails (exit status 1, message on stderr) when the adapter does not load cleanly:
  - PEFT warns about missing adapter keys (from_pretrained's "Found missing adapter keys ..."),
  - a tensor in adapter_model.safetensors is not a LoRA parameter of the loaded model (unexpected key; PEFT
    would silently ignore it) or a LoRA parameter has no tensor in the file (missing key),
  - a loaded parameter differs from the file's tensor, or has a different shape,
  - the adapter is not a LoRA adapter or wraps no module.
Unknown keys in adapter_config.json are only reported (PEFT drops them with a warning; formats.md section 4)
unless --strict-config is given.
Used by a C test (when torch is present) to check that a fastlora adapter loads in PEFT with identical logits.
"""

import argparse
import json
import os
import sys
import warnings


def die(msg):
    print(f"peft_roundtrip: FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser(description="Load HF model + PEFT adapter, write logits.")
    ap.add_argument("--model", required=True)
    ap.add_argument("--adapter", required=True)
    ap.add_argument("--ids", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--attn", default="eager", help="attn_implementation (default eager)")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0 = torch default)")
    ap.add_argument("--strict-config", action="store_true", help="also fail on unknown adapter_config.json keys")
    ap.add_argument("--bnb-compute", choices=("bfloat16", "float32"), default="bfloat16",
                    help="compute dtype for a bitsandbytes 4-bit --model (default bfloat16)")
    args = ap.parse_args()

    import torch
    import transformers
    from safetensors import safe_open
    from safetensors.torch import load_file, save_file
    from transformers import AutoModelForCausalLM
    from peft import PeftModel
    from peft.utils import get_peft_model_state_dict

    if args.threads > 0:
        torch.set_num_threads(args.threads)
    transformers.logging.set_verbosity_error()
    try:
        transformers.logging.disable_progress_bar()
    except AttributeError:
        pass

    cfg_path = os.path.join(args.adapter, "adapter_config.json")
    st_path = os.path.join(args.adapter, "adapter_model.safetensors")
    for p in (cfg_path, st_path):
        if not os.path.isfile(p):
            die(f"no {p}")
    with open(cfg_path) as f:
        acfg = json.load(f)
    if acfg.get("peft_type") != "LORA":
        die(f"peft_type is {acfg.get('peft_type')!r}, expected 'LORA'")

    ids_t = load_file(args.ids)
    if "input_ids" not in ids_t:
        die(f"{args.ids} has no input_ids")
    ids = ids_t["input_ids"].to(torch.int64)
    if ids.dim() != 2:
        die(f"input_ids must be [B,T], got {list(ids.shape)}")
    labels = ids_t["labels"].to(torch.int64) if "labels" in ids_t else None

    with open(os.path.join(args.model, "config.json")) as f:
        bnb_4bit = bool(json.load(f).get("quantization_config"))
    if bnb_4bit:
        import bitsandbytes as bnb
        base = AutoModelForCausalLM.from_pretrained(args.model, attn_implementation=args.attn, device_map="cpu")
        if args.bnb_compute == "float32":
            for mod in base.modules():
                if isinstance(mod, bnb.nn.Linear4bit):
                    mod.compute_dtype = torch.float32
                    mod.compute_type_is_set = True
                else:
                    for p in mod.parameters(recurse=False):
                        p.data = p.data.float()
    else:
        base = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32, attn_implementation=args.attn)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            model = PeftModel.from_pretrained(base, args.adapter, is_trainable=False)
        except Exception as e:  # size mismatch, no matching target module, bad config ...
            die(f"PeftModel.from_pretrained raised {type(e).__name__}: {e}")
    problems = []
    for w in caught:
        msg = str(w.message)
        low = msg.lower()
        if "missing adapter keys" in low:
            problems.append(msg)
        elif "unexpected keyword arguments" in low:
            if args.strict_config:
                problems.append(msg)
            print(f"peft_roundtrip: note: adapter_config.json: {msg}", file=sys.stderr)
        elif "unexpected" in low or "missing" in low or "mismatch" in low:
            problems.append(msg)
        elif not issubclass(w.category, (FutureWarning, DeprecationWarning)):
            print(f"peft_roundtrip: warning: {msg}", file=sys.stderr)
    if problems:
        die("PEFT reported problems while loading the adapter:\n  " + "\n  ".join(problems))

    # Independent key/value check: PEFT loads with strict=False, so unexpected keys are otherwise silent.
    expected = get_peft_model_state_dict(model)          # keys as saved (adapter name stripped)
    with safe_open(st_path, "pt") as f:
        file_keys = set(f.keys())
        file_t = {k: f.get_tensor(k) for k in file_keys}
    missing = sorted(set(expected) - file_keys)
    unexpected = sorted(file_keys - set(expected))
    if not expected:
        die("the adapter wraps no module of the model (target_modules matched nothing)")
    if missing or unexpected:
        die(f"adapter keys do not match the model: missing {missing[:8]}{'...' if len(missing) > 8 else ''} "
            f"({len(missing)}), unexpected {unexpected[:8]}{'...' if len(unexpected) > 8 else ''} ({len(unexpected)})")
    for k in sorted(file_keys):
        a, b = expected[k], file_t[k]
        if tuple(a.shape) != tuple(b.shape):
            die(f"{k}: shape {list(b.shape)} in file, {list(a.shape)} in model")
        if not torch.equal(a.detach().to(torch.float32).cpu(), b.to(torch.float32)):
            die(f"{k}: loaded value differs from the file (max |diff| "
                f"{(a.detach().float().cpu() - b.float()).abs().max().item():.3g})")

    if bnb_4bit and acfg.get("lora_dropout", 0) and args.bnb_compute == "float32":
        die("the float32 4-bit path runs in train mode: give an adapter with lora_dropout 0")
    if bnb_4bit and args.bnb_compute == "float32":
        model.train()   # bitsandbytes' 4-bit dequantize-then-matmul path (dropout is 0 in the adapters checked)
        with torch.enable_grad():
            emb = model.get_input_embeddings()(ids).detach().requires_grad_(True)
            out = model(inputs_embeds=emb, labels=labels) if labels is not None else model(inputs_embeds=emb)
    else:
        model.eval()
        with torch.no_grad():
            out = model(input_ids=ids, labels=labels) if labels is not None else model(input_ids=ids)
    res = {"logits": out.logits.detach().to(torch.float32).contiguous()}
    if labels is not None:
        res["loss"] = out.loss.detach().to(torch.float32).reshape(1).contiguous()
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    save_file(res, args.out, metadata={"model": args.model, "adapter": args.adapter,
                                       "n_adapter_tensors": str(len(file_keys))})
    print(f"peft_roundtrip: ok: {len(file_keys)} adapter tensors, logits {list(res['logits'].shape)}"
          + (f", loss {res['loss'].item():.6f}" if labels is not None else "")
          + f", max|logit| {res['logits'].abs().max().item():.4f}")


if __name__ == "__main__":
    main()
