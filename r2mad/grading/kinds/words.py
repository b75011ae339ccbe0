"""Reading a free-text answer: the line it commits to ("Final answer: …", \\boxed{…}, "the answer is …"), its
last sentence, and the answer tidied for showing. Pure functions shared by the yesno, short and open kinds; the
normalised spelling is spelling.py's."""
from __future__ import annotations

import re

from r2mad.grading.kinds.reading import closing_braces
from r2mad.grading.kinds.spelling import normalise
from r2mad.types import UNPARSED, Answer

_FINAL = re.compile(r"^[ \t>#*_-]*(?:my\s+)?(?:final\s+)?answer\s*\**\s*:\s*\**\s*(.+)$", re.I | re.M)
# "… so it is even. **Answer: Yes**": an answer line after a sentence
_FINAL_INLINE = re.compile(r"[.!?]\s+\**(?:my\s+)?(?:final\s+)?answer\s*\**\s*:\s*\**\s*(.+)$", re.I | re.M)
_ANSWER_IS = re.compile(r"\b(?:final\s+)?answer\s+is\s*:?\s*(.+?)(?:(?<=[^\d\s])\.(?:\s|$)|[\n!?;]|$)", re.I)
_BOXED = re.compile(r"\\boxed\s*\{")
_TEXT = re.compile(r"\\(?:text|textbf|mathrm)\{([^{}]*)\}")
FINAL_LINE = 'end with a last line that starts with "Final answer:"'
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
    rules = [("answer_colon", [m.group(1) for m in _FINAL.finditer(text)]),
             ("answer_inline", [m.group(1) for m in _FINAL_INLINE.finditer(text)]), ("boxed", _boxes(text))]
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


_SENTENCE_END = re.compile(r"[.!?]+[\"'”’)\]]*(?=\s|$)|\n")
_ABBREVIATION = re.compile(r"(?:\b[A-Za-z]|\b(?:Mr|Mrs|Ms|Dr|St|Mt|Jr|Sr|vs|etc|e\.g|i\.e|No|approx))\.$")


def sentences(text: str) -> list[str]:
    """The text's sentences in order (a full stop after an initial or a title such as "Dr." ends none, nor one
    inside a number); the last is cut off when the text stops mid-sentence. Blank ones are left out."""
    out, start = [], 0
    for m in _SENTENCE_END.finditer(text):
        if m.group(0).startswith(".") and _ABBREVIATION.search(text[start:m.start() + 1]):
            continue
        out.append(text[start:m.end()])
        start = m.end()
    out.append(text[start:])
    return [s.strip() for s in out if re.search(r"\w", s)]


def last_sentence(text: str, limit: int) -> str | None:
    """The reply's last complete sentence (a reply cut at the token limit ends mid-sentence: that part is
    not one), if it is at most `limit` characters."""
    found = [s for s in sentences(text.replace("**", "")) if re.search(r"[.!?][\"'”’)\]]*$", s)]
    last = tidy(found[-1]) if found else ""
    return last if last and len(last) <= limit else None


# a reply that takes back what it said before ("\\boxed{20} Wait, I forgot the tax …", "Final answer: yes. Hmm, wait …")
CORRECTION = re.compile(r"\b(?:wait|actually|correction|sorry|typo|i forgot|i made a mistake|let me redo|"
                        r"on second thought|should (?:be|have been))\b", re.I)
_CUT = re.compile(r"(?:[-+*/=(,:−×÷·]|\b(?:of|the|a|an|to|and|or|is|are|was|be|in|by|for|with|so|then|that))\s*$",
                  re.I)


def cut_off(text: str) -> bool:
    """Whether the reply stops mid-sentence (on an operator, a comma or a word such as "of" or "the", or a long
    last line with no end): it was cut at the token limit before it said what it concluded."""
    last = text.rstrip().rsplit("\n", 1)[-1]
    return _CUT.search(last) is not None or (len(last) > 200 and not re.search(r"[.!?)\]}\"'”*$]$", last))


def has_answer_line(text: str) -> bool:
    """Whether the reply has an "Answer: …" / "Final answer: …" line (even one committed() refuses)."""
    return _FINAL.search(text) is not None


def _boxes(text: str) -> list[str]:
    closes = closing_braces(text) if "\\boxed" in text else {}
    return [text[m.end():closes[m.end() - 1]] for m in _BOXED.finditer(text) if m.end() - 1 in closes]
