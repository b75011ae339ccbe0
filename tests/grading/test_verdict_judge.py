"""The judge of undecided answers, its mechanics on a scripted judge: the three-way grade read from its reply, one
call per pair and question (cached; the same pair asked at once waits for the first), both ways for open positions,
a failed call left ungraded and asked again; in the loop: its calls recorded in the round's cost, its verdicts kept
with the transcript (and read back by every later view), early stop only on decided agreement; and which judge a
debate's setting names."""
from __future__ import annotations

import asyncio
import dataclasses

import pytest

from r2mad.backends.base import BackendError, Capabilities
from r2mad.debate import Debate
from r2mad.grading.answers import is_correct, same_answer
from r2mad.grading.judge import Judge, judge_for, read_grade
from r2mad.methods import make_method
from r2mad.settings.config import DebateSettings
from r2mad.types import Answer, Task, Transcript
from tests.scripted import ScriptedBackend

COMPOSER = Task("short", "Which composer wrote The Magic Flute?", gold="Wolfgang Amadeus Mozart")


def grade_by(rule):
    """A judge backend grading (reference, candidate) with `rule`."""
    def reply(messages):
        text = messages[-1].content
        reference = text.split("Reference answer:\n")[1].split("\n\nCandidate answer:")[0]
        candidate = text.split("Candidate answer:\n")[1].split("\n\nGrade the candidate")[0]
        return rule(reference, candidate)
    return ScriptedBackend(reply, name="judge-model")


@pytest.mark.parametrize("reply, grade", [
    ("CORRECT", "CORRECT"), ("The candidate names another person. INCORRECT", "INCORRECT"),
    ("not attempted", "NOT_ATTEMPTED"), ("<think>CORRECT</think> INCORRECT.", "INCORRECT"),
    ("Grade: Correct", "CORRECT"), ("I cannot tell.", None),
])
def test_the_grade_is_the_replys_last_grade_word_outside_its_reasoning(reply, grade):
    assert read_grade(reply) == grade


def test_a_pair_is_judged_once_per_question_even_asked_at_once_and_both_ways_for_positions():
    backend = grade_by(lambda ref, cand: "CORRECT" if "Mozart" in cand else "INCORRECT")
    judge = Judge(backend)

    async def run():
        return await asyncio.gather(*(judge.pair(COMPOSER.question, "Mozart", "W. A. Mozart") for _ in range(3)))

    results = asyncio.run(run())
    assert [len(calls) for _, calls in results] == [1, 0, 0] and len(backend.calls) == 1
    verdict = results[0][0]
    assert (verdict.a, verdict.b, verdict.same, verdict.how, verdict.judge) == (
        "Mozart", "W. A. Mozart", True, "judge: CORRECT", "judge-model")
    other_question, calls = asyncio.run(judge.pair("Who wrote Requiem?", "Mozart", "W. A. Mozart"))
    assert len(calls) == 1  # another question is another pair
    both, calls = asyncio.run(Judge(grade_by(lambda ref, cand: "CORRECT")).pair(
        "Go or Rust?", "Go first", "Start with Go", both_ways=True))
    assert len(calls) == 2 and both.same is True and both.how == "judge: CORRECT both ways"
    one_way = grade_by(lambda ref, cand: "CORRECT" if ref == "Go first" else "INCORRECT")
    verdict, _ = asyncio.run(Judge(one_way).pair("Go or Rust?", "Go first", "Go first, then Rust", both_ways=True))
    assert (verdict.same, verdict.how) == (False, "judge: CORRECT one way only")


def test_the_reference_is_shown_as_the_reference_and_not_attempted_is_not_correct():
    backend = grade_by(lambda ref, cand: "NOT_ATTEMPTED")
    verdict, [call] = asyncio.run(Judge(backend).pair(COMPOSER.question, "I am not sure", COMPOSER.gold,
                                                      reference=COMPOSER.gold))
    assert (verdict.same, verdict.how) == (False, "judge: NOT_ATTEMPTED")
    assert "Reference answer:\nWolfgang Amadeus Mozart" in backend.calls[0].messages[-1].content
    assert (call.kind, call.label, call.backbone) == ("grade", "NOT_ATTEMPTED", "judge-model")


def test_a_failed_judge_call_leaves_the_pair_undecided_and_is_asked_again():
    answers = iter([BackendError("the judge's server did not answer"), "CORRECT"])
    backend = ScriptedBackend(lambda m: next(answers), name="judge-model")
    judge = Judge(backend)
    first, [call] = asyncio.run(judge.pair("q", "a b", "a  c"))
    assert (first.same, first.how) == (None, "judge: no grade") and call.error
    second, calls = asyncio.run(judge.pair("q", "a b", "a  c"))
    assert second.same is True and len(calls) == 1


def debate(answers: list[str], judge: Judge | None, *, rounds: int = 2) -> Transcript:
    def reply(messages):
        return f"Final answer: {answers[len(reply.seen) % len(answers)]}" if not reply.seen.append(1) else ""
    reply.seen = []
    backend = ScriptedBackend(reply)
    settings = DebateSettings(agents=len(answers), rounds=rounds, early_stop=True, answer_guard="off")
    return asyncio.run(Debate(backend, make_method("mad", settings), judge=judge).run(COMPOSER))


def test_without_a_judge_an_undecided_pair_never_stops_the_debate_early_and_scores_nothing():
    t = debate(["Mozart", "W. A. Mozart"], None)
    assert len(t.rounds) == 2 and t.rounds[0].consensus == 0.5 and t.judged == ()
    assert not any("stopping early" in n for n in t.notices)
    assert t.correct is None  # "Mozart" against "Wolfgang Amadeus Mozart", asked "which composer": undecided


def test_with_a_judge_the_debate_stops_early_records_its_calls_and_keeps_its_verdicts():
    judge = Judge(grade_by(lambda ref, cand: "CORRECT"))
    t = debate(["Mozart", "W. A. Mozart"], judge)
    assert len(t.rounds) == 1 and t.rounds[0].consensus == 1.0 and t.correct is True
    assert any("stopping early" in n for n in t.notices)
    graded = [c for c in t.rounds[0].aux if c.kind == "grade"]
    assert len(graded) == 3  # the two answers with each other and each with the gold, once each
    assert t.usage().calls == 2 + 3 and t.usage_by_model()["judge-model"].calls == 3
    saved = Transcript.from_json(t.to_json())  # the verdicts travel with the run: a later view reads them
    assert saved.judged == t.judged and len(saved.judged) == 3
    a, b = (Answer(v, "answer_colon") for v in ("Mozart", "W. A. Mozart"))
    assert same_answer(a, b, saved.task, saved.judged) and not same_answer(a, b, saved.task)
    assert is_correct(a, saved.task, saved.judged) is True and is_correct(a, saved.task) is None


def test_a_debates_judge_setting_names_its_judge():
    plain = ScriptedBackend(lambda m: "", name="small")
    able = dataclasses.replace(plain, name="big", capabilities=Capabilities(judges_answers=True))
    other = ScriptedBackend(lambda m: "", name="other")
    named = {"other": other}.__getitem__
    assert judge_for("auto", plain, named) is None  # the embedded model declares it cannot judge
    assert judge_for("auto", able, named).backend is able and judge_for("off", able, named) is None
    assert judge_for("self", plain, named).backend is plain
    assert judge_for("other", plain, named).backend is other
    assert judge_for("self", plain, named) is judge_for("small", plain, named)  # one judge (and cache) per backend


def test_without_a_judge_the_debate_says_what_it_left_undecided():
    t = debate(["Mozart", "W. A. Mozart"], None)
    said = [n for n in t.notices if n.startswith("No judge: ")]
    assert said == ["No judge: 1 pair of answers the rules could not tell apart stayed apart (not checked for "
                    "meaning); the final answer against the gold answer is undecided. A judge backbone (the judge "
                    "setting) would grade them."]
    assert not any(n.startswith("No judge") for n in debate(["Mozart", "W. A. Mozart"], Judge(
        grade_by(lambda ref, cand: "CORRECT"))).notices)
