"""Math answer equivalence: normalisation, plain numbers, HF's math-verify (matrices, sets, intervals,
tuples, mixed numbers, units) and a small sympy fallback, the slow part in a child process under a
hard bound (mathworker), after the guards of mathguard. Pure functions on answer strings; extraction
stays in answers.py."""
from __future__ import annotations

import functools
import logging
import math
import re
import string

from r2mad.grading import mathworker
from r2mad.grading.exact import same_number, to_number
from r2mad.grading.mathguard import SUM_POWER_LIMIT, tame, too_big


def balanced(text: str, start: int) -> str | None:
    """Content from `start` up to the brace closing an already-open `{`; None if it never closes."""
    depth, i = 1, start
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            i += 2  # escaped character such as \{ or \}
            continue
        depth += ch == "{"
        depth -= ch == "}"
        if depth == 0:
            return text[start:i]
        i += 1
    return None


# --- spelling -----------------------------------------------------------------------------------

_UNICODE = (("π", r"\pi "), ("∞", r"\infty "), ("−", "-"), ("×", r"\times "), ("·", r"\cdot "),
            ("÷", r"\div "), ("≤", r"\le "), ("≥", r"\ge "), ("∪", r"\cup "))
_ROOT = re.compile(r"√\s*(\d+(?:\.\d+)?|[A-Za-z]|\(([^()]*)\)|\{([^{}]*)\})")


def unicode_to_latex(s: str) -> str:
    """Unicode math a model writes in prose as LaTeX: 2√3 -> 2\\sqrt{3}, 4π -> 4\\pi."""
    s = _ROOT.sub(lambda m: "\\sqrt{" + (m[2] if m[2] is not None else m[3] if m[3] is not None else m[1]) + "}", s)
    for symbol, latex in _UNICODE:
        s = s.replace(symbol, latex)
    return s.strip()


_UNITS = r"cm|mm|km|kg|units?|degrees?|inches|feet|meters|dollars|cents|seconds|minutes|hours|days"


def normalize_math(s: str) -> str:
    """A canonical spelling of a math answer: no $, sizing, spacing, units, degrees or percent;
    \\dfrac -> \\frac, \\frac12 -> \\frac{1}{2}, "x = 5" and "x \\in S" -> the value, "1,000" -> "1000"."""
    s = unicode_to_latex(s).replace("\\$", "").replace("$", "")
    s = re.sub(r"^\\[\[(]|\\[\])]$", "", s.strip())
    s = re.sub(r"\\(?:left|right|displaystyle)\b", "", s)
    s = re.sub(r"(?<!\\)\\[!,;: ]", "", s).replace("{,}", ",")  # thin spaces, not the \\ of a matrix row
    s = re.sub(r"([\d}])\s*\\(?:text|mbox|mathrm)\{\s*[A-Za-z ]*\}(?:\^\{?\d\}?)?\s*$", r"\1", s)  # 5\text{ cm}
    s = re.sub(rf"^(-?[\d.,]+)\s*(?:{_UNITS})(?:\^?\d)?$", r"\1", s.strip())
    s = re.sub(r"\\(?:text|textbf|mbox|mathrm|mathbf)\{([^{}]*)\}", r"\1", s)
    s = re.sub(r"\^\s*\{?\\circ\}?|°|\\%|%", "", s)
    s = re.sub(r"\\[dt]frac", r"\\frac", s)
    s = re.sub(r"\\(frac|sqrt)\s*(\d)", r"\\\1{\2}", s)  # \frac12 -> \frac{1}2
    s = re.sub(r"(\\frac\{[^{}]*\})\s*(\d)", r"\1{\2}", s)  # \frac{1}2 -> \frac{1}{2}
    s = re.sub(r"^[A-Za-z]\s*\\in\s*", "", s.strip())  # x \in [1, 2] -> [1, 2]
    s = re.sub(r"\s+", "", s)
    if s.count("=") == 1:
        s = re.sub(r"^\\?[A-Za-z]+(?:_\{?\w+\}?)?=", "", s)  # x=5 -> 5
    s = s.rstrip(".")
    if re.fullmatch(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?", s):
        s = s.replace(",", "")
    return s


# --- math-verify --------------------------------------------------------------------------------

class _DropTimeoutWarning(logging.Filter):
    """math-verify warns once that its timeouts are off; they are off on purpose (signals work only in
    the main thread, and eval checks answers in worker threads): mathguard and mathworker's bound do."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Timeout is disabled" not in record.getMessage()


@functools.cache
def _math_verify():
    """(parse, verify) from math-verify, imported once, its timeout warning silenced."""
    from math_verify import parse, verify

    for name in ("math_verify.parser", "math_verify.grader"):
        logging.getLogger(name).addFilter(_DropTimeoutWarning())
    return parse, verify


_WORDS = re.compile(r"(?:\\text\{\s*)?([A-Za-z ]*[A-Za-z]{2}[A-Za-z ]*)\}?")  # two letters in a row: a word
_ENVIRONMENT = re.compile(r"\\(?:begin|end)\{[^{}]*\}")
_NAMES = re.compile(r"\\[A-Za-z]+|[A-Za-z]")


def case_differs(a: str, b: str) -> bool:
    """Whether a name (a letter, or a command such as \\Delta) stands in one answer in a case that the
    other writes only otherwise (3r^2 and 3R^2, x and X). math-verify lowercases every symbol, so such a
    pair is decided here: different. Plain words are compared before this, case folded."""
    names = [set(_NAMES.findall(_ENVIRONMENT.sub(" ", s))) for s in (a, b)]
    return any(n not in other and any(m != n and m.casefold() == n.casefold() for m in other)
               for mine, other in (names, names[::-1]) for n in mine)


def verified_equal(gold: str, answer: str) -> bool | None:
    """math-verify's verdict on `answer` against `gold`, or None when either side does not parse or
    is not tame. Runs without math-verify's signal timeouts, so it is safe in any thread."""
    parse, verify = _math_verify()
    parsed = []
    for text in (gold, answer):
        found = parse(f"${unicode_to_latex(text)}$", parsing_timeout=None)
        if not found or not all(tame(e, SUM_POWER_LIMIT) for e in found):
            return None
        parsed.append(found)
    return bool(verify(parsed[0], parsed[1], timeout_seconds=None))


# --- sympy fallback -----------------------------------------------------------------------------

def _group(s: str, i: int) -> tuple[str, int]:
    """The argument of a LaTeX command at s[i]: a {braced} group or a single character."""
    if s[i] == "{":
        content = balanced(s, i + 1)
        if content is None:
            raise ValueError("unbalanced braces")
        return content, i + len(content) + 2
    return s[i], i + 1


def _latex_to_text(s: str) -> str:
    """A small LaTeX subset (\\frac, \\sqrt, \\cdot, \\pi, …) as sympy-parsable text."""
    out, i = [], 0
    while i < len(s):
        if s.startswith("\\frac", i):
            num, i = _group(s, i + 5)
            den, i = _group(s, i)
            out.append(f"(({_latex_to_text(num)})/({_latex_to_text(den)}))")
        elif s.startswith("\\sqrt", i):
            i, root = i + 5, "2"
            if s.startswith("[", i):
                root, i = s[i + 1:s.index("]", i)], s.index("]", i) + 1
            body, i = _group(s, i)
            body = _latex_to_text(body)
            out.append(f"sqrt({body})" if root == "2" else f"(({body})**(1/({_latex_to_text(root)})))")
        else:
            out.append(s[i])
            i += 1
    text = "".join(out)
    for latex, plain in (("\\cdot", "*"), ("\\times", "*"), ("\\div", "/"), ("\\infty", "oo"),
                         ("\\ln", "log")):
        text = text.replace(latex, plain)
    text = re.sub(r"\\(pi|log|sin|cos|tan|exp)(?![A-Za-z])", r"\1", text)
    return text.replace("{", "(").replace("}", ")")


_FUNCTIONS = ("sqrt", "pi", "log", "sin", "cos", "tan", "exp", "oo")


def _to_sympy(s: str):
    """A sympy expression for a normalised answer, or None when it is not a tame formula. Only
    single letters and a few function names reach parse_expr, so no Python name can be evaluated."""
    import sympy
    from sympy.parsing.sympy_parser import (
        convert_xor,
        implicit_multiplication_application,
        parse_expr,
        standard_transformations,
    )
    text = _latex_to_text(s)
    if len(text) > 200 or not re.fullmatch(r"[0-9A-Za-z+\-*/^().\s]*", text) or re.search(r"\.(?!\d)", text):
        return None
    if any(len(name) > 1 and name not in _FUNCTIONS for name in re.findall(r"[A-Za-z]+", text)):
        return None
    names = {c: sympy.Symbol(c) for c in string.ascii_letters}
    names |= {"e": sympy.E, "i": sympy.I, "oo": sympy.oo, "pi": sympy.pi, "sqrt": sympy.sqrt,
              "log": sympy.log, "sin": sympy.sin, "cos": sympy.cos, "tan": sympy.tan, "exp": sympy.exp}
    transforms = standard_transformations + (implicit_multiplication_application, convert_xor)
    raw = parse_expr(text, local_dict=names, transformations=transforms, evaluate=False)
    if not tame(raw):  # refuse towers like 9^(9^9) before evaluating
        return None
    return parse_expr(text, local_dict=names, transformations=transforms)


def _sympy_equal(a: str, b: str) -> bool:
    """Symbolically equal: a-b is zero outright or at three fixed points (bounded time, unlike
    simplify, and no signal-based timeout, which fails outside the main thread)."""
    import sympy
    ea, eb = _to_sympy(a), _to_sympy(b)
    if ea is None or eb is None:
        return False
    diff = ea - eb
    if diff == 0:
        return True
    symbols = sorted(diff.free_symbols, key=str)
    for trial in range(3):
        point = {sym: 0.31 + 0.73 * k + 1.17 * trial for k, sym in enumerate(symbols)}
        gap, scale = complex(sympy.N(diff.subs(point))), complex(sympy.N(ea.subs(point)))
        if not (math.isfinite(abs(gap)) and abs(gap) <= 1e-9 * max(1.0, abs(scale))):
            return False
    return True


def symbolic_equal(a: str, b: str) -> bool:
    """math-verify's verdict in either direction, or (when it cannot read a side) the same sympy
    expression: the slow part of math_equivalent, which runs it in a child process under a bound."""
    verdict = verified_equal(b, a)
    if verdict is None:
        return _sympy_equal(normalize_math(a), normalize_math(b))
    return verdict or bool(verified_equal(a, b))


def _shorten(answer: str, limit: int = 40) -> str:
    return f"'{answer}'" if len(answer) <= limit else f"'{answer[:limit]}…'"


@functools.lru_cache(maxsize=16384)
def _checked(a: str, b: str) -> tuple[bool | None, str, str | None]:
    """check_math on a pair in one fixed order (the check is symmetric, so one entry serves both)."""
    try:
        na, nb = normalize_math(a), normalize_math(b)
        if not na or not nb or max(len(na), len(nb)) > 400 or max(len(a), len(b)) > 1000:
            same = na == nb != ""
            return same, "same spelling" if same else "different (too long for a formula)", None
        if na == nb:
            return True, "same after normalising", None
        x, y = to_number(na), to_number(nb)
        if x is not None and y is not None:
            return (*same_number(na, nb, x, y), None)
        words = [_WORDS.fullmatch(s.strip()) for s in (a, b)]
        if all(words):  # "Evelyn", "\text{odd}", "No": words, not products of letters
            same = words[0][1].strip().casefold() == words[1][1].strip().casefold()
            if same or min(len(w[1].strip()) for w in words) > 2:  # "xy" and "yx" may be one product
                return same, "the same word" if same else "different words", None
        if case_differs(na, nb):  # variables are case-sensitive: r is not R
            return False, "a letter in another case (variables are case-sensitive)", None
        huge = next((s for s in (a, b) if too_big(s)), None)
        if huge is not None:
            return None, "too large to check", (
                f"The answer {_shorten(huge)} is too large to check (a binomial or factorial of a huge number), "
                f"so whether it equals {_shorten(b if huge == a else a)} was left undecided.")
        try:
            same = mathworker.bounded(_SLOW_CHECK, a, b)
            return same, "equal as math (math-verify)" if same else "different as math (math-verify)", None
        except mathworker.Overrun as exc:
            return None, "the check ran past its bound", (
                f"Comparing the answer {_shorten(a)} with {_shorten(b)} was stopped ({exc}), so whether they are "
                "equal was left undecided.")
    except Exception:  # sympy, math-verify and Fraction raise many kinds; a failed parse is "not equal"
        return False, "different (not readable as math)", None


_SLOW_CHECK = symbolic_equal  # what the checker child runs (a test may point it at a slower function)


def check_math(a: str, b: str) -> tuple[bool | None, str, str | None]:
    """(same, how, notice): same spelling after normalize_math, the same number exactly (same_number), the same
    words (case folded), or, with no letter in one case here and another there, symbolic_equal within
    mathworker's bound. Never raises and never hangs: an answer too_big to check, or a check past its bound,
    is undecided (same None) with a notice that says so."""
    a, b = sorted((a, b))
    return _checked(a, b) if len(a) + len(b) <= CACHED_LENGTH else _checked.__wrapped__(a, b)


CACHED_LENGTH = 2000  # longer pairs are compared as strings at once, and not kept in memory


check_math.cache_clear = _checked.cache_clear  # as on an lru_cache (tests judge a pair afresh)


def math_equivalent(a: str, b: str) -> bool:
    """Whether check_math decides the pair the same (see there)."""
    return check_math(a, b)[0] is True
