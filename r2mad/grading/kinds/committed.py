"""The flexible reading of a math reply that wrote no \\boxed{} (or withdrew it): the value it commits to, as a
careful grader reads it. GSM8K's "#### 18", an "A: 18" line, "the answer is 18" (also "$18", "forty-two"), a
last line that is an expression, else the last number of the last sentence that holds one, as lm-eval's
flexible-extract for GSM8K, but never an operand ("12 + 30" commits to nothing), an exponent, a number in an
aside in brackets, a check ("Check: 2(9 + 6) = 30"), a hypothetical ("… would give 217"), two candidates ("36 or
37"), or a reply cut off before its result."""
from __future__ import annotations

import re

from r2mad.grading.kinds.reading import _CURRENCY, _MATHY_MARK, _MATHY_WORD, _leading_expression, extract_math
from r2mad.grading.kinds.spelling import normalise
from r2mad.grading.kinds.words import CORRECTION, cut_off
from r2mad.types import UNPARSED, Answer

_HASHES = re.compile(r"^[ \t]*####[ \t]*(.+)$", re.M)
_A_LINE = re.compile(r"^[ \t]*A[ \t]*:[ \t]*(.+)$", re.M)
# a number as a reply writes it: sign, currency, thousands separators, decimals, a fraction a/b
_NUMBER = re.compile(r"(?<![\w.^])-?(?:\\\$|[$€£¥])?\d[\d,]*(?:\.\d+)?(?:/\d+)?(?:\s?(?:π|\\pi\b|pi\b)|√\d+)?(?![\d^])")
_OPERAND = re.compile(r"[-+*/×÷^−]\s*$")  # a number right after an operator is an operand, not a result
_SENTENCES = re.compile(r"(?:[^.!?\n]|\.(?=\d))+")
_PROSE_ASIDE = re.compile(r"\((?=[^()]*[A-Za-z]{3})[^()]*\)")  # "(and boys: 3 × 5 = 15)", not "2(9 + 6)"
# a sentence that states no result: a check, a hypothetical, the task restated
_SET_ASIDE = re.compile(r"^\s*(?:check|verify|verification|double-check|we need to|we are asked|the question asks|"
                        r"to find|let's find|let us find)\b|\bwould (?:give|be|have been)\b", re.I)
_TWO_CANDIDATES = re.compile(r"\d[^.]*\b(?:or|maybe|perhaps)\b[^.]*\d", re.I)
_PLAN = re.compile(r"^\s*(?:let me|let's|let us|i will|i'll|next,|now,? let's)\b", re.I)  # a plan: no result yet


def math_reading(text: str, question: str = "") -> Answer:
    """The strict reading (the last \\boxed{}), unless the reply withdraws it afterwards ("\\boxed{20} Wait, I
    forgot the tax: the total is 22"), then the flexible one. Two boxes offered as alternatives commit to none."""
    text = text.replace("**", "")
    found = extract_math(text)
    if found.how == "boxed":
        tail = text[text.rfind("\\boxed"):]
        tail = tail[tail.find("}") + 1:] if "}" in tail else ""
        if re.search(r"\\boxed\s*\{[^{}]*\}\s*(?:or|and)\s*\$?\\boxed", text):
            return UNPARSED
        if not (CORRECTION.search(tail) and _NUMBER.search(tail)):
            return found
        text = tail
    return flexible_math(text, question)


def flexible_math(text: str, question: str = "") -> Answer:
    for how, pattern in (("hashes", _HASHES), ("answer_colon", _A_LINE)):
        found = [v for m in pattern.finditer(text) if (v := _leading_expression(m.group(1)))]
        if found:
            return Answer(found[-1], how)
    phrased = extract_math(text)
    if phrased.parsed:
        return phrased
    sentences = [s for s in _SENTENCES.findall(_PROSE_ASIDE.sub("", text)) if s.strip()]
    if cut_off(text) or (sentences and _PLAN.search(sentences[-1])):  # stopped before its result
        return UNPARSED
    lines = [line.strip().strip("$") for line in text.strip().splitlines() if line.strip()]
    if lines and _expression(lines[-1]):
        return Answer(_expression(lines[-1]), "last_expression")
    asked = _asked_for(question)
    named = [s for s in sentences if asked and re.search(rf"\b{asked}", s, re.I) and _NUMBER.search(s)]
    for sentence in reversed(named[-1:] or sentences):  # the sentence naming what was asked, else the last
        found = None if _SET_ASIDE.search(sentence) else _sentence_value(sentence, asked if named else None)
        if found is not None:
            return found
    return UNPARSED


def _sentence_value(sentence: str, asked: str | None) -> Answer | None:
    """The number a sentence commits to (after `asked`, the quantity's name, when given: "Slope = 8/4 = 2"),
    UNPARSED when it commits to none (an operand, two candidates), None when it holds no number."""
    numbers = list(_NUMBER.finditer(sentence))
    if numbers and _TWO_CANDIDATES.search(sentence):
        return UNPARSED
    spoken = _last_spoken(sentence, numbers[-1].end() if numbers else 0)
    if spoken or not numbers:
        return Answer(spoken, "last_number") if spoken else None
    if asked:
        named_at = re.search(rf"\b{asked}", sentence, re.I).start()
        after = [m for m in numbers if m.start() > named_at]
        numbers = [_first_result(sentence, after)] if after else numbers
    last = numbers[-1]
    if _OPERAND.search(sentence[:last.start()]) and "=" not in sentence[last.end():]:
        return UNPARSED
    raw = last.group(0).rstrip(",")
    return Answer(("-" if raw.startswith("-") else "") + _CURRENCY.sub("", raw.lstrip("-")), "last_number")


flexible_math.__doc__ = __doc__


def _expression(line: str) -> str | None:
    """A line that is math and nothing else ("x^2+1", "\\frac{1}{2}", "12 + 30 = 42"): its value (the right-hand
    side of its last "="), else None."""
    words = line.rstrip(".").split()
    if not words or not all(_MATHY_WORD.fullmatch(w.rstrip(",")) and (len(w) == 1 or _MATHY_MARK.search(w))
                            for w in words):
        return None
    value = line.rstrip(".").rsplit("=", 1)[-1].strip()
    return value if value and _MATHY_MARK.search(value) else None


def _last_spoken(sentence: str, after: int = 0) -> str | None:
    """The digits of the last number in words of a sentence with no number in digits ("The hypotenuse is
    thirteen units long."), or of one that ends the sentence after its digits ("So f(2) equals nine."); None."""
    words = normalise(sentence[after:]).split()
    found = [w for w in (words[-2:] if after else words) if w.isdigit()]  # after digits: only a closing one
    return found[-1] if found and not re.search(r"\d", sentence[after:]) else None


_QUANTITY = re.compile(r"\b(?:what|find|compute|calculate|determine)\b(?:\s+(?:is|are|was|will be))?\s+(?:the\s+)?"
                       r"(?:\w+\s+)?(area|perimeter|slope|volume|sum|product|difference|mean|median|average|total|"
                       r"cost|price|speed|distance|length|height|width|radius|probability|value|remainder|gcd|lcm)\b",
                       re.I)


def _asked_for(question: str) -> str | None:
    """The quantity a question asks for ("What is the slope of …" -> "slope"), or None."""
    m = _QUANTITY.search(question)
    return m.group(1).lower() if m else None


def _first_result(sentence: str, numbers: list) -> re.Match:
    """Of the numbers after the quantity's name, the result: the one after its last "=", else the first."""
    results = [m for m in numbers if "=" in sentence[:m.start()][-4:]]
    return results[-1] if results else numbers[0]
