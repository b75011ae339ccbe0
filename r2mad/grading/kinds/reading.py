"""Reading answers from replies: reasoning blocks set apart, \\boxed{} and "the answer is" for math (and the
value a math answer states), option letters for multiple choice. Pure functions on strings, which the answer
kinds (grading/kinds) build on. Not agreement or voting (the kinds), not prompting or I/O."""
from __future__ import annotations

import re
import unicodedata
from typing import Sequence

from r2mad.grading.kinds.spelling import normalise
from r2mad.types import UNPARSED, Answer

# --- reasoning blocks ---------------------------------------------------------------------------

def split_think(text: str) -> tuple[str, str]:
    """(reasoning, reply): the <think>…</think> blocks (Qwen3, DeepSeek-R1 and other thinking models), a
    leading block whose opening tag the chat template ate, and a block never closed (the reply never came)
    apart from the reply. The reasoning is never read as an answer."""
    text = text or ""
    thoughts: list[str] = []
    head, close, tail = text.rpartition("</think>")  # after the last close no block can end: not searched
    head = re.sub(r"<think>(.*?)</think>", lambda m: thoughts.append(m.group(1)) or "", head + close, flags=re.S)
    text = head + tail
    if "</think>" in text:  # reasoning with no opening tag: everything before the close
        before, text = text.rsplit("</think>", 1)
        thoughts.insert(0, before)
    if "<think>" in text:  # never closed: the answer never came
        text, unclosed = text.split("<think>", 1)
        thoughts.append(unclosed)
    return "\n\n".join(t.strip() for t in thoughts if t.strip()), text.strip()


def strip_think(text: str) -> str:
    """The reply without its reasoning blocks (see split_think)."""
    return split_think(text)[1]


# --- math ---------------------------------------------------------------------------------------

_BOX = re.compile(r"\\(?:boxed|fbox)\s*\{|\\boxed +([^\s{$][^\s$]*)")
# "**Answer:** 10": the markdown bold around the phrase is not part of the answer
_ANSWER_PHRASE = re.compile(r"\banswer\s*\**\s*(?:is\b\s*:?|:)\s*\**\s*", re.I)
# $…$ whose content may hold an escaped dollar: "$\$36$" is \$36
_INLINE_MATH = re.compile(r"(?<!\\)\$+((?:[^$\\]|\\.)+)\$+|\\\((.+?)\\\)|\\\[(.+?)\\\]")
_MATHY_WORD = re.compile(r"[\w\\{}()\[\]^_/.*+\-=,|√π∞]+")
_MATHY_MARK = re.compile(r"[\d\\√π∞+\-*/^=]")


_CURRENCY = re.compile(r"^(?:\\\$|[$€£¥])(?=\d)")


def _leading_expression(rest: str) -> str | None:
    """The short math expression that opens `rest` ("5 cm." -> "5", "$18." -> "18", "forty-two." -> "42"),
    or None if it is prose."""
    inline = _INLINE_MATH.match(rest)
    if inline:
        return next(g for g in inline.groups() if g).strip()
    words = []
    for word in rest.split("\n", 1)[0].split():
        bare = word if word == "*" else _CURRENCY.sub("", word.lstrip("*"))  # a lone "*" multiplies; "**" is bold
        core = bare if word == "*" else bare.rstrip(".,;:!?*")
        if not core or not _MATHY_WORD.fullmatch(core) or not (len(core) == 1 or _MATHY_MARK.search(core)):
            break
        words.append(core)
        if core != bare:  # sentence punctuation ends the expression
            break
    value = " ".join(words).rsplit("=", 1)[-1].strip()  # "12 + 30 = 42" -> "42"
    return value if _MATHY_MARK.search(value) else spoken_number(re.split(r"[.!?;\n]", rest, maxsplit=1)[0])


def spoken_number(text: str) -> str | None:
    """The number a phrase opens with in words ("forty-two.", "twenty dollars"), as digits; None otherwise."""
    words = normalise(" ".join(text.split()[:6])).split()
    if not words or not words[0].isdigit() or len(words) > 3 or words[1:2] == ["of"]:
        return None  # "one of the options" is no number
    return words[0]


def closing_braces(text: str) -> dict[int, int]:
    """For every `{` that closes, the index of its `}`, in one pass (escaped braces such as \\{ and \\}
    are skipped, as in mathcheck.balanced): linear however many boxes never close."""
    closes, open_at, i = {}, [], 0
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "{":
            open_at.append(i)
        elif ch == "}" and open_at:
            closes[open_at.pop()] = i
        i += 1
    return closes


_PHRASE_WINDOW = 2000  # "the answer is <expr>": the expression is looked for this far after the phrase


def extract_math(text: str) -> Answer:
    """The last non-empty \\boxed{…} (or \\fbox{…}); else the last "the answer is <expr>". Linear in the
    length of the text."""
    boxes, closes = [], None
    for m in _BOX.finditer(text):
        if m.group(1) is None:
            closes = closing_braces(text) if closes is None else closes
            end = closes.get(m.end() - 1)
            content = None if end is None else text[m.end():end]
        else:
            content = m.group(1)
        if content and content.strip().rstrip(".,"):
            boxes.append(content.strip() if m.group(1) is None else content.rstrip(".,"))
    if boxes:
        return Answer(boxes[-1], "boxed")
    for m in reversed(list(_ANSWER_PHRASE.finditer(text))[-20:]):  # the last phrase (of 20) that states a value
        value = _leading_expression(text[m.end():m.end() + _PHRASE_WINDOW])
        if value:
            return Answer(value, "answer_is")
    return UNPARSED


# --- multiple choice ----------------------------------------------------------------------------

# Each rule's groups hold the letter; the first rule with a valid letter wins, its last match counts.
# A bare letter after "answer is" must end the phrase, unless it is a capital other than the
# pronoun-like "I" and "A" ("The answer is B because …").
_CHOICE_RULES = (
    ("double_paren", re.compile(r"\(\(\s*([A-Za-z])\s*\)\)")),
    ("answer_is", re.compile(r"(?i:\b(?:answer|option|choice)\s+(?:is|would\s+be))\s*:?\s*(?i:(?:option|choice)\s+)?"
                             r"(?:\(([A-Za-z])\)|([A-Za-z])(?=[.,;:!)\n]|\s*$)|([B-HJ-Z])(?=\s))")),
    ("answer_colon", re.compile(r"^[ \t>#_-]*(?i:(?:final\s+|correct\s+)?answer)\s*:\s*"
                                r"(?:\(([A-Za-z])\)|([A-Za-z])(?=[).:]|[ \t]*$))", re.M)),
    ("boxed", re.compile(r"\\boxed\{\s*\(?([A-Za-z])\)?\s*\}")),
)


_OR_NEXT = re.compile(r"\s*(?:or|/|and)\s*\(*[A-Ja-j]\b")
_OR_BEFORE = re.compile(r"\b[A-Ja-j]\)*\s*(?:or|/|and)\s*$")


def _between_two(text: str, m: re.Match) -> bool:
    """A letter offered as one of two ("((B)) or ((C))", "B/C"): no choice made."""
    return bool(_OR_NEXT.match(text, m.end()) or _OR_BEFORE.search(text[max(0, m.start() - 12):m.start()]))


def extract_choice(text: str, letters: str) -> Answer:
    """The option letter the text commits to, by the first rule in _CHOICE_RULES that finds one
    among `letters`; never a bare letter from prose, never a letter outside `letters`."""
    valid = set(letters.upper())
    text = unicodedata.normalize("NFKC", text).replace("*", "")
    for how, pattern in _CHOICE_RULES:
        found = [letter.upper() for m in pattern.finditer(text) if not _between_two(text, m)
                 for letter in m.groups() if letter and letter.upper() in valid]
        if found:
            return Answer(found[-1], how)
    return UNPARSED


_OPTION_LINE = re.compile(r"^\(?([A-Za-z])[).:]\s*(.+?)\s*[.!]?$")


def extract_option_line(text: str, options: Sequence[tuple[str, str]]) -> Answer:
    """A last line that cites one option whole, label and text, e.g. "(C) Purple" — an option
    citation, not prose, so it counts; the text must match that option's own text, and a reply whose
    lines label two or more options (a recited list, even with the texts reworded) commits to none."""
    lines = [line.strip() for line in unicodedata.normalize("NFKC", text).replace("*", "").splitlines()
             if line.strip()]
    labels = {label.upper() for label, _ in options}
    labelled = {m.group(1).upper() for line in lines if (m := _OPTION_LINE.match(line))} & labels
    last = _cited_option(lines[-1], options) if lines else None
    return Answer(last, "option_line") if last and len(labelled) == 1 else UNPARSED


def _cited_option(line: str, options: Sequence[tuple[str, str]]) -> str | None:
    m = _OPTION_LINE.match(line)
    if m:
        letter, cited = m.group(1).upper(), m.group(2).casefold()
        if any(letter == label and cited == text.strip().rstrip(".").casefold() for label, text in options):
            return letter
    return None


# --- math values ----------------------------------------------------------------------------------

_NO_ANSWER = {"none", "null", "n/a", "na", "nothing", "...", "…"}  # a placeholder where a value should be


def math_value(value: str, question: str = "") -> str | None:
    """The value a math answer states, or None when it states none: the right-hand side of a worked
    equation ("12 + 30 = 33" -> "33"; "x = 5" and "y = 2x + 1" are left to normalize_math, since a
    letter on the left names what the value is); None for a bare "None" (or "n/a") and for an expression
    the question itself shows ("12 + 30" when asked "What is 12 + 30?")."""
    text = value.strip()
    if "=" in text:
        head, right = text.split("=", 1)[0], text.rpartition("=")[2]
        if right.strip() and re.search(r"\d", head) and not re.search(r"[A-Za-z]", re.sub(r"\\[A-Za-z]+", "", head)):
            text = right.strip()
    text = re.sub(r"(?<=\d)\.$", "", text)  # "321." in a box: the sentence's full stop
    spelled = re.sub(r"[\s$]|\\text\{|\}", "", text).casefold().rstrip(".")
    if spelled in _NO_ANSWER:
        return None
    if re.fullmatch(r"[A-Za-z][A-Za-z -]*[A-Za-z]\.?", text) and (spoken := spoken_number(text)):
        text = spoken  # "forty-two" -> "42"
    if question and re.search(r"\d\s*[-+*/×÷^]\s*\d", text):
        asked = re.sub(r"\s", "", question).casefold()
        if re.sub(r"\s", "", text).casefold() in asked:
            return None
    return text
