"""Each detector on hand-made transcripts: the exact suggestions it must make (true positives) and
the near misses it must leave alone (false positives)."""
from __future__ import annotations

from r2mad.annotation import detectors as d
from r2mad.types import AgentTurn, Answer, AuxCall, Round, Task, Transcript
from tests.helpers import grid_debate as debate

MATH = Task("math", "2+2?", gold="4", id="m")


def found(detector, t):
    return [(s.label, s.round, s.agents) for s in detector(t)]


def test_shared_misconception_needs_a_round0_wrong_majority_and_a_wrong_final():
    t = debate([["B", "C", "A"], ["B", "B", "B"]])
    assert found(d.shared_misconception, t) == [("shared_misconception_unrecovered", 0, (0, 1))]
    assert d.shared_misconception(t)[0].evidence == {"wrong_answers": {"1": "B", "2": "C"}, "gold": "A",
                                                      "final": "B"}
    assert found(d.shared_misconception, debate([["B", "A", "A"], ["B", "B", "B"]])) == []  # 1 of 3 wrong
    assert found(d.shared_misconception, debate([["B", "C", "A"], ["A", "A", "A"]])) == []  # recovered
    assert found(d.shared_misconception, debate([["B", "A"], ["B", "B"]])) == []  # 1 of 2 is no majority


def test_persuaded_by_wrong_majority():
    t = debate([["A", "B", "B"], ["B", "B", "B"]])
    assert found(d.persuaded_by_wrong_majority, t) == [("majority_persuaded_correct_agent", 1, (0, 1, 2))]
    assert d.persuaded_by_wrong_majority(t)[0].evidence["majority_agents"] == [2, 3]
    assert found(d.persuaded_by_wrong_majority, debate([["A", "B", "C"], ["B", "B", "C"]])) == []  # no majority
    assert found(d.persuaded_by_wrong_majority, debate([["A", "B", "B"], ["C", "B", "B"]])) == []  # not to it
    assert found(d.persuaded_by_wrong_majority, debate([["A", "A", "B"], ["A", "A", "A"]])) == []  # right majority


def test_correct_minority_masked_objective_and_subjective():
    masks = {"0": {"keep": False, "perplexity": 9.0}, "1": {"keep": True, "perplexity": 2.0},
             "2": {"keep": True, "perplexity": 2.5}}
    t = debate([["A", "B", "B"], ["B", "B", "B"]], round_details={1: {"masks": masks}})
    assert found(d.correct_minority_masked, t) == [("mask_removed_correct_answer", 1, (0,))]
    assert d.correct_minority_masked(t)[0].evidence["mask"] == {"keep": False, "perplexity": 9.0}
    kept = {**masks, "0": {"keep": True}}
    assert found(d.correct_minority_masked, debate([["A", "B", "B"], ["B", "B", "B"]],
                                                   round_details={1: {"masks": kept}})) == []
    two_right = debate([["A", "A", "B"], ["B", "B", "B"]], round_details={1: {"masks": masks}})
    assert found(d.correct_minority_masked, two_right) == []  # not the only right one
    judged = {"all": {"0": {"label": "NO", "keep": False, "judgment": "long"}, "1": {"label": "YES", "keep": True}}}
    t = debate([["A", "B"], ["B", "B"]], round_details={1: {"masks": judged}})
    assert found(d.correct_minority_masked, t) == [("mask_removed_correct_answer", 1, (0,))]
    assert d.correct_minority_masked(t)[0].evidence["mask"] == {"label": "NO", "keep": False}


def test_negative_case_adopted():
    wrong_case = {"retrieved": [{"case_id": "c7", "answer": "C", "correct": False, "similarity": 0.8}]}
    t = debate([["A", "B"], ["C", "B"]], turn_details={(1, 0): wrong_case})
    assert found(d.negative_case_adopted, t) == [("misleading_retrieved_case", 1, (0,))]
    assert d.negative_case_adopted(t)[0].evidence["case_id"] == "c7"
    right_case = {"retrieved": [{"case_id": "c8", "answer": "C", "correct": True}]}
    assert found(d.negative_case_adopted, debate([["A", "B"], ["C", "B"]], turn_details={(1, 0): right_case})) == []
    assert found(d.negative_case_adopted, debate([["C", "B"], ["C", "B"]], turn_details={(1, 0): wrong_case})) == []
    assert found(d.negative_case_adopted, debate([["A", "B"], ["B", "B"]], turn_details={(1, 0): wrong_case})) == []


def test_correct_peer_low_confidence():
    conf = {"0": {"c": 0.2, "label": "low"}, "2": {"c": 0.3, "label": "low"}}
    t = debate([["A", "B", "C"], ["A", "B", "C"]], turn_details={(1, 1): {"confidence": conf}})
    assert found(d.correct_peer_low_confidence, t) == [("wrong_confidence", 1, (0, 1))]  # peer 2 was wrong
    assert d.correct_peer_low_confidence(t)[0].evidence == {"c": 0.2, "peer_answer": "A"}
    high = {"0": {"c": 0.9, "label": "high"}}
    t = debate([["A", "B"], ["A", "B"]], turn_details={(1, 1): {"confidence": high}})
    assert found(d.correct_peer_low_confidence, t) == []


def test_advice_flipped_correct_agent():
    advice = {1: {"advice": [{"source": 1, "target": 0, "type": "rebuttal"},
                             {"source": 0, "target": 1, "type": "rebuttal"}]}}
    aux = {1: [AuxCall("advice", 1, "[rebuttal] You are wrong, it is B.", source=1, target=0)]}
    t = debate([["A", "B"], ["B", "B"]], round_details=advice, aux=aux)
    assert found(d.advice_flipped_correct, t) == [("advice_misled", 1, (0, 1))]
    assert d.advice_flipped_correct(t)[0].evidence["span"] == "[rebuttal] You are wrong, it is B."
    support = {1: {"advice": [{"source": 1, "target": 0, "type": "support"}]}}
    assert found(d.advice_flipped_correct, debate([["A", "B"], ["B", "B"]], round_details=support)) == []
    assert found(d.advice_flipped_correct, debate([["A", "B"], ["A", "B"]], round_details=advice)) == []


def test_oscillation():
    t = debate([["A", "B"], ["B", "B"], ["A", "B"]], correct=False)
    assert found(d.oscillation, t) == [("oscillation", 2, (0,))]
    assert d.oscillation(t)[0].evidence["answers"] == ["A", "B", "A"]
    assert found(d.oscillation, debate([["A", "B"], ["B", "B"], ["C", "B"]])) == []
    assert found(d.oscillation, debate([["A", "B"], [None, "B"], ["A", "B"]])) == []  # UNPARSED is no answer


def test_stalled_split_once_per_streak_and_by_grouping_not_letters():
    t = debate([["A", "B", "B"], ["C", "A", "A"], ["C", "A", "A"]])
    assert found(d.stalled_split, t) == [("stalled_split", 1, (0, 1, 2))]  # same groups {1},{2,3}
    assert d.stalled_split(t)[0].evidence == {"rounds": [0, 1], "groups": [[1], [2, 3]]}
    assert found(d.stalled_split, debate([["A", "B", "B"], ["A", "A", "B"]])) == []
    assert found(d.stalled_split, debate([["A", "A", "A"], ["A", "A", "A"]])) == []  # unanimous is no split


def test_parse_failure_per_turn_but_not_for_failed_calls():
    t = debate([["A", None], [None, "B"]])
    assert found(d.parse_failure, t) == [("parse_failure", 0, (1,)), ("parse_failure", 1, (0,))]
    failed = debate([["A", None]])
    failed = Transcript(**{**failed.__dict__, "rounds": (Round(0, (failed.rounds[0].turns[0], AgentTurn(
        1, 0, "p", (), "", Answer(None, "abstained"), error="timeout")), 0.0),)})
    assert found(d.parse_failure, failed) == []


def test_answer_changed_with_no_new_argument_uses_word_jaccard():
    same = "Since the two sides are equal the triangle is isosceles so the answer is"
    texts = {(0, 0): same + " ((A))", (1, 0): same + " ((B))",
             (0, 1): "Short take ((B))", (1, 1): "A wholly different line of thought ((A))"}
    t = debate([["A", "B"], ["B", "A"]], texts=texts)
    assert found(d.answer_changed_no_new_argument, t) == [("answer_changed_no_new_argument", 1, (0,))]
    flagged = d.answer_changed_no_new_argument(t)[0]
    # 11 distinct words on both sides ("the" thrice, "is" twice), all shared: same reasoning, other answer
    assert (flagged.evidence["jaccard"], flagged.evidence["shared_words"]) == (1.0, 11)
    assert "reasoning kept 100% of its words (11 shared of 11; answers left out)" in flagged.summary
    # 4 shared words of 10 in all (8 + 2 new): 0.4 < 0.8, so not flagged
    assert d.reasoning_similarity("one two three four five six seven eight",
                                  "one two three four nine ten eleven twelve") == 4 / 12


def test_a_bare_answer_change_has_no_reasoning_to_call_the_same():
    # the reported case: A → B with nothing but the answer said, once read as "100 % of the same words"
    assert d.reasoning_similarity("x \\boxed{4}", "x \\boxed{5}") is None
    assert d.reasoning_similarity("((A))", "((B))") is None
    bare = debate([["A"], ["B"]], texts={(0, 0): "((A))", (1, 0): "The answer is ((B))"})
    assert found(d.answer_changed_no_new_argument, bare) == []
    math = debate([["4"], ["5"]], task=MATH, texts={(0, 0): "so \\boxed{4}", (1, 0): "so \\boxed{5}"})
    assert found(d.answer_changed_no_new_argument, math) == []


def test_correct_answer_outvoted_is_the_oracle_gap_of_one_run():
    t = debate([["A", "B", "B"], ["A", "B", "B"]], final="B")  # agent 1 ends right, the vote says B
    assert found(d.correct_answer_outvoted, t) == [("correct_answer_outvoted", 1, (0,))]
    assert d.correct_answer_outvoted(t)[0].evidence["right_agents"] == [1]
    assert found(d.correct_answer_outvoted, debate([["A", "B", "B"], ["B", "B", "B"]])) == []  # nobody right
    assert found(d.correct_answer_outvoted, debate([["B", "A", "A"], ["B", "A", "A"]], final="A")) == []  # vote right


def test_premature_consensus_stop_needs_the_early_stop_and_a_wrong_unanimous_round():
    def stopped(grid, notice=True):
        t = debate(grid)
        note = ("All agents agree after round 1; stopping early.",) if notice else ()
        return Transcript(**{**t.__dict__, "settings": {"rounds": 3}, "notices": note})
    assert found(d.premature_consensus_stop, stopped([["A", "B", "B"], ["B", "B", "B"]])) == [
        ("premature_consensus_stop", 1, (0, 1, 2))]
    assert d.premature_consensus_stop(stopped([["A", "B", "B"], ["B", "B", "B"]]))[0].evidence["rounds_planned"] == 3
    assert found(d.premature_consensus_stop, stopped([["A", "B", "B"], ["A", "A", "A"]])) == []  # right consensus
    assert found(d.premature_consensus_stop, stopped([["A", "B", "B"], ["B", "B", "B"]], notice=False)) == []


def test_judge_endorsed_wrong_answer_needs_a_yes_for_the_wrong_final_answer():
    judged = {"all": {"0": {"label": "NO", "keep": False}, "1": {"label": "YES", "keep": True},
                      "2": {"label": "YES", "keep": True}}}
    t = debate([["A", "B", "A"], ["B", "B", "B"]], round_details={1: {"masks": judged}})  # B wrong, final B
    assert found(d.judge_endorsed_wrong, t) == [("judge_endorsed_wrong_answer", 0, (1,))]  # agent 3's A was right
    assert d.judge_endorsed_wrong(t)[0].evidence["answer"] == "B"
    objective = {"0": {"keep": False, "perplexity": 9.0}, "1": {"keep": True, "perplexity": 2.0}}  # no judge
    no_judge = debate([["A", "B"], ["B", "B"]], round_details={1: {"masks": objective}})
    assert found(d.judge_endorsed_wrong, no_judge) == []
    other_final = debate([["A", "B", "B"], ["C", "C", "C"]], round_details={1: {"masks": judged}})  # B kept, ends on C
    assert found(d.judge_endorsed_wrong, other_final) == []


def test_detect_runs_every_detector_in_order():
    t = debate([["B", "C", "A"], ["B", "B", "A"], ["B", "B", "B"]])
    labels = [s.label for s in d.detect(t)]
    assert labels == ["shared_misconception_unrecovered", "majority_persuaded_correct_agent"]
    assert len(d.DETECTORS) == 13
    assert d.detect(None) == []
