"""Answer extraction, math equivalence, consensus and plurality voting: pure functions on strings and
Answers. Not for prompting, scoring runs or I/O (see prompts/, metrics.py, runs.py)."""
from __future__ import annotations

import functools
import math
import re
import string
import unicodedata
from fractions import Fraction
from typing import Sequence

from r2mad.types import UNPARSED, Answer, Task

# --- reasoning blocks ---------------------------------------------------------------------------

def strip_think(text: str) -> str:
    """Drop <think>…</think> blocks, a leading block whose opening tag the template ate, and an
    unterminated trailing block."""
    text = re.sub(r"<think>.*?</think>", "", text, flags=re.S)
    if "</think>" in text:  # reasoning with no opening tag: everything before the close
        text = text.rsplit("</think>", 1)[1]
    if "<think>" in text:  # never closed: the answer never came
        text = text.split("<think>", 1)[0]
    return text.strip()


# --- math ---------------------------------------------------------------------------------------

_BOX = re.compile(r"\\(?:boxed|fbox)\s*\{|\\boxed +([^\s{$][^\s$]*)")
_ANSWER_PHRASE = re.compile(r"\banswer\s*(?:is\b\s*:?|:)\s*", re.I)
_INLINE_MATH = re.compile(r"\$+([^$]+)\$+|\\\((.+?)\\\)|\\\[(.+?)\\\]")
_MATHY_WORD = re.compile(r"[\w\\{}()\[\]^_/.*+\-=,|√π∞]+")
_MATHY_MARK = re.compile(r"[\d\\√π∞+\-*/^=]")


def _balanced(text: str, start: int) -> str | None:
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


def _leading_expression(rest: str) -> str | None:
    """The short math expression that opens `rest` ("5 cm." -> "5"), or None if it is prose."""
    inline = _INLINE_MATH.match(rest)
    if inline:
        return next(g for g in inline.groups() if g).strip()
    words = []
    for word in rest.split("\n", 1)[0].split():
        core = word.rstrip(".,;:!?*").lstrip("*")
        if not core or not _MATHY_WORD.fullmatch(core) or not (len(core) == 1 or _MATHY_MARK.search(core)):
            break
        words.append(core)
        if core != word.lstrip("*"):  # sentence punctuation ends the expression
            break
    value = " ".join(words).rsplit("=", 1)[-1].strip()  # "12 + 30 = 42" -> "42"
    return value if _MATHY_MARK.search(value) else None


def extract_math(text: str) -> Answer:
    """The last non-empty \\boxed{…} (or \\fbox{…}); else the last "the answer is <expr>"."""
    boxes = []
    for m in _BOX.finditer(text):
        content = m.group(1) if m.group(1) is not None else _balanced(text, m.end())
        if content and content.strip().rstrip(".,"):
            boxes.append(content.strip() if m.group(1) is None else content.rstrip(".,"))
    if boxes:
        return Answer(boxes[-1], "boxed")
    found = [v for m in _ANSWER_PHRASE.finditer(text) if (v := _leading_expression(text[m.end():]))]
    return Answer(found[-1], "answer_is") if found else UNPARSED


# --- multiple choice ----------------------------------------------------------------------------

# Each rule's groups hold the letter; the first rule with a valid letter wins, its last match counts.
# A bare letter after "answer is" must end the phrase, unless it is a capital other than the
# pronoun-like "I" and "A" ("The answer is B because …").
_CHOICE_RULES = (
    ("double_paren", re.compile(r"\(\(\s*([A-Za-z])\s*\)\)")),
    ("answer_is", re.compile(r"(?i:\banswer\s+is)\s*:?\s*(?i:(?:option|choice)\s+)?"
                             r"(?:\(([A-Za-z])\)|([A-Za-z])(?=[.,;:!)\n]|\s*$)|([B-HJ-Z])(?=\s))")),
    ("answer_colon", re.compile(r"^[ \t>#_-]*(?i:(?:final\s+|correct\s+)?answer)\s*:\s*"
                                r"(?:\(([A-Za-z])\)|([A-Za-z])(?=[).:]|[ \t]*$))", re.M)),
    ("boxed", re.compile(r"\\boxed\{\s*\(?([A-Za-z])\)?\s*\}")),
)


def extract_choice(text: str, letters: str) -> Answer:
    """The option letter the text commits to, by the first rule in _CHOICE_RULES that finds one
    among `letters`; never a bare letter from prose, never a letter outside `letters`."""
    valid = set(letters.upper())
    text = unicodedata.normalize("NFKC", text).replace("*", "")
    for how, pattern in _CHOICE_RULES:
        found = [letter.upper() for m in pattern.finditer(text)
                 for letter in m.groups() if letter and letter.upper() in valid]
        if found:
            return Answer(found[-1], how)
    return UNPARSED


_OPTION_LINE = re.compile(r"^\(?([A-Za-z])[).:]\s*(.+?)\s*[.!]?$")


def extract_option_line(text: str, options: Sequence[tuple[str, str]]) -> Answer:
    """A last line that cites one option whole, label and text, e.g. "(C) Purple" — an option
    citation, not prose, so it counts; the text must match that option's own text, and a reply that
    recites several options (a copied list) commits to none."""
    lines = [line.strip() for line in unicodedata.normalize("NFKC", text).replace("*", "").splitlines()
             if line.strip()]
    cited = {_cited_option(line, options) for line in lines} - {None}
    last = _cited_option(lines[-1], options) if lines else None
    return Answer(last, "option_line") if last and len(cited) == 1 else UNPARSED


def _cited_option(line: str, options: Sequence[tuple[str, str]]) -> str | None:
    m = _OPTION_LINE.match(line)
    if m:
        letter, cited = m.group(1).upper(), m.group(2).casefold()
        if any(letter == label and cited == text.strip().rstrip(".").casefold() for label, text in options):
            return letter
    return None


def extract_answer(text: str, task: Task) -> Answer:
    text = strip_think(text)
    if task.kind == "math":
        return extract_math(text)
    letters = "".join(letter for letter, _ in task.options) or "ABCDEFGHIJ"
    found = extract_choice(text, letters)
    return found if found.parsed else extract_option_line(text, task.options)


# --- math normalisation and equivalence ---------------------------------------------------------

_UNITS = r"cm|mm|km|kg|units?|degrees?|inches|feet|meters|dollars|cents|seconds|minutes|hours|days"


def normalize_math(s: str) -> str:
    """A canonical spelling of a math answer: no $, sizing, spacing, units, degrees or percent;
    \\dfrac -> \\frac, \\frac12 -> \\frac{1}{2}, "x = 5" -> "5", "1,000" -> "1000"."""
    s = s.strip().replace("\\$", "").replace("$", "")
    s = re.sub(r"^\\[\[(]|\\[\])]$", "", s.strip())
    s = re.sub(r"\\(?:left|right|displaystyle)\b", "", s)
    s = re.sub(r"\\[!,;: ]", "", s).replace("{,}", ",")
    s = re.sub(r"(\d)\s*\\(?:text|mbox|mathrm)\{\s*[A-Za-z ]*\}(?:\^\{?\d\}?)?", r"\1", s)  # 5\text{ cm}
    s = re.sub(rf"^(-?[\d.,]+)\s*(?:{_UNITS})(?:\^?\d)?$", r"\1", s.strip())
    s = re.sub(r"\\(?:text|textbf|mbox|mathrm|mathbf)\{([^{}]*)\}", r"\1", s)
    s = re.sub(r"\^\s*\{?\\circ\}?|°|\\%|%", "", s)
    s = re.sub(r"\\[dt]frac", r"\\frac", s)
    s = re.sub(r"\\(frac|sqrt)\s*(\d)", r"\\\1{\2}", s)  # \frac12 -> \frac{1}2
    s = re.sub(r"(\\frac\{[^{}]*\})\s*(\d)", r"\1{\2}", s)  # \frac{1}2 -> \frac{1}{2}
    s = re.sub(r"\s+", "", s)
    if s.count("=") == 1:
        s = re.sub(r"^\\?[A-Za-z]+(?:_\{?\w+\}?)?=", "", s)  # x=5 -> 5
    s = s.rstrip(".")
    if re.fullmatch(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?", s):
        s = s.replace(",", "")
    return s


_NUM = r"-?(?:\d+\.?\d*|\.\d+)"


def _to_number(s: str) -> float | None:
    """Value of an int, decimal, a/b or \\frac{a}{b} with numeric a and b; None otherwise."""
    m = re.fullmatch(rf"(-?)\\frac\{{({_NUM})\}}\{{({_NUM})\}}", s)
    if m:
        value = Fraction(m[2]) / Fraction(m[3])
        return float(-value if m[1] else value)
    m = re.fullmatch(rf"({_NUM})/({_NUM})", s)
    if m:
        return float(Fraction(m[1]) / Fraction(m[2]))
    return float(Fraction(s)) if re.fullmatch(_NUM, s) else None


def _group(s: str, i: int) -> tuple[str, int]:
    """The argument of a LaTeX command at s[i]: a {braced} group or a single character."""
    if s[i] == "{":
        content = _balanced(s, i + 1)
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
    for node in sympy.preorder_traversal(raw):  # refuse towers like 9^(9^9) before evaluating
        if isinstance(node, sympy.Pow):
            inner = [p for p in sympy.preorder_traversal(node.exp) if isinstance(p, sympy.Pow) and p.exp != -1]
            if inner or (node.exp.is_number and abs(complex(node.exp.evalf())) > 1000):
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


@functools.lru_cache(maxsize=4096)
def math_equivalent(a: str, b: str) -> bool:
    """Same spelling after normalize_math, same number (relative tolerance 1e-6), or same sympy
    expression. Never raises: anything unparsable is simply not equivalent."""
    try:
        na, nb = normalize_math(a), normalize_math(b)
        if not na or not nb:
            return False
        if na == nb:
            return True
        x, y = _to_number(na), _to_number(nb)
        if x is not None and y is not None:
            return math.isclose(x, y, rel_tol=1e-6, abs_tol=1e-12)
        return _sympy_equal(na, nb)
    except Exception:  # sympy and Fraction raise many kinds; a failed parse is "not equal"
        return False


# --- agreement ----------------------------------------------------------------------------------

def same_answer(a: Answer, b: Answer, kind: str) -> bool:
    if not a.parsed or not b.parsed:
        return False
    if kind == "mcq":
        return a.value.strip().upper() == b.value.strip().upper()
    return math_equivalent(a.value, b.value)


def is_correct(answer: Answer, task: Task) -> bool | None:
    if task.gold is None:
        return None
    return answer.parsed and same_answer(answer, Answer(task.gold, "gold"), task.kind)


def _support(answers: Sequence[Answer], kind: str) -> list[int]:
    """For each answer, how many answers (itself included) agree with it; 0 for UNPARSED."""
    return [sum(same_answer(a, b, kind) for b in answers) for a in answers]


def consensus_ratio(answers: Sequence[Answer], kind: str) -> float:
    """Cons(Z) = max_y (1/n) Σ_i 1[a(z_i) = y]; UNPARSED counts in n but agrees with nothing."""
    return max(_support(answers, kind), default=0) / len(answers) if answers else 0.0


def plurality_vote(answers: Sequence[Answer], kind: str) -> Answer:
    """The most supported parsed answer; ties go to the earliest agent. All UNPARSED -> UNPARSED."""
    support = _support(answers, kind)
    best = max(support, default=0)
    return answers[support.index(best)] if best > 0 else UNPARSED


def is_unanimous(answers: Sequence[Answer], kind: str) -> bool:
    return bool(answers) and all(same_answer(answers[0], a, kind) for a in answers)
