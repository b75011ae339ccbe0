"""A visitor's wait (issue 52): a debate that has started is never thrown away on its time limit (it ends after
its last finished round, saved with that round's vote); the line starts a debate only when its rounds, at the
measured pace, end within its limit, and otherwise holds it with an estimate that moves as the line does; the
model's load is said. Scripted backends with short sleeps and a hand-driven clock; no wall-clock assertions."""
from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import re
import threading

import pytest
import yaml

from r2mad.backends import embedded
from r2mad.engine.resources import Given
from r2mad.engine.service import RunRequest, StoreSink, start
from r2mad.runs.store import RunStore
from r2mad.serving.admission import Admission, Refused, Ticket, waiting_words
from r2mad.serving.line import EMBEDDED, sharing_words
from r2mad.settings.config import DebateSettings
from r2mad.ui.render.states import outcome_line
from tests.helpers import PLANET_MCQ, agent_of
from tests.scripted import ScriptedBackend


def by_agent(answers):
    return lambda m: f"I am agent-{agent_of(m)}. ((" + answers[agent_of(m)] + "))"


def saved_debate(tmp_path, backend, **settings):
    """Run one saved MAD debate through the engine; (its transcript as the run store holds it, the run id)."""
    s = dataclasses.replace(DebateSettings(), **{"seed": 1, **settings})  # a limit below the validated range
    store = RunStore(tmp_path / "runs.sqlite")
    request = RunRequest(PLANET_MCQ, ("mad",), s, backend.name, source="cli")
    [runs] = asyncio.run(start([request], Given(backend), StoreSink(store)))
    return store.get_run(runs.run_ids["mad"]).transcript


def test_a_debate_whose_time_runs_out_stops_after_a_finished_round_with_its_vote_saved(tmp_path):
    # each round takes about 0.1 s; 5 rounds cannot all end within 0.35 s, so it stops before one that cannot
    t = saved_debate(tmp_path, ScriptedBackend(by_agent("BAC"), delay_s=0.1), rounds=5, deadline_s=0.35)
    stop = next(n for n in t.notices if "time limit" in n)
    done = int(re.fullmatch(r"Stopped after round (\d) of 4 to stay within the time limit of 0.35 s; the answer is "
                            r"round \1's vote\.", stop)[1])
    assert done < 4 and t.status == "done"  # ended like a finished debate, not a failure
    assert [r.index for r in t.rounds] == list(range(done + 1))  # no round was thrown away or left half-run
    assert str(t.final) == "B" and t.correct is True  # the last round's vote (B, A, C: a tie goes to agent 1)
    assert outcome_line(t) == ("Final answer: B — correct · B = Jupiter · by tie (1 of 3 agents each); the earliest "
                               f"agent's answer wins · stopped after round {done} of 4 to stay within the time limit")


class SlowDebater(ScriptedBackend):
    """Round 0 answers at once; a debate round (the agent's history holds its answer) takes 30 s."""

    async def chat(self, messages, **options):
        if len(messages) > 2:
            await asyncio.sleep(30)
        return await super().chat(messages, **options)


def test_a_round_far_past_the_limit_is_cut_and_the_debate_ends_with_the_round_before(tmp_path):
    t = saved_debate(tmp_path, SlowDebater(by_agent("BBA")), rounds=3, deadline_s=0.2, early_stop=False)
    assert t.status == "done" and str(t.final) == "B"  # round 0's vote, 2 of 3
    stop = "Stopped after round 0 of 2 to stay within the time limit of 0.2 s; the answer is round 0's vote."
    assert stop in t.notices
    assert t.finished().rounds == t.rounds[:1] and t.rounds[1].details["running"]  # the cut round kept for its cost


class Clock:
    now = 100.0

    def __call__(self):
        return self.now


def paced_line(clock):
    """Two slots; two debates of 2 rounds ran side by side for 40 s: a round alone takes 40 / 2 / 2 = 10 s."""
    a = Admission({"cpu": 2}, max_waiting=8, per_visitor=4, waiting_per_visitor=4, clock=clock)
    pair = [a.enter("x", "cpu", rounds=2, deadline_s=900), a.enter("y", "cpu", rounds=2, deadline_s=900)]
    clock.now += 40
    for t in pair:
        t.rounds_run = 2
        a.leave(t, measured=True)
    assert a.round_s("cpu") == 10 and a.round_s("cpu", sharing=2) == 20
    return a


def test_a_debate_that_would_not_end_in_time_beside_another_waits_with_an_estimate_that_moves():
    clock = Clock()
    a = paced_line(clock)
    ann = a.enter("ann", "cpu", rounds=3, deadline_s=100)  # alone: 3 x 10 s
    bob = a.enter("bob", "cpu", rounds=3, deadline_s=50)  # beside ann: 3 x 20 s = 60 s, past its 50 s
    assert ann.running and bob.waiting and a.running_count("cpu") == 1  # held though a slot is free
    assert a.place(bob) == 1 and a.estimate_s(bob) == 30  # when ann's 30 s are over
    assert waiting_words(1, a.estimate_s(bob), 0, held=a.held(bob)) == (
        "Waiting in line: place 1 — starts in about 30 s, once fewer debates share the model, so that it ends "
        "within its time limit · waited 0 s. Press Stop to leave the line.")
    cid = a.enter("cid", "cpu", rounds=1, deadline_s=50)  # would fit beside ann, but nobody passes bob
    assert cid.waiting and a.place(cid) == 2 and a.estimate_s(cid) == 30  # 1 x 20 s beside bob fits from then
    clock.now += 10
    assert a.estimate_s(bob) == 20 and not a.held(cid)  # the estimate moves as the line does
    clock.now += 20
    ann.rounds_run = 3
    a.leave(ann, measured=True)  # 30 s for 3 rounds alone: the pace stays 10 s
    assert bob.running and cid.running and a.round_s("cpu") == 10


def test_a_debate_running_slower_than_expected_moves_the_estimate_of_those_waiting():
    """Two debates of 3 rounds share the two slots (3 x 20 s = 60 s expected each); bob waits. At 70 s both
    overran: ann finished 1 round (2 to go at 70 s a round: 140 s), cid 2 (1 to go at 35 s: 35 s), so bob
    starts in 35 s, not the tenth of 60 s a debate past its expected end counted for before."""
    clock = Clock()
    a = paced_line(clock)
    ann, cid = a.enter("ann", "cpu", rounds=3, deadline_s=900), a.enter("cid", "cpu", rounds=3, deadline_s=900)
    bob = a.enter("bob", "cpu", rounds=3, deadline_s=900)
    assert ann.running and cid.running and bob.waiting and a.estimate_s(bob) == 60
    clock.now += 70
    ann.rounds_run, cid.rounds_run = 1, 2
    assert a.estimate_s(bob) == 35  # 70 / 2 x (3 - 2)
    clock.now += 10
    assert a.estimate_s(bob) == 40  # still in its last round: 80 / 2 x 1
    cid.rounds_run = 3  # its rounds are done, it is being saved
    assert a.estimate_s(bob) == 6  # a tenth of its expected 60 s


def test_the_engine_notes_the_rounds_a_debate_finished_as_they_end(tmp_path):
    """What the estimate above reads: the ticket's rounds so far, noted by the engine as each round is saved."""
    line = Admission({"cpu": 1}, max_waiting=8, per_visitor=4, waiting_per_visitor=4)
    noted = []

    class Lined(Given):
        def admitted(self, request):
            @contextlib.asynccontextmanager
            async def inside():
                ticket = line.enter("v", "cpu", rounds=request.settings.rounds)
                try:
                    yield ticket
                finally:
                    line.leave(ticket, measured=ticket.measured)
            return inside()

    def reply(m):
        if tickets := list(line.lanes["cpu"].running):
            noted.append(tickets[0].rounds_run)
        return by_agent("BAC")(m)
    store = RunStore(tmp_path / "runs.sqlite")
    s = DebateSettings(seed=1, rounds=3, early_stop=False)
    asyncio.run(start([RunRequest(PLANET_MCQ, ("mad",), s, "scripted", source="cli")],
                      Lined(ScriptedBackend(reply)), StoreSink(store)))
    assert noted == [0, 0, 0, 1, 1, 1, 2, 2, 2]  # each round's calls see the rounds finished before it


def test_a_debate_that_would_not_end_in_time_even_alone_is_offered_fewer_rounds_before_any_call():
    a = paced_line(Clock())
    with pytest.raises(Refused) as refused:
        a.enter("dan", "cpu", rounds=6, deadline_s=50)
    assert str(refused.value) == ("A round takes about 10 s here now, so 6 rounds would not end within this debate's "
                                  "time limit of 50 s; choose 5 rounds or fewer, or fewer agents, or try again later.")
    assert a.waiting_count() == 0 and a.running_count("cpu") == 0


def test_a_debate_of_many_agents_is_offered_the_agents_that_would_end_in_time():
    """A turn alone takes 10 s (paced_line's debates were entered without agents: the round as a whole). Four
    agents make a round of 40 s: 3 rounds need 120 s of a 65 s limit; 1 round fits, or 2 agents (3 x 2 x 10)."""
    a = paced_line(Clock())
    with pytest.raises(Refused) as refused:
        a.enter("dan", "cpu", rounds=3, deadline_s=65, agents=4)
    assert str(refused.value) == ("A round takes about 40 s here now, so 3 rounds would not end within this debate's "
                                  "time limit of 65 s; choose 1 round or fewer, or 2 agents, or try again later.")
    with pytest.raises(Refused) as refused:
        a.enter("dan", "cpu", rounds=3, deadline_s=25, agents=3)  # not one round of 30 s; one agent's 3 x 10 s neither
    assert str(refused.value) == ("A round takes about 30 s here now, longer than this debate's time limit of 25 s; "
                                  "use a lower Max tokens, or try again later.")
    assert a.enter("dan", "cpu", rounds=3, deadline_s=65, agents=2).running


def test_the_estimate_counts_the_rounds_recent_debates_ran_when_they_stop_early():
    """After two debates of 4 rounds stopped after 2 (agreement), debates are expected to run 3/4 of their rounds
    (1, 1, 1/2, 1/2 on record): two running beside each other (20 s a round) end after 3 x 20 = 60 s, not 80."""
    clock = Clock()
    a = paced_line(clock)
    early = [a.enter("x", "cpu", rounds=4, deadline_s=900), a.enter("y", "cpu", rounds=4, deadline_s=900)]
    clock.now += 40
    for t in early:
        t.rounds_run = 2
        a.leave(t, measured=True)
    assert a.round_s("cpu") == 10  # 40 s for 2 rounds side by side: the pace is unchanged
    ann, cid = a.enter("ann", "cpu", rounds=4, deadline_s=900), a.enter("cid", "cpu", rounds=4, deadline_s=900)
    bob = a.enter("bob", "cpu", rounds=4, deadline_s=900)
    assert a.expected_rounds(ann) == 3 and a.estimate_s(bob) == 60
    clock.now += 50
    ann.rounds_run = cid.rounds_run = 2
    assert a.estimate_s(bob) == 25  # at their own pace, 25 s a round, the third of the 3 expected
    # admission still plans every round asked for: 4 x 20 s beside another is past 70 s, though 3 x 20 s is not
    assert not a.fits(Ticket("dan", "cpu", clock.now, rounds=4, deadline_s=70), sharing=2)


class LoadingProcess:
    """Stands in for the model process: its load lasts until the test says so."""
    loaded = threading.Event()

    def __init__(self, path, n_ctx):
        assert self.loaded.wait(10)  # a hang guard only


def test_the_models_load_is_said_and_started_at_app_start(tmp_path, monkeypatch, config_dir):
    from r2mad.serving.line import loading_words
    from r2mad.serving.shared import Shared
    from r2mad.settings.config import load_config

    monkeypatch.setattr(embedded, "ModelProcess", LoadingProcess)
    monkeypatch.setattr(embedded, "_processes", {})
    monkeypatch.setattr(embedded, "_load_s", [])
    monkeypatch.setattr(embedded, "smollm2_path", lambda: tmp_path / "model.gguf")
    LoadingProcess.loaded.clear()
    backbones = yaml.safe_load((config_dir / "backbones.yaml").read_text())
    backbones["backbones"]["smollm2-135m"] = {"kind": "embedded"}
    (config_dir / "backbones.yaml").write_text(yaml.safe_dump(backbones))
    services = Shared(load_config(config_dir))
    services.warm_model("smollm2-135m")  # what app.py does at start for the default (embedded) backbone
    a = Admission({EMBEDDED: 2}, max_waiting=4)
    for _ in range(1000):  # until the load has begun, bounded
        if embedded.loading_s() is not None:
            break
        threading.Event().wait(0.01)
    words = sharing_words(a, EMBEDDED)  # the running debate's reason line while it waits for the model
    assert re.fullmatch(r"Loading the model, about (15|10) s \(once: later debates find it loaded\)\.", words), words
    LoadingProcess.loaded.set()
    for _ in range(1000):
        if embedded.loading_s() is None:
            break
        threading.Event().wait(0.01)
    assert loading_words() == "" and sharing_words(a, EMBEDDED) == ""
    assert len(embedded._load_s) == 1  # the next load is estimated from this one's time
