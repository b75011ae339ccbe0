"""An LLM judge as a second annotator: on any backbone it reads a finished transcript and proposes taxonomy
labels, each with the turn (round, agent) and a span quoted from that turn. Its reply is parsed leniently
(any layout that names a label, a round, an agent and a quote) and strictly checked: an unknown label, a
turn the debate does not have, or a quote not found in that turn's text drops the proposal. Storing and
scoring the judge's suggestions is judge_book.py's job."""
from __future__ import annotations

import re
from dataclasses import dataclass

from r2mad.annotation.detectors import Suggestion
from r2mad.grading.answers import strip_think
from r2mad.types import Message, Transcript

KIND = "llm"  # a judge's suggestions are stored as detector "llm:<backbone>"
TURN_CHARS = 700  # the judge reads each turn's last characters (small models have small windows)
MIN_QUOTE = 8  # characters: a shorter quote proves nothing
_QUOTE = re.compile(r'"([^"\n]+)"|“([^”\n]+)”|«([^»\n]+)»')
_ROUND = re.compile(r"\b(?:round|r)\s*#?\s*(\d+)", re.I)
_AGENT = re.compile(r"\b(?:agent|a)\s*#?\s*(\d+)", re.I)

SYSTEM = """You review a finished multi-agent debate for annotators. Find what went wrong in it, using only \
labels from the list you are given. For each problem you find, write exactly three lines:
LABEL: <one label id from the list>
TURN: round <number>, agent <number>
QUOTE: "<a few words copied exactly from that agent's text in that round>"
Leave a blank line between problems. Name only problems the text shows; if you find none, write NONE."""


@dataclass(frozen=True)
class Verdict:
    """What one judge call gave: the suggestions kept, a sentence per proposal dropped, the raw reply."""
    judge: str
    suggestions: tuple[Suggestion, ...]
    dropped: tuple[str, ...]
    reply: str
    tokens: int = 0


def judge_name(backbone: str) -> str:
    return f"{KIND}:{backbone}"


def _tail(text: str, limit: int = TURN_CHARS) -> str:
    text = " ".join(strip_think(text or "").split())
    return text if len(text) <= limit else "…" + text[-limit:]


def judge_messages(t: Transcript, taxonomy: dict[str, str]) -> list[Message]:
    """The judge's prompt: the label list, the question with its gold and final answer, every turn (rounds
    and agents numbered from 1 as people read them)."""
    labels = "\n".join(f"- {label}: {about}" for label, about in taxonomy.items())
    outcome = (f"Correct answer: {t.task.gold}. The debate's final answer: {t.final} "
               f"({'right' if t.correct else 'wrong'})." if t.task.gold is not None
               else f"The debate's final answer: {t.final} (no answer key).")
    options = "".join(f"\n({k}) {v}" for k, v in (t.task.options or ()))
    turns = "\n\n".join(f"Round {rnd.index + 1}, agent {turn.agent + 1} (answer {turn.answer}):\n{_tail(turn.text)}"
                        for rnd in t.rounds for turn in sorted(rnd.turns, key=lambda x: x.agent))
    user = (f"Labels:\n{labels}\n\nQuestion: {t.task.question}{options}\n{outcome}\n\nThe debate:\n\n{turns}\n\n"
            "Which labels apply? Answer in the three-line format, or NONE.")
    return [Message("system", SYSTEM), Message("user", user)]


def _squash(text: str) -> str:
    return " ".join(text.casefold().replace("’", "'").split())


def _label_pattern(taxonomy: dict[str, str]) -> re.Pattern:
    names = sorted(taxonomy, key=len, reverse=True)  # the longest first: no label is read as a prefix of another
    spelled = [re.escape(n).replace("_", "[_ -]") for n in names]
    return re.compile(r"(?<![A-Za-z_])(" + "|".join(spelled) + r")(?![A-Za-z_])", re.I)


def parse_reply(reply: str, t: Transcript, taxonomy: dict[str, str], judge: str) -> tuple[list[Suggestion], list[str]]:
    """The proposals of a judge's reply that hold up: each mention of a taxonomy label, with the round, agent
    and quote written after it (before the next label). Returns (kept, one sentence per dropped)."""
    text = strip_think(reply or "")
    found = list(_label_pattern(taxonomy).finditer(text))
    canonical = {re.sub(r"[_ -]", "_", n.lower()): n for n in taxonomy}
    turns = {(rnd.index, turn.agent): turn for rnd in t.rounds for turn in rnd.turns}
    kept, dropped, seen = [], [], set()
    for i, match in enumerate(found):
        label = canonical[re.sub(r"[_ -]", "_", match.group(1).lower())]
        chunk = text[match.end(): found[i + 1].start() if i + 1 < len(found) else len(text)]
        rnd, agent, quote = _ROUND.search(chunk), _AGENT.search(chunk), _QUOTE.search(chunk)
        if not (rnd and agent and quote):
            dropped.append(f"{label}: no round, agent and quote given")
            continue
        where = (int(rnd.group(1)) - 1, int(agent.group(1)) - 1)
        span = next(g for g in quote.groups() if g is not None).strip()
        turn = turns.get(where)
        if turn is None:
            dropped.append(f"{label}: the debate has no round {where[0] + 1}, agent {where[1] + 1}")
        elif len(span) < MIN_QUOTE or _squash(span) not in _squash(strip_think(turn.text)):
            dropped.append(f"{label}: the quote {span[:60]!r} is not in round {where[0] + 1}, "
                           f"agent {where[1] + 1}'s text")
        elif (label, where) not in seen:
            seen.add((label, where))
            kept.append(Suggestion(label, judge, where[0], (where[1],),
                                   f"the judge ({judge.partition(':')[2]}) quotes agent {where[1] + 1} in round "
                                   f"{where[0] + 1}: “{span}”", {"span": span, "kind": KIND, "judge": judge}))
    return kept, dropped


async def judge_transcript(backend, backbone: str, t: Transcript, taxonomy: dict[str, str], *,
                           max_tokens: int = 384, seed: int | None = 0) -> Verdict:
    """One call of `backend` on the finished transcript; raises the backend's error if the call fails."""
    t = t.finished()
    [reply] = await backend.chat(judge_messages(t, taxonomy), n=1, temperature=0.0, max_tokens=max_tokens, seed=seed)
    name = judge_name(backbone)
    kept, dropped = parse_reply(reply.text, t, taxonomy, name)
    return Verdict(name, tuple(kept), tuple(dropped), reply.text, reply.tokens_in + reply.tokens_out)
