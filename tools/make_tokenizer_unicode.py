#!/usr/bin/env python3
"""make_tokenizer_unicode.py — the Unicode tables of the tokenizer (src/tokenizer/), each from the
Unicode version that Hugging Face `tokenizers` itself uses for that step:

  unicode_nfc.h, unicode_nfc_compose.h    NFC (Qwen2's normalizer): Unicode 9.0.0. tokenizers normalizes with the crate
                   unicode-normalization-alignments, whose tables are Unicode 9.0.0.
  unicode_props.h  the code points that are \\p{L} / \\p{N} for HF but not for PCRE2 10.42 (Unicode
                   14.0.0), which runs our pre-tokenizer regexes: HF's regexes run on Oniguruma, whose
                   \\p{L} / \\p{N} are Unicode 16.0.0, and its Digits pre-tokenizer uses Rust's
                   char::is_numeric (General_Category N), Unicode 17.0.0.

Each version was pinned by probing tokenizers 0.23.3 itself (`check`, below): every combining class
of 9.0 is honoured and none added in 10.0 .. 17.0; its \\p{L} / \\p{N} equal 16.0.0 exactly; Digits
equals N of 17.0.0 exactly.

The data comes from PyPI `unicodedata2`, which publishes the UCD of each Unicode version as a
CPython extension (`unicodedata2==9.0.0.post4`, `==14.0.0`, `==16.0.0`, `==17.0.1`; the 9.0 source
builds on Python <= 3.8 only). One interpreter holds one version, so the tables are made in two steps:

  # 1. dump each version's data (any Python with that unicodedata2; `pyenv` has 3.6 for 9.0)
  python3.6 -m venv /tmp/ucd9  && /tmp/ucd9/bin/pip install unicodedata2==9.0.0.post4
  /tmp/ucd9/bin/python tools/make_tokenizer_unicode.py dump /tmp/ucd-9.json
  # likewise unicodedata2==14.0.0, ==16.0.0, ==17.0.1 into /tmp/ucd-14.json, -16, -17 (Python 3.11)
  # 2. write the headers
  python3 tools/make_tokenizer_unicode.py write /tmp/ucd-9.json /tmp/ucd-14.json /tmp/ucd-16.json /tmp/ucd-17.json
  # 3. optional: probe HF tokenizers against the dumps (needs `tokenizers`; prints the figures of docs/TOKENIZER.md)
  python3 tools/make_tokenizer_unicode.py check /tmp/ucd-9.json /tmp/ucd-14.json /tmp/ucd-16.json /tmp/ucd-17.json
  # unicode_props.h alone, from the 14, 16 and 17 dumps, then the probe of HF's \\p{Lu} ... \\p{M}
  python3 tools/make_tokenizer_unicode.py props /tmp/ucd-14.json /tmp/ucd-16.json /tmp/ucd-17.json

unicodedata2==14.0.0 does not build on Python 3.11; `dump` then reads Python 3.11's own unicodedata,
which is Unicode 14.0.0 (the tables it gives equal those made from unicodedata2 14.0.0).
"""
import json
import os
import sys

SBASE, SCOUNT = 0xAC00, 11172
HERE = os.path.dirname(os.path.abspath(__file__))
# the general categories below L that HF patterns name (Mistral's Tekken regex: \p{Lu}, \p{Ll},
# \p{Lt}, \p{Lm}, \p{Lo}, \p{M}); M is Mn | Mc | Me
CLASSES = ("Lu", "Ll", "Lt", "Lm", "Lo", "M")


def ucd_module():
    """unicodedata2, or the interpreter's own unicodedata when unicodedata2 is not installed
    (unicodedata2==14.0.0 no longer builds on Python 3.11, whose own unicodedata is 14.0.0)."""
    try:
        import unicodedata2
    except ImportError:
        import unicodedata
        unicodedata.source = "Python %d.%d.%d's own unicodedata" % sys.version_info[:3]
        return unicodedata
    try:
        import pkg_resources
        unicodedata2.__version__ = pkg_resources.get_distribution("unicodedata2").version
    except Exception:
        pass
    unicodedata2.source = "PyPI unicodedata2 " + getattr(unicodedata2, "__version__", "?")
    return unicodedata2


def dump(path):
    """Writes the data of this interpreter's unicodedata2 that the headers need."""
    u = ucd_module()
    decomp, ccc, comp, unsafe, letters, numbers = {}, {}, [], [], [], []
    classes = {k: [] for k in CLASSES}
    seconds = set()
    for cp in range(0x110000):
        if 0xD800 <= cp < 0xE000:
            continue
        c = chr(cp)
        cat = u.category(c)
        if cat[0] == "L":
            letters.append(cp)
            classes[cat].append(cp)
        elif cat[0] == "N":
            numbers.append(cp)
        elif cat[0] == "M":
            classes["M"].append(cp)
        if SBASE <= cp < SBASE + SCOUNT:
            continue
        d = u.normalize("NFD", c)
        if d != c:
            decomp[cp] = [ord(x) for x in d]
        if u.combining(c):
            ccc[cp] = u.combining(c)
        raw = u.decomposition(c)
        if raw and not raw.startswith("<"):
            parts = [int(x, 16) for x in raw.split()]
            if len(parts) == 2 and u.normalize("NFC", chr(parts[0]) + chr(parts[1])) == c:
                comp.append((parts[0], parts[1], cp))
                seconds.add(parts[1])
    seconds.update(range(0x1161, 0x1176))  # Hangul V and T jamo compose algorithmically
    seconds.update(range(0x11A8, 0x11C3))
    for cp in range(0x110000):
        if 0xD800 <= cp < 0xE000:
            continue
        c = chr(cp)
        if u.combining(c) or u.normalize("NFC", c) != c or cp in seconds:
            unsafe.append(cp)
    data = {"version": u.unidata_version, "source": u.source,
            "decomp": decomp, "ccc": ccc, "comp": comp, "unsafe": unsafe, "L": letters, "N": numbers, "classes": classes}
    with open(path, "w") as f:
        json.dump(data, f)
    print(f"{path}: Unicode {data['version']} from {data['source']}")


def load(path, version):
    with open(path) as f:
        d = json.load(f)
    if d["version"] != version:
        sys.exit(f"{path}: Unicode {d['version']}, expected {version}")
    d["decomp"] = {int(k): v for k, v in d["decomp"].items()}
    d["ccc"] = {int(k): v for k, v in d["ccc"].items()}
    return d


def ranges(cps):
    out = []
    for cp in sorted(cps):
        if out and out[-1][1] == cp - 1:
            out[-1][1] = cp
        else:
            out.append([cp, cp])
    return out


def range_table(name, rs, comment):
    out = [f"/* {comment} */", f"static const uint32_t {name}[{len(rs)}][2] = {{"]
    for i in range(0, len(rs), 6):
        out.append("    " + ",".join(f"{{0x{a:X},0x{b:X}}}" for a, b in rs[i:i + 6]) + ",")
    out.append("};")
    return out


def write_nfc(d):
    comp = sorted(d["comp"], key=lambda t: (t[0] << 21) | t[1])
    out = ["/* unicode_nfc.h — generated by tools/make_tokenizer_unicode.py from the Unicode "
           f"{d['version']} data of {d['source']}; do not edit.",
           " * Tables of the NFC normalizer (normalize.c), in the Unicode version of HF tokenizers' NFC",
           " * (the crate unicode-normalization-alignments). Hangul syllables are algorithmic, not here. */",
           "#ifndef FL_TOKENIZER_UNICODE_NFC_H\n#define FL_TOKENIZER_UNICODE_NFC_H\n#include <stdint.h>\n",
           f'#define FL_NFC_UNICODE_VERSION "{d["version"]}"\n']
    data, rows = [], []
    for cp in sorted(d["decomp"]):
        dd = d["decomp"][cp]
        rows.append(f"{{0x{cp:X},{len(data)},{len(dd)}}}")
        data.extend(dd)
    out.append(f"static const uint32_t nfc_decomp_data[{len(data)}] = {{")
    for i in range(0, len(data), 12):
        out.append("    " + ",".join(f"0x{x:X}" for x in data[i:i + 12]) + ",")
    out.append("};")
    out.append("/* (code point, offset in nfc_decomp_data, length), sorted by code point */")
    out.append(f"static const struct {{ uint32_t cp; uint16_t off; uint8_t len; }} nfc_decomp[{len(rows)}] = {{")
    for i in range(0, len(rows), 6):
        out.append("    " + ",".join(rows[i:i + 6]) + ",")
    out.append("};")
    out.append("#endif")
    first, out = out, ["/* unicode_nfc_compose.h — generated by tools/make_tokenizer_unicode.py from the Unicode "
                       f"{d['version']} data of {d['source']}; do not edit.",
                       " * The NFC normalizer's (normalize.c) canonical combining classes, primary composites and the",
                       " * code points NFC may change, in unicode_nfc.h's Unicode version. */",
                       "#ifndef FL_TOKENIZER_UNICODE_NFC_COMPOSE_H\n#define FL_TOKENIZER_UNICODE_NFC_COMPOSE_H\n#include <stdint.h>\n"]
    ccc = sorted(d["ccc"].items())
    out.append("/* (code point, canonical combining class), sorted, ccc != 0 only */")
    out.append(f"static const struct {{ uint32_t cp; uint8_t ccc; }} nfc_ccc[{len(ccc)}] = {{")
    for i in range(0, len(ccc), 8):
        out.append("    " + ",".join(f"{{0x{a:X},{b}}}" for a, b in ccc[i:i + 8]) + ",")
    out.append("};")
    out.append("/* primary composites: key (first << 21 | second) -> composite, sorted by key */")
    out.append(f"static const struct {{ uint64_t key; uint32_t cp; }} nfc_comp[{len(comp)}] = {{")
    for i in range(0, len(comp), 4):
        out.append("    " + ",".join(f"{{0x{(a << 21) | b:X}ull,0x{c:X}}}" for a, b, c in comp[i:i + 4]) + ",")
    out.append("};")
    out += range_table("nfc_unsafe", ranges(d["unsafe"]),
                       "inclusive ranges of code points that may change under NFC or make a neighbour change")
    out.append("#endif")
    return "\n".join(first) + "\n", "\n".join(out) + "\n"


def write_props(base, regex, digits):
    for k in "LN":
        gone = set(base[k]) - set(regex[k])
        if gone:
            sys.exit(f"{k}: {len(gone)} code points left the class after {base['version']}: a union cannot express it")
    new_l = set(regex["L"]) - set(base["L"])
    new_n = set(regex["N"]) - set(base["N"])
    new_digits = set(digits["N"]) - set(base["N"])
    if set(base["N"]) - set(digits["N"]):
        sys.exit("N: code points left the class: a union cannot express it")
    new_classes = {}
    for k in CLASSES:
        if set(base["classes"][k]) - set(regex["classes"][k]):
            sys.exit(f"{k}: code points left the class after {base['version']}: a union cannot express it")
        new_classes[k] = set(regex["classes"][k]) - set(base["classes"][k])
    out = ["/* unicode_props.h — generated by tools/make_tokenizer_unicode.py; do not edit.",
           f" * The regexes of the pre-tokenizer run on PCRE2 10.42, whose \\p{{L}} / \\p{{N}} are Unicode {base['version']}.",
           f" * HF tokenizers' regexes (Oniguruma) know Unicode {regex['version']}, and its Digits pre-tokenizer (Rust",
           f" * char::is_numeric) Unicode {digits['version']}. These are the code points assigned since, from",
           f" * {base['source']}, {regex['source']} and {digits['source']}:",
           " * text holding one of them is split with patterns whose \\p{L} / \\p{N} (and \\p{Lu} ... \\p{M})",
           " * are widened by these ranges (pretokenize.c). */",
           "#ifndef FL_TOKENIZER_UNICODE_PROPS_H\n#define FL_TOKENIZER_UNICODE_PROPS_H\n#include <stdint.h>\n",
           f'#define FL_PROPS_BASE_VERSION "{base["version"]}"',
           f'#define FL_PROPS_REGEX_VERSION "{regex["version"]}"',
           f'#define FL_PROPS_DIGITS_VERSION "{digits["version"]}"\n']
    out += range_table("fl_new_letters", ranges(new_l),
                       f"General_Category L in Unicode {regex['version']}, not in {base['version']} ({len(new_l)} code points)")
    out += range_table("fl_new_numbers", ranges(new_n),
                       f"General_Category N in Unicode {regex['version']}, not in {base['version']} ({len(new_n)} code points)")
    out += range_table("fl_new_digits", ranges(new_digits),
                       f"General_Category N in Unicode {digits['version']}, not in {base['version']} ({len(new_digits)} code points)")
    for k in CLASSES:
        rs = ranges(new_classes[k]) or [[0x10FFFF + 1, 0x10FFFF + 1]]  # C has no empty array: a range no text holds
        out += range_table(f"fl_new_{k}", rs, f"General_Category {k} in Unicode {regex['version']}, not in "
                           f"{base['version']} ({len(new_classes[k])} code points)")
    new_any = new_l | new_n | new_digits | set().union(*new_classes.values())
    if min(new_any) < 0x800:  # pretokenize.c's needs_wide skips 1- and 2-byte characters
        sys.exit(f"U+{min(new_any):04X} is new: pretokenize.c's needs_wide must look at 2-byte characters too")
    out += range_table("fl_new_any", ranges(new_any),
                       "union of them all: text without any of these needs no widened pattern")
    out.append("#endif")
    return "\n".join(out) + "\n"


def check_classes(d14, d16, d17):
    """Probes HF tokenizers' \\p{Lu} ... \\p{M}: which Unicode version its regexes follow for each."""
    from tokenizers import pre_tokenizers, Regex
    for k in CLASSES:
        pt = pre_tokenizers.Split(Regex(rf"\p{{{k}}}"), behavior="isolated")
        cand = set(d14["classes"][k]) | set(d16["classes"][k]) | set(d17["classes"][k])
        hf = {cp for cp in cand if len(pt.pre_tokenize_str("\u0001" + chr(cp) + "\u0001")) == 3}
        print(f"regex \\p{{{k}}}: HF == Unicode 16.0: {hf == set(d16['classes'][k])} "
              f"(HF only {len(hf - set(d16['classes'][k]))}, 16.0 only {len(set(d16['classes'][k]) - hf)})")


def check(d9, d14, d16, d17):
    """Probes HF tokenizers: which Unicode version its NFC, \\p{L}, \\p{N} and Digits follow."""
    from tokenizers import normalizers, pre_tokenizers, Regex
    nfc = normalizers.NFC()
    marks = sorted(set(d9["ccc"]) | set(d14["ccc"]) | set(d16["ccc"]) | set(d17["ccc"]))

    def hf_reorders(cp, ccc):  # after a class-1 mark (ccc > 1) or before U+0301 (230): HF knows the class
        s = "x" + chr(cp) + "\u0334" if ccc > 1 else "x\u0301" + chr(cp)
        return nfc.normalize_str(s) != s
    for name, d in (("9.0", d9), ("14.0", d14), ("17.0", d17)):
        known = sum(hf_reorders(cp, d["ccc"][cp]) for cp in d["ccc"])
        print(f"NFC: HF honours {known} of the {len(d['ccc'])} combining classes of Unicode {name}")
    newer = [cp for cp in marks if cp not in d9["ccc"]]
    print(f"NFC: {len(newer)} marks assigned after 9.0, HF reorders {sum(hf_reorders(cp, d17['ccc'].get(cp, d16['ccc'].get(cp, d14['ccc'].get(cp, 1)))) for cp in newer)}")
    comps = [c for c in d17["comp"] if c[2] not in {x[2] for x in d9["comp"]}]
    hf_comp = sum(nfc.normalize_str(chr(a) + chr(b)) == chr(c) for a, b, c in comps)
    print(f"NFC: {len(comps)} compositions added after 9.0, HF composes {hf_comp}")
    for k, pat in (("L", r"\p{L}"), ("N", r"\p{N}")):
        pt = pre_tokenizers.Split(Regex(pat), behavior="isolated")
        cand = set(d14[k]) | set(d16[k]) | set(d17[k])
        hf = {cp for cp in cand if len(pt.pre_tokenize_str("\u0001" + chr(cp) + "\u0001")) == 3}
        for name, d in (("14.0", d14), ("16.0", d16), ("17.0", d17)):
            print(f"regex \\p{{{k}}}: HF == Unicode {name}: {hf == set(d[k])} "
                  f"(HF only {len(hf - set(d[k]))}, {name} only {len(set(d[k]) - hf)})")
    check_classes(d14, d16, d17)
    dg = pre_tokenizers.Digits(individual_digits=True)
    cand = set(d14["N"]) | set(d16["N"]) | set(d17["N"])
    hf = {cp for cp in cand if len(dg.pre_tokenize_str("a" + chr(cp) + "b")) == 3}
    for name, d in (("16.0", d16), ("17.0", d17)):
        print(f"Digits: HF == N of Unicode {name}: {hf == set(d['N'])}")


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "dump":
        return dump(sys.argv[2])
    if len(sys.argv) == 5 and sys.argv[1] == "props":  # unicode_props.h alone (no 9.0 dump needed), then its probe
        d14, d16, d17 = load(sys.argv[2], "14.0.0"), load(sys.argv[3], "16.0.0"), load(sys.argv[4], "17.0.0")
        with open(os.path.join(HERE, "../src/tokenizer/unicode_props.h"), "w") as f:
            f.write(write_props(d14, d16, d17))
        print("wrote src/tokenizer/unicode_props.h")
        return check_classes(d14, d16, d17)
    if len(sys.argv) == 6 and sys.argv[1] in ("write", "check"):
        d9, d14 = load(sys.argv[2], "9.0.0"), load(sys.argv[3], "14.0.0")
        d16, d17 = load(sys.argv[4], "16.0.0"), load(sys.argv[5], "17.0.0")
        if sys.argv[1] == "check":
            return check(d9, d14, d16, d17)
        src = os.path.join(HERE, "../src/tokenizer")
        nfc, compose = write_nfc(d9)
        with open(os.path.join(src, "unicode_nfc.h"), "w") as f:
            f.write(nfc)
        with open(os.path.join(src, "unicode_nfc_compose.h"), "w") as f:
            f.write(compose)
        with open(os.path.join(src, "unicode_props.h"), "w") as f:
            f.write(write_props(d14, d16, d17))
        print("wrote src/tokenizer/unicode_nfc.h, unicode_nfc_compose.h and unicode_props.h")
        return 0
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main())
