"""DMAD gives each agent its own reasoning method for the whole debate; TrueDMAD adds TrueMAD's advice."""
import asyncio

from r2mad.debate import Debate
from r2mad.methods import make_method
from r2mad.methods.truemad import Advice
from r2mad.settings.config import DebateSettings
from r2mad.types import Task
from tests.scripted import ScriptedBackend, last_user

TASK = Task("mcq", "Largest planet?", (("A", "Mars"), ("B", "Jupiter"), ("C", "Venus")), "B", "q")
METHODS = ("chain of thought", "step-back", "program of thought")


def run(method, agents=3):
    backend = ScriptedBackend(lambda m: "Checked. ((B))" if "advice" not in last_user(m).lower() else "SUPPORT: fine.")
    s = DebateSettings().replace(seed=1, agents=agents, rounds=2, early_stop=False)
    return asyncio.run(Debate(backend, make_method(method, s)).run(TASK)), backend


def method_named(text: str) -> str:
    return next(m for m in METHODS if f"reasoning method is {m}" in text or f"({m})" in text)


def test_each_agent_keeps_its_own_reasoning_method_in_every_round():
    t, backend = run("dmad", agents=4)
    openings = [last_user(c.messages) for c in backend.calls if len(c.messages) == 2]
    assert sorted(map(method_named, openings)) == sorted([*METHODS, "chain of thought"])  # agent 4 wraps round
    personas = {turn.agent: turn.persona for turn in t.rounds[0].turns}
    assert [personas[i].rsplit(", ", 1)[1] for i in range(4)] == [*METHODS, "chain of thought"]
    for turn in t.rounds[1].turns:  # round 1 reminds each agent of the method it opened with
        opened = method_named(turn.prompt[1].content)
        assert method_named(turn.prompt[-1].content) == opened
    assert t.final.value == "B" and t.method == "dmad"


def test_truedmad_is_dmad_with_advice():
    method = make_method("truedmad", DebateSettings())
    assert method.name == "truedmad" and any(isinstance(p, Advice) for p in method.plugins)
    assert make_method("dmad+advice", DebateSettings()).name == "truedmad"
    assert make_method("mad+advice", DebateSettings()).name == "truemad"
    t, _ = run("truedmad")
    assert t.rounds[1].details.get("advice") and len(t.rounds[1].details["advice"]) == 6  # 3 agents, all pairs


def test_dmad_opens_with_its_own_round0_beside_a_shared_one():
    from r2mad.engine.runner import Setup, run_methods

    backend = ScriptedBackend(lambda m: "Checked. ((B))")
    s = DebateSettings().replace(seed=1, rounds=2, early_stop=False)
    out = asyncio.run(run_methods(TASK, ["mad", "truemad", "dmad"], Setup(backend, s)))
    assert out["mad"].rounds[0].details.get("shared") and out["truemad"].rounds[0].details.get("shared")
    assert not out["dmad"].rounds[0].details.get("shared")
    openings = [t.prompt[-1].content for t in out["dmad"].rounds[0].turns]
    assert sorted(map(method_named, openings)) == sorted(METHODS)


def test_the_report_lists_dmads_departures_for_dmad_and_truedmad_only():
    import dataclasses

    from r2mad.methods.departures import DMAD_DEPARTURE, departures

    paper = dataclasses.asdict(DebateSettings().replace(profile="paper"))
    assert departures(paper, ["dmad"]) == [DMAD_DEPARTURE]
    assert departures(paper, ["mad"]) == []
    lines = departures(paper, ["truedmad"])  # DMAD's line, then TrueDMAD's own
    assert lines[0] == DMAD_DEPARTURE and [line.split(" ")[0] for line in lines[1:]] == ["TrueDMAD"]
    assert departures(paper, ["dmad+advice"])[0] == DMAD_DEPARTURE
    for part in ("persona", "never run", "fourth agent uses chain of thought", "earliest agent", "at random"):
        assert part in DMAD_DEPARTURE
