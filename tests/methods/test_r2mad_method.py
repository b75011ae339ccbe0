"""R²-MAD on the shared loop with a scripted backend and a real on-disk Qdrant bank (hash embedder for
speed): memory building, retrieval and confidence in the transcript, and the ablation switches."""
import asyncio

import pytest

from r2mad.debate import Debate
from r2mad.engine.build_memory import build
from r2mad.memory.from_debates import cases_from_transcript
from r2mad.memory.summaries import SummaryCache
from r2mad.methods import make_method
from r2mad.prompts.r2mad import stance_pattern
from r2mad.settings.config import DebateSettings
from r2mad.types import Task
from tests import helpers
from tests.helpers import OPTIONS, PLANET_TASKS, SYSTEMS
from tests.helpers import r2mad_reply as reply
from tests.scripted import ScriptedBackend, fail, last_user, persona_of

TASKS = PLANET_TASKS
bank = helpers.bank  # the scripted bank fixture


def test_build_gives_two_cases_per_agent_per_question_without_round0(bank):
    cases = bank.cases()
    assert len(cases) == 2 * len(TASKS) * 3
    assert {c.round for c in cases} == {1, 2} and {c.agent for c in cases} == {0, 1, 2}
    case = next(c for c in cases if c.id == "q0:a2:r1")
    assert case.previous_response.endswith("((C))") and case.answers == ("B", "A", "B")
    assert case.correct == (True, False, True) and case.reward == 1.0 and case.stance_changed
    assert case.consensus == pytest.approx(1 / 3) and case.summary == "Two positions remain; one agent moved."
    assert next(c for c in cases if c.id == "q0:a1:r2").reward == 0.0


def test_interrupted_build_resumes_without_duplicates(bank):
    backend = ScriptedBackend(reply)
    more = TASKS + [Task("mcq", "Question number 9: which planet is largest?", OPTIONS, "B", "q9")]
    stats = asyncio.run(build(more, bank, backend, DebateSettings(seed=1)))
    assert stats["skipped_existing"] == 4 and stats["questions"] == 1
    assert len(bank.cases()) == 2 * 5 * 3 and len({c.id for c in bank.cases()}) == 30


def test_failed_debate_is_never_written_to_the_bank(bank):
    def flaky(messages):
        return fail() if persona_of(messages) == SYSTEMS[1] and len(messages) > 2 else reply(messages)

    new = Task("mcq", "Question number 7: which planet is largest?", OPTIONS, "B", "q7")
    stats = asyncio.run(build([new], bank, ScriptedBackend(flaky), DebateSettings(seed=1)))
    assert stats["failed"] == 1 and not bank.has_question("q7")


def run_r2mad(method, bank, backend=None, summaries=None, **settings):
    backend = backend or ScriptedBackend(reply)
    events = []
    strategy = make_method(method, DebateSettings().replace(seed=2, early_stop=False, **settings), bank=bank,
                           summaries=summaries)
    t = asyncio.run(Debate(backend, strategy, emit=events.append).run(TASKS[1]))
    prompts = [last_user(c.messages) for c in backend.calls if "Positions of the agents" not in last_user(c.messages)]
    return t, events, prompts[3:]  # the debate-round prompts


def test_r2mad_records_retrieval_and_confidence(bank):
    t, events, prompts = run_r2mad("r2mad", bank)
    kinds = [e.kind for e in events]
    assert kinds.count("retrieval") == 6 and kinds.count("confidence") == 6 and kinds.count("summary") == 2
    details = t.rounds[1].turns[0].details
    assert details["lambda"] == pytest.approx(1 - 0.9 * (1 / 3))
    assert len(details["candidates"]) == 3 and len(details["retrieved"]) == 1
    picked = details["retrieved"][0]
    assert {"similarity", "reward", "mmr", "correct", "question"} <= set(picked)
    assert set(details["confidence"]) == {"1", "2"}
    assert all("<memory case 1>" in p for p in prompts)
    labels = [v["label"] for turn in t.rounds[1].turns for v in turn.details["confidence"].values()]
    assert any(labels) and all("<confidence>" in p for p in prompts) == all(labels)


def test_ablation_switches_change_the_prompts(bank):
    _, _, full = run_r2mad("r2mad", bank)
    _, _, no_conf = run_r2mad("r2mad-no-confidence", bank)
    t, events, no_mem = run_r2mad("r2mad-no-memory", bank)
    assert any("<confidence>" in p for p in full) and not any("<confidence>" in p for p in no_conf)
    assert all("<memory case 1>" in p for p in no_conf)
    # w/o Memory (paper and authors' code alike): no case in any prompt, the confidence tags stay
    assert not any("<memory case" in p for p in no_mem) and any("<confidence>" in p for p in no_mem)
    assert all(turn.details["retrieved"] == [] and set(turn.details["confidence"]) == {"0", "1", "2"} - {str(i)}
               for i, turn in enumerate(t.rounds[1].turns))


def test_policies_pick_differently(bank):
    picks = {}
    for policy in ("r2mad-similarity", "r2mad-positive", "r2mad-random"):
        t, _, _ = run_r2mad(policy, bank, k=2)
        picks[policy] = [r["case_id"] for turn in t.rounds[1].turns for r in turn.details["retrieved"]]
    similar = run_r2mad("r2mad-similarity", bank, k=2)[0].rounds[1].turns[0].details
    sims = [r["similarity"] for r in similar["retrieved"]]
    assert sims == sorted(sims, reverse=True) and sims[0] == similar["candidates"][0]["similarity"]
    assert len({tuple(v) for v in picks.values()}) > 1


def test_summary_prompt_is_abstract_and_cached(bank):
    assert stance_pattern(["B", "A", None], ["C", "A", "A"]) == [("P1", "P3"), ("P2", "P2"), ("no clear answer", "P2")]
    cache = SummaryCache()
    backend = ScriptedBackend(reply)
    run_r2mad("r2mad", bank, backend, cache, summary="pattern")
    summaries = [c for c in backend.calls if "Positions of the agents" in last_user(c.messages)]
    assert summaries and all("Jupiter" not in last_user(c.messages) for c in summaries)
    again = ScriptedBackend(reply)
    t, _, _ = run_r2mad("r2mad", bank, again, cache, summary="pattern")
    assert not any("Positions of the agents" in last_user(c.messages) for c in again.calls)
    assert t.rounds[1].details["summary_cached"] is True


def test_memory_cases_from_transcript_match_build(bank):
    backend = ScriptedBackend(reply)
    strategy = make_method("r2mad", DebateSettings().replace(seed=1, early_stop=False, use_memory=False))
    strategy.summarize = True
    t = asyncio.run(Debate(backend, strategy).run(TASKS[0]))
    built = {c.id: c for c in bank.cases()}
    assert {c.id for c in cases_from_transcript(t)} == {i for i in built if i.startswith("q0:")}


def test_icl_cot_shows_the_most_similar_bank_cases_as_examples(bank):
    backend = ScriptedBackend(lambda m: "((B))")
    strategy = make_method("icl-cot", DebateSettings().replace(seed=1, k=2), bank=bank)
    t = asyncio.run(Debate(backend, strategy).run(TASKS[2]))
    [call] = backend.calls
    prompt = last_user(call.messages)
    assert "<memory case 2>" in prompt and "<memory case 3>" not in prompt
    first = prompt[prompt.index("<memory case 1>"):prompt.index("</memory case 1>")]
    assert "Question number 2" in first and "Correct answer: B" in first  # the same question ranks first
    assert prompt.rstrip().endswith("round brackets.") and str(t.final) == "B"


def summary_calls(backend) -> int:
    return sum("Positions of the agents" in last_user(c.messages) for c in backend.calls)


def test_summaries_kept_in_a_file_serve_the_next_process_and_only_the_same_model(bank, tmp_path):
    file = tmp_path / "var" / "summaries.json"
    first = ScriptedBackend(reply)
    run_r2mad("r2mad", bank, first, SummaryCache(file), summary="pattern")
    assert summary_calls(first) == 2 and file.is_file()
    later_process = SummaryCache(file)  # nothing in memory: the file is read again
    later = ScriptedBackend(reply)
    t, _, _ = run_r2mad("r2mad", bank, later, later_process, summary="pattern")
    assert summary_calls(later) == 0 and t.rounds[1].details["summary_cached"] is True
    other_model = ScriptedBackend(reply)
    other_model.model = "another-model"  # same backbone name, another model: its own summaries
    run_r2mad("r2mad", bank, other_model, later_process, summary="pattern")
    assert summary_calls(other_model) == 2


def test_summary_file_survives_damage_and_merges_writers(tmp_path):
    file = tmp_path / "summaries.json"
    file.write_text("{not json", encoding="utf-8")
    one, two = SummaryCache(file), SummaryCache(file)
    assert one.get(("b", "m", "p1")) is None  # a damaged file reads as empty
    one.put(("b", "m", "p1"), "h1")
    two.put(("b", "m", "p2"), "h2")  # another process writing later keeps what the first wrote
    fresh = SummaryCache(file)
    assert fresh.get(("b", "m", "p1")) == "h1" and fresh.get(("b", "m", "p2")) == "h2"
    assert not list(tmp_path.glob("*.part"))


def test_unwritable_summary_file_keeps_the_cache_in_memory(tmp_path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the data dir should be", encoding="utf-8")
    cache = SummaryCache(blocker / "summaries.json")
    cache.put(("b", "m", "p"), "h")  # no exception: the debate must go on
    assert cache.get(("b", "m", "p")) == "h"


def test_likely_outcomes_are_every_split_then_keep_or_adopt():
    from r2mad.memory.prefetch import likely_outcomes

    after_round0 = likely_outcomes(None, 3)
    assert len(after_round0) == 5  # Bell(3): {abc}, {ab|c}, {ac|b}, {a|bc}, {a|b|c}
    assert len({tuple(stance_pattern(o, None)) for o in after_round0}) == 5
    assert len(likely_outcomes(None, 4)) == 15 and likely_outcomes(None, 5) == []  # 52 > the limit of 32
    assert sorted(map(tuple, likely_outcomes(["B", "A", None], 3))) == sorted(
        (x, y, z) for x in "BA" for y in "BA" for z in "BA")
    assert len(likely_outcomes(["B", "A", "C"], 3)) == 27 and likely_outcomes(["B", "A", "C"], 4) == []
    assert likely_outcomes([None, None], 2) == []


def test_prefetched_summaries_are_asked_while_agents_answer_and_counted(bank):
    cache = SummaryCache()
    backend = ScriptedBackend(reply, delay_s=0.1)
    t, _, _ = run_r2mad("r2mad", bank, backend, cache, prefetch_summaries=True, summary="pattern")
    asked = [c for c in backend.calls if "Positions of the agents" in last_user(c.messages)]
    # round 0 may end in any of the 5 splits of 3 agents; round 1 in any of 3^3 keep-or-adopt outcomes
    assert len(asked) == 5 + 27
    agents = [c for c in backend.calls if c not in asked]
    round_ends = [max(c.ended for c in agents[3 * r:3 * r + 3]) for r in range(3)]
    assert all(c.started < round_ends[1] for c in asked)  # asked during rounds 0 and 1, never after them
    assert sum(c.started > round_ends[0] for c in asked) == 27
    for r in (1, 2):
        assert t.rounds[r].details["summary_prefetched"] is True and t.rounds[r].details["summary_cached"] is True
    assert t.usage(("summary",)).calls == 32  # every speculative call is counted
    assert {c.label for rnd in t.rounds for c in rnd.aux if c.kind == "summary"} == {"prefetched"}
    again = ScriptedBackend(reply, delay_s=0.1)
    run_r2mad("r2mad", bank, again, cache, prefetch_summaries=True, summary="pattern")
    assert summary_calls(again) == 0  # every pattern is now known


def test_prefetch_is_dropped_when_round0_is_unanimous_and_the_debate_stops(bank):
    backend = ScriptedBackend(lambda m: "Sure. ((B))", delay_s=0.05)
    settings = DebateSettings().replace(seed=2, prefetch_summaries=True, summary="pattern")
    strategy = make_method("r2mad", settings, bank=bank)
    t = asyncio.run(Debate(backend, strategy).run(TASKS[1]))
    assert len(t.rounds) == 1 and strategy.prefetch.calls == {}
    assert summary_calls(backend) == 4  # the unanimous split is never asked: it would end the debate
    assert all(c.round == 0 and c.label == "prefetched" for c in t.rounds[0].aux)


def test_without_early_stop_a_unanimous_round_keeps_its_prefetched_summary(bank):
    backend = ScriptedBackend(lambda m: "Sure. ((B))", delay_s=0.02)
    t, _, _ = run_r2mad("r2mad", bank, backend, prefetch_summaries=True, summary="pattern")  # early_stop=False
    assert [rnd.details["summary_prefetched"] for rnd in t.rounds[1:]] == [True, True]
    assert summary_calls(backend) == 5 + 1  # every split after round 0; then only "all keep B"


def test_faithful_summary_reads_the_round_and_is_asked_again_in_every_debate(bank):
    from r2mad.prompts.r2mad import SUMMARY_SYSTEM

    backend = ScriptedBackend(reply)
    cache = SummaryCache()
    t, _, _ = run_r2mad("r2mad", bank, backend, cache)
    calls = [last_user(c.messages) for c in backend.calls if persona_of(c.messages) == SUMMARY_SYSTEM]
    assert len(calls) == 2  # one a round, before rounds 1 and 2
    first, second = calls
    # h^(0): the question, no earlier summary, each agent's full response, answer, and consensus 1/3
    assert "Question number 1: which planet is largest?" in first and "(B) Jupiter" in first
    assert "Summary of the round before: none (this is the first round)" in first
    assert "consensus ratio 0.33" in first
    assert ("Agent 1 (Generalist): answer B (first round: no earlier answer) ---\nMy reasoning. ((B))"
            in first)
    assert "Agent 3 (Skeptic): answer C (first round: no earlier answer)" in first
    # h^(1): the previous summary, each answer beside the one before, the stance changes, consensus 2/3
    assert "Summary of the round before: Two positions remain; one agent moved." in second
    assert "consensus ratio 0.67" in second
    assert "Agent 1 (Generalist): answer B (earlier answer B; kept its stance)" in second
    assert "Agent 2 (Fact-checker): answer A (earlier answer A; kept its stance)" in second
    assert "Agent 3 (Skeptic): answer B (earlier answer C; changed its stance)" in second
    assert t.rounds[1].details["summary"] == "Two positions remain; one agent moved."
    assert "summary_cached" not in t.rounds[1].details
    again = ScriptedBackend(reply)
    run_r2mad("r2mad", bank, again, cache)  # the same debate again: never served from a cache
    assert sum(persona_of(c.messages) == SUMMARY_SYSTEM for c in again.calls) == 2
