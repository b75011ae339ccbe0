"""A chat request read as a debate's question, and a finished debate written back as a chat reply: the options
written as "A) ..." lines, the answer form a harness's prompt asks for ("ANSWER: $LETTER", \\boxed{}, "####"),
the final answer alone in that form, and the rationale and each round as reasoning text. Pure functions."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from r2mad.grading.answers import strip_think
from r2mad.grading.kinds import KIND_NAMES
from r2mad.grading.tasks import task_from_input
from r2mad.settings.config import ConfigError
from r2mad.text import quoted
from r2mad.types import Round, Task, Transcript

OPTION_LINE = re.compile(r"^\s*(?:\(([A-Z])\)|([A-Z])[).:])\s+(\S.*?)\s*$")
# the answer forms a caller's prompt may ask for, in the order they are looked for
FORMS = (("answer-line", re.compile(r"ANSWER\s*:\s*\$")), ("boxed", re.compile(r"\\boxed")),
         ("hashes", re.compile(r"####")))
INSTRUCTION_CHARS = 400  # a paragraph with a "$LETTER"-like placeholder and no longer than this is an instruction
PLACEHOLDER = re.compile(r"\$[A-Z]{3,}")
NUMBER = re.compile(r"-?\$?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?")  # 18, $18.00, 1,450,000, -2.50
NUMBER_KINDS = ("math", "integer")  # kinds whose number is written plain on the answer line
RATIONALE_CHARS = 300
DEFAULT_KIND = "math"  # a served question without options or a named kind


@dataclass(frozen=True)
class Asked:
    """A chat prompt as a debate question: the text, its options (multiple choice) and the answer form asked for."""
    question: str
    options: tuple[tuple[str, str], ...] = ()
    form: str = "plain"  # plain | answer-line | boxed | hashes


def message_text(content: Any) -> str:
    """A chat message's text: a string, or the text parts of a list of parts (images and audio are refused)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if not isinstance(part, dict) or part.get("type") != "text":
                kind = part.get("type") if isinstance(part, dict) else type(part).__name__
                raise ValueError(f"A message part of type {quoted(kind)} cannot be debated; send text only.")
            texts.append(str(part.get("text") or ""))
        return "\n".join(texts)
    raise ValueError("The last user message has no text; send the question as its content.")


def last_user_text(messages: Any) -> str:
    if not isinstance(messages, list) or not messages:
        raise ValueError("messages is empty; send at least one user message holding the question.")
    users = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"]
    if not users:
        raise ValueError("No message has the role 'user'; send the question as a user message.")
    return message_text(users[-1].get("content"))


def answer_form(text: str) -> str:
    return next((name for name, pattern in FORMS if pattern.search(text)), "plain")


def read_prompt(text: str) -> Asked:
    """The question, its "A) ..." option lines (the last run of two or more, lettered from A) and the answer form.
    The caller's instruction about the form is left out of the question (the debaters have their own): a short
    paragraph naming it with a placeholder ("ANSWER: $LETTER") when a question remains, else each sentence naming
    it."""
    form = answer_form(text)
    paragraphs = re.split(r"\n\s*\n", text.replace("\r\n", "\n"))
    for whole in (True, False):
        kept = [without_instruction(p, form, whole) for p in paragraphs]
        lines = "\n\n".join(p for p in kept if p).split("\n")
        options, where = _option_run(lines)
        question = "\n".join(line for i, line in enumerate(lines) if i not in where).strip()
        if question:
            break
    return Asked(question, options, form)


def without_instruction(paragraph: str, form: str, whole: bool) -> str:
    """The paragraph without the caller's instruction about the answer form (`whole`: a short paragraph with a
    placeholder goes whole)."""
    if form == "plain" or answer_form(paragraph) != form:
        return paragraph
    if whole and len(paragraph) <= INSTRUCTION_CHARS and PLACEHOLDER.search(paragraph):
        return ""
    lines = []
    for line in paragraph.split("\n"):
        sentences = re.split(r"(?<=[.!?])[ \t]+", line)
        kept = " ".join(s for s in sentences if answer_form(s) != form)
        if kept or not line.strip():
            lines.append(kept)
    return "\n".join(lines).strip() or paragraph


def _option_run(lines: list[str]) -> tuple[tuple[tuple[str, str], ...], set[int]]:
    best: list[tuple[int, str, str]] = []
    run: list[tuple[int, str, str]] = []
    for i, line in enumerate(lines):
        if not line.strip():
            continue  # options may stand a blank line apart
        m = OPTION_LINE.match(line)
        letter = m and (m.group(1) or m.group(2))
        if m and letter == chr(ord("A") + len(run)):
            run.append((i, letter, m.group(3)))
            continue
        if len(run) >= 2:
            best = run
        run = [(i, letter, m.group(3))] if m and letter == "A" else []
    if len(run) >= 2:
        best = run
    return tuple((letter, text) for _, letter, text in best), {i for i, _, _ in best}


def known_kinds() -> tuple[str, ...]:
    """The answer kinds a request may name: the kinds registry's names."""
    return KIND_NAMES


def task_for(asked: Asked, kind: str | None, max_chars: int, default: str = DEFAULT_KIND) -> tuple[Task, list[str]]:
    """The debate's task, and what was decided for the caller. A kind the request names (its body, then its model
    name) wins; without one, options found make it multiple choice, else it is the served default (math unless
    `serve --kind` says otherwise), said as a change. Options under another named kind stay in the question."""
    named = (kind or "").strip()
    kind = named or ("mcq" if asked.options else default)
    if kind not in known_kinds():
        raise ConfigError(f"Unknown answer kind {quoted(kind)}; use one of: {', '.join(known_kinds())}.")
    if kind == "mcq" and not asked.options:
        raise ValueError("kind is mcq but no options were found; write each option on its own line as "
                         "'A) text'.")
    changes = [] if named or asked.options else [
        f"No answer kind was named, so the question was debated as {kind} (the server's default); name one with "
        "\"kind\" in the body or ?kind= in the model name."]
    if kind == "mcq":
        return task_from_input(asked.question, asked.options, None, max_chars=max_chars, kind=kind), changes
    question = "\n".join([asked.question, *(f"{letter}) {text}" for letter, text in asked.options)])
    return task_from_input(question, None, None, max_chars=max_chars, kind=kind), changes


def plain_number(value: str) -> str:
    """A number as a harness's exact match compares it (GSM8K's `#### 18`): no dollar sign, no thousands commas, no
    zeros after the point ($1,200.50 -> 1200.5, $18.00 -> 18); any other value as it is."""
    if not NUMBER.fullmatch(value.strip()):
        return value
    number = value.strip().replace("$", "").replace(",", "")
    return number.rstrip("0").rstrip(".") if "." in number else number


def answer_line(value: str | None, kind: str, form: str) -> str:
    if value is None:
        return "The debate reached no answer: no agent gave one in the expected format."
    if kind in NUMBER_KINDS:
        value = plain_number(value)
    if form == "answer-line":
        return f"ANSWER: {value}"
    if form == "boxed":
        return f"The answer is \\boxed{{{value}}}."
    if form == "hashes":
        return f"#### {value}"
    return f"The answer is ({value})." if kind == "mcq" else f"The answer is {value}."


def quiet(text: str) -> str:
    """An agent's text on one line with its answer markers taken out, so that a harness reading the reply finds
    the answer only on the answer line."""
    text = strip_think(text)
    text = re.sub(r"\(\(([^()]*)\)\)", r"\1", text)
    text = re.sub(r"\\boxed", "", text).replace("####", "")
    text = re.sub(r"(?i)\banswer\s*:", "answer -", text)
    return " ".join(text.split())


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def rationale(t: Transcript) -> str:
    """One or two sentences: how the debate ended, and one agent's reasoning for the final answer."""
    last = t.rounds[-1] if t.rounds else None
    value = t.final.value
    if last is None:
        return f"{t.method} on {t.backbone} ran no round."
    holders = [x for x in last.turns if x.answer.value == value and value is not None]
    said = (f"{len(holders)} of {len(last.turns)} agents chose {value} in round {last.index}"
            if value is not None else f"no agent gave a usable answer in round {last.index}")
    head = f"{t.method} on {t.backbone}, {len(t.rounds)} round{'s' if len(t.rounds) != 1 else ''}: {said}."
    if not holders or not quiet(holders[0].text):
        return head
    return f"{head} Agent {holders[0].agent + 1}: {clip(quiet(holders[0].text), RATIONALE_CHARS)}"


def reply_content(t: Transcript, form: str) -> str:
    """The reply's content: the final answer alone, in the form the caller asked for (the rationale goes to
    reasoning_content, so that a harness reading the content finds no other number)."""
    return answer_line(t.final.value, t.task.kind, form)


def round_text(rnd: Round) -> str:
    """A finished round as reasoning text: each agent's answer and the start of its reasoning."""
    lines = [f"Round {rnd.index} (consensus {rnd.consensus:.2f})"]
    for x in rnd.turns:
        said = f"error: {x.error}" if x.error else clip(quiet(x.text), 200)
        lines.append(f"Agent {x.agent + 1} -> {x.answer.value or 'no answer'}: {said}")
    return "\n".join(lines) + "\n\n"
