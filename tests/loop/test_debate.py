"""The debate loop's logic with a scripted backend: rounds, early stop, peers, concurrency, JSON."""
import asyncio
import dataclasses

import pytest

from r2mad.backends.base import Capabilities
from r2mad.debate import Debate
from r2mad.engine.runner import Setup, run_methods
from r2mad.methods import make_method
from r2mad.settings.config import DebateSettings
from r2mad.types import Transcript
from tests.helpers import PLANET_MCQ as MCQ
from tests.helpers import HangsAfterRound0, agent_of
from tests.scripted import ScriptedBackend, fail, last_user


def run(method, backend, task=MCQ, **settings):
    # the constructor, not replace(): a test may use a deadline below the validated range
    s = dataclasses.replace(DebateSettings(), **{"seed": 1, **settings})
    return asyncio.run(Debate(backend, make_method(method, s)).run(task))


def by_agent(answers):
    """Agent i always answers answers[i], with a marker naming itself."""
    return lambda m: f"I am agent-{agent_of(m)}. ((" + answers[agent_of(m)] + "))"


def test_mad_runs_all_rounds_when_agents_disagree():
    backend = ScriptedBackend(by_agent("BAC"))
    t = run("mad", backend)
    assert [len(r.turns) for r in t.rounds] == [3, 3, 3]
    assert len(backend.calls) == 9
    assert [r.consensus for r in t.rounds] == pytest.approx([1 / 3] * 3)
    assert str(t.final) == "B" and t.correct is True  # tie -> earliest agent


def test_early_stop_on_unanimity_and_switch_off():
    assert len(run("mad", ScriptedBackend(by_agent("BBB"))).rounds) == 1
    t = run("mad", ScriptedBackend(by_agent("BBB")), early_stop=False)
    assert len(t.rounds) == 3 and t.rounds[-1].consensus == 1.0


def test_agent_never_sees_itself_as_peer():
    backend = ScriptedBackend(by_agent("ABC"))
    run("mad", backend, rounds=2)
    round1 = [c for c in backend.calls if len(c.messages) > 2]
    assert len(round1) == 3
    for call in round1:
        me, shown = agent_of(call.messages), last_user(call.messages)
        assert f"agent-{me}." not in shown
        assert all(f"agent-{j}." in shown for j in range(3) if j != me)


def test_calls_of_one_round_overlap_in_time():
    backend = ScriptedBackend(by_agent("ABC"), delay_s=0.05)
    t = run("mad", backend, rounds=2)
    for rnd in t.rounds:
        latest_start = max(turn.started_at for turn in rnd.turns)
        earliest_end = min(turn.ended_at for turn in rnd.turns)
        assert latest_start < earliest_end  # every call started before any of them finished


def test_transcript_json_round_trip_is_lossless():
    t = run("mad", ScriptedBackend(by_agent("BAC")))
    again = Transcript.from_json(t.to_json())
    assert again == t and again.to_json() == t.to_json()


def test_model_that_never_parses_still_finishes_unparsed():
    t = run("mad", ScriptedBackend(lambda m: "I am not sure, maybe the first one."))
    assert t.status == "done" and len(t.rounds) == 3
    assert str(t.final) == "UNPARSED" and t.correct is False
    assert all(turn.answer.how == "unparsed" for r in t.rounds for turn in r.turns)


def test_failing_agent_abstains_and_peers_never_see_the_error():
    def reply(m):
        if agent_of(m) == 1 and len(m) > 2:
            return fail("Endpoint timed out after 3 attempts.")
        return by_agent("BAB")(m)

    backend = ScriptedBackend(reply)
    t = run("mad", backend, early_stop=False)
    assert t.rounds[1].turns[1].error and t.rounds[1].turns[1].answer.how == "abstained"
    assert all("timed out" not in last_user(c.messages) for c in backend.calls)
    assert t.status == "done" and str(t.final) == "B"


def test_every_agent_failing_ends_the_debate_as_failed():
    t = run("mad", ScriptedBackend(lambda m: fail("401: check the token.")))
    assert t.status == "failed" and len(t.rounds) == 1 and "401" in t.notices[-1]


def test_single_agent_baselines():
    backend = ScriptedBackend(lambda m: "((B))")
    t = run("cot", backend)
    assert len(backend.calls) == 1 and len(t.rounds) == 1 and str(t.final) == "B"
    answers = iter("AABBBCABB")
    backend = ScriptedBackend(lambda m: f"(({next(answers)}))")
    t = run("sc", backend)
    assert len(backend.calls) == 9 and str(t.final) == "B"
    assert len({c.seed for c in backend.calls}) == 9  # different samples


def test_side_by_side_computes_round0_once():
    backend = ScriptedBackend(by_agent("BAC"))
    s = DebateSettings(seed=1, rounds=2)
    results = asyncio.run(run_methods(MCQ, ["mad", "truemad"], Setup(backend, s)))
    round0_calls = [c for c in backend.calls if len(c.messages) == 2 and "advice" not in last_user(c.messages)]
    assert len(round0_calls) == 3
    assert len([c for c in backend.calls if "Write advice" in last_user(c.messages)]) == 6  # 3 x 2 ordered pairs
    assert results["mad"].rounds[0].turns == results["truemad"].rounds[0].turns
    assert all(t.shared_round0 for t in results.values())


def test_a_round_0_that_cannot_finish_near_its_deadline_fails_the_debate_instead_of_hanging():
    backend = ScriptedBackend(by_agent("ABC"), delay_s=0.3)
    t = run("mad", backend, deadline_s=0.1)  # round 0 is cut at 1.5 times the limit, with nothing to answer from
    assert t.status == "failed" and t.notices[-1].startswith("Round 0 did not finish within 1.5 times the time limit")


def test_streaming_backend_gives_throttled_live_text_that_grows_into_the_answer():
    def long_answer(m):
        return " ".join(["step"] * 30) + f" so ((B)) from agent-{agent_of(m)}"

    events = []
    backend = ScriptedBackend(long_answer, delay_s=0.9, capabilities=Capabilities(streams_text=True))
    s = DebateSettings(seed=1, rounds=1)
    t = asyncio.run(Debate(backend, make_method("mad", s), emit=events.append).run(MCQ))
    deltas = [e for e in events if e.kind == "delta"]
    final = {turn.agent: turn.text for turn in t.rounds[0].turns}
    assert {e.agent for e in deltas} == {0, 1, 2}
    assert all(final[e.agent].startswith(e.data["text"]) for e in deltas)
    per_agent = [sum(e.agent == a for e in deltas) for a in range(3)]
    assert all(2 <= n <= 6 for n in per_agent)  # 36 words over 0.9 s, at most one update per 0.2 s
    quiet = []
    asyncio.run(Debate(ScriptedBackend(long_answer), make_method("mad", s), emit=quiet.append).run(MCQ))
    assert not [e for e in quiet if e.kind == "delta"]  # a backend that does not stream gets no on_text


# --- the loop as an async iterator: `async for step in debate.events(task)` ------------------------

def two_agents(rounds=2):
    return dataclasses.replace(DebateSettings(), seed=1, agents=2, rounds=rounds, early_stop=False)


def test_async_for_over_a_debate_gives_its_rounds_in_order_then_its_transcript():
    debate = Debate(ScriptedBackend(by_agent("BA")), make_method("mad", two_agents()))

    async def steps():
        return [step async for step in debate.events(MCQ)]

    *events, transcript = asyncio.run(steps())
    assert isinstance(transcript, Transcript) and transcript.status == "done"
    assert [e.kind for e in events] == ["round_start", "turn", "turn", "round_end"] * 2 + ["final"]
    assert [e.round for e in events[:-1]] == [0] * 4 + [1] * 4
    turns = [e for e in events if e.kind == "turn"]
    assert [{e.agent for e in turns[:2]}, {e.agent for e in turns[2:]}] == [{0, 1}, {0, 1}]
    assert [e.data["answers"] for e in events if e.kind == "round_end"] == [["B", "A"], ["B", "A"]]
    assert events[-1].data == {"status": "done", "answer": "B", "correct": True}  # a tie goes to agent 1: B
    assert [t.text for r in transcript.rounds for t in r.turns] == \
        [e.data["text"] for e in sorted(turns, key=lambda e: (e.round, e.agent))]


def test_breaking_out_of_the_events_cancels_the_debate():
    backend = HangsAfterRound0(by_agent("BA"))
    debate = Debate(backend, make_method("mad", two_agents()))

    async def main():
        seen = []
        async for step in debate.events(MCQ):
            seen.append(step.kind)
            if step.kind == "round_start" and step.round == 1:
                await asyncio.wait_for(backend.hanging.wait(), 10)  # both round-1 calls under way
                break
        await asyncio.wait_for(backend.cancelled.wait(), 10)  # the debate stopped them; nothing more comes
        return seen

    assert asyncio.run(main()) == ["round_start", "turn", "turn", "round_end", "round_start"]
    assert backend.stopped == 2 and [len(r.turns) for r in debate.rounds] == [2]


def test_cancelling_the_consumer_cancels_the_debate_and_run_records_it_as_cancelled():
    backend = HangsAfterRound0(by_agent("BA"))
    recorded = []

    async def main():
        setup = Setup(backend, two_agents(3))
        job = asyncio.create_task(run_methods(MCQ, ["mad"], setup, record_for=lambda m: recorded.append))
        await asyncio.wait_for(backend.hanging.wait(), 10)
        job.cancel()
        with pytest.raises(asyncio.CancelledError):
            await job
        return backend.stopped  # counted before `job` ended: cancelling waits for the debate to stop

    assert asyncio.run(main()) == 2
    assert recorded[-1].status == "cancelled" and [len(r.turns) for r in recorded[-1].rounds] == [2, 0]
