"""How a task is shown to an agent, and a Task built from a question typed in the CLI or the app."""
from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from typing import Iterable, Sequence

from r2mad.budget import QUESTION_CHARS, question_refused
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
                    gold: str | None, *, max_chars: int = QUESTION_CHARS, kind: str | None = None) -> Task:
    """A Task from a question typed in the CLI or UI, of answer kind `kind` (none: guess_kind's guess)."""
    question = clean_text(question or "").strip()
    if not question:
        raise ValueError("The question is empty; type a question before starting a debate.")
    pairs = _option_pairs(options)
    typed = inline_options(question) if not pairs and kind in (None, MULTIPLE_CHOICE) else None
    if typed:  # options typed into the question become the options
        question, pairs = typed[0] or question, _option_pairs(typed[1])
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
    refused = question_refused(len(format_task(task)), max_chars)
    if refused:
        raise ValueError(refused)
    key = json.dumps([question, pairs] + ([kind] if kind != guess_kind(question, bool(pairs)) else []),
                     ensure_ascii=False)
    return Task(task.kind, task.question, task.options, task.gold,
                "input-" + hashlib.sha1(key.encode()).hexdigest()[:10], task.source)


MULTIPLE_CHOICE = "mcq"  # the kind a question with options has (the one kind the input's shape decides)
_NUMBER_WORDS = r"\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|" \
                r"forty|fifty|hundred|thousand|once|twice|half|double|triple|quarter)\b"
_MATHY = re.compile(
    r"\d\s*[-+*/×÷^=<>]\s*[-(\d]|\d\s*%|\\[a-z]+|\$|\w\s*=\s*-?\d|"
    r"\b(?:solve|compute|calculate|evaluate|simplify|sum of|product of|remainder|equation|probability|"
    r"derivative|integral|factorial|divisors?|square root|cube root|to the power)\b|"
    rf"(?:\d|{_NUMBER_WORDS})\s*(?:times|plus|minus|divided by|multiplied by|squared|cubed|over)\b|"
    r"\d\s*(?:°|degrees?)\s*(?:[CF]\b|celsius|fahrenheit)|\bconvert\b.*\d|\d.*\bin (?:celsius|fahrenheit|kelvin)\b|"
    r"\bhow many \w+ (?:are|is) (?:there )?in (?:a|an|one|\d)", re.I)
_QUANTITY_NUMBER = re.compile(rf"(?<![\w.])\d[\d,]*(?:\.\d+)?|{_NUMBER_WORDS}", re.I)
_ASKS = re.compile(r"\b(?:what|how|find|calculate)\b", re.I)
_COUNTS = re.compile(r"\b(?:how (?:many|much)|percent(?:age)?)\b", re.I)
_YES_NO = re.compile(r"^(?:is|are|was|were|am|do|does|did|can|could|should|would|will|shall|may|might|must|has|"
                     r"have|had|isn't|aren't|wasn't|don't|doesn't|didn't|can't|won't|shouldn't)\b", re.I)
_POLITE = re.compile(r"^(?:(?:can|could|would|will) you(?: please)? tell me\s+|(?:(?:can|could|would|will) you"
                     r"(?: please)?|please|do you know)\s+(?=what|who|when|where|which|how|calculate|compute|"
                     r"convert|solve|find|work out|give))", re.I)
_SHORT = re.compile(r"^(?:who|whom|whose|what|when|where|which|name|in what|in which|at what|on what|"
                    r"how (?:old|far|long|tall|big|many|much))\b", re.I)
_OPINION = re.compile(r"\b(?:better|best|worth|recommend|advice|opinion|think|prefer|would you|way to|a good|"
                      r"some good|pros and cons|what (?:can|should) (?:i|we))\b", re.I)
_OPEN = re.compile(r"^(?:why|how (?:do|does|did|can|could|should|would|to|is|are)|how \w+ should|what happens|"
                   r"what would happen|explain|describe|write|tell me about|what are some|what's the difference)\b",
                   re.I)
_LEADING_CLAUSE = re.compile(r"^(?:according to|in|on|at|for|during|after|before)\b[^,?]*,\s*", re.I)


def _word_problem(text: str) -> bool:
    """Numbers (years aside) and a quantity asked for: a word problem ("how many" or "percentage" with one
    number, what / how / find with two)."""
    numbers = [n for n in _QUANTITY_NUMBER.findall(text) if not re.fullmatch(r"1[1-9]\d\d|20\d\d", n)]
    return bool(numbers) and bool(_COUNTS.search(text)) or len(numbers) >= 2 and bool(_ASKS.search(text))


def guess_kind(question: str, has_options: bool = False) -> str:
    """The answer kind a typed question most likely wants: options (given, or typed inline) -> mcq; a question
    opening with is/does/can/should… -> yesno, unless it offers alternatives ("… Rust or Go …"), asks for a
    judgement or asks a second question; arithmetic (also in words: "17 times 23", "the square root of 144"),
    conversions and word problems -> math; why / how to / explain … -> open; who / what / when / where / which
    (also at the end: "… into what?") -> short; anything else -> open. "Can you tell me …" is read past."""
    text = question.strip()
    if has_options or inline_options(text):
        return MULTIPLE_CHOICE
    asked = _LEADING_CLAUSE.sub("", _POLITE.sub("", text))
    polite = asked != text
    if _YES_NO.match(asked) and not polite and not re.match(r"[^?]*[.!]\s", asked):  # not "Will buys 15 …."
        alternatives = re.search(r"\bor\b", re.sub(r"\([^()]*\)", "", asked), re.I)
        second = re.search(r"\?\s*\S|\bif so\b", asked, re.I)
        return "open" if alternatives or second or _OPINION.search(asked) else "yesno"
    if _MATHY.search(asked) or _word_problem(asked):
        return "math"
    if _OPEN.match(asked) or _OPINION.search(asked):
        return "open"
    last = re.split(r"(?<=[.!?])\s+", asked.rstrip("?. "))[-1]
    asks_at_the_end = re.search(r"\b(?:which|what|who|where|when)\b[^.!]*\?$", asked, re.I)  # "… into what?"
    if (_SHORT.match(asked) or _SHORT.match(last) or asks_at_the_end
            or re.search(r"\b(?:is|are|was|were|called|named)$", asked.rstrip()) or polite):
        return "short"
    return "open"


# an option label: "(A)", "A)", "A.", "A:" or "A -", after a space, a line break or ":" / ";" / ",", before a space
_LABEL = re.compile(r"(?:^|(?<=[\s:;,]))(\(?)([A-Ja-j])(\)|\.|:|\s+-)(?=\s)", re.M)
_INITIAL = re.compile(r"(?:^|\s)[A-Z]\.\s*$")  # "J. D. Salinger": a "D." between initials and a name, no label


def inline_options(question: str) -> tuple[str, tuple[tuple[str, str], ...]] | None:
    """(the question without them, its options) when options are typed into the question ("Which is a mammal?
    (A) shark (B) dolphin", one per line or in a run; "A)", "A.", "A:" and lower-case letters too); None when
    there are none: a label standing alone ("Chester A. Arthur", "part (a)"), letters not in order from A, or
    labels inside a sentence that goes on ("(a) mitosis and (b) meiosis", a question after the last option)."""
    labels = [m for m in _LABEL.finditer(question) if not (m.group(3) == "." and _INITIAL.search(question[:m.start()])
                                                            and re.match(r"\s*[A-Z]", question[m.end():]))]
    for first in (m for m in labels if m.group(2) in "Aa"):
        style, case = (first.group(1), first.group(3).strip()), first.group(2).islower()
        chain = [first]
        for m in labels:
            expected = chr(ord(chain[-1].group(2)) + 1)
            if (m.start() > chain[-1].end() and m.group(2) == expected
                    and (m.group(1), m.group(3).strip()) == style and m.group(2).islower() == case):
                chain.append(m)
        if len(chain) < 2:
            continue
        ends = [m.start() for m in chain[1:]] + [len(question)]
        texts = [question[m.end():end].strip().rstrip(";,").strip() for m, end in zip(chain, ends)]
        if (all(texts) and "?" not in "".join(texts)
                and not any(re.search(r"\b(?:and|or)$", t, re.I) for t in texts[:-1])):
            stem = re.sub(r"\s*(?:options|choices)\s*:\s*$", "", question[:first.start()], flags=re.I).strip()
            return stem, tuple((m.group(2).upper(), t) for m, t in zip(chain, texts))
    return None


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


def within_bound(tasks: Sequence[Task], limit: int) -> tuple[list[Task], str | None]:
    """The data rows' tasks whose question (with its options) fits `limit` characters, and the one sentence
    saying how many were left out, never sent to a model (eval, build-memory); None when all fit."""
    kept = [t for t in tasks if not question_refused(len(format_task(t)), limit)]
    over = [t.id for t in tasks if t not in kept]
    if not over:
        return kept, None
    shown = ", ".join(quoted(i, 40) for i in over[:3]) + (f" and {len(over) - 3:,} more" if len(over) > 3 else "")
    return kept, (f"{len(over):,} question{'s' if len(over) > 1 else ''} over the question limit of {limit:,} "
                  f"characters {'were' if len(over) > 1 else 'was'} skipped, never sent ({shown}); shorten "
                  "them in the data to run them.")
