"""Reading a free-text answer: the line it commits to ("Final answer: …", \\boxed{…}, "the answer is …")
and its normalised spelling (case, accents, articles, punctuation and number words set aside). Pure
functions shared by the yesno, short and open kinds."""
from __future__ import annotations

import re
import unicodedata

from r2mad.grading.kinds.reading import closing_braces
from r2mad.types import UNPARSED, Answer

_FINAL = re.compile(r"^[ \t>#*_-]*(?:my\s+)?(?:final\s+)?answer\s*\**\s*:\s*\**\s*(.+)$", re.I | re.M)
_ANSWER_IS = re.compile(r"\b(?:final\s+)?answer\s+is\s*:?\s*(.+?)(?:(?<=[^\d\s])\.(?:\s|$)|[\n!?;]|$)", re.I)
_BOXED = re.compile(r"\\boxed\s*\{")
_TEXT = re.compile(r"\\(?:text|textbf|mathrm)\{([^{}]*)\}")
_PLACEHOLDERS = {"answer", "your answer", "final answer", "x", "...", "…", "none", "n/a", "null", "unknown"}


def tidy(value: str) -> str:
    """The answer as shown: no markdown, LaTeX text wrappers, quotes or closing full stop."""
    value = _TEXT.sub(r"\1", value).replace("**", "").replace("__", "").strip()
    value = value.strip(" \t\"'`“”‘’").rstrip(".").strip()
    return value


def committed(text: str, limit: int = 300, prose: bool = True) -> Answer:
    """What the reply commits to: the last "Final answer: …" line, else the last \\boxed{…}, else (with
    `prose`) the last "the answer is …" sentence; UNPARSED when none, or it is empty, a placeholder, the
    instruction copied ("Final answer:" inside it) or over `limit` characters."""
    rules = [("answer_colon", [m.group(1) for m in _FINAL.finditer(text)]), ("boxed", _boxes(text))]
    if prose:
        rules.append(("answer_is", [m.group(1) for m in _ANSWER_IS.finditer(text)]))
    for how, found in rules:
        values = [v for v in map(tidy, found) if v]
        if values:
            value = values[-1]
            if normalise(value) in _PLACEHOLDERS or "final answer" in value.casefold() or len(value) > limit:
                return UNPARSED
            return Answer(value, how)
    return UNPARSED


_SENTENCE = re.compile(r"[^.!?\n]*[A-Za-z][^.!?\n]*[.!?]")


def last_sentence(text: str, limit: int) -> str | None:
    """The reply's last complete sentence (a reply cut at the token limit ends mid-sentence: that part is
    not one), if it is at most `limit` characters."""
    found = [tidy(m.group(0)) for m in _SENTENCE.finditer(text)]
    found = [s for s in found if s]
    return found[-1] if found and len(found[-1]) <= limit else None


def has_answer_line(text: str) -> bool:
    """Whether the reply has an "Answer: …" / "Final answer: …" line (even one committed() refuses)."""
    return _FINAL.search(text) is not None


def _boxes(text: str) -> list[str]:
    closes = closing_braces(text) if "\\boxed" in text else {}
    return [text[m.end():closes[m.end() - 1]] for m in _BOXED.finditer(text) if m.end() - 1 in closes]


# --- normalised spelling --------------------------------------------------------------------------

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


def normalise(value: str) -> str:
    """Case folded, accents and punctuation dropped, articles left out, number words as digits:
    "The Twenty-One Pilots!" -> "21 pilots"."""
    text = unicodedata.normalize("NFKD", value.casefold())
    text = "".join(c for c in text if not unicodedata.combining(c))
    text = re.sub(r"(?<=\d),(?=\d{3}\b)", "", text)  # 1,000 -> 1000
    text = re.sub(r"[^\w\s.]|_|(?<!\d)\.|\.(?!\d)", " ", text)  # keep 3.5
    words = [w for w in text.split() if w not in _ARTICLES]
    return " ".join(_numbers(words))
