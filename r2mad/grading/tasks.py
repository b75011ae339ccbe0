"""How a task is shown to an agent, and a Task built from a question typed in the CLI or the app."""
from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from typing import Iterable, Sequence

from r2mad.grading.kinds import kind_named
from r2mad.text import GOLD_CHARS, quoted, too_long
from r2mad.types import Task

# --- rendering and ad-hoc questions -------------------------------------------------------------

def format_task(task: Task) -> str:
    """The question, then one "(A) text" line per option."""
    return "\n".join([task.question, *(f"({letter}) {text}" for letter, text in task.options)])


_BIDI = {chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))}


def clean_text(text: str) -> str:
    """Drop NUL and other control characters (newline and tab stay) and bidi overrides."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return "".join(c for c in text if c in "\n\t" or (unicodedata.category(c) != "Cc" and c not in _BIDI))


def task_from_input(question: str, options: dict[str, str] | Sequence[tuple[str, str]] | None,
                    gold: str | None, *, max_chars: int = 4000, kind: str | None = None) -> Task:
    """A Task from a question typed in the CLI or UI, of answer kind `kind` (none: guess_kind's guess)."""
    question = clean_text(question or "").strip()
    if not question:
        raise ValueError("The question is empty; type a question before starting a debate.")
    pairs = _option_pairs(options)
    kind = kind or guess_kind(question, bool(pairs))
    strategy = kind_named(kind)
    if kind == MULTIPLE_CHOICE and not pairs:
        raise ValueError("A multiple-choice question needs its options; add them (A, B, …) or pick another "
                         "answer kind.")
    if pairs and kind != MULTIPLE_CHOICE:
        raise ValueError(f"Options were given, but the answer kind is {strategy.label}; remove the options or "
                         "pick multiple choice.")
    gold_text = clean_text(gold).strip() if gold else ""
    refused = too_long("The gold answer", gold_text, GOLD_CHARS, "give the answer alone (a letter, a number or a "
                                                                  "short expression)")
    if refused:
        raise ValueError(refused)
    if gold_text and not pairs:
        gold_text = strategy.checked(gold_text, Task(kind, question))
    if pairs:
        letters = [letter for letter, _ in pairs]
        gold_text = gold_text.strip("()").upper()
        if gold_text and gold_text not in letters:
            raise ValueError(f"The gold answer {quoted(gold_text)} is not one of the option letters "
                             f"{', '.join(letters)}; pick one of them or leave it empty.")
    task = Task(kind, question, pairs, gold_text or None, source="input")
    size = len(format_task(task))
    if size > max_chars:
        raise ValueError(f"The question is {size} characters long with its options, over the limit "
                         f"of {max_chars}; shorten it.")
    key = json.dumps([question, pairs] + ([kind] if kind != guess_kind(question, bool(pairs)) else []),
                     ensure_ascii=False)
    return Task(task.kind, task.question, task.options, task.gold,
                "input-" + hashlib.sha1(key.encode()).hexdigest()[:10], task.source)


MULTIPLE_CHOICE = "mcq"  # the kind a question with options has (the one kind the input's shape decides)
_MATHY = re.compile(r"\d\s*[-+*/×÷^=<>]\s*[-(\d]|\d\s*%|\\[a-z]+|\$|\b(?:solve|compute|calculate|evaluate|simplify|"
                    r"how many|how much|sum of|product of|remainder|integer|equation|probability|percent)\b", re.I)
_YES_NO = re.compile(r"^(?:is|are|was|were|am|do|does|did|can|could|should|would|will|shall|may|might|must|has|"
                     r"have|had|isn't|aren't|wasn't|don't|doesn't|didn't|can't|won't|shouldn't)\b", re.I)
_SHORT = re.compile(r"^(?:who|what|when|where|which|name|in what|in which|how (?:old|far|long|tall|big))\b", re.I)
_OPINION = re.compile(r"\b(?:should I|should we|better|best|worth|recommend|advice|opinion|think|prefer|would you)\b",
                      re.I)


def guess_kind(question: str, has_options: bool = False) -> str:
    """The answer kind a typed question most likely wants: options -> mcq; arithmetic or a counting question
    -> math; a question opening with is/does/can/should… -> yesno, unless it offers alternatives ("… Rust or
    Go …") or asks for a judgement; who/what/when/where/which -> short; anything else -> open."""
    text = question.strip()
    if has_options:
        return MULTIPLE_CHOICE
    if _MATHY.search(text):
        return "math"
    if _YES_NO.match(text):
        offers_alternatives = re.search(r"\bor\b", text, re.I)
        return "open" if offers_alternatives or _OPINION.search(text) else "yesno"
    if _SHORT.match(text) and not _OPINION.search(text):
        return "short"
    return "open"


def _option_pairs(options: dict[str, str] | Iterable[tuple[str, str]] | None) -> tuple[tuple[str, str], ...]:
    if not options:
        return ()
    items = list(options.items()) if isinstance(options, dict) else list(options)
    pairs: list[tuple[str, str]] = []
    for raw_letter, raw_text in items:
        letter = clean_text(str(raw_letter)).strip().upper()
        if not re.fullmatch(r"[A-Z]", letter):
            raise ValueError(f"Option label {quoted(raw_letter)} is not a single letter A-Z; label options A, B, C ...")
        if any(letter == seen for seen, _ in pairs):
            raise ValueError(f"Option letter {letter} appears twice; give each option its own letter.")
        text = clean_text(str(raw_text)).strip()
        if not text:
            raise ValueError(f"Option {letter} is empty; fill it in or remove it.")
        pairs.append((letter, text))
    if len(pairs) < 2:
        raise ValueError("A multiple-choice question needs at least 2 options; add another or remove "
                         "the options to ask an open question.")
    return tuple(pairs)
