#!/usr/bin/env python3
"""PyTorch + transformers + PEFT peer benchmark: the same LoRA training step as `fastlora bench`.

    python3 tools/peer_bench.py --preset smollm2-135m --batch 4 --seq 256 --threads 2 --steps 3 --warmup 1
    python3 tools/peer_bench.py --preset qwen2.5-1.5b --device cuda --dtype bfloat16 --json bench.jsonl
    python3 tools/peer_bench.py --model /path/to/hf_model_dir --device cuda --liger

The same definition as `fastlora bench` (docs/BENCHMARKS.md, "fastlora-bench-1"), so that `fastlora board` can rank
both in one table; the record's "tool" key says who measured ("pytorch+peft", or "pytorch+peft+liger").

The model is either a preset (the exact config.json of formats.md section 1, built in Python with random init,
nothing downloaded) or an HF model folder (--model, weights loaded).  The step: LoRA adapters (PEFT, r/alpha,
dropout 0, on --targets) in float32 (PEFT's default upcast), the base model in --dtype (default: bfloat16 on cuda,
float32 on cpu) and frozen; AdamW (lr 1e-4) on the LoRA parameters only; T+1 ids per row from a seeded RNG over the
vocabulary, input = the first T, targets = the last T passed as transformers' `shift_labels`, so every one of the
B*T tokens is trained, as in fastlora (older transformers without shift_labels: labels = input, B*(T-1) trained
tokens, and tok/s counts those); each step = zero_grad, forward, backward, optimizer step.
Steps after --warmup are timed (torch.cuda.synchronize on cuda); train tok/s = batch*seq / median step time
(min/max from the slowest/fastest step).  Peak memory: ru_maxrss of the process on CPU,
torch.cuda.max_memory_allocated on CUDA.

Prints one JSON record on stdout (and appends it as one line to --json FILE):
{"tool":"pytorch+peft","version":..,"weights":..,"model":..,"preset":..,"device":..,"device_kind":..,"dtype":..,
 "batch":..,"seq":..,"rank":..,"alpha":..,
 "targets":[..],"threads":..,"steps":..,"warmup":..,"train_tok_s":..,"train_tok_s_min":..,"train_tok_s_max":..,
 "ms_per_step":..,"peak_mem_bytes":..,"versions":{..},"date":..}  plus extra keys (config, params, step_ms, ...).
"""

import argparse
import datetime
import json
import os
import platform
import resource
import statistics
import sys
import time
import warnings

# formats.md section 1 (verified config.json values)
PRESETS = {
    "qwen2.5-0.5b": dict(model_type="qwen2", hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                         num_attention_heads=14, num_key_value_heads=2, vocab_size=151936,
                         max_position_embeddings=32768, rope_theta=1000000.0, rms_norm_eps=1e-6,
                         tie_word_embeddings=True, bos_token_id=151643, eos_token_id=151643,
                         hf_name="Qwen/Qwen2.5-0.5B", total_params=494_032_768),
    "qwen2.5-1.5b": dict(model_type="qwen2", hidden_size=1536, intermediate_size=8960, num_hidden_layers=28,
                         num_attention_heads=12, num_key_value_heads=2, vocab_size=151936,
                         max_position_embeddings=131072, rope_theta=1000000.0, rms_norm_eps=1e-6,
                         tie_word_embeddings=True, bos_token_id=151643, eos_token_id=151643,
                         hf_name="Qwen/Qwen2.5-1.5B", total_params=1_543_714_304),
    "qwen2.5-7b": dict(model_type="qwen2", hidden_size=3584, intermediate_size=18944, num_hidden_layers=28,
                       num_attention_heads=28, num_key_value_heads=4, vocab_size=152064,
                       max_position_embeddings=131072, rope_theta=1000000.0, rms_norm_eps=1e-6,
                       tie_word_embeddings=False, bos_token_id=151643, eos_token_id=151643,
                       hf_name="Qwen/Qwen2.5-7B", total_params=7_615_616_512),
    "smollm2-135m": dict(model_type="llama", hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
                         num_attention_heads=9, num_key_value_heads=3, vocab_size=49152,
                         max_position_embeddings=8192, rope_theta=100000.0, rms_norm_eps=1e-5,
                         tie_word_embeddings=True, bos_token_id=0, eos_token_id=0,
                         hf_name="HuggingFaceTB/SmolLM2-135M", total_params=134_515_008),
    "smollm2-360m": dict(model_type="llama", hidden_size=960, intermediate_size=2560, num_hidden_layers=32,
                         num_attention_heads=15, num_key_value_heads=5, vocab_size=49152,
                         max_position_embeddings=8192, rope_theta=100000.0, rms_norm_eps=1e-5,
                         tie_word_embeddings=True, bos_token_id=0, eos_token_id=0,
                         hf_name="HuggingFaceTB/SmolLM2-360M", total_params=361_821_120),
    "smollm2-1.7b": dict(model_type="llama", hidden_size=2048, intermediate_size=8192, num_hidden_layers=24,
                         num_attention_heads=32, num_key_value_heads=32, vocab_size=49152,
                         max_position_embeddings=8192, rope_theta=130000.0, rms_norm_eps=1e-5,
                         tie_word_embeddings=True, bos_token_id=0, eos_token_id=0,
                         hf_name="HuggingFaceTB/SmolLM2-1.7B", total_params=1_711_376_384),
    "tinyllama-1.1b": dict(model_type="llama", hidden_size=2048, intermediate_size=5632, num_hidden_layers=22,
                           num_attention_heads=32, num_key_value_heads=4, vocab_size=32000,
                           max_position_embeddings=2048, rope_theta=10000.0, rms_norm_eps=1e-5,
                           tie_word_embeddings=False, bos_token_id=1, eos_token_id=2,
                           hf_name="TinyLlama/TinyLlama-1.1B-Chat-v1.0", total_params=1_100_048_384),
    "llama-3.2-1b": dict(model_type="llama", hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                         num_attention_heads=32, num_key_value_heads=8, head_dim=64, vocab_size=128256,
                         max_position_embeddings=131072, rope_theta=500000.0, rms_norm_eps=1e-5,
                         rope_scaling={"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
                                       "high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
                         tie_word_embeddings=True, bos_token_id=128000, eos_token_id=128001,
                         hf_name="meta-llama/Llama-3.2-1B", total_params=1_235_814_400),
}

TARGET_ALIASES = {"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "o_proj",
                  "gate": "gate_proj", "up": "up_proj", "down": "down_proj"}


def parse_args():
    ap = argparse.ArgumentParser(description="PyTorch+PEFT LoRA training-step benchmark (peer of fastlora bench)")
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--preset", choices=sorted(PRESETS))
    src.add_argument("--model", help="HF model folder (config.json + safetensors)")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--rank", type=int, default=16)
    ap.add_argument("--alpha", type=float, default=32)
    ap.add_argument("--targets", default="q,k,v,o,gate,up,down")
    ap.add_argument("--steps", type=int, default=5, help="timed steps (after warm-up)")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2, help="torch intra-op threads (CPU)")
    ap.add_argument("--dtype", choices=["float32", "bfloat16"], default=None,
                    help="base weights/activations (default: bfloat16 on cuda, float32 on cpu)")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--attn", default="sdpa", help="attn_implementation: sdpa, eager, flash_attention_2, ...")
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--grad-ckpt", action="store_true", help="gradient checkpointing (off by default)")
    ap.add_argument("--liger", action="store_true", help="apply Liger kernels when installed (CUDA)")
    ap.add_argument("--weights", help="name of the weights on the board (default: the preset's HF name, or the folder's)")
    ap.add_argument("--json", help="append the JSON record to this file")
    a = ap.parse_args()
    if a.dtype is None:
        a.dtype = "bfloat16" if a.device == "cuda" else "float32"
    if a.steps < 1 or a.warmup < 0 or a.batch < 1 or a.seq < 2 or a.rank < 1:
        ap.error("need --steps >= 1, --warmup >= 0, --batch >= 1, --seq >= 2, --rank >= 1")
    return a


def cpuinfo_fields():
    """The "key : value" lines of the first processor's block of /proc/cpuinfo; {} when absent."""
    vals = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if not line.strip():
                    break
                key, sep, val = line.partition(":")
                if sep:
                    vals.setdefault(key.strip(), val.strip())
    except OSError:
        pass
    return vals


def cpu_name():
    return cpuinfo_fields().get("model name") or platform.processor() or platform.machine()


def cpu_identity():
    """"<vendor_id> family F model M stepping S" of the first processor, as fastlora bench writes it
    (backend/cpu/cpu_device.c); "" when /proc/cpuinfo lacks them."""
    vals = cpuinfo_fields()
    want = ["vendor_id", "cpu family", "model", "stepping"]
    if not all(k in vals for k in want):
        return ""
    return "%s family %s model %s stepping %s" % tuple(vals[k] for k in want)


def weights_name(a):
    """The Hugging Face name of the weights, as fastlora bench names them (bench/records.c)."""
    if a.weights:
        return a.weights
    if a.preset:
        return PRESETS[a.preset]["hf_name"]
    base = os.path.basename(os.path.normpath(a.model))
    for p in PRESETS.values():
        if p["hf_name"].split("/", 1)[1].lower() == base.lower():
            return p["hf_name"]
    return base


def build_config(preset):
    from transformers import LlamaConfig, Qwen2Config
    p = dict(PRESETS[preset])
    p.pop("hf_name")
    p.pop("total_params")
    mt = p.pop("model_type")
    theta = p.pop("rope_theta")
    rs = p.pop("rope_scaling", None)
    rope = {"rope_type": "default", "rope_theta": theta} if rs is None else dict(rs, rope_theta=theta)
    if mt == "qwen2":
        return Qwen2Config(**p, rope_parameters=rope, use_sliding_window=False, attention_dropout=0.0)
    return LlamaConfig(**p, rope_parameters=rope, attention_bias=False, mlp_bias=False, attention_dropout=0.0)


def apply_liger(model, model_type):
    try:
        import liger_kernel.transformers as lk
    except ImportError:
        print("peer_bench: --liger: liger_kernel is not installed; running without it", file=sys.stderr)
        return None
    fn = {"llama": getattr(lk, "apply_liger_kernel_to_llama", None),
          "qwen2": getattr(lk, "apply_liger_kernel_to_qwen2", None)}.get(model_type)
    if fn is None:
        print(f"peer_bench: --liger: no Liger patch for model_type {model_type}; running without it",
              file=sys.stderr)
        return None
    fn(model=model)  # defaults: rope, rms_norm, swiglu, fused_linear_cross_entropy
    try:
        from importlib.metadata import version
        return version("liger-kernel")
    except Exception:
        return "unknown"


def main():
    a = parse_args()
    import numpy as np
    import torch
    import transformers
    import peft
    from transformers import AutoConfig, AutoModelForCausalLM
    from peft import LoraConfig, get_peft_model

    transformers.logging.set_verbosity_error()
    try:
        transformers.logging.disable_progress_bar()
    except AttributeError:
        pass
    warnings.filterwarnings("ignore", category=FutureWarning)

    if a.device == "cuda" and not torch.cuda.is_available():
        sys.exit("peer_bench: --device cuda but torch.cuda.is_available() is false")
    if a.liger and a.device != "cuda":
        print("peer_bench: --liger needs --device cuda (Triton kernels); running without it", file=sys.stderr)
        a.liger = False
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16}[a.dtype]
    dev = torch.device(a.device)

    t0 = time.perf_counter()
    if a.preset:
        config = build_config(a.preset)
        with torch.device(dev):
            model = AutoModelForCausalLM.from_config(config, dtype=dtype, attn_implementation=a.attn)
        model_name = PRESETS[a.preset]["hf_name"] + " (random init)"
    else:
        config = AutoConfig.from_pretrained(a.model)
        model = AutoModelForCausalLM.from_pretrained(a.model, dtype=dtype, attn_implementation=a.attn,
                                                     device_map=None).to(dev)
        model_name = os.path.abspath(a.model)
    model_type = config.model_type
    total_params = sum(p.numel() for p in model.parameters())
    if a.preset:
        want = PRESETS[a.preset]["total_params"]
        if total_params != want:
            sys.exit(f"peer_bench: {a.preset}: built {total_params} params, formats.md says {want}")
    liger_version = apply_liger(model, model_type) if a.liger else None

    targets = [TARGET_ALIASES.get(t.strip(), t.strip()) for t in a.targets.split(",") if t.strip()]
    lcfg = LoraConfig(r=a.rank, lora_alpha=a.alpha, lora_dropout=0.0, target_modules=targets, bias="none",
                      task_type="CAUSAL_LM")
    model = get_peft_model(model, lcfg)
    if a.grad_ckpt:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.enable_input_require_grads()
    model.train()
    lora_params = [p for n, p in model.named_parameters() if p.requires_grad]
    n_lora = sum(p.numel() for p in lora_params)
    lora_dtype = str(lora_params[0].dtype).replace("torch.", "")
    opt = torch.optim.AdamW(lora_params, lr=a.lr)
    setup_s = time.perf_counter() - t0

    rng = np.random.default_rng(a.seed)
    ids = torch.from_numpy(rng.integers(0, config.vocab_size, size=(a.batch, a.seq + 1), dtype=np.int64)).to(dev)
    inputs = ids[:, :a.seq].contiguous()
    next_ids = ids[:, 1:].contiguous()
    use_shift_labels = True
    trained_tokens = a.batch * a.seq

    def loss_of_step():
        nonlocal use_shift_labels, trained_tokens
        if use_shift_labels:
            try:
                return model(input_ids=inputs, labels=inputs, shift_labels=next_ids).loss
            except TypeError:
                print("peer_bench: this transformers has no shift_labels; training B*(T-1) tokens", file=sys.stderr)
                use_shift_labels = False
                trained_tokens = a.batch * (a.seq - 1)
        return model(input_ids=inputs, labels=inputs).loss

    def sync():
        if a.device == "cuda":
            torch.cuda.synchronize()

    if a.device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    times, losses = [], []
    for i in range(a.warmup + a.steps):
        sync()
        t = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = loss_of_step()
        loss.backward()
        opt.step()
        sync()
        dt = time.perf_counter() - t
        losses.append(loss.item())
        if i >= a.warmup:
            times.append(dt)
        print(f"peer_bench: step {i + 1}/{a.warmup + a.steps}{' (warm-up)' if i < a.warmup else ''}: "
              f"{dt * 1e3:.1f} ms, loss {losses[-1]:.4f}", file=sys.stderr)

    med = statistics.median(times)
    toks = trained_tokens
    if a.device == "cuda":
        peak = int(torch.cuda.max_memory_allocated())
        peak_reserved = int(torch.cuda.max_memory_reserved())
        device_name = torch.cuda.get_device_name(0)
    else:
        peak = int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024  # Linux: KiB
        peak_reserved = None
        device_name = cpu_name()
    versions = {"torch": torch.__version__, "transformers": transformers.__version__, "peft": peft.__version__,
                "python": platform.python_version()}
    if a.device == "cuda":
        versions["cuda"] = torch.version.cuda
    if liger_version:
        versions["liger_kernel"] = liger_version
    cfg_keys = ["model_type", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                "num_key_value_heads", "head_dim", "vocab_size", "tie_word_embeddings", "rms_norm_eps"]
    tool = "pytorch+peft+liger" if liger_version else "pytorch+peft"
    rec = {
        "tool": tool,
        "version": ", ".join(f"{k} {v}" for k, v in versions.items() if k in ("torch", "transformers", "peft")),
        "weights": weights_name(a),
        "model": model_name,
        "preset": a.preset,
        "device": device_name,
        "device_kind": a.device,
        "dtype": a.dtype,
        "batch": a.batch,
        "seq": a.seq,
        "rank": a.rank,
        "alpha": int(a.alpha) if float(a.alpha).is_integer() else a.alpha,
        "targets": targets,
        "threads": a.threads,
        "steps": a.steps,
        "warmup": a.warmup,
        "train_tok_s": round(toks / med, 2),
        "train_tok_s_min": round(toks / max(times), 2),
        "train_tok_s_max": round(toks / min(times), 2),
        "ms_per_step": round(med * 1e3, 3),
        "peak_mem_bytes": peak,
        "versions": versions,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        # extras
        "definition": "fastlora-bench-1",
        "tokens_trained": trained_tokens,
        "attn": a.attn,
        "liger": bool(liger_version),
        "grad_ckpt": a.grad_ckpt,
        "lr": a.lr,
        "seed": a.seed,
        "lora_dtype": lora_dtype,
        "lora_params": n_lora,
        "total_params": total_params,
        "step_ms": [round(t * 1e3, 3) for t in times],
        "loss_first": round(losses[0], 5),
        "loss_last": round(losses[-1], 5),
        "peak_mem_reserved_bytes": peak_reserved,
        "setup_s": round(setup_s, 2),
        "config": {k: getattr(config, k, None) for k in cfg_keys},
        "rope_parameters": getattr(config, "rope_parameters", None),
    }
    cpu_id = cpu_identity() if a.device == "cpu" else ""
    if cpu_id:
        rec["cpu_id"] = cpu_id
    line = json.dumps(rec, sort_keys=False)
    print(line)
    if a.json:
        with open(a.json, "a") as f:
            f.write(line + "\n")


if __name__ == "__main__":
    main()
