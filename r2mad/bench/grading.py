"""`python -m r2mad bench --grading`: the grader on the hand-graded sets and GSM8K's published solutions (by the
rules, then with a judge backbone when one is named), and what a judge adds to a debate's wall and calls on a
scripted backbone (a short-answer debate whose agents name a composer by surname: undecided by rule)."""
from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

from r2mad.backends.base import Capabilities
from r2mad.grading.judge import Judge
from r2mad.grading.measure import gsm8k_tally, judged_rows, pairs_tally, replies_tally
from r2mad.types import Completion, Task


def rows_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]


def grading_figures(replies: list[Path], pairs: Path | None, gsm8k: Path | None, judge=None
                    ) -> list[tuple[str, str]]:
    """Agreement with the hand verdicts per kind (undecided, and answers wrongly scored correct), pairs grouped
    that are different, GSM8K's authors' verdicts; with `judge` (a Judge), the same after it graded what the
    rules left undecided."""
    out: list[tuple[str, str]] = []
    reply_rows = [row for path in replies for row in rows_of(path)]
    judged = asyncio.run(judged_rows(reply_rows, judge)) if judge else None
    for kind, t in replies_tally(reply_rows, judged).items():
        out.append((f"{kind}: agree with the hand verdict", f"{t.agree}/{t.items} = {t.share:.1%}"))
        out.append((f"{kind}: undecided · scored correct but not", f"{t.undecided} · {len(t.harmful)}"))
    if pairs:
        pair_rows = rows_of(pairs)
        pair_judged = asyncio.run(judged_rows(pair_rows, judge, pairs=True)) if judge else None
        tallies = pairs_tally(pair_rows, pair_judged)
        out.append(("pairs: agree (same / different)",
                    f"{sum(t.agree for t in tallies.values())}/{sum(t.items for t in tallies.values())}"))
        out.append(("pairs: undecided · different answers grouped",
                    f"{sum(t.undecided for t in tallies.values())} · {sum(len(t.harmful) for t in tallies.values())}"))
    if gsm8k:
        t = gsm8k_tally(rows_of(gsm8k))
        out.append(("GSM8K solutions: agree with the authors' is_correct", f"{t.agree}/{t.items} = {t.share:.2%}"))
    return out


class _Scripted:
    """A backbone that answers after `latency` s: agent 1 a surname, the others initials and surname; a judge
    CORRECT."""
    capabilities = Capabilities()

    def __init__(self, name: str, latency: float):
        self.name, self.model, self.latency, self.calls = name, None, latency, 0

    async def chat(self, messages, *, n=1, **options):
        self.calls += 1
        reply = ("CORRECT" if "Grade the candidate" in messages[-1].content else  # agent 1 of each round: a surname
                 "Final answer: Mozart" if self.calls % 3 == 1 else "Final answer: W. A. Mozart")
        await asyncio.sleep(self.latency)
        return [Completion(reply, 20, 5, self.latency) for _ in range(n)]


def judge_cost_figures(latency: float) -> list[tuple[str, str]]:
    """One MAD debate (3 agents x 3 rounds, early stop on) without a judge and with one, on scripted backbones
    that answer after `latency` s: rounds, calls and wall."""
    from r2mad.debate import Debate
    from r2mad.methods import PLAIN, make_method
    from r2mad.settings.config import DebateSettings

    task = Task("short", "Which composer wrote The Magic Flute?", gold="Wolfgang Amadeus Mozart", id="bench-judge")
    out = []
    for label, judged in (("without a judge", False), ("with a judge", True)):
        agents, grader = _Scripted("agents", latency), _Scripted("judge", latency)
        settings = DebateSettings(early_stop=True, answer_guard="off")
        started = time.perf_counter()
        t = asyncio.run(Debate(agents, make_method(PLAIN, settings),
                               judge=Judge(grader) if judged else None).run(task))
        wall = time.perf_counter() - started
        out.append((f"{label}: rounds · agent calls · judge calls", f"{len(t.rounds)} · {agents.calls} · "
                                                                      f"{grader.calls}"))
        out.append((f"{label}: debate wall (s) · final verdict", f"{wall:.2f} · "
                                                                 f"{'correct' if t.correct else t.correct}"))
    return out
