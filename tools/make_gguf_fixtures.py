#!/usr/bin/env python3
"""Writes the GGUF writer's reference files with the `gguf` Python package (gguf-py, the package
llama.cpp's converters write with), so the C tests compare fastlora's writer, reader and
quantizers against an independent implementation without needing Python themselves.

    python3 tools/make_gguf_fixtures.py [--out tests/fixtures/gguf]

Writes:
  gguf_py_basic.gguf   default alignment (32): one metadata entry of every type fastlora writes
                       (u32, i32, u64, f32, bool, string, arrays of string / i32 / f32) and the
                       tensors `x` (F32 [4, 64], values chosen to exercise Q8_0: a zero block, exact
                       .5 ties, tiny values whose f16 scale is subnormal, values whose scale
                       overflows f16, random weights), `x.q8_0` / `x.f16` / `x.bf16` (x quantized by
                       gguf-py: gguf.quants.quantize), and `odd` (F32 [5]: a size that needs padding).
  gguf_py_align64.gguf the same metadata after general.alignment = 64, tensors `odd` and `x.q8_0`.
The C test (tests/test_gguf_writer.c) reads both with fastlora's reader, checks every value,
re-quantizes `x` with fastlora's encoders and compares bytes, and writes the same content with
fastlora's writer and compares the whole file byte for byte. Rerunning gives identical files.
Generator: gguf (PyPI) as installed; its version is recorded in README.md beside the files.
"""

import argparse
import importlib.metadata
import os

import numpy as np
import gguf


def test_values():
    rng = np.random.default_rng(1234)
    x = (rng.standard_normal((4, 64)) * 0.05).astype(np.float32)
    x[0, :32] = 0.0                                   # an all-zero block: d = 0, id = 0
    # amax 127 -> d = 1, id = 1: x·id is x itself, so the k + 0.5 values are exact rounding ties
    x[0, 32:] = np.concatenate([[127.0, -127.0], np.arange(-15, 15) + 0.5]).astype(np.float32)
    x[1, :32] = rng.standard_normal(32).astype(np.float32) * 1e-7   # d ~ 1e-9: a subnormal / zero f16 scale
    x[1, 32:] = rng.standard_normal(32).astype(np.float32) * 2e7    # d > 65504: the f16 scale overflows
    return x


def add_metadata(w):
    w.add_uint32("test.u32", 123456789)
    w.add_int32("test.i32", -42)
    w.add_uint64("test.u64", 2**40 + 5)
    w.add_float32("test.f32", 1.5)
    w.add_bool("test.bool", True)
    w.add_string("test.string", "h\u00e9llo \u2713")
    w.add_array("test.arr_str", ["a", "\u0120the", "<|im_end|>", "x y"])
    w.add_array("test.arr_i32", [1, -2, 3])
    w.add_array("test.arr_f32", [0.5, -1.25])


def write(path, alignment, tensors):
    w = gguf.GGUFWriter(path, "llama")
    if alignment != 32:
        w.add_custom_alignment(alignment)
    add_metadata(w)
    for name, data, qtype in tensors:
        w.add_tensor(name, data, raw_dtype=qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="tests/fixtures/gguf")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    Q = gguf.GGMLQuantizationType
    x = test_values()
    odd = np.array([1.0, -2.0, 3.5, 0.0, 7.25], dtype=np.float32)
    with np.errstate(over="ignore"):  # the 2e7 block overflows f16 on purpose
        q8 = gguf.quants.quantize(x, Q.Q8_0)
        f16 = gguf.quants.quantize(x, Q.F16)
        bf16 = gguf.quants.quantize(x, Q.BF16)
        write(os.path.join(args.out, "gguf_py_basic.gguf"), 32,
              [("x", x, None), ("x.q8_0", q8, Q.Q8_0), ("x.f16", f16, None), ("x.bf16", bf16, Q.BF16), ("odd", odd, None)])
        write(os.path.join(args.out, "gguf_py_align64.gguf"), 64, [("odd", odd, None), ("x.q8_0", q8, Q.Q8_0)])
    print("gguf", importlib.metadata.version("gguf"), "->", args.out)


if __name__ == "__main__":
    main()
