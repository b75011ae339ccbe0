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
    h, wrong, other = handlers(tmp_path)
    view = shown(h.show(None, wrong, "ana", "", REQ))
    assert view["labels"] == []  # a fresh install: no source's precision is measured, nothing starts ticked
    assert "☐ `majority_persuaded_correct_agent`" in view["suggestions"]
    assert "unticked: precision not measured yet" in view["suggestions"]
    h.book.detect()
    h.book.set_final(other, ["shared_misconception_unrecovered", "majority_persuaded_correct_agent"], "judy")
    view = shown(h.show(None, wrong, "ana", "", REQ))  # both detectors were right on the adjudicated run
    assert view["labels"] == ["shared_misconception_unrecovered", "majority_persuaded_correct_agent"]
    assert f'title="{wrong}"' in view["header"] and "☑ `majority_persuaded_correct_agent`" in view["suggestions"]
    assert "ticked: precision 100%" in view["suggestions"]
    assert f'data-run="{wrong}"' in view["final_run"] and "Which is right?" in view["final_run"]
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


def test_a_frozen_queue_keeps_its_runs_while_a_live_one_grows(tmp_path):
    h, wrong, other = handlers(tmp_path)
    save_queue(h.store, Queue("wrong", {"correct": False}))
    frozen = h.freeze_queue("wrong", "ana", "", REQ)["value"]
    assert frozen.startswith("wrong · frozen ")
    h.create_queue("snap", 1, False, True, "ana", "", REQ, outcome="wrong")
    view = shown(h.open_queue(frozen, "ana", "", REQ))
    assert "run 1 of 2" in view["progress"] and "**frozen** snapshot" in view["progress"]
    save_run(h.store, make_transcript(MCQ, [["B", "B", "B"]], "B", False))  # a new wrong run is saved
    assert "run 1 of 2" in shown(h.open_queue(frozen, "ana", "", REQ))["progress"]
    assert "run 1 of 2" in shown(h.open_queue("snap", "ana", "", REQ))["progress"]
    live = shown(h.open_queue("wrong", "ana", "", REQ))["progress"]
    assert "run 1 of 3" in live and "live filter" in live


def test_sampled_blame_shows_its_interval_and_an_ideal_action_is_an_opinion_until_verified(tmp_path):
    from r2mad.runs.counterfactuals import SampledBlame, save_samples
    h, wrong, _ = handlers(tmp_path)
    save_samples(h.store, [SampledBlame(wrong, ((0, 0, "mask"),), 8, 6, 8, 2, 0.5, 0.018, 0.752, 96),
                           SampledBlame(wrong, ((1, 2, "mask"),), 8, 2, 8, 2, 0.0, -0.36, 0.36, 24)])
    said = shown(h.show(None, wrong, "ana", "", REQ))["suggestions"]
    assert "**Blame with intervals**" in said
    assert "round 0 · agent 1 masked: **Δ +0.50** [+0.02, +0.75] · 6/8 right vs 2/8 as it was · *raises it*" in said
    assert "round 1 · agent 3 masked: **Δ +0.00** [-0.36, +0.36]" in said and "*not sure*" in said
    assert h.save_ideal(wrong, [], "((A))", "ana", "", REQ) == {"__type__": "update"}  # no turn picked: a warning
    moves = h.save_ideal(wrong, ["round 0 · agent 2"], "Mars, since <b>red</b>. ((A))", "ana", "", REQ)
    assert "**Opinions** (not verified by a fork)" in moves and "not verified yet" in moves
    assert "&lt;b&gt;red" in moves and "Verified" not in moves


def test_verify_forks_the_run_with_the_ideal_action_and_says_whether_it_flips(tmp_path):
    import asyncio
    import dataclasses

    from r2mad.runs.counterfactuals import corrections_of
    from r2mad.settings.config import Backbone
    from testing.scripted_server import FakeServer
    from tests.conftest import answer

    with FakeServer(responder=answer) as server:  # every live agent says B
        config = load_config(env={"R2MAD_DATA_DIR": str(tmp_path / "var")})
        fake = Backbone(name="smollm2-135m", base_url=server.base_url, model="fake-model", timeout_s=30, max_retries=0)
        config = dataclasses.replace(config, backbones={**config.backbones, "smollm2-135m": fake})
        h = AnnotateHandlers(Services(config))
        run = save_run(h.store, make_transcript(MCQ, [["A", "B", "B"], ["A", "B", "B"]], "B", False,
                                                settings={"rounds": 2, "early_stop": False}))
        # round 1's agent 2 said A instead: the last round, so no live call, only the vote changes: A wins
        moves = asyncio.run(h.verify_ideal(run, ["round 1 · agent 2"], "Mars is red. ((A))", "ana", "", REQ))
        assert "**Verified corrections**" in moves and "**flips** wrong → right (A)" in moves
        hits = server.hits
        # round 0's agent 2 said A: round 1 runs live, the server's agents all say B again: no flip
        moves = asyncio.run(h.verify_ideal(run, ["round 0 · agent 2"], "Mars. ((A))", "ana", "", REQ))
        assert server.hits - hits == 3 and "does not flip: still wrong (B)" in moves
        flipped, kept = sorted(corrections_of(h.store, run), key=lambda c: -c.round)
        assert (flipped.correct, kept.correct) == (True, False)
        assert h.store.get_run(flipped.fork_id).transcript.rounds[1].turns[1].text == "Mars is red. ((A))"
        view = shown(h.show(None, run, "ana", "", REQ))
        assert view["moves"].index("Verified corrections") < view["moves"].index("round 1 · agent 2")
