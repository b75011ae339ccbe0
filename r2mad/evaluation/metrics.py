"""Scores for finished transcripts: accuracy with Wilson intervals, per-round agent accuracy,
stance transitions, the shared-misconception subset, parse failures and cost. Pure functions over
`Transcript`s; no I/O, no model calls, no plotting."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Literal, Sequence

from r2mad.grading.answers import consensus_ratio, is_correct, plurality_vote
from r2mad.methods import names
from r2mad.types import UNPARSED, AgentTurn, Transcript

Z_95 = 1.959963984540054  # two-sided 95% normal quantile
SINGLE_AGENT_METHODS = frozenset({*names("baseline"), "self-consistency", "icl_cot"})  # + older spellings
AUXILIARY_KINDS = ("judge", "advice", "guard", "grade")


@dataclass(frozen=True)
class Estimate:
    """A proportion with its 95% Wilson interval; n is how many items it was measured on."""
    value: float
    low: float
    high: float
    n: int


@dataclass(frozen=True)
class Transitions:
    """Agent-round pairs (round t-1 -> t) by correctness before -> after."""
    c2w: int = 0
    w2c: int = 0
    c2c: int = 0
    w2w: int = 0

    def __add__(self, other: Transitions) -> Transitions:
        return Transitions(self.c2w + other.c2w, self.w2c + other.w2c,
                           self.c2c + other.c2c, self.w2w + other.w2w)


# --- per transcript -----------------------------------------------------------------------------

def _abstained(turn: AgentTurn) -> bool:
    return turn.error is not None


def _turn_correct(turn: AgentTurn, t: Transcript) -> bool:
    """Abstentions and UNPARSED answers are never correct."""
    if _abstained(turn) or not turn.answer.parsed:
        return False
    return bool(is_correct(turn.answer, t.task, t.judged))


def _require_gold(t: Transcript) -> None:
    if t.task.gold is None:
        raise ValueError(f"Task {t.task.id or t.task.question[:40]!r} has no gold answer, so agent "
                         "correctness is undefined; score only transcripts whose task has a gold answer.")


def _turns_by_agent(t: Transcript, round_index: int) -> dict[int, AgentTurn]:
    return {turn.agent: turn for turn in t.rounds[round_index].turns}


def agent_correct(t: Transcript, round_index: int) -> list[bool]:
    """Correctness of each agent's answer in round `round_index` (0 = independent answers), in agent
    order. Abstained and UNPARSED turns count as not correct."""
    _require_gold(t)
    if not 0 <= round_index < len(t.rounds):
        raise IndexError(f"Round {round_index} is not in this transcript, which has rounds "
                         f"0..{len(t.rounds) - 1}; ask for an index in that range.")
    turns = sorted(t.rounds[round_index].turns, key=lambda turn: turn.agent)
    return [_turn_correct(turn, t) for turn in turns]


def final_correct(t: Transcript) -> bool | None:
    """Whether the final (voted) answer matches gold; None without gold. UNPARSED is never correct."""
    if t.task.gold is None:
        return None
    return t.final.parsed and bool(is_correct(t.final, t.task, t.judged))


def is_single_agent(t: Transcript) -> bool:
    first = t.rounds[0].turns if t.rounds else ()
    return t.method.lower() in SINGLE_AGENT_METHODS or len(first) < 2


def shared_misconception(t: Transcript) -> bool | None:
    """True when strictly more than half of the round-0 agents are wrong (UNPARSED and abstentions
    count as wrong): the paper's shared-misconception regime. None without gold or for one agent."""
    if t.task.gold is None or not t.rounds or is_single_agent(t):
        return None
    correct = agent_correct(t, 0)
    return 2 * correct.count(False) > len(correct)


def transitions(t: Transcript) -> Transitions:
    """Count each agent's correctness change between consecutive rounds (t-1 -> t). A pair where
    either turn is an abstention is skipped: a failed call is not a change of mind. Rounds an
    early-stopped debate never ran add no pairs."""
    _require_gold(t)
    total = Transitions()
    for index in range(1, len(t.rounds)):
        before, after = _turns_by_agent(t, index - 1), _turns_by_agent(t, index)
        for agent, turn in after.items():
            prev = before.get(agent)
            if prev is None or _abstained(prev) or _abstained(turn):
                continue
            was, now = _turn_correct(prev, t), _turn_correct(turn, t)
            total += Transitions(c2w=int(was and not now), w2c=int(now and not was),
                                 c2c=int(was and now), w2w=int(not was and not now))
    return total


def parse_failures(t: Transcript) -> int:
    """Agent turns whose answer is UNPARSED, not counting abstentions (failed calls)."""
    return sum(1 for rnd in t.rounds for turn in rnd.turns
               if not _abstained(turn) and not turn.answer.parsed)


def strict_majority_correct(t: Transcript) -> bool | None:
    """The R²-MAD code's score: correct when strictly more than half of the last round's agents
    (abstentions included, as wrong) hold the gold answer. Unlike plurality voting, [B, A, C] with
    gold B scores False. None without gold or without rounds."""
    if t.task.gold is None or not t.rounds:
        return None
    correct = agent_correct(t, len(t.rounds) - 1)
    return 2 * correct.count(True) > len(correct)


def consensus_trajectory(t: Transcript) -> list[float]:
    """Cons(Z) per round, recomputed from the answers (abstentions and UNPARSED agree with nothing)."""
    return [consensus_ratio([UNPARSED if _abstained(turn) else turn.answer for turn in rnd.turns],
                            t.task, t.judged)
            for rnd in t.rounds]


def token_split(t: Transcript) -> dict[str, int]:
    """Tokens in + out of successful calls: agents' debate turns, summaries, and the auxiliary
    judge and advice calls."""
    return {"debate": t.usage(("debate",)).tokens,
            "summary": t.usage(("summary",)).tokens,
            "auxiliary": t.usage(AUXILIARY_KINDS).tokens}


def rounds_used(t: Transcript) -> int:
    """Rounds actually run, round 0 included (a full 3-agent, 3-round debate gives 3)."""
    return len(t.rounds)


# --- aggregates ---------------------------------------------------------------------------------

def wilson_interval(successes: int, n: int, z: float = Z_95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion; (nan, nan) when n is 0."""
    if n == 0:
        return math.nan, math.nan
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z / denom * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def _estimate(outcomes: Iterable[bool]) -> Estimate:
    outcomes = list(outcomes)
    n, k = len(outcomes), sum(outcomes)
    low, high = wilson_interval(k, n)
    return Estimate(k / n if n else math.nan, low, high, n)


def scored(ts: Iterable[Transcript]) -> list[Transcript]:
    """Transcripts that can be scored: a gold answer and a finished (done or failed) run. A failed
    run counts with whatever final answer it has (usually UNPARSED, so wrong); cancelled and
    still-running ones are left out."""
    return [t.finished() for t in ts
            if t.task.gold is not None and t.status in ("done", "failed") and t.finished().rounds]


def accuracy(ts: Sequence[Transcript]) -> Estimate:
    """Share of scored transcripts whose final answer is correct, with a 95% Wilson interval."""
    return _estimate(bool(final_correct(t)) for t in scored(ts))


def strict_majority_accuracy(ts: Sequence[Transcript]) -> Estimate:
    """Share of scored transcripts where strictly more than half the last-round agents are correct."""
    return _estimate(bool(strict_majority_correct(t)) for t in scored(ts))


def agent_accuracy_by_round(ts: Sequence[Transcript]) -> list[float]:
    """Mean agent correctness for each round index, pooled over agents and questions.

    A question whose debate stopped early (all agents agreed) carries its last round forward to the
    later indices: its agents would have kept that answer, and dropping it would leave only the hard,
    still-disputed questions in the later rounds and make them look worse than they are."""
    items = scored(ts)
    if not items:
        return []
    per_transcript = [[agent_correct(t, i) for i in range(len(t.rounds))] for t in items]
    depth = max(len(rows) for rows in per_transcript)
    means = []
    for index in range(depth):
        pooled = [ok for rows in per_transcript for ok in rows[min(index, len(rows) - 1)]]
        means.append(sum(pooled) / len(pooled) if pooled else math.nan)
    return means


def _task_key(t: Transcript) -> str:
    return t.task.id or t.task.question


def shared_misconception_subset(ts: Sequence[Transcript],
                                reference: Sequence[Transcript] | None = None) -> list[Transcript]:
    """Scored transcripts in the shared-misconception regime. With `reference` (e.g. the MAD runs of
    the same questions, as the paper defines the subset), a question belongs when its reference
    transcript is in the regime; this also places single-agent baselines on the subset."""
    if reference is None:
        return [t for t in scored(ts) if shared_misconception(t)]
    keys = {_task_key(r) for r in reference if shared_misconception(r)}
    return [t for t in scored(ts) if _task_key(t) in keys]


def shared_misconception_accuracy(ts: Sequence[Transcript],
                                  reference: Sequence[Transcript] | None = None) -> Estimate:
    """Final accuracy on the shared-misconception subset (paper Fig. 3)."""
    return accuracy(shared_misconception_subset(ts, reference))


def transition_rates(ts: Sequence[Transcript],
                     subset: Literal["all", "shared"] = "all") -> dict[str, float]:
    """Stance-transition rates as in the paper's Table 4: C→W = c2w / (agent-round pairs correct at
    t-1), W→C = w2c / (pairs wrong at t-1); nan when a denominator is 0.

    Ambiguity: the paper says "the fraction of agent-round transitions in which a correct agent
    switches to a wrong answer", which could also be read with all transitions as denominator. We
    condition on the state at t-1 (its "C→W denotes correct agents switching"), so the two rates are
    independent of how many agents started correct. Early-stopped debates add only the pairs they
    ran (no carry-forward here, which would invent C→C / W→W pairs). The counts behind each rate are
    returned as well."""
    if subset not in ("all", "shared"):
        raise ValueError(f"Unknown subset {subset!r}; use 'all' or 'shared'.")
    items = scored(ts) if subset == "all" else shared_misconception_subset(ts)
    total = Transitions()
    for t in items:
        total += transitions(t)
    correct_before, wrong_before = total.c2w + total.c2c, total.w2c + total.w2w
    return {"c2w": total.c2w / correct_before if correct_before else math.nan,
            "w2c": total.w2c / wrong_before if wrong_before else math.nan,
            "correct_before": correct_before, "wrong_before": wrong_before}


def cost(ts: Sequence[Transcript]) -> dict[str, float]:
    """Per-query means in the layout of the paper's Table 10: debate, summary and auxiliary (judge +
    advice) tokens, and wall-clock seconds. Needs no gold; empty input gives nan."""
    items = [t for t in ts if t.status != "running"]
    if not items:
        return {k: math.nan for k in ("debate_tokens", "summary_tokens", "auxiliary_tokens", "seconds")}
    splits = [token_split(t) for t in items]
    n = len(items)
    return {"debate_tokens": sum(s["debate"] for s in splits) / n,
            "summary_tokens": sum(s["summary"] for s in splits) / n,
            "auxiliary_tokens": sum(s["auxiliary"] for s in splits) / n,
            "seconds": sum(t.seconds for t in items) / n}


def parse_failure_rate(ts: Sequence[Transcript]) -> float:
    """UNPARSED turns / answered turns (abstentions excluded from both); nan with no turns."""
    answered = sum(1 for t in ts for rnd in t.rounds for turn in rnd.turns if not _abstained(turn))
    return sum(parse_failures(t) for t in ts) / answered if answered else math.nan


def vote_accuracy_by_round(ts: Sequence[Transcript]) -> list[float]:
    """Accuracy of the plurality vote had the debate ended after round t, for each t (round 0 = the
    agents' independent answers). An early-stopped debate keeps its last vote for the later rounds,
    as in `agent_accuracy_by_round`."""
    items = scored(ts)
    if not items:
        return []
    votes = [[bool(is_correct(plurality_vote([UNPARSED if _abstained(turn) else turn.answer for turn in rnd.turns],
                                             t.task, t.judged), t.task, t.judged)) for rnd in t.rounds]
             for t in items]
    depth = max(len(v) for v in votes)
    return [sum(v[min(i, len(v) - 1)] for v in votes) / len(votes) for i in range(depth)]


def peak_round(curve: Sequence[float]) -> int | None:
    """The earliest round at which a per-round curve is highest; None for an empty curve."""
    values = [x for x in curve if not math.isnan(x)]
    return curve.index(max(values)) if values else None


def call_seconds(t: Transcript) -> float:
    """Seconds the question's successful model calls took, summed (round 0 included, shared or not):
    the time a backend serving one call at a time is busy with this question, excluding waiting."""
    return t.usage().seconds
