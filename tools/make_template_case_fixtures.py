#!/usr/bin/env python3
"""Writes tests/fixtures/chat/case_cases.json: Python's case mappings and str tests as chat
templates reach them (transformers' Jinja environment: the upper/lower/title/capitalize filters and
the str methods upper/lower/title/capitalize/isupper/islower/istitle/isalpha/isdigit/isdecimal/
isnumeric/isalnum/isspace, the lower/upper tests), over hostile strings — full mappings (ß, ŉ, ﬁ,
ΐ, İ), titlecase digraphs (ǅ), the final sigma in every context, Cherokee, Georgian, Deseret,
combining marks, superscripts, fractions, Roman numerals, other scripts' digits — and random
strings of cased code points. For tests/test_jinja_unicode_case.c.

usage: tools/make_template_case_fixtures.py   (from the repository root)
"""
import json
import random
import sys

import transformers.utils.chat_template_utils as ctu

OUT = "tests/fixtures/chat/case_cases.json"
TEMPLATE = ("{{ s | upper }}|{{ s | lower }}|{{ s | title }}|{{ s | capitalize }}|{{ s.upper() }}|{{ s.lower() }}|"
            "{{ s.title() }}|{{ s.capitalize() }}|{{ s.isupper() }}{{ s.islower() }}{{ s.istitle() }}{{ s.isalpha() }}"
            "{{ s.isdigit() }}{{ s.isdecimal() }}{{ s.isnumeric() }}{{ s.isalnum() }}{{ s.isspace() }}|"
            "{{ s is lower }}{{ s is upper }}")
STRINGS = [
    "", "hello world", "HELLO", "Hello World", "straße", "STRASSE", "ŉ", "ﬁnance ﬂow", "ΐ ΰ", "İstanbul", "ǅemal ǆ Ǆ",
    "ΣΑΣ", "σας", "ΟΔΟΣ ΟΔΟΣ.", "Σ", "AΣ", "AΣb", "A\u0301Σ", "AΣ\u0301", "AΣ'", "A'Σ", "AΣ-B", "-Σ-", "ΣΣΣ",
    "ᏣᎳᎩ ꮳꮃꭹ", "ᲛᲐᲠᲢᲘ მარტი", "𐐨𐐯𐑊 𐐀", "e\u0301cole", "x²³ ½ Ⅻ ⅻ", "٣٤٥ ५६ ௧", "①②", "  \t\n", "\u00a0\u2003",
    "a-b(c{d[e<f g", "o'neil mc-donald", "ⓐⓑ ⒶⒷ", "ǰ ẖ ẗ ẘ ẙ ẚ", "ﬓﬔ ﬕ", "Ꭰ Ꭱ", "ß-ß ß(ß", "Dž-dž", "ᾳ ᾼ ῳ ῼ", "ı i I",
    "ʼn", "12abc", "abc12", "ABC12", "Ⓐ", "ǈ", "ΆΈΉ άέή", "Ω Ω ω", "K K k", "Å Å å", "ſ ẛ", "ꞵ Ꞵ", "ᵃᵇ", "ⁱⁿ",
]


def main():
    rng = random.Random(20261202)
    cased = [c for c in map(chr, range(0x20, 0x20000)) if not 0xD800 <= ord(c) <= 0xDFFF and
             (c.upper() != c or c.lower() != c or c.title() != c)]
    others = [chr(c) for c in (0x20, 0x2D, 0x27, 0x301, 0x345, 0x3A3, 0x2E, 0x28, 0x5B, 0x31, 0xB2)]
    for _ in range(120):
        STRINGS.append("".join(rng.choice(cased if rng.random() < 0.7 else others) for _ in range(rng.randint(1, 9))))
    t = ctu._compile_jinja_template(TEMPLATE)
    cases = [{"s": s, "text": t.render(s=s)} for s in STRINGS]
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump({"python": sys.version.split()[0], "template": TEMPLATE, "cases": cases}, f, ensure_ascii=False, indent=0)
    print(f"{len(cases)} strings")


if __name__ == "__main__":
    main()
