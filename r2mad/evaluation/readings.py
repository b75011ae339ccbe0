"""How an eval's answers were read and graded: accuracy by the strict reading (the form the prompt asked for)
beside the flexible one (the debate's own), as lm-eval reports strict-match and flexible-extract; the verdicts a
careful grader could not sign kept apart (undecided: the rules could not tell and no judge did); and the readings
and rules behind the final answers, counted per kind. Pure, over transcripts."""
from __future__ import annotations

from collections import Counter
from typing import Sequence

from r2mad.evaluation.metrics import Estimate, _estimate, scored
from r2mad.evaluation.results import Results, label, table
from r2mad.grading.answers import plurality_vote
from r2mad.grading.kinds import kind_of
from r2mad.grading.verdicts import how_graded, how_read
from r2mad.types import UNPARSED, Transcript


def strict_final(t: Transcript):
    """The vote of the last round counting only answers found in the asked-for form (the others: UNPARSED)."""
    kind = kind_of(t.task)
    answers = [turn.answer if kind.reading(turn.answer) == "strict" else UNPARSED for turn in t.rounds[-1].turns]
    return plurality_vote(answers, t.task, t.judged)


def verdict(t: Transcript, strict: bool = False) -> str:
    """correct / wrong / undecided / no answer, for a scored transcript's final answer (or its strict one)."""
    final = strict_final(t) if strict else t.final
    if not final.parsed:
        return "no answer"
    ruling = kind_of(t.task).grade(final, t.task, t.judged)
    return {True: "correct", False: "wrong", None: "undecided"}[ruling.same]


def accuracies(ts: Sequence[Transcript]) -> tuple[Estimate, Estimate, int]:
    """(flexible accuracy, strict accuracy, undecided finals): undecided counts as not correct in both."""
    done = scored(ts)
    flexible = [verdict(t) for t in done]
    return (_estimate(v == "correct" for v in flexible), _estimate(verdict(t, strict=True) == "correct" for t in done),
            flexible.count("undecided"))


def rule_counts(ts: Sequence[Transcript]) -> Counter:
    """(kind, how the final answer was read, how it was graded) counted over the scored transcripts."""
    return Counter((t.task.kind, how_read(t.final, t.task), how_graded(t.final, t.task, t.judged) or "no gold")
                   for t in scored(ts))


def section(res: Results) -> list[str]:
    """The report's "How answers were read and graded" section."""
    rows, counts = [], Counter()
    for name, ts in res.by_method.items():
        if not scored(ts):
            continue
        flexible, strict, undecided = accuracies(ts)
        rows.append([label(name), f"{flexible.value:.3f}", f"{strict.value:.3f}", str(undecided), str(flexible.n)])
        counts += rule_counts(ts)
    if not rows:
        return []
    kinds = sorted({k for k, _, _ in counts})
    out = ["", "## How answers were read and graded", "",
           table(["Method", "Accuracy (flexible reading)", "Accuracy (strict reading)", "Undecided", "n"], rows), "",
           "Flexible: the answer the debate used (the asked-for form, else the committed answer in the reply's "
           "closing words). Strict: only answers in the asked-for form count. Undecided: the rules could not tell "
           "the final answer from the gold and no judge did; counted as not correct, and apart here."]
    for kind in kinds:
        total = sum(n for (k, _, _), n in counts.items() if k == kind)
        lines = [[read, graded, str(n), f"{n / total:.1%}"]
                 for (k, read, graded), n in sorted(counts.items(), key=lambda kv: -kv[1]) if k == kind]
        out += ["", f"Final answers of the {kind} kind ({total}), by reading and rule:", "",
                table(["Read", "Graded", "Finals", "Share"], lines)]
    return out
