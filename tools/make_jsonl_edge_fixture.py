#!/usr/bin/env python3
"""Write tests/fixtures/train/jsonl_edges.json: how Hugging Face datasets reads JSON Lines and JSON
array files with byte-order marks, CRLF and lone-CR line ends, a last line without a newline,
blank and whitespace-only lines, for the C test train_data_bad_input_line_ends_and_bom_like_datasets.

Run from the repository root (needs `datasets`; a few seconds):

    python3 tools/make_jsonl_edge_fixture.py              # writes tests/fixtures/train/jsonl_edges.json
    python3 tools/make_jsonl_edge_fixture.py --out FILE   # somewhere else (to diff against the committed copy)

Each case holds the file's bytes (hex) and what `datasets.load_dataset("json", data_files=F,
split="train")["text"]` returned, or null with the error's first line when datasets refused the file.
"""

import argparse
import json
import os
import tempfile

import datasets

BOM = b"\xef\xbb\xbf"
CASES = [
    ("bom_jsonl", BOM + b'{"text": "a"}\n{"text": "b"}\n'),
    ("bom_array", BOM + b'[{"text": "a"}, {"text": "b"}]'),
    ("two_boms", BOM + BOM + b'{"text": "a"}\n'),
    ("crlf", b'{"text": "a"}\r\n{"text": "b"}\r\n'),
    ("lone_cr", b'{"text": "a"}\r{"text": "b"}\r'),
    ("no_final_newline", b'{"text": "a"}\n{"text": "b"}'),
    ("blank_lines", b'\n{"text": "a"}\n\n\n{"text": "b"}\n\n'),
    ("whitespace_line", b'{"text": "a"}\n   \t \n{"text": "b"}\n'),
    ("whitespace_line_crlf", b'{"text": "a"}\r\n \r\n{"text": "b"}\r\n'),
    ("bom_crlf_no_final_newline", BOM + b'{"text": "a"}\r\n{"text": "b"}'),
    ("array_after_whitespace", b'  \n [{"text": "a"}]'),
    ("array_then_blank_lines", b'[{"text": "a"}]\n\n'),
    ("bom_in_the_middle", b'{"text": "a"}\n' + BOM + b'{"text": "b"}\n'),
    ("nbsp_line", b'{"text": "a"}\n\xc2\xa0\n{"text": "b"}\n'),
    ("formfeed_line", b'{"text": "a"}\n\x0c\n{"text": "b"}\n'),
    ("utf16", '{"text": "a"}\n'.encode("utf-16")),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="tests/fixtures/train/jsonl_edges.json")
    args = ap.parse_args()
    datasets.disable_progress_bars()
    datasets.logging.set_verbosity_error()
    out = {"datasets_version": datasets.__version__, "cases": []}
    with tempfile.TemporaryDirectory() as tmp:
        for name, data in CASES:
            path = os.path.join(tmp, name + ".json")
            with open(path, "wb") as f:
                f.write(data)
            case = {"name": name, "hex": data.hex()}
            try:
                ds = datasets.load_dataset("json", data_files=path, split="train", cache_dir=os.path.join(tmp, "cache"))
                case["rows"] = list(ds["text"])
            except Exception as e:  # datasets refuses the whole file
                case["rows"] = None
                case["error"] = f"{type(e).__name__}: {str(e).splitlines()[0]}"
            out["cases"].append(case)
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print(f"wrote {args.out}: {len(out['cases'])} cases (datasets {datasets.__version__})")


if __name__ == "__main__":
    main()
