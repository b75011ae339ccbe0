"""Honest one-line states of a debate, in words a visitor reads without knowing the code: running (with
the current majority), finished (correct, wrong, or no answer and why), stopped (after which round, no
final answer), failed (why, and how many calls were made). Pure; no Gradio, no markup."""
from __future__ import annotations

from typing import Sequence

from r2mad.grading.answers import plurality_vote, same_answer
from r2mad.grading.outcome import TIME_LIMIT
from r2mad.grading.verdicts import how_graded
from r2mad.methods import REGISTRY, needs_bank
from r2mad.text import clip
from r2mad.types import Judged, Round, Task, Transcript
from r2mad.ui.render.blind import is_blind


def finished_rounds(t: Transcript) -> list[Round]:
    return [r for r in t.rounds if not r.details.get("running")]


def majority(rnd: Round, task: Task | str, judged: Sequence[Judged] = ()) -> tuple[str | None, int, int]:
    """(plurality answer or None, agents holding it, agents in the round); `judged`: the run's judge verdicts."""
    answers = [turn.answer for turn in rnd.turns]
    if not answers:
        return None, 0, 0
    vote = plurality_vote(answers, task, judged)
    if vote.value is None:
        return None, 0, len(answers)
    held = sum(1 for a in answers if a.value is not None and same_answer(a, vote, task, judged))
    return vote.value, held, len(answers)


def tied(rnd: Round, task: Task | str, judged: Sequence[Judged] = ()) -> bool:
    """Another answer has as many agents as the round's plurality answer (the vote then goes to the earliest
    agent holding a top answer)."""
    value, held, _ = majority(rnd, task, judged)
    winner = next((t.answer for t in rnd.turns if t.answer.value == value), None)
    others = [t.answer for t in rnd.turns if t.answer.value is not None and winner is not None
              and not same_answer(t.answer, winner, task, judged)]
    return any(sum(1 for b in others if same_answer(a, b, task, judged)) >= held for a in others)


def vote_words(rnd: Round, task: Task | str, short: bool = False, judged: Sequence[Judged] = ()) -> str:
    """How a round's vote went, in words that say what it is: "B, majority (2 of 3 agents)"; without a
    majority, "A, plurality (2 of 4 agents)" or, on a tie, "A, tie (1 of 3 agents each); the earliest agent's
    answer wins". `short` for a table cell: "B (2/3)", "A (2/4, plurality)", "A (1/3, tie: earliest agent)"."""
    value, held, n = majority(rnd, task, judged)
    if value is None:
        return "none" if short else "no answer in the task's format"
    value = clip(value)
    if 2 * held > n:
        return f"{value} ({held}/{n})" if short else f"{value}, majority ({held} of {n} agents)"
    if tied(rnd, task, judged):
        return (f"{value} ({held}/{n}, tie: earliest agent)" if short else
                f"{value}, tie ({held} of {n} agents each); the earliest agent's answer wins")
    return f"{value} ({held}/{n}, plurality)" if short else f"{value}, plurality ({held} of {n} agents)"


def _errors(t: Transcript) -> list[str]:
    return [turn.error for r in t.rounds for turn in r.turns if turn.error] + \
           [c.error for r in t.rounds for c in r.aux if c.error]


def failure_reason(t: Transcript) -> str:
    errors = _errors(t)
    text = errors[0] if errors else (t.notices[-1] if t.notices else "the debate failed")
    low = text.lower()
    if "could not reach" in low or "connection" in low or "unreachable" in low:
        return "could not reach the endpoint"
    if "did not answer within" in low or "timed out" in low:
        return "the endpoint did not answer in time"
    if "did not finish within" in low and "time limit" in low:
        return "round 0 did not finish within the time limit"
    return text.rstrip(".")


def _all_cut(rnd: Round, max_tokens: object) -> bool:
    if not isinstance(max_tokens, int) or not rnd.turns:
        return False
    return all(turn.answer.value is None and not turn.error and turn.tokens_out >= max_tokens
               for turn in rnd.turns)


def outcome_line(t: Transcript) -> str:
    """The debate's state in one line, e.g. "Final answer: B — correct", "Stopped after round 0 — no
    final answer", "Failed: could not reach the endpoint (0 calls)"; " · memory off" when a method that
    reads a memory bank ran without one."""
    line = _outcome(t) + (time_stop(t) if t.status == "done" else "")
    return f"{line} · memory off" if memory_off(t) else line


def time_stop(t: Transcript) -> str:
    """" · stopped after round 1 of 2 to stay within the time limit" for a debate that ended early for time."""
    note = next((n for n in t.notices if TIME_LIMIT in n), None)
    return f" · s{note[1:note.index(TIME_LIMIT) + len(TIME_LIMIT)]}" if note else ""


def memory_off(t: Transcript) -> bool:
    """A method that reads a memory bank ran without one (the run's notices say why); a blind debate
    (ui/render/blind.py) keeps that notice only where its method reads a bank."""
    return (needs_bank(t.method) or is_blind(t.method)) and any(n.startswith("Memory off") for n in t.notices)


def _outcome(t: Transcript) -> str:
    done = finished_rounds(t)
    calls = t.usage().calls
    if t.status == "running":
        now = len(done)
        if not done:
            return "Round 0 running — each agent answers alone first"
        value, _, _ = majority(done[-1], t.task, t.judged)
        lead = f"leading {vote_words(done[-1], t.task, judged=t.judged)}" if value else "no answer leads yet"
        return f"Round {now} running — {lead} after round {done[-1].index}"
    if t.status == "failed":
        answered = [r for r in done if any(not turn.error for turn in r.turns)]
        where = f" after round {answered[-1].index}" if answered else ""
        return f"Failed{where}: {failure_reason(t)} ({calls} call{'s' if calls != 1 else ''})"
    if t.status == "cancelled":
        if not done:
            return "Stopped before round 0 finished — no final answer"
        value, _, _ = majority(done[-1], t.task, t.judged)
        seen = f" (round {done[-1].index} led {vote_words(done[-1], t.task, judged=t.judged)})" if value else ""
        return f"Stopped after round {done[-1].index} — no final answer{seen}"
    if t.final.value is None:
        last = done[-1] if done else None
        if last is not None and _all_cut(last, (t.settings or {}).get("max_tokens")):
            return "No final answer — every answer was cut at the token limit; raise Max tokens"
        return "No final answer — no agent gave an answer in the task's format"
    if t.correct is None:
        verdict = ("right or wrong shown after your vote" if is_blind(t.method) else
                   "no gold answer given" if t.task.gold is None else
                   how_graded(t.final, t.task, t.judged) or "not scored")  # "undecided: no judge (…)"
    else:
        verdict = "correct" if t.correct else f"wrong (gold {clip(t.task.gold)})"
    last = done[-1] if done else None
    how = ""
    if last is not None and last.turns and not is_blind(t.method):
        _, held, n = majority(last, t.task, t.judged)
        if 2 * held <= n:  # no majority: say the vote was a plurality, and how a tie went
            how = f" · by {vote_words(last, t.task, judged=t.judged).split(', ', 1)[1]}"
    letters = [t.final.value] + ([t.task.gold] if t.correct is False else [])
    return f"Final answer: {clip(t.final.value)} — {verdict}{options_words(t.task, letters)}{how}"


def options_words(task, letters: list[str | None]) -> str:
    """The texts of the options a verdict names, " · A = 1991, B = 1989", so the line reads without the
    question open; "" for an answer that is not an option's letter."""
    options = dict(task.options or ())
    shown = []
    for letter in dict.fromkeys(x for x in letters if x in options):
        shown.append(f"{letter} = {clip(options[letter])}")
    return f" · {', '.join(shown)}" if shown else ""


def progress_line(title: str, t: Transcript) -> str:
    """Per-method progress of a side-by-side run: "R²-MAD: round 1 of rounds 0–2" (rounds count from 0, as
    the form's "Rounds in all (incl. round 0)" does), "MAD: Final answer…"."""
    planned = int((t.settings or {}).get("rounds") or 0) - 1
    if t.status != "running":
        return f"{title}: {outcome_line(t)}"
    running = next((r for r in t.rounds if r.details.get("running")), None)
    index = running.index if running else len(t.rounds)
    if index == 0:
        return f"{title}: round 0 of rounds 0–{max(planned, 0)} (each agent alone)"
    return f"{title}: round {index} of rounds 0–{max(planned, index)}"


def title_of(method: str) -> str:
    """A method's name as the papers' tables write it ("R²-MAD", "MAD-M² (O)")."""
    base = method.removesuffix("+advice")
    name = REGISTRY[base].label if base in REGISTRY else method
    return name + (" + advice" if method.endswith("+advice") else "")


def running_words(t: Transcript, elapsed_s: float) -> str:
    """A long wait's progress with its reason in numbers: "round 2 of rounds 0–2 · 7 calls · 41 s"."""
    planned = int((t.settings or {}).get("rounds") or 0) - 1
    running = next((r for r in t.rounds if r.details.get("running")), None)
    index = running.index if running else len(t.rounds)
    calls = t.usage().calls
    return (f"round {index} of rounds 0–{max(planned, index)} · {calls} call{'s' if calls != 1 else ''} · "
            f"{elapsed_s:.0f} s")
