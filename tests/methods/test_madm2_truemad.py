"""MAD-M² masking and TrueMAD advice on the shared loop, with a scripted backend and hand-made values."""
import asyncio
import math
import re

import pytest

from r2mad.backends.base import Capabilities
from r2mad.debate import Debate
from r2mad.methods import make_method
from r2mad.methods.madm2 import (
    objective_keep,
    parse_judgment,
    perplexity,
    subjective_keep,
)
from r2mad.methods.truemad import advice_pairs, parse_advice_type
from r2mad.prompts.common import PERSONAS
from r2mad.settings.config import ConfigError, DebateSettings
from r2mad.types import Task
from tests.scripted import ScriptedBackend, fail, last_user, persona_of

SYSTEMS = [text for _, text in PERSONAS["mcq"]]
TASK = Task("mcq", "Largest planet?", (("A", "Mars"), ("B", "Jupiter"), ("C", "Venus")), "B", "q")
LOGPROBS = {0: [-0.1, -0.3], 1: [-1.0, -1.0], 2: [-2.0, -0.5, -0.5]}  # means -0.2, -1.0, -1.0


def agent_of(messages):
    return SYSTEMS.index(persona_of(messages)) if persona_of(messages) in SYSTEMS else None


def debate(method, reply, **settings):
    """MAD-M² here runs with context "history" (the paper text's reading) unless a test says otherwise."""
    backend = ScriptedBackend(reply)
    s = DebateSettings().replace(seed=1, rounds=2, early_stop=False, **{"context": "history", **settings})
    return asyncio.run(Debate(backend, make_method(method, s)).run(TASK)), backend


def round1_prompts(backend):
    return {agent_of(c.messages): last_user(c.messages) for c in backend.calls
            if agent_of(c.messages) is not None and len(c.messages) > 2}


# --- MAD-M² --------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, label", [
    ("YES, correct.", "YES"), ("no - step 2 is wrong", "NO"), ("Not  sure: maybe.", "NOT SURE"),
    ("It looks fine to me.", "NOT SURE"),
    ("There is no error. YES", "YES"),  # the last verdict word, and capitals before prose
    ("YES. There is no error.", "YES"),
    ("Step 2 says NO carry is needed; that holds. <label>YES</label>", "YES"),  # the tag wins
    ("<label>YES</label> on a first look, but the sum is off. <label>NO</label>", "NO"),  # the last tag
    ("Hard to say. <label> not sure </label>", "NOT SURE"),
])
def test_judgment_labels(text, label):
    assert parse_judgment(text) == label


def test_subjective_keep_rules():
    assert [subjective_keep(x, strict=False) for x in ("YES", "NO", "NOT SURE")] == [True, False, True]
    assert [subjective_keep(x, strict=True) for x in ("YES", "NO", "NOT SURE")] == [True, False, False]


def test_perplexity_and_the_median_rule():
    assert perplexity(-1.0) == pytest.approx(math.e)
    # exp(-0.2)=0.819 > median exp(-1.0)=0.368 -> only agent 0 is kept; ties at the median are masked
    assert objective_keep({0: -0.2, 1: -1.0, 2: -1.0}) == {0: True, 1: False, 2: False}
    assert objective_keep({0: -0.5, 1: -0.1, 2: -0.9, 3: -0.3}) == {0: False, 1: True, 2: False, 3: True}


def reply_with_judges(labels):
    """Agents answer A/B/C; the judge of agent j's response says labels[j]."""
    def reply(messages):
        text = last_user(messages)
        if "verdict word" in text:
            who = next(j for j, letter in enumerate("ABC") if f"(({letter}))" in text)
            return f"{labels[who]} because."
        return "((" + "ABC"[agent_of(messages)] + "))"
    return reply


def test_subjective_masks_from_scripted_labels():
    t, backend = debate("madm2-subjective", reply_with_judges(["YES", "NO", "Hmm, unclear"]))
    masks = t.rounds[1].details["masks"]["all"]
    assert {j: (m["label"], m["keep"]) for j, m in masks.items()} == {
        "0": ("YES", True), "1": ("NO", False), "2": ("NOT SURE", True)}
    shown = round1_prompts(backend)
    assert "((A))" not in shown[0] and "((C))" in shown[0] and "((B))" not in shown[0]  # B masked
    assert "((A))" in shown[1] and "((C))" in shown[1]
    assert [c.kind for c in t.rounds[1].aux] == ["judge"] * 3  # one judgment per response, shared


def test_strict_masks_not_sure_and_all_masked_agent_solves_alone():
    t, backend = debate("madm2-subjective", reply_with_judges(["NO", "NO", "NOT SURE"]), strict=True)
    shown = round1_prompts(backend)
    assert all("Solve the question again" in shown[a] for a in range(3))
    assert all(t.rounds[1].turns[a].details["resolved_alone"] for a in range(3))


def fresh_round1(backend):
    """Each agent's whole prompt in round 1 (fresh context: persona + one user message)."""
    agents = [c for c in backend.calls if agent_of(c.messages) is not None]
    return {agent_of(c.messages): c.messages for c in agents[3:6]}


def test_fresh_context_shows_each_agent_the_kept_responses_its_own_included():
    # judged: A (agent 0) YES, B (agent 1) NO, C (agent 2) NOT SURE -> kept: agents 0 and 2
    t, backend = debate("madm2-subjective", reply_with_judges(["YES", "NO", "Hmm, unclear"]), context="fresh")
    shown = fresh_round1(backend)
    assert all(len(m) == 2 and m[0].role == "system" for m in shown.values())  # no chat history
    for agent in range(3):
        text = shown[agent][1].content
        assert "((A))" in text and "((C))" in text and "((B))" not in text
        assert t.rounds[1].turns[agent].details["shown"] == [0, 2]
    assert "Agent 1 (Generalist) (your own answer)" in shown[0][1].content
    assert "Agent 3 (Skeptic) (your own answer)" in shown[2][1].content
    assert "your own answer" not in shown[1][1].content  # agent 1's own answer was masked
    assert [c.kind for c in t.rounds[1].aux] == ["judge"] * 3  # one judgment per response, shared


def test_fresh_context_all_masked_gives_the_plain_single_agent_prompt():
    t, backend = debate("madm2-subjective", reply_with_judges(["NO", "NO", "NO"]), context="fresh")
    shown = fresh_round1(backend)
    round0 = [c.messages for c in backend.calls if agent_of(c.messages) is not None][:3]
    assert [shown[a] for a in range(3)] == [tuple(m) for m in round0]  # exactly the round-0 prompt, fresh
    assert all(t.rounds[1].turns[a].details["resolved_alone"] for a in range(3))


def test_fresh_context_per_agent_judges_every_response_including_its_own():
    t, _ = debate("madm2-subjective", reply_with_judges(["YES", "YES", "YES"]), per_agent_judge=True,
                  context="fresh")
    assert len([c for c in t.rounds[1].aux if c.kind == "judge"]) == 9


def test_fresh_objective_masks_an_agents_own_answer_too():
    t, backend = debate("madm2-objective", lp_reply, context="fresh")  # only agent 0 above the median
    shown = fresh_round1(backend)
    assert all("((A))" in shown[a][1].content and "((B))" not in shown[a][1].content for a in range(3))
    assert [t.rounds[1].turns[a].details["shown"] for a in range(3)] == [[0], [0], [0]]


def test_per_agent_judging_makes_n_times_n_minus_1_calls():
    t, _ = debate("madm2-subjective", reply_with_judges(["YES", "YES", "YES"]), per_agent_judge=True)
    assert len([c for c in t.rounds[1].aux if c.kind == "judge"]) == 6


def test_failed_judgment_counts_as_not_sure_and_is_recorded():
    def reply(messages):
        return fail("judge down") if "verdict word" in last_user(messages) else "((B))"
    t, _ = debate("madm2-subjective", reply)
    masks = t.rounds[1].details["masks"]["all"]
    assert all(m["label"] == "NOT SURE" and m["keep"] and m["error"] for m in masks.values())


def lp_reply(messages):
    agent = agent_of(messages)
    return "((" + "ABC"[agent] + "))", LOGPROBS[agent]


def test_objective_masking_keeps_the_most_confident_response():
    t, backend = debate("madm2-objective", lp_reply)
    masks = t.rounds[1].details["masks"]
    assert {j: m["keep"] for j, m in masks.items()} == {"0": True, "1": False, "2": False}
    assert masks["1"]["perplexity"] == pytest.approx(math.e, abs=1e-3)
    assert all(c.logprobs for c in backend.calls)  # logprobs were asked for
    shown = round1_prompts(backend)
    assert "((A))" in shown[1] and "((C))" not in shown[1] and "((A))" in shown[2]


def test_objective_without_logprobs_falls_back_visibly_or_refuses():
    backend = ScriptedBackend(reply_with_judges(["YES"] * 3), capabilities=Capabilities())
    s = DebateSettings(seed=1, rounds=2, early_stop=False)
    t = asyncio.run(Debate(backend, make_method("madm2-objective", s)).run(TASK))
    assert "falls back to subjective" in t.notices[0] and "all" in t.rounds[1].details["masks"]
    strict = make_method("madm2-objective", s.replace(fallback_subjective=False))
    calls = len(backend.calls)
    with pytest.raises(ConfigError, match="logprobs"):
        asyncio.run(Debate(backend, strict).run(TASK))
    assert len(backend.calls) == calls  # refused before any token was spent


def test_logprobs_missing_mid_debate_is_recorded_and_masked_subjectively():
    def reply(messages):
        if "verdict word" in last_user(messages):
            return "YES"
        return ("((A))", None) if agent_of(messages) == 1 else lp_reply(messages)
    t, _ = debate("madm2-objective", reply)
    assert any("logprobs missing" in n for n in t.notices) and "all" in t.rounds[1].details["masks"]


# --- TrueMAD -------------------------------------------------------------------------------------

def test_pairings():
    assert advice_pairs(3, "all") == [(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)]
    assert advice_pairs(3, "ring") == [(0, 1), (1, 2), (2, 0)]


@pytest.mark.parametrize("text, kind", [("REBUTTAL: step 2 fails", "rebuttal"), ("**Support** good", "support"),
                                        ("Question: why 5?", "question"), ("refinement - add units", "refinement"),
                                        ("You might want to check.", "other")])
def test_advice_type_parsing(text, kind):
    assert parse_advice_type(text) == kind


def advice_reply(messages):
    text = last_user(messages)
    if "Write advice" in text:
        source = agent_of(messages)
        target = int(text.split("addressed only to Agent ")[1][0]) - 1
        return f"REBUTTAL from-{source}-to-{target}" if source != 2 else "untagged note"
    return "((" + "ABC"[agent_of(messages)] + "))"


def test_each_target_gets_exactly_the_advice_addressed_to_it():
    t, backend = debate("truemad", advice_reply)
    shown = round1_prompts(backend)
    for target in range(3):
        got = set(re.findall(r"from-(\d)-to-(\d)", shown[target]))
        assert got == {(str(s), str(target)) for s in range(2) if s != target}
    advice = [c for c in t.rounds[1].aux if c.kind == "advice"]
    assert len(advice) == 6 and {c.label for c in advice} == {"rebuttal", "other"}
    u_debate, u_advice = t.usage(("debate",)), t.usage(("advice",))
    assert (u_debate.calls, u_advice.calls) == (6, 6) and t.usage().calls == 12


def test_failed_advice_is_recorded_and_the_round_goes_on():
    def reply(messages):
        if "Write advice" in last_user(messages) and agent_of(messages) == 0:
            return fail("advice endpoint down")
        return advice_reply(messages)
    t, _ = debate("truemad", reply)
    assert t.status == "done" and len(t.rounds) == 2
    assert sum(1 for c in t.rounds[1].aux if c.error) == 2
    assert sum("advice from agent 1" in n for n in t.notices) == 2


def test_advice_wraps_other_debate_methods():
    t, backend = debate("madm2-subjective+advice", reply_with_judges(["YES"] * 3))
    kinds = [c.kind for c in t.rounds[1].aux]
    assert kinds.count("judge") == 3 and kinds.count("advice") == 6 and t.method == "madm2-subjective+advice"
