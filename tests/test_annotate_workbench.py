"""The workbench's handlers without a browser: a right run's suggestions start unticked, picking turns in
the chat toggles them into a set that is saved as the label's blame, the last queue reopens on a visit
without a link, and the compare view swaps in the other run for labelling."""
from __future__ import annotations

from types import SimpleNamespace

from r2mad.annotation.book import blame_turns
from r2mad.annotation.queues import Queue, save_queue
from r2mad.serving.services import Services
from r2mad.settings.config import load_config
from r2mad.ui.annotate_base import flat_chat
from r2mad.ui.annotate_handlers import SHOWN, AnnotateHandlers
from tests.helpers import STORED_MCQ as MCQ
from tests.helpers import grid_debate, make_transcript, save_run

REQ = SimpleNamespace(session_hash="s1", query_params={})


def handlers(tmp_path):
    h = AnnotateHandlers(Services(load_config(env={"R2MAD_DATA_DIR": str(tmp_path / "var")})))
    wrong = save_run(h.store, make_transcript(MCQ, [["A", "B", "B"], ["B", "B", "B"]], "B", False))
    other = save_run(h.store, make_transcript(MCQ, [["B", "B", "A"], ["B", "B", "B"]], "B", False))
    return h, wrong, other


def shown(values):
    return dict(zip(SHOWN, values))


def click(index):
    return SimpleNamespace(index=index)


def test_picked_turns_toggle_and_are_saved_as_a_set(tmp_path):
    h, wrong, _ = handlers(tmp_path)
    view = shown(h.show(None, wrong, "ana", "", REQ))
    assert view["labels"] == ["shared_misconception_unrecovered", "majority_persuaded_correct_agent"]
    assert f'title="{wrong}"' in view["header"] and "☑ `majority_persuaded_correct_agent`" in view["suggestions"]
    at = {m["metadata"].get("id"): i for i, m in enumerate(flat_chat(h.store.get_run(wrong).transcript))}
    turns = h.pick_turn(wrong, [], "ana", "", click(at["round-1-agent-2"]), REQ)["value"]  # ids: 0-based agents
    turns = h.pick_turn(wrong, turns, "ana", "", click(at["round-0-agent-1"]), REQ)["value"]
    turns = h.pick_turn(wrong, turns, "ana", "", click(at["round-1-agent-0"]), REQ)["value"]
    assert turns == ["round 0 · agent 2", "round 1 · agent 1", "round 1 · agent 3"]
    turns = h.pick_turn(wrong, turns, "ana", "", click(at["round-1-agent-2"]), REQ)["value"]  # again: unpicked
    assert turns == ["round 0 · agent 2", "round 1 · agent 1"]
    h.save_next(None, wrong, ["other", "majority_persuaded_correct_agent"], "", turns, "ana", "", REQ)
    (ann,) = h.store.get_run(wrong).annotations
    assert blame_turns(ann.blame["other"]) == [(0, 1), (1, 0)]  # a set of turns for the label no suggestion placed
    assert ann.blame["majority_persuaded_correct_agent"] == {"round": 1, "agent": 0}  # the suggestion's turn


def test_a_right_run_starts_unticked_and_the_last_queue_reopens(tmp_path):
    h, wrong, _ = handlers(tmp_path)
    low = {"confidence": {"0": {"label": "low", "c": 0.3}}}  # agent 2 was shown agent 1's right A as unreliable
    right = save_run(h.store, grid_debate([["A", "B", "B"], ["A", "A", "A"]], turn_details={(1, 1): low}))
    view = shown(h.show(None, right, "ana", "", REQ))
    assert view["labels"] == [] and "☐ `wrong_confidence`" in view["suggestions"]
    assert "unticked: the debate ended right" in view["suggestions"]
    save_queue(h.store, Queue("wrong ones", {"correct": False}))
    _, tabs, queue, *rest = h.deep_link("", "", "wrong ones", REQ)  # no link, a remembered queue
    assert queue["value"] == "wrong ones" and shown(rest)["run_id"] == wrong
    assert tabs == {"__type__": "update"}  # skipped: the app stays on the tab it opened with
    _, _, queue, *rest = h.deep_link("", "", "a queue since deleted", REQ)
    assert "value" not in queue and shown(rest)["run_id"] == {"__type__": "update"}


def test_the_compare_view_swaps_in_the_other_run_for_labelling(tmp_path):
    h, wrong, other = handlers(tmp_path)
    *view, other_box = h.label_other(None, wrong, other, "ana", "", REQ)
    assert shown(view)["run_id"] == other and other_box == wrong
    rows, graphs = h.compare(other, other_box, "ana", "", REQ)
    assert graphs.count("<svg") == 2 and f"mad · {other[:8]}" in graphs and rows[-1][0] == "final"
