"""Eval's report on how answers were read and graded: accuracy by the strict reading beside the flexible one (as
lm-eval's strict-match and flexible-extract), undecided finals counted apart, and the readings and rules behind the
final answers, all hand-computed on three debates."""
from __future__ import annotations

from r2mad.evaluation.readings import accuracies, rule_counts, strict_final, verdict
from r2mad.types import AgentTurn, Answer, Judged, Round, Task, Transcript

WHO = Task("short", "Which composer wrote The Magic Flute?", gold="Wolfgang Amadeus Mozart", id="flute")
SUM = Task("math", "What is 12 + 30?", gold="42", id="sum")


def debate(task: Task, answers: list[Answer], judged=()) -> Transcript:
    turns = tuple(AgentTurn(i, 0, "p", (), "", a) for i, a in enumerate(answers))
    return Transcript(task, "mad", "b", {}, (Round(0, turns, 0.0),), answers[0], None, judged=tuple(judged))


BOXED, LAST = Answer("42", "boxed"), Answer("42", "last_number")
STRICT = debate(SUM, [BOXED, BOXED, LAST])  # right in the asked-for form
FLEXIBLE = debate(SUM, [LAST, LAST, Answer("41", "boxed")])  # right only as read flexibly: strictly, 41 wins
UNDECIDED = debate(WHO, [Answer("Mozart", "answer_colon")] * 3)  # "which composer": a surname alone is undecided


def test_the_strict_reading_votes_only_answers_in_the_asked_for_form():
    assert strict_final(STRICT) == BOXED and strict_final(FLEXIBLE) == Answer("41", "boxed")
    assert [verdict(t) for t in (STRICT, FLEXIBLE, UNDECIDED)] == ["correct", "correct", "undecided"]
    assert [verdict(t, strict=True) for t in (STRICT, FLEXIBLE, UNDECIDED)] == ["correct", "wrong", "undecided"]


def test_accuracies_side_by_side_with_undecided_counted_apart():
    flexible, strict, undecided = accuracies([STRICT, FLEXIBLE, UNDECIDED])
    assert (flexible.value, strict.value, undecided, flexible.n) == (2 / 3, 1 / 3, 1, 3)
    judged = debate(WHO, [Answer("Mozart", "answer_colon")] * 3,
                    [Judged("Mozart", "Wolfgang Amadeus Mozart", True, "judge: CORRECT", "j")])
    assert accuracies([judged])[0].value == 1.0 and accuracies([judged])[2] == 0  # a judge decided it


def test_the_rules_behind_the_finals_are_counted_per_kind():
    counts = rule_counts([STRICT, FLEXIBLE, UNDECIDED])
    assert counts == {("math", "strict: \\boxed{}", "correct: same after normalising"): 1,
                      ("math", "flexible: last number", "correct: same after normalising"): 1,
                      ("short", "strict: “Answer:” line",
                       "undecided: no judge (one answer inside a longer name)"): 1}
