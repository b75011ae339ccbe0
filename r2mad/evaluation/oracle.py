"""The oracle gap: how often some agent's final answer was right while the vote was not (the debate
held the answer and discarded it), per method, with the report's section on it. Pure functions over
transcripts; no I/O."""
from __future__ import annotations

from typing import Sequence

from r2mad.evaluation import metrics as m
from r2mad.evaluation.results import Results, fmt, fmt_ci, label, table
from r2mad.types import Transcript


def oracle_correct(t: Transcript) -> bool | None:
    """Whether any agent's answer in the last round is right (abstentions and UNPARSED never are);
    None without a gold answer."""
    if t.task.gold is None or not t.rounds:
        return None
    return any(m.agent_correct(t, len(t.rounds) - 1))


def oracle_gap(t: Transcript) -> bool | None:
    """Some agent ended right and the final (voted) answer is wrong; None without a gold answer."""
    held = oracle_correct(t)
    return None if held is None else held and not m.final_correct(t)


def oracle_accuracy(ts: Sequence[Transcript]) -> m.Estimate:
    """Share of scored questions where some agent's last answer was right (a perfect picker's accuracy)."""
    return m._estimate(bool(oracle_correct(t)) for t in m.scored(ts))


def oracle_gap_rate(ts: Sequence[Transcript]) -> m.Estimate:
    """Share of scored questions where some agent's last answer was right and the vote was not."""
    return m._estimate(bool(oracle_gap(t)) for t in m.scored(ts))


def section(res: Results) -> list[str]:
    rows = []
    for name, ts in res.by_method.items():
        if not m.scored(ts):
            continue
        vote, oracle, gap = m.accuracy(ts), oracle_accuracy(ts), oracle_gap_rate(ts)
        gaps = sum(bool(oracle_gap(t)) for t in m.scored(ts))
        rows.append([label(name), fmt(vote.value), fmt(oracle.value), f"{fmt(gap.value)} ({gaps}/{gap.n})",
                     fmt_ci(gap)])
    if not rows:
        return []
    return ["", "## Oracle gap", "",
            table(["Method", "Vote accuracy", "Some agent right at the end", "Oracle gap", "95% CI"], rows), "",
            "Oracle gap: the share of questions where at least one agent's last-round answer was right and the "
            "voted final answer was not — a right answer the debate held and its vote discarded (Wilson 95% "
            "interval). A single-agent method's gap is 0 by construction; Self-Consistency's samples count as "
            "its agents. Annotators see such runs flagged `correct_answer_outvoted`."]
