"""Fork changes that act on the first live round's own hooks (unmask, drop-case, replace-case,
drop-advice), on a scripted backend: each changes exactly what its agent sees at that round, nothing
before it is called, what was overridden is recorded, and a change that does not fit is refused."""
import asyncio

import pytest

from r2mad.backends.embedder import HashEmbedder
from r2mad.engine.forks import fork_debate, plan_fork
from r2mad.engine.runner import Setup
from r2mad.memory.bank import MemoryBank
from r2mad.prompts import mad, madm2
from r2mad.prompts.r2mad import cases_block
from r2mad.prompts.truemad import advice_block
from r2mad.steer.fork import ForkSpec, live_usage, parse_changes
from r2mad.types import Case
from tests.helpers import FORK_SETTINGS as SETTINGS
from tests.helpers import PLANET_MCQ as MCQ
from tests.helpers import SYSTEMS, agent_of, fork, parent
from tests.scripted import ScriptedBackend, last_user


def judged(m):
    """Agent i answers "BAC"[i]; the judge says NO to agent 1's response (it names agent-0), YES to others."""
    if m[0].content in SYSTEMS:
        return f"I am agent-{agent_of(m)}, seen {len(m)}. ((" + "BAC"[agent_of(m)] + "))"
    return "Wrong. <label>NO</label>" if "agent-0" in last_user(m) else "Fine. <label>YES</label>"


def labels(t):
    return {i: f"Agent {i + 1} ({t.rounds[0].turns[i].persona})" for i in range(3)}


def round0_prompts(t):
    return {turn.prompt for turn in t.rounds[0].turns}


def test_unmask_shows_a_masked_response_at_round_t_only():
    t = asyncio.run(_run("madm2-subjective", judged))
    assert t.rounds[1].turns[1].details["shown"] == [1, 2]  # the judge masked agent 1 in the parent
    backend = ScriptedBackend(judged, name="b")
    f = asyncio.run(fork_debate(t, ForkSpec(1, parse_changes(unmasks=["1"])), Setup(backend, SETTINGS)))
    assert not round0_prompts(t) & {c.messages for c in backend.calls}  # round 0 replayed, never called
    texts, label = {i: t.rounds[0].turns[i].text for i in range(3)}, labels(t)
    agent_calls = [c for c in backend.calls if c.messages[0].content in SYSTEMS]
    round1 = {agent_of(c.messages): last_user(c.messages) for c in agent_calls[:3]}
    for i in range(3):  # everyone sees all three, its own marked, exactly as the fresh prompt shows them
        shown = [(label[j] + (" (your own answer)" if j == i else ""), texts[j]) for j in range(3)]
        assert round1[i] == madm2.fresh_prompt(MCQ, shown)
    masks = f.rounds[1].details["masks"]["all"]
    assert masks["0"]["steer"] == "unmasked" and masks["0"]["decided"] is False and masks["0"]["keep"] is True
    assert "steer" not in masks["1"] and f.rounds[1].details["steer"] == [{"kind": "unmask", "agent": 0, "value": ""}]
    assert [x.details["steer"] for x in f.rounds[1].turns] == [{"unmasked": [0]}] * 3
    assert "steer" not in f.rounds[2].details and "steer" not in f.rounds[2].details["masks"]["all"]["0"]
    assert f.rounds[2].details["masks"]["all"]["0"]["keep"] is False  # round 2's masks are the judge's own again


async def _run(method, replies, settings=SETTINGS):
    from r2mad.debate import Debate
    from r2mad.methods import make_method
    return await Debate(ScriptedBackend(replies), make_method(method, settings)).run(MCQ)


def test_drop_advice_asks_for_nothing_and_the_target_sees_the_rest():
    t, _ = parent("truemad")
    f, backend = fork(t, ForkSpec(1, parse_changes(drop_advice=["1=2"])))
    advice = [c for c in backend.calls if "Write advice addressed only to" in last_user(c.messages)]
    assert len(advice) == 6 + 5  # round 2's six, round 1's five: the one from agent 2 to agent 1 never asked
    assert not any(agent_of(c.messages) == 1 and "advice addressed only to Agent 1" in last_user(c.messages)
                   for c in advice[:5])  # round 1's
    assert sum(agent_of(c.messages) == 1 and "only to Agent 1" in last_user(c.messages) for c in advice[5:]) == 1
    label, texts = labels(t), {i: t.rounds[0].turns[i].text for i in range(3)}
    agent1 = next(c for c in backend.calls if agent_of(c.messages) == 0 and len(c.messages) == 4)
    from_3 = "I am agent-2, seen 2. ((C))"  # agent 3's advice: the scripted reply to its 2-message prompt
    expected = (mad.debate_prompt(MCQ, [(label[1], texts[1]), (label[2], texts[2])]) + "\n\n"
                + advice_block([(label[2], "other", from_3)], MCQ))
    assert last_user(agent1.messages) == expected
    assert f.rounds[1].details["advice_dropped"] == [{"source": 1, "target": 0}]
    assert f.rounds[1].turns[0].details["steer"] == {"drop-advice": 2}
    assert f.rounds[1].turns[0].details["advice_from"] == [label[2]]
    assert live_usage(f).calls == len(backend.calls)


OPTIONS = (("A", "Mars"), ("B", "Jupiter"), ("C", "Venus"))


@pytest.fixture
def bank(tmp_path):
    cases = [Case(f"case-{i}", f"q{i}", "mcq", agent, 1, f"Which planet is number {i}?", "prev", "agents split",
                  0.67, ("((B))", "((A))", "((B))"), ("B", "A", "B"), "B", (True, False, True), 1.0)
             for i, agent in enumerate([0, 0, 0, 1, 1, 2, 2])]
    bank = MemoryBank.create(tmp_path / "bank", task_kind="mcq", split="train", backbone="scripted",
                             embedder=HashEmbedder(64), code_version="test", index_root=tmp_path / "index")
    bank.add(cases)
    yield bank
    bank.close()


def r2(bank, spec=None, parent_t=None):
    settings = SETTINGS.replace(k=2)
    backend = ScriptedBackend(lambda m: f"Reasoning of agent-{agent_of(m)}. ((B))" if m[0].content in SYSTEMS
                              else "A quiet round.")
    if parent_t is None:
        from r2mad.debate import Debate
        from r2mad.methods import make_method
        t = asyncio.run(Debate(backend, make_method("r2mad", settings, bank=bank)).run(MCQ))
    else:
        t = asyncio.run(fork_debate(parent_t, spec, Setup(backend, settings, bank=bank)))
    return t, backend


def agent_prompt(backend, agent, round_index):
    return [last_user(c.messages) for c in backend.calls if c.messages[0].content in SYSTEMS
            and agent_of(c.messages) == agent and len(c.messages) == 2 * round_index + 2][0]


@pytest.mark.parametrize("kind", ["drop-case", "replace-case"])
def test_a_retrieved_case_dropped_or_replaced_at_round_t(bank, kind):
    t, calls = r2(bank, parent_t=None)
    shown = [r["case_id"] for r in t.rounds[1].turns[0].details["retrieved"]]
    assert len(shown) == 2 and set(shown) < {"case-0", "case-1", "case-2"}
    other = ({"case-0", "case-1", "case-2"} - set(shown)).pop()
    change = parse_changes(drop_cases=["1=1"]) if kind == "drop-case" else parse_changes(
        replace_cases=[f"1=1:{other}"])
    f, backend = r2(bank, ForkSpec(1, change), t)
    assert not round0_prompts(t) & {c.messages for c in backend.calls}
    before, after = agent_prompt(calls, 0, 1), agent_prompt(backend, 0, 1)
    kept = [bank.case(shown[1])] if kind == "drop-case" else [bank.case(other), bank.case(shown[1])]
    block = cases_block([bank.case(c) for c in shown], SETTINGS.r2mad.case_tokens)
    assert block in before and after == before.replace(block, cases_block(kept, SETTINGS.r2mad.case_tokens))
    for agent in (1, 2):  # the others see what they saw in the parent
        assert agent_prompt(backend, agent, 1) == agent_prompt(calls, agent, 1)
    details = f.rounds[1].turns[0].details
    assert details["steer"] == ({"drop-case": 1, "dropped": shown[0]} if kind == "drop-case"
                                else {"replace-case": 1, "replaced": shown[0], "by": other})
    assert [r["case_id"] for r in details["retrieved"]] == [c.id for c in kept]
    assert details["confidence"] == t.rounds[1].turns[0].details["confidence"]  # from the pool: unchanged


@pytest.mark.parametrize("method, spec, problem", [
    ("mad", ForkSpec(1, parse_changes(unmasks=["1"])), "Unmasking a response acts on MAD-M²'s masks, which 'mad'"),
    ("mad", ForkSpec(1, parse_changes(drop_cases=["1=1"])), "which 'mad' does not have"),
    ("truemad", ForkSpec(1, parse_changes(drop_cases=["1=1"]), method="r2mad-no-memory"),
     "R²-MAD's memory block, which 'r2mad-no-memory' does not have"),
    ("mad", ForkSpec(1, parse_changes(drop_advice=["1=2"])), "TrueMAD's advice, which 'mad' does not have"),
    ("truemad", ForkSpec(1, parse_changes(drop_advice=["1=1"])), "cannot come from agent 1"),
    ("truemad", ForkSpec(1, parse_changes(drop_advice=["1=4"])), "cannot come from agent 4"),
    ("mad", ForkSpec(1, parse_changes(drop_cases=["1=2"]), method="r2mad"), "no case at rank 2; give a rank "
                                                                           "between 1 and 1"),
    ("mad", ForkSpec(1, parse_changes(replace_cases=["1=1:nope"]), method="r2mad"), "No case 'nope'"),
    ("madm2-subjective", ForkSpec(1, parse_changes(unmasks=["4"])), "Agent 4 is not in this run"),
    ("madm2-subjective", ForkSpec(3, parse_changes(unmasks=["1"])), "which this fork does not run"),
    ("madm2-subjective", ForkSpec(1, parse_changes(masks=["2"], unmasks=["2"])), "both masked and unmasked"),
])
def test_a_change_that_does_not_fit_the_fork_is_refused(method, spec, problem):
    t, _ = parent(method)
    with pytest.raises(ValueError, match=problem) as caught:
        plan_fork(t, spec, SETTINGS)
    message = str(caught.value).replace("e.g. ", "")
    assert message.count(". ") == 0 and message.endswith(".")  # one sentence


def test_ring_pairing_names_the_one_adviser_there_is():
    settings = SETTINGS.replace(pairing="ring")
    t, _ = parent("truemad", settings)
    with pytest.raises(ValueError, match="no advice from agent 2 under ring pairing; drop the advice of agent 3"):
        plan_fork(t, ForkSpec(1, parse_changes(drop_advice=["1=2"])), settings)


@pytest.mark.parametrize("flag, value", [("drop_cases", "1=0"), ("drop_cases", "1"), ("replace_cases", "1=2"),
                                         ("drop_advice", "1=x"), ("unmasks", "0")])
def test_bad_new_flags_get_one_sentence(flag, value):
    with pytest.raises(ValueError, match="should look like|counting from 1"):
        parse_changes(**{flag: [value]})


def test_describe_says_what_each_change_does_and_where():
    spec = ForkSpec(2, parse_changes(unmasks=["1"], drop_cases=["2=1"], replace_cases=["3=2:case-9"],
                                     drop_advice=["1=3"]))
    assert spec.describe() == ("from round 2, agent 2 case 1 dropped at round 2, agent 3 case 2 replaced by case-9 "
                               "at round 2, agent 1 advice from agent 3 dropped at round 2, agent 1 unmasked at "
                               "round 2")


def test_a_change_at_a_round_early_stop_never_reaches_is_refused():
    t, _ = parent("madm2-subjective")
    unanimous = parse_changes(answers=["1=A", "2=A", "3=A"], unmasks=["1"])  # round 0 made unanimous
    with pytest.raises(ValueError, match="every agent agrees after round 0, so the debate stops early before it; "
                                         r"turn early stop off \(--no-early-stop\)"):
        plan_fork(t, ForkSpec(1, unanimous), SETTINGS.replace(early_stop=True))
    assert plan_fork(t, ForkSpec(1, unanimous), SETTINGS.replace(early_stop=False))[0] == "madm2-subjective"
