"""Queues, the label book and blind overlap over a real SQLite store with hand-made runs."""
from __future__ import annotations

import pytest

from r2mad.annotation.book import LabelBook
from r2mad.annotation.queues import (
    Queue,
    get_queue,
    next_pending,
    others_visible,
    queue_items,
    save_queue,
    step,
)
from r2mad.runs.store import RunStore
from tests.helpers import STORED_MCQ as MCQ
from tests.helpers import make_transcript, save_run


@pytest.fixture
def book(tmp_path):
    store = RunStore(tmp_path / "runs.db")
    yield LabelBook(store)
    store.close()


def fill(book):
    """calm: right all along; flipped: shared misconception, agent 1 persuaded (2 flags: "I think ((A))" ->
    "I think ((B))" is a bare answer change, not the same reasoning); messy: shared misconception and one
    parse failure, and agent 3 ends on the right A while the vote says B (3 flags); other: another method."""
    store = book.store
    ids = {"calm": save_run(store, make_transcript(MCQ, [["A", "A", "A"]], "A", True)),
           "flipped": save_run(store, make_transcript(MCQ, [["A", "B", "B"], ["B", "B", "B"]], "B", False)),
           "messy": save_run(store, make_transcript(MCQ, [["B", None, "A"], ["B", "B", "A"]], "B", False)),
           "other": save_run(store, make_transcript(MCQ, [["A", "A"]], "A", True, method="cot"))}
    return ids


def test_detectors_run_once_per_saved_transcript_and_are_stored_with_evidence(book):
    ids = fill(book)
    assert book.detect() == 4 and book.detect() == 0  # nothing new: nothing recomputed
    found = {(s.run_id, s.label, s.round, s.agents) for s in book.suggestions()}
    assert found == {(ids["flipped"], "shared_misconception_unrecovered", 0, (1, 2)),
                     (ids["flipped"], "majority_persuaded_correct_agent", 1, (0, 1, 2)),
                     (ids["messy"], "shared_misconception_unrecovered", 0, (0, 1)),
                     (ids["messy"], "parse_failure", 0, (1,)),
                     (ids["messy"], "correct_answer_outvoted", 1, (2,))}
    # saving the run again (a rerun finishing, an import) makes it due again
    book.store.save_transcript(ids["calm"], make_transcript(MCQ, [["A", None]], "A", True), "done")
    assert book.detect() == 1
    assert [s.label for s in book.suggestions(ids["calm"])] == ["parse_failure"]
    # a review survives a recheck that finds the same suggestion again
    book.save_labels(ids["messy"], "ana", ["parse_failure"])
    book.store.set_status(ids["messy"], "done", "checked again")
    assert book.detect() == 1
    assert {s.label: s.reviews for s in book.suggestions(ids["messy"])} == {
        "shared_misconception_unrecovered": {"ana": "rejected"}, "parse_failure": {"ana": "confirmed"},
        "correct_answer_outvoted": {"ana": "rejected"}}


def test_queue_order_states_and_save_and_next(book):
    ids = fill(book)
    book.detect()
    with pytest.raises(ValueError, match="Unknown queue filter"):
        save_queue(book.store, Queue("bad", {"colour": "red"}))
    save_queue(book.store, Queue("wrong mad", {"method": "mad", "correct": False}, annotators_per_run=2))
    queue = get_queue(book.store, "wrong mad")
    items = queue_items(book.store, queue, "ana")
    assert [i.run.id for i in items] == [ids["messy"], ids["flipped"]]  # 3 flags before 2
    assert [i.state for i in items] == ["pending", "pending"]
    book.save_labels(ids["messy"], "ana", ["parse_failure", "other"], blame={"other": {"round": 1, "agent": 2}})
    items = queue_items(book.store, queue, "ana")
    assert [i.state for i in items] == ["done", "pending"]
    assert next_pending(items, ids["flipped"]) == ids["flipped"]  # wraps round to the first pending: itself
    assert step(items, ids["flipped"], -1) == ids["messy"] and step(items, ids["flipped"], +1) == ids["flipped"]
    # the suggestion ana ticked is confirmed and lends its turn; the ones she left out are rejected
    reviews = {s.label: s.reviews for s in book.suggestions(ids["messy"])}
    assert reviews == {"shared_misconception_unrecovered": {"ana": "rejected"}, "parse_failure": {"ana": "confirmed"},
                       "correct_answer_outvoted": {"ana": "rejected"}}
    (ann,) = book.store.get_run(ids["messy"]).annotations
    assert ann.blame == {"parse_failure": {"round": 0, "agent": 1}, "other": {"round": 1, "agent": 2}}
    # two annotators per run: after bo, the run is full for a third person
    book.save_labels(ids["messy"], "bo", ["other"])
    assert [i.state for i in queue_items(book.store, queue, "cy")] == ["full", "pending"]
    detector_queue = save_queue(book.store, Queue("persuaded", {"detector": "majority_persuaded_correct_agent"}))
    assert [i.run.id for i in queue_items(book.store, detector_queue, "ana")] == [ids["flipped"]]


def test_blind_overlap_and_final_labels(book):
    ids = fill(book)
    blind = save_queue(book.store, Queue("blind", {}, annotators_per_run=2, blind=True))
    assert not others_visible(blind, "bo", ("ana",))
    assert others_visible(blind, "ana", ("ana", "bo"))
    assert others_visible(save_queue(book.store, Queue("open", {})), "bo", ("ana",))
    with pytest.raises(ValueError, match="Unknown label"):
        book.set_final(ids["flipped"], ["nope"], "ana")
    book.set_final(ids["flipped"], ["majority_persuaded_correct_agent"], "ana",
                   blame={"majority_persuaded_correct_agent": {"round": 1, "agent": 0}})
    final = book.finals()[ids["flipped"]]
    assert final.labels == ("majority_persuaded_correct_agent",) and final.adjudicator == "ana"
    assert final.blame == {"majority_persuaded_correct_agent": {"round": 1, "agent": 0}}
