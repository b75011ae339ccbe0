"""Mixed-model debates on the loop: each agent's calls reach its own backend, auxiliary calls the
configured one, transcripts record each agent's model and usage per model, and R²-MAD still retrieves
from each agent's own memory. (tests/test_steer_cli.py does the same through two loopback servers.)"""
import asyncio

import pytest

from r2mad.config import DebateSettings
from r2mad.debate import Debate
from r2mad.memory.summaries import SummaryCache
from r2mad.methods import make_method
from r2mad.types import Task, Transcript
from tests.scripted import ScriptedBackend, persona_of
from tests.test_r2mad_method import OPTIONS, SYSTEMS, bank, reply  # noqa: F401  (bank is a fixture)

TASK = Task("mcq", "Question number 2: which planet is largest?", OPTIONS, "B", "new")


def mixed(method, *, memory=None, aux=None):
    a, b = ScriptedBackend(reply, name="a"), ScriptedBackend(reply, name="b")
    s = DebateSettings(seed=1, early_stop=False)
    strategy = make_method(method, s, bank=memory, summaries=SummaryCache())
    debate = Debate(aux or a, strategy, backbone="aux" if aux else "a",
                    agent_backends=[("a", a), ("b", b), ("a", a)])
    return asyncio.run(debate.run(TASK)), a, b


def test_each_agent_calls_its_own_backend_and_usage_is_per_model():
    t, a, b = mixed("mad")
    assert {persona_of(c.messages) for c in b.calls} == {SYSTEMS[1]} and len(b.calls) == 3
    assert {persona_of(c.messages) for c in a.calls} == {SYSTEMS[0], SYSTEMS[2]} and len(a.calls) == 6
    assert t.agent_backbones() == ["a", "b", "a"]
    per = t.usage_by_model()
    assert (per["a"].calls, per["b"].calls) == (6, 3) and per["a"] + per["b"] == t.usage()
    assert Transcript.from_json(t.to_json()) == t  # the models survive the JSON round trip


def test_judges_go_to_the_auxiliary_backbone():
    judge = ScriptedBackend(lambda m: "YES, fine.", name="judge")
    t, a, b = mixed("madm2-subjective", aux=judge)
    assert len(judge.calls) == 2 * 3 and len(a.calls) == 6 and len(b.calls) == 3
    assert {c.backbone for r in t.rounds for c in r.aux} == {"aux"} and t.usage_by_model()["aux"].calls == 6


def test_r2mad_banks_per_agent_still_work_with_mixed_models(bank):  # noqa: F811
    t, a, b = mixed("r2mad", memory=bank)
    for rnd in t.rounds[1:]:
        for turn in rnd.turns:
            cases = turn.details["retrieved"]
            assert cases and all(f":a{turn.agent}:" in c["case_id"] for c in cases)  # its own memory
    summaries = [c for r in t.rounds for c in r.aux if c.kind == "summary"]
    assert summaries and {c.backbone for c in summaries} == {"a"}  # agent 1's backbone by default
    assert len(b.calls) == 3 and all(persona_of(c.messages) == SYSTEMS[1] for c in b.calls)


def test_wrong_number_of_agent_backbones_is_one_sentence():
    with pytest.raises(ValueError, match="2 agent backbones were given for 3 agents; give one per agent."):
        Debate(ScriptedBackend(reply), make_method("mad", DebateSettings()),
               agent_backends=[("a", ScriptedBackend(reply))] * 2)
