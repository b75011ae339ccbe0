"""The LLM judge's place in the label book: its suggestions stored beside the detectors' (detector
`llm:<backbone>`, reviewed by people like theirs), which runs each judge read, and its agreement with
people per label (Cohen's κ, precision, recall against the adjudicated labels). Not for prompting or
parsing (judge.py)."""
from __future__ import annotations

from dataclasses import dataclass

from r2mad.annotation import agreement
from r2mad.annotation.book import LabelBook
from r2mad.annotation.judge import KIND, Verdict


@dataclass(frozen=True)
class JudgeScore:
    """One judge on one label, over the n adjudicated runs it read."""
    judge: str
    label: str
    n: int
    kappa: float | None
    precision: float | None
    recall: float | None
    true_pos: int
    false_pos: int
    false_neg: int


def is_judge(detector: str) -> bool:
    return detector.startswith(f"{KIND}:")


def save_verdict(book: LabelBook, run_id: str, verdict: Verdict) -> None:
    """Replace this judge's suggestions of the run with the verdict's, and note that it read the run."""
    book.store.save_judgement(run_id, verdict.judge, verdict.suggestions, verdict.reply, len(verdict.dropped))


def judged_runs(book: LabelBook) -> dict[str, set[str]]:
    """judge -> the runs it read (with or without finding anything)."""
    return book.store.judged_runs()


def judge_scores(book: LabelBook) -> list[JudgeScore]:
    """Per judge and per label the judge or an adjudicator used: κ between the judge and the final labels,
    and the judge's precision and recall against them, over the adjudicated runs the judge read."""
    finals = {run: set(f.labels) for run, f in book.finals().items()}
    proposed: dict[tuple[str, str], set[str]] = {}
    for s in book.suggestions():
        if is_judge(s.detector):
            proposed.setdefault((s.detector, s.run_id), set()).add(s.label)
    taxonomy, out = list(book.store.taxonomy), []
    for judge, read in sorted(judged_runs(book).items()):
        runs = sorted(read & set(finals))
        if not runs:
            continue
        guess = {r: proposed.get((judge, r), set()) for r in runs}
        used = set().union(*guess.values(), *(finals[r] for r in runs))
        labels = [x for x in taxonomy if x in used]
        for score in agreement.detector_scores(guess, {r: finals[r] for r in runs}, labels):
            kappa = agreement.cohen([int(score.label in finals[r]) for r in runs],
                                    [int(score.label in guess[r]) for r in runs])
            out.append(JudgeScore(judge, score.label, len(runs), kappa, score.precision, score.recall,
                                  score.true_pos, score.false_pos, score.false_neg))
    return out


def judge_markdown(book: LabelBook) -> str:
    """The judges' agreement table, as the detectors' is shown (card.agreement_markdown)."""
    scores = judge_scores(book)
    if not scores:
        return "*No LLM judge has read an adjudicated run yet.*"

    def cell(value) -> str:
        return "—" if value is None else f"{value:.4f}"
    lines = ["| judge | label | runs | Cohen's κ | precision | recall | TP | FP | FN |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    lines += [f"| {s.judge} | {s.label} | {s.n} | {cell(s.kappa)} | {cell(s.precision)} | {cell(s.recall)} | "
              f"{s.true_pos} | {s.false_pos} | {s.false_neg} |" for s in scores]
    return "\n".join(lines)
