"""The grader measured on hand-graded sets (tests/graded/: verdicts written by hand before the grader ran) and on
GSM8K's 5,276 published model solutions with their authors' verdicts (read in ../shared/data, never copied in), by
the deterministic rules alone: the thresholds of issue 47, no wrong answer scored correct, no two different answers
grouped; and the kind guess against 308 hand labels."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from r2mad.grading.measure import gsm8k_tally, pairs_tally, replies_tally
from r2mad.grading.tasks import guess_kind, inline_options
from tests.helpers import shared_data

GRADED = Path(__file__).resolve().parents[1] / "graded"
GSM8K = shared_data("gsm8k-example-model-solutions.jsonl")


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def replies():
    """Both hand-graded sets: replies.jsonl, and heldout.jsonl, written later by someone who never saw the grader
    or the first set (its first figures, before the grader learnt from it, are in docs/kinds.md)."""
    return replies_tally(rows(GRADED / "replies.jsonl") + rows(GRADED / "heldout.jsonl"))


@pytest.mark.parametrize("kind", ["math", "integer", "mcq", "yesno"])
def test_exact_kinds_agree_with_the_hand_verdicts_on_98_percent(replies, kind):
    tally = replies[kind]
    assert tally.items >= 70 and tally.share >= 0.98, tally.missed


def test_short_answers_agree_on_90_percent_and_every_other_one_is_undecided_not_wrong(replies):
    tally = replies["short"]
    assert tally.items >= 150 and tally.share >= 0.90, tally.missed
    assert all(got == "undecided" for _, _, got in tally.missed), tally.missed


def test_open_replies_are_read_as_a_position_or_none_as_by_hand(replies):
    tally = replies["open"]
    assert tally.items >= 60 and tally.share >= 0.95, tally.missed


def test_no_wrong_or_missing_answer_is_scored_correct(replies):
    assert sum(t.items for t in replies.values()) >= 700
    assert {kind: t.harmful for kind, t in replies.items() if t.harmful} == {}


def test_no_two_different_answers_are_grouped_among_the_pairs():
    pairs = rows(GRADED / "pairs.jsonl")
    tallies = pairs_tally(pairs)
    assert sum(1 for p in pairs if p.get("lookalike")) >= 90
    assert {kind: t.harmful for kind, t in tallies.items() if t.harmful} == {}
    # and a pair the rules call different is different by hand (undecided pairs wait for a judge)
    assert [m for t in tallies.values() for m in t.missed if m[2] != "undecided"] == []


@pytest.mark.skipif(GSM8K is None, reason="../shared/data/gsm8k-example-model-solutions.jsonl is not beside the "
                                          "checkout; set R2MAD_SHARED_DATA to its folder")
def test_the_math_reading_agrees_with_gsm8k_authors_on_99_percent_of_5276_solutions():
    tally = gsm8k_tally(rows(GSM8K))
    assert tally.items == 5276 and tally.share >= 0.99, tally.missed[:20]


def test_the_kind_guess_agrees_with_hand_labels_on_90_percent_and_reads_typed_options():
    labelled = rows(GRADED / "kind_guess.jsonl")
    right = [row for row in labelled if guess_kind(row["question"]) == row["kind"]]
    assert len(labelled) >= 200 and len(right) / len(labelled) >= 0.90
    for row in (r for r in right if r["kind"] == "mcq"):
        stem, options = inline_options(row["question"])
        assert [list(o) for o in options] == row["options"], row["id"]
        assert stem and stem in row["question"]
