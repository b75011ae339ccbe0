"""Fork and replay on a scripted backend: a fork with no change reproduces its parent, a forced answer
reaches the peers exactly as specified, masks hide a response, and replayed rounds cost no call."""
import asyncio

import pytest

from r2mad.engine.forks import fork_debate
from r2mad.engine.runner import Setup
from r2mad.prompts import mad
from r2mad.steer.fork import Change, ForkSpec, live_usage, parse_changes, replay_rounds
from tests.helpers import FORK_SETTINGS as SETTINGS
from tests.helpers import PLANET_MCQ as MCQ
from tests.helpers import agent_of, fork, parent
from tests.helpers import fork_replies as replies
from tests.scripted import ScriptedBackend, last_user


@pytest.mark.parametrize("method", ["mad", "madm2-subjective", "truemad"])
@pytest.mark.parametrize("from_round", [1, 2])
def test_fork_without_change_reproduces_the_parent_from_round_t(method, from_round):
    t, calls = parent(method)
    f, backend = fork(t, ForkSpec(from_round))
    assert [r.details.get("replayed") for r in f.rounds] == [True] * from_round + [None] * (3 - from_round)
    for a, b in zip(t.rounds, f.rounds):
        assert [(x.prompt, x.text, x.answer) for x in a.turns] == [(x.prompt, x.text, x.answer) for x in b.turns]
    live = [(c.messages, c.seed) for c in calls.calls][-len(backend.calls):]
    assert [(c.messages, c.seed) for c in backend.calls] == live  # the same calls, in the same order
    assert f.final == t.final and f.correct == t.correct


@pytest.mark.parametrize("method", ["mad", "madm2-subjective", "r2mad-no-memory", "truemad"])
def test_replayed_rounds_make_no_backend_call(method):
    t, _ = parent(method)
    f, backend = fork(t, ForkSpec(3))  # every round replayed: nothing left to run
    assert backend.calls == [] and live_usage(f).calls == 0 and f.final == t.final
    f, backend = fork(t, ForkSpec(2))  # one live round: its calls only, all counted in the fork
    assert len(backend.calls) == live_usage(f).calls == len(f.rounds[2].turns) + len(f.rounds[2].aux)
    assert live_usage(f).calls < t.usage().calls and f.usage().calls == t.usage().calls  # the record keeps the cost


def test_forced_answer_at_round_1_is_what_the_peers_see():
    t, _ = parent()
    f, backend = fork(t, ForkSpec(1, parse_changes(answers=["1=b"])))
    edited = f.rounds[0].turns[0]
    assert edited.text == "My final answer is ((B))." and str(edited.answer) == "B" and edited.answer.how == "forced"
    assert edited.details["steer"]["original_text"] == t.rounds[0].turns[0].text
    label = {i: f"Agent {i + 1} ({t.rounds[0].turns[i].persona})" for i in range(3)}
    texts = {0: "My final answer is ((B)).", 1: t.rounds[0].turns[1].text, 2: t.rounds[0].turns[2].text}
    round1 = {agent_of(c.messages): c.messages for c in backend.calls[:3]}
    for i in range(3):
        expected = mad.debate_prompt(MCQ, [(label[j], texts[j]) for j in range(3) if j != i])
        assert last_user(round1[i]) == expected
    assert round1[0][-2].content == "My final answer is ((B))."  # agent 1 remembers saying it
    assert f.rounds[0].consensus == pytest.approx(1 / 3)  # B, A, C: recomputed after the change
    assert t.rounds[1].turns[1].prompt != f.rounds[1].turns[1].prompt  # what they saw did change
    # agent 1 had said B already: the fork says that only its reasoning changed
    assert "Agent 1 already answered B in round 0; forcing it keeps that answer and replaces only the reasoning " \
           "with the bare answer." in f.notices
    other, _ = fork(t, ForkSpec(1, parse_changes(answers=["2=b"])))  # agent 2 had said A: a real change
    assert not [n for n in other.notices if "already answered" in n]


def test_edit_and_mask_change_only_what_they_name():
    t, _ = parent()
    edit = "Reconsidered: the largest planet is Jupiter, so ((B))."
    f, backend = fork(t, ForkSpec(2, (Change("edit", 2, edit), Change("mask", 1))))
    turn = f.rounds[1].turns[2]
    assert turn.text == edit and str(turn.answer) == "B"
    shown = {agent_of(c.messages): last_user(c.messages) for c in backend.calls[:3]}
    assert edit in shown[0] and edit in shown[1]
    hidden = t.rounds[1].turns[1].text
    assert hidden not in shown[0] and hidden not in shown[2]
    assert t.rounds[1].turns[0].text in shown[1]  # the masked agent still sees its peers
    f2, _ = fork(t, ForkSpec(2, (Change("mask", 1),)), )
    assert f2.rounds[2].turns[0].prompt[-1] != t.rounds[2].turns[0].prompt[-1]


@pytest.mark.parametrize("context", ["fresh", "history"])
def test_mask_under_madm2_is_recorded_in_what_was_shown(context):
    settings = SETTINGS.replace(context=context)
    t, _ = parent("madm2-subjective", settings)
    f, backend = fork(t, ForkSpec(1, parse_changes(masks=["1", "2", "3"])), settings)
    for turn in f.rounds[1].turns:  # every response hidden from the peers; a fresh prompt keeps the agent's own
        assert turn.details.get("shown") == ([turn.agent] if context == "fresh" else [])
        assert bool(turn.details.get("resolved_alone")) == (context == "history")


@pytest.mark.parametrize("spec, problem", [
    (ForkSpec(0), "fork from a round between 1 and 3"),
    (ForkSpec(4), "fork from a round between 1 and 3"),
    (ForkSpec(1, (Change("answer", 0, "Z"),)), "not an option of this question; choose one of A, B, C"),
    (ForkSpec(1, (Change("mask", 5),)), "Agent 6 is not in this run"),
])
def test_bad_fork_gets_one_sentence(spec, problem):
    t, _ = parent()
    with pytest.raises(ValueError, match=problem):
        replay_rounds(t, spec)


@pytest.mark.parametrize("args, problem", [
    ({"answers": ["B"]}, "should look like AGENT=TEXT"), ({"edits": ["x=hi"]}, "counting from 1"),
    ({"masks": ["0"]}, "counting from 1"),
])
def test_bad_change_flags_get_one_sentence(args, problem):
    with pytest.raises(ValueError, match=problem):
        parse_changes(**args)


def test_fork_refuses_other_agent_counts_and_baselines():
    t, _ = parent()
    with pytest.raises(ValueError, match="leave --agents out"):
        asyncio.run(fork_debate(t, ForkSpec(1), Setup(ScriptedBackend(replies), SETTINGS.replace(agents=2))))
    with pytest.raises(ValueError, match="single-agent baseline"):
        asyncio.run(fork_debate(t, ForkSpec(1, method="cot"), Setup(ScriptedBackend(replies), SETTINGS)))
