"""Normalised spelling of a free-text answer: case, accents, articles and punctuation set aside, number words
read as digits ("The Twenty-One Pilots!" -> "21 pilots"). Pure functions, shared by the readings and the kinds."""
from __future__ import annotations

import re
import unicodedata

_ARTICLES = {"a", "an", "the"}
_UNITS = {w: i for i, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve "
                                     "thirteen fourteen fifteen sixteen seventeen eighteen nineteen".split())}
_TENS = {w: 10 * i for i, w in enumerate("_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()) if i > 1}
_SCALES = {"hundred": 100, "thousand": 1000, "million": 10**6, "billion": 10**9}


def _joins(current: int, value: int) -> bool:
    """Whether a number word of `value` continues a number that is `current` so far ("twenty" + "one")."""
    rest = current % 100
    return rest == 0 or (value < 10 and rest >= 20 and rest % 10 == 0)


def _numbers(words: list[str]) -> list[str]:
    """Runs of number words as numbers: "two hundred and five" is 205, "one thousand nine hundred" is 1900,
    "nineteen sixty nine" is two numbers (19 69) and so never matches 1969 by accident."""
    out: list[str] = []
    total = current = 0
    in_number = False

    spoken: set[int] = set()  # positions in `out` of numbers said in words

    def flush():
        nonlocal total, current, in_number
        if in_number:
            value = total + current
            if out and len(out) - 1 in spoken and 10 < int(out[-1]) < 100 and 10 <= value < 100:
                out[-1] = str(int(out[-1]) * 100 + value)  # nineteen | sixty nine: a year
            else:
                spoken.add(len(out))
                out.append(str(value))
        total = current = 0
        in_number = False

    for i, word in enumerate(words):
        value = _UNITS.get(word, _TENS.get(word))
        if value is not None:
            if in_number and not _joins(current, value):
                flush()
            current, in_number = current + value, True
        elif word in _SCALES and in_number:
            if _SCALES[word] == 100:
                current *= 100
            else:
                total, current = total + current * _SCALES[word], 0
        elif word == "and" and in_number and i + 1 < len(words) and words[i + 1] in {**_UNITS, **_TENS}:
            continue
        else:
            flush()
            out.append(word)
    flush()
    return out


def normalise_case(value: str) -> str:
    """Case folded and accents dropped, nothing else."""
    text = unicodedata.normalize("NFKD", value.casefold())
    return "".join(c for c in text if not unicodedata.combining(c))


def normalise(value: str) -> str:
    """Case folded, accents and punctuation dropped, articles left out, number words as digits:
    "The Twenty-One Pilots!" -> "21 pilots"."""
    text = re.sub(r"(?<=\d),(?=\d{3}\b)", "", normalise_case(value))  # 1,000 -> 1000
    text = re.sub(r"(?<=\b\w)([-+])(?!\w)", lambda m: " minus" if m[1] == "-" else " plus", text)  # O-, A+
    text = re.sub(r"[^\w\s.]|_|(?<!\d)\.|\.(?!\d)", " ", text)  # keep 3.5
    words = [w for w in text.split() if w not in _ARTICLES]
    return " ".join(_numbers(words))
