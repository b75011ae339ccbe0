"""Numbers compared exactly: an answer's value as an exact rational (ints, decimals, a/b, \\frac{a}{b}, mixed
numbers), and the one tolerance (a decimal standing for a fraction whose expansion never ends). Pure; the
expressions are mathcheck's."""
from __future__ import annotations

import re
from fractions import Fraction

_NUM = r"-?(?:\d+\.?\d*|\.\d+)"


def to_number(s: str) -> Fraction | None:
    """The exact value of an int, decimal, a/b, \\frac{a}{b} or mixed number n\\frac{a}{b} (= n + a/b) with
    numeric parts, in normalised spelling; None otherwise."""
    m = re.fullmatch(r"(-?)(\d+)\\frac\{(\d+)\}\{(\d+)\}", s)
    if m and int(m[4]) > int(m[3]):  # 1\frac{4}{5} is one and four fifths, not 4/5
        value = int(m[2]) + Fraction(int(m[3]), int(m[4]))
        return -value if m[1] else value
    m = re.fullmatch(rf"(-?)\\frac\{{({_NUM})\}}\{{({_NUM})\}}", s)
    if m and Fraction(m[3]):
        value = Fraction(m[2]) / Fraction(m[3])
        return -value if m[1] else value
    m = re.fullmatch(rf"({_NUM})/({_NUM})", s)
    if m and Fraction(m[2]):
        return Fraction(m[1]) / Fraction(m[2])
    return Fraction(s) if re.fullmatch(_NUM, s) else None


def _terminates(x: Fraction) -> bool:
    """Whether x's decimal expansion ends (its denominator has no prime factor but 2 and 5)."""
    d = x.denominator
    for p in (2, 5):
        while d % p == 0:
            d //= p
    return d == 1


def same_number(a: str, b: str, x: Fraction, y: Fraction) -> tuple[bool, str]:
    """Numbers compare exactly (1000000 is not 999999; 0.5 is 1/2). The one tolerance: a decimal written with at
    least three significant digits matches a rational whose expansion never ends (1/3, 2/3) when it is that
    rational rounded or cut to the decimals written (0.333 and 0.3333 are 1/3; 0.33 is not)."""
    if x == y:
        return True, "the same number"
    for (text, written), exact in (((a, x), y), ((b, y), x)):
        digits = re.fullmatch(r"-?(\d*)\.(\d+)", text)
        if digits and not _terminates(exact) and len((digits[1] + digits[2]).lstrip("0")) >= 3:
            scale = 10 ** len(digits[2])
            if written * scale in (round(exact * scale), int(exact * scale)):
                return True, f"the same number to the {len(digits[2])} decimals written"
    return False, "different numbers"
