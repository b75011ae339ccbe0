"""Suggestions as an annotator meets them: one row per label and source with every piece of evidence,
the source's precision against adjudicated labels beside it, and the rules that decide what starts ticked."""
from __future__ import annotations

from r2mad.annotation import detectors as d
from r2mad.annotation import review
from r2mad.annotation.book import StoredSuggestion
from tests.helpers import grid_debate as debate

LOW = {"label": "low", "c": 0.3}


def low_for_every_pair(grid, final):
    """Each agent is shown every peer as low confidence in every round after round 0."""
    n = len(grid[0])
    details = {(r, a): {"confidence": {str(p): LOW for p in range(n) if p != a}}
               for r in range(1, len(grid)) for a in range(n)}
    return debate(grid, turn_details=details, final=final)


def stored(run_id, label, detector="correct_peer_low_confidence"):
    return StoredSuggestion(0, run_id, label, detector, 1, (0,), "", {})


def test_a_right_run_gets_one_unticked_row_for_six_wrong_confidence_suggestions():
    t = low_for_every_pair([["A", "A", "A"], ["A", "A", "A"]], final="A")  # right all along
    found = d.detect(t)
    assert [s.label for s in found] == ["wrong_confidence"] * 6  # 3 agents × 2 peers each
    groups = review.group(found, {}, run_correct=t.correct)
    assert [(g.label, g.count, g.ticked, g.why) for g in groups] == [
        ("wrong_confidence", 6, False, "the debate ended right")]
    assert review.ticked_labels(groups) == []


def test_a_wrong_run_starts_ticked_only_where_the_source_is_measured_and_precise():
    t = low_for_every_pair([["A", "B", "B"], ["B", "B", "B"]], final="B")
    groups = review.group(d.detect(t), {}, run_correct=False)  # a fresh install: nothing measured yet
    assert {g.label: (g.ticked, g.why) for g in groups}["wrong_confidence"] == (False, review.UNMEASURED)
    assert review.ticked_labels(groups) == [] and "tick it if it holds" in review.UNMEASURED
    # the detector suggested wrong_confidence on 4 adjudicated runs; people kept it on one: precision 1/4
    suggestions = [stored(r, "wrong_confidence") for r in ("r1", "r2", "r3", "r4")]
    finals = {"r1": ["wrong_confidence"], "r2": [], "r3": ["other"], "r4": []}
    scores = review.source_scores(suggestions, finals)
    score = scores[("correct_peer_low_confidence", "wrong_confidence")]
    assert (score.precision, score.true_pos, score.false_pos) == (0.25, 1, 3)
    groups = {g.label: g for g in review.group(d.detect(t), scores, run_correct=False)}
    assert (groups["wrong_confidence"].ticked, groups["wrong_confidence"].why) == (False, "precision 25% is below 50%")
    assert not groups["majority_persuaded_correct_agent"].ticked  # its source is unmeasured: left to the person
    finals = {"r1": ["wrong_confidence"], "r2": ["wrong_confidence"], "r3": [], "r4": ["wrong_confidence"]}
    groups = {g.label: g for g in review.group(d.detect(t), review.source_scores(suggestions, finals), False)}
    assert (groups["wrong_confidence"].ticked, groups["wrong_confidence"].why) == (True, "precision 75%")


def test_labels_about_right_runs_are_judged_like_any_and_sources_are_kept_apart():
    found = [stored("r", "parse_failure", "parse_failure"), stored("r", "wrong_confidence"),
             stored("r", "wrong_confidence", "llm"), stored("r", "", "counterfactual")]
    groups = review.group(found, {}, run_correct=True)
    assert [(g.label, g.source, g.ticked) for g in groups] == [
        ("parse_failure", "parse_failure", False), ("wrong_confidence", "correct_peer_low_confidence", False),
        ("wrong_confidence", "llm", False), ("", "counterfactual", False)]
