"""Blame on a scripted backend: its budget of model calls is strict (a replay that needs more than the
parent's cost is cut where the budget ends, and reported incomplete), and its replays that turn a
failed run correct reach annotators as counterfactual suggestions beside the detectors."""
import asyncio
from types import SimpleNamespace

import pytest

from r2mad.annotation.book import LabelBook
from r2mad.annotation.detectors import NO_LABEL
from r2mad.backends.base import BackendError
from r2mad.debate import Debate
from r2mad.engine.forks import fork_debate
from r2mad.engine.runner import Setup
from r2mad.methods import make_method
from r2mad.prompts.common import final_answer_request
from r2mad.serving.services import Services
from r2mad.settings.config import load_config
from r2mad.steer.blame import CallMeter, blame
from r2mad.steer.links import Blame
from r2mad.ui.annotate_handlers import SHOWN, AnnotateHandlers
from tests.helpers import FORK_SETTINGS as SETTINGS
from tests.helpers import PLANET_MCQ as MCQ
from tests.helpers import agent_of, save_run
from tests.scripted import ScriptedBackend, fail, last_user

GUARDED = SETTINGS.replace(answer_guard="on")


def hedging(m):
    """Agent 1 starts on A, the others on B; later an agent shown an A goes along with it, and one shown
    none hedges without an answer, so the answer guard asks it once more (it then says B)."""
    if last_user(m) == final_answer_request(MCQ):
        return "((B))"
    if len(m) == 2:
        return "Mars. ((A))" if agent_of(m) == 0 else "Jupiter. ((B))"
    return "Going along. ((A))" if "((A))" in last_user(m) else "Hard to say, surely."


def failed_run():
    t = asyncio.run(Debate(ScriptedBackend(hedging), make_method("mad", GUARDED)).run(MCQ))
    assert t.correct is False and [str(x.answer) for x in t.rounds[1].turns] == ["B", "A", "A"]
    return t


def blamed(t, budget):
    backend = ScriptedBackend(hedging, name="b")

    async def run_fork(spec, wrap):
        return None, await fork_debate(t, spec, Setup(wrap(backend), GUARDED))
    rows, skipped = asyncio.run(blame(t, "run-1", run_fork, budget))
    return rows, skipped, backend


def test_a_replay_that_needs_more_than_the_parent_cost_is_cut_at_the_budget():
    t = failed_run()
    rows, skipped, backend = blamed(t, 3)
    # cheapest first: agent 1's last answer replaced (no call: only the vote changes), then agent 2's round-1
    # turn masked: its parent cost 3 calls, but agent 3, shown no A, hedges and the guard asks a 4th time
    assert [(b.round, b.agent, b.neutraliser, b.correct, b.calls) for b in rows] == [
        (2, 0, "previous", False, 0), (1, 1, "mask", None, 3)]
    assert rows[1].final_answer is None  # incomplete: no verdict
    assert len(backend.calls) == 3 and len(skipped) == 4  # never past the budget; nothing started after the cut
    guard = [c for c in backend.calls if last_user(c.messages) == final_answer_request(MCQ)]
    assert guard == []  # the 4th call was refused before it reached the backend
    rows, _, backend = blamed(t, 60)
    assert len(backend.calls) == sum(b.calls for b in rows) <= 60 and all(b.correct is not None for b in rows)
    assert [(b.round, b.agent, b.neutraliser) for b in rows if b.correct] == [(0, 0, "mask")]


def test_the_meter_counts_across_backends_and_forwards_what_they_are():
    meter = CallMeter(2)
    a, b = ScriptedBackend(lambda m: "((A))", name="left"), ScriptedBackend(lambda m: fail(), name="right")
    wa, wb = meter.wrap(a), meter.wrap(b)
    assert (wa.name, wb.capabilities.supports_logprobs) == ("left", True)
    asyncio.run(wa.chat([]))
    with pytest.raises(BackendError, match="down"):
        asyncio.run(wb.chat([]))  # a call that fails still counts: it was sent
    with pytest.raises(BackendError, match="budget of 2 model calls is spent"):
        asyncio.run(wa.chat([]))
    assert (meter.used, meter.refused, len(a.calls), len(b.calls)) == (2, 1, 1, 1)


def test_blame_that_fixes_a_run_is_a_counterfactual_suggestion_for_annotators(tmp_path):
    services = Services(load_config(env={"R2MAD_DATA_DIR": str(tmp_path / "var")}))
    store = services.store
    run = save_run(store, failed_run())
    fork = save_run(store, failed_run())  # stands in for the replay's saved run
    book = LabelBook(store)
    book.detect()
    before = book.suggestions(run)
    store.save_blame([Blame(run, 0, 0, "mask", fork, "B", True, 6, 120),
                       Blame(run, 2, 0, "previous", None, "A", False, 0, 0),
                       Blame(run, 1, 1, "mask", None, None, None, 3, 60)])  # fixed / still wrong / cut
    assert book.detect() == 1  # the new blame rows make the run due again
    found = [s for s in book.suggestions(run) if s.detector == "counterfactual"]
    assert len(book.suggestions(run)) == len(before) + 1 and len(found) == 1
    s = found[0]
    assert (s.label, s.round, s.agents) == (NO_LABEL, 0, (0,))  # agent 1 of the chat is agent 0 here
    assert s.evidence == {"neutraliser": "mask", "turns": [[0, 0, "mask"]], "fork_id": fork, "calls": 6,
                          "final_answer": "B"}
    assert s.summary == ("with agent 1's round 0 turn masked from its peers, the replayed debate ends "
                         "correct (B)")
    h = AnnotateHandlers(services)
    shown = dict(zip(SHOWN, h.show(None, run, "ana", "", SimpleNamespace(session_hash="s1", query_params={}))))
    said = shown["suggestions"]
    assert "☐ **counterfactual**" in said and "round 0, agent(s) 1: with agent 1's round 0 turn" in said
    assert f"fork_id = {fork}" in said and "calls = 6" in said
    assert NO_LABEL not in shown["labels"] and shown["turn"]["value"] == ["round 0 · agent 1"]  # turn picked
    book.save_labels(run, "ana", ["majority_persuaded_correct_agent"],
                     blame={"majority_persuaded_correct_agent": {"round": 0, "agent": 0}})
    assert book.suggestions(run)[-1].reviews == {"ana": "confirmed"}  # they blamed the same turn
    book.save_labels(run, "bo", ["other"], blame={"other": {"round": 1, "agent": 2}})
    assert book.suggestions(run)[-1].reviews == {"ana": "confirmed", "bo": "rejected"}
