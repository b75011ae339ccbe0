"""Cheap guards against math answers sympy could work on for minutes: by their text before parsing
(too_big) and by their parsed tree (tame). Not a verdict: mathcheck refuses what they flag."""
from __future__ import annotations

import re


def tame(expr, sum_power_limit: int | None = None) -> bool:
    """False for what sympy could work on for minutes: a power tower (9^{9^{9}}), a numeric
    exponent above 1000, a factorial of more than 1000, and, with `sum_power_limit`, a sum with
    symbols raised above that power ((x+1)^{100}: math-verify's simplify would expand it)."""
    import sympy
    if not isinstance(expr, sympy.Basic):
        return True  # a string the parser kept as it was
    for node in sympy.preorder_traversal(expr):
        if isinstance(node, sympy.Pow) and node.exp.is_number:
            inner = [p for p in sympy.preorder_traversal(node.exp)
                     if isinstance(p, sympy.Pow) and not (p.exp.is_Rational and abs(p.exp) <= 3)]
            if inner or abs(complex(node.exp.evalf())) > 1000:
                return False
            if (sum_power_limit is not None and node.base.free_symbols and node.base.atoms(sympy.Add)
                    and abs(complex(node.exp.evalf())) > sum_power_limit):
                return False
        if isinstance(node, sympy.factorial) and node.args[0].is_number and abs(node.args[0].evalf()) > 1000:
            return False
    return True


# Binomials are evaluated while parsing, so tame() comes too late for \binom{10^{9}}{500000}.
_BINOMIAL = re.compile(r"\\[dt]?binom\s*|\\choose\b|\bC\s*\(|\bbinomial\s*\(")
_FACTORIAL = re.compile(r"(?:\d{5,}|[)}])\s*!")
_HUGE = re.compile(r"\d{5,}|\^|\*\*|!")  # a number of five digits or more, a power, a factorial


def _closing(s: str, i: int, pair: str = "()") -> int:
    """Index of the bracket closing one already open before s[i] (len(s) if it never closes)."""
    depth = 1
    for j in range(i, len(s)):
        depth += (s[j] == pair[0]) - (s[j] == pair[1])
        if depth == 0:
            return j
    return len(s)


def too_big(text: str) -> bool:
    """True for a binomial or factorial that sympy could work on for minutes (one with an argument that
    holds a number of five digits or more, a power, a factorial or another binomial): a cheap textual
    check made before parsing."""
    for m in _BINOMIAL.finditer(text):
        if m[0].startswith("\\choose"):
            arguments = text[:m.start()] + text[m.end():]  # {n \choose k}: the group around it, at most the answer
        elif m[0].endswith("("):
            arguments = text[m.end():_closing(text, m.end())]
        else:  # \binom{n}{k}: its next two groups (or single characters)
            end = m.end()
            for _ in range(2):
                end = _closing(text, end + 1, "{}") + 1 if text.startswith("{", end) else end + 1
            arguments = text[m.end():end]
        if _HUGE.search(arguments) or _BINOMIAL.search(arguments):  # a binomial of a binomial
            return True
    for m in _FACTORIAL.finditer(text):
        if m[0][0] in ")}":
            start, pair = m.start(), "()" if m[0][0] == ")" else "{}"
            opening = _closing(text[start - 1::-1], 0, pair[::-1]) if start else 0
            if _HUGE.search(text[start - opening:start]):
                return True
        else:
            return True
    return False


SUM_POWER_LIMIT = 12  # (x+1)^{12} expands in well under a second; (x+1)^{100} took 15 s here
