"""`--profile paper` lifts every clip and cap the authors do not have (round summary, MAD-M²'s judge,
TrueMAD's advice, memory cases, ICL-CoT examples) unless a known context window forces them, and says
so; ICL-CoT shows R²-MAD's case document with the answer format once. Scripted backend, real bank."""
import asyncio

import pytest

from r2mad.backends.base import Capabilities
from r2mad.backends.embedder import HashEmbedder
from r2mad.debate import Debate
from r2mad.engine.build_memory import build
from r2mad.memory.bank import MemoryBank
from r2mad.methods import make_method
from r2mad.prompts.common import format_instruction
from r2mad.prompts.r2mad import case_records, cases_block
from r2mad.settings.config import DebateSettings, with_profile
from r2mad.types import Task
from tests.helpers import PLANET_TASKS
from tests.scripted import ScriptedBackend, last_user

LONG = "Step. " * 500 + "So the answer is ((B))."  # 3,023 characters
ADVICE = "SUPPORT " + "A fine point. " * 100  # 1,408 characters
TASK = Task("mcq", "Question number 8: which planet is largest?", PLANET_TASKS[0].options, "B", "q8")


def reply(messages):
    text = last_user(messages)
    if "Positions of the agents" in text:
        return "Two positions remain; one agent moved."
    if "<label>YES</label>" in text:
        return "Checked. <label>YES</label>"
    if "Write advice addressed only" in text:
        return ADVICE
    return LONG


@pytest.fixture(scope="module")
def bank(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("clips")
    bank = MemoryBank.create(tmp / "bank", task_kind="mcq", split="train", backbone="scripted",
                             embedder=HashEmbedder(64), code_version="test", index_root=tmp / "index")
    asyncio.run(build(PLANET_TASKS, bank, ScriptedBackend(reply), DebateSettings(seed=1)))
    yield bank
    bank.close()


def run(method, profile, bank=None, n_ctx=None, **changes):
    backend = ScriptedBackend(reply, capabilities=Capabilities(supports_logprobs=True, n_ctx=n_ctx))
    settings = with_profile(DebateSettings(seed=1, rounds=2, early_stop=False).replace(case_tokens=64, **changes),
                            profile)
    t = asyncio.run(Debate(backend, make_method(method, settings, bank=bank)).run(TASK))
    return t, backend.calls


def calls_with(calls, words):
    found = [c for c in calls if words in last_user(c.messages)]
    assert found
    return found


def test_the_round_summary_gets_the_whole_output_budget_under_paper(bank):
    _, demo = run("r2mad", "demo", bank)
    _, paper = run("r2mad", "paper", bank)
    assert {c.max_tokens for c in calls_with(demo, "Positions of the agents")} == {128}
    assert {c.max_tokens for c in calls_with(paper, "Positions of the agents")} == {6144}


def test_memory_cases_are_shown_whole_under_paper(bank):
    _, demo = run("r2mad", "demo", bank)
    _, paper = run("r2mad", "paper", bank)
    debate = "Records from earlier debates"
    # case_tokens 64 ~ 256 characters: the first 85 and the last 171 of the case's response
    assert all(f"{LONG[:85]} […] {LONG[-171:]}" in last_user(c.messages) for c in calls_with(demo, debate))
    assert all(f"was judged correct:\n{LONG.strip()}\n" in last_user(c.messages) for c in calls_with(paper, debate))


def test_the_judge_reads_the_whole_response_with_the_whole_budget_under_paper():
    _, demo = run("madm2-subjective", "demo")
    _, paper = run("madm2-subjective", "paper")
    judged = "<label>YES</label>"
    assert {c.max_tokens for c in calls_with(demo, judged)} == {384}
    assert all(f"<response>\n[…] {LONG[-1500:]}\n</response>" in last_user(c.messages)
               for c in calls_with(demo, judged))
    assert {c.max_tokens for c in calls_with(paper, judged)} == {6144}
    assert all(f"<response>\n{LONG.strip()}\n</response>" in last_user(c.messages) for c in calls_with(paper, judged))


def test_advice_is_written_and_shown_whole_under_paper():
    _, demo = run("truemad", "demo")
    _, paper = run("truemad", "paper")
    asked = "Write advice addressed only"
    assert {c.max_tokens for c in calls_with(demo, asked)} == {160}
    assert {c.max_tokens for c in calls_with(paper, asked)} == {6144}
    assert all(f"<theirs>\n[…] {LONG[-1500:]}\n</theirs>" in last_user(c.messages) for c in calls_with(demo, asked))
    assert all(f"<theirs>\n{LONG.strip()}\n</theirs>" in last_user(c.messages) for c in calls_with(paper, asked))
    shown = "Advice written to you personally"
    assert all(f"[…] {ADVICE.strip()[-800:]}" in last_user(c.messages) for c in calls_with(demo, shown))
    assert all(f"(support) ---\n{ADVICE.strip()}\n" in last_user(c.messages) for c in calls_with(paper, shown))


@pytest.mark.parametrize("profile, budget", [("demo", 64), ("paper", None)])
def test_icl_cot_examples_are_r2mads_case_documents_with_the_format_once(bank, profile, budget):
    strategy = make_method("icl-cot", with_profile(DebateSettings(seed=1).replace(case_tokens=64, k=2), profile),
                           bank=bank)
    backend = ScriptedBackend(reply)
    asyncio.run(Debate(backend, strategy).run(TASK))
    [call] = backend.calls
    records = case_records(strategy.examples, budget)
    assert len(strategy.examples) == 2 and records in last_user(call.messages)
    assert cases_block(strategy.examples, budget).endswith(records)  # the very text R²-MAD shows
    assert (LONG.strip() in records) == (profile == "paper")
    assert sum(m.content.count(format_instruction(TASK)) for m in call.messages) == 1


def test_a_known_context_window_keeps_the_clips_under_paper_and_says_so(bank):
    t, calls = run("r2mad", "paper", bank, n_ctx=32768)
    assert {c.max_tokens for c in calls_with(calls, "Positions of the agents")} == {128}
    assert any(n.startswith("Paper profile on scripted: its context window of 32768 tokens keeps the demo's "
                            "clips") for n in t.notices)
    t, _ = run("r2mad", "paper", bank)
    assert not any(n.startswith("Paper profile") for n in t.notices)
