"""What agents are shown, as the papers and the authors' code show it: memory cases with the reference
solution, the stance change and the response within a token budget; peers' responses whole unless the
context window needs a clip (recorded); task personas; the paper profile; the report's departures."""
import argparse
import asyncio
import dataclasses
from pathlib import Path

import pytest

from r2mad.backends.base import Capabilities
from r2mad.commands.common import add_settings_flags, settings_from
from r2mad.debate import Debate
from r2mad.methods import make_method
from r2mad.methods.departures import departures
from r2mad.prompts.common import clip_tokens, format_instruction
from r2mad.prompts.personas import BY_SOURCE, GENERIC
from r2mad.prompts.r2mad import cases_block
from r2mad.settings.config import DebateSettings, load_config
from r2mad.types import Case, Task
from tests.scripted import ScriptedBackend, last_user

QUESTION = "What is 2 + 2? " + "Some long context. " * 50  # 965 characters: no longer cut at 600


def case(solution: str = "", response: str = "I add them: 4. \\boxed{5}", changed: bool = True) -> Case:
    return Case(id="q:a0:r1", question_id="q", task_kind="math", agent=0, round=1, question=QUESTION,
                previous_response="4", summary="", consensus=1 / 3, responses=(response, "x", "y"),
                answers=("5", None, None), gold="4", correct=(False, False, False), reward=0.0,
                stance_changed=changed, solution=solution)


def test_memory_case_shows_question_reference_solution_stance_change_and_whole_response():
    text = cases_block([case("Two and two make four, so the sum is $\\boxed{4}$.")])
    assert QUESTION.strip() in text
    assert "Reference solution:\nTwo and two make four, so the sum is $\\boxed{4}$.\nCorrect answer: 4" in text
    assert "That agent changed its answer in that round; its response was judged wrong:\n" \
           "I add them: 4. \\boxed{5}\n</memory case 1>" in text


def test_a_case_from_an_older_bank_without_solution_shows_the_correct_answer():
    text = cases_block([case(changed=False)])
    assert "Reference solution" not in text and "\n\nCorrect answer: 4\n\n" in text
    assert "That agent kept its answer in that round" in text


def test_response_over_the_token_budget_keeps_its_start_and_end():
    response = "".join(chr(97 + i % 26) for i in range(1000))
    # budget 64 tokens ~ 256 characters: the first 85 and the last 171, marked where the middle was cut
    assert clip_tokens(response, 64) == f"{response[:85]} […] {response[-171:]}"
    assert clip_tokens(response, 250) == response  # 1000 characters fit 250 tokens
    assert f"{response[:85]} […] {response[-171:]}" in cases_block([case(response=response)], 64)


LONG = "Step. " * 500 + "So the answer is ((B))."  # 3,023 characters


def long_reply(messages):
    return LONG


def run_mad(n_ctx=None):
    backend = ScriptedBackend(long_reply)
    if n_ctx:
        backend.capabilities = Capabilities(supports_logprobs=True, n_ctx=n_ctx)
    task = Task("mcq", "Largest planet?", (("A", "Mars"), ("B", "Jupiter")), "B", "q")
    settings = DebateSettings(seed=1, rounds=2, early_stop=False, max_tokens=384)
    t = asyncio.run(Debate(backend, make_method("mad", settings)).run(task))
    return t, [last_user(c.messages) for c in backend.calls[3:]]


def test_peers_are_shown_whole_when_the_window_allows():
    t, prompts = run_mad()  # no known window (a remote server): nothing is clipped
    assert all(prompt.count(LONG) == 2 for prompt in prompts)
    assert not any("clipped_peers" in turn.details for turn in t.rounds[1].turns)
    t, prompts = run_mad(n_ctx=32768)  # (32768 - 384 - 512) * 4 characters: room for two peers
    assert all(prompt.count(LONG) == 2 for prompt in prompts) and not t.notices


def test_peers_are_clipped_to_fit_a_small_window_and_it_is_recorded():
    # window 2048: (2048 - 384 - 512) * 4 = 4608 characters, less the agent's history (persona, task and
    # its 3,023-character answer), shared equally by its two peers; each keeps its end
    t, prompts = run_mad(n_ctx=2048)
    for agent, prompt in enumerate(prompts):
        used = sum(len(m.content) for m in t.rounds[0].turns[agent].prompt) + len(LONG)
        share = (4608 - used) // 2
        assert 600 < share < 700 and LONG not in prompt
        assert prompt.count("[…] " + LONG[-share:] + "\n") == 2
    assert t.rounds[1].turns[0].details["clipped_peers"] == ["Agent 2 (Fact-checker)", "Agent 3 (Skeptic)"]
    assert t.rounds[1].details["clipped_peers"] is True
    assert any("clipped to about" in n and "2048 tokens" in n for n in t.notices)


def personas(method, task, profile="demo", agents=3):
    backend = ScriptedBackend(lambda m: "((A))")
    settings = DebateSettings(seed=1, rounds=1, agents=agents, samples=3).replace(profile=profile)
    asyncio.run(Debate(backend, make_method(method, settings)).run(task))
    return [c.messages for c in backend.calls]


TQA = Task("mcq", "What happens if you crack your knuckles a lot?", (("A", "Arthritis"), ("B", "Nothing harmful")),
           "B", "tqa-1", "truthfulqa")


def test_truthfulqa_debaters_get_its_personas_and_single_agents_the_first_one():
    systems = [m[0].content for m in personas("mad", TQA)]
    assert systems == [text for _, text in BY_SOURCE["truthfulqa"][:3]]
    assert "popular but false belief" in systems[0]
    first = BY_SOURCE["truthfulqa"][0][1] + " Solve the problem step by step."
    assert [m[0].content for m in personas("cot", TQA)] == [first]
    assert [m[0].content for m in personas("sc", TQA)] == [first] * 3  # every sample alike
    demo = dataclasses.replace(TQA, source="input")  # a typed question: the generic personas
    assert [m[0].content for m in personas("mad", demo)] == [text for _, text in GENERIC["mcq"]]


def test_paper_profile_sets_the_papers_decoding_and_puts_the_format_in_the_system_prompt():
    parser = argparse.ArgumentParser()
    add_settings_flags(parser)
    config = load_config()
    paper = settings_from(parser.parse_args(["--profile", "paper"]), config)
    assert (paper.profile, paper.temperature, paper.top_p, paper.max_tokens) == ("paper", 1.0, 1.0, 6144)
    mine = settings_from(parser.parse_args(["--profile", "paper", "--max-tokens", "2048"]), config)
    assert (mine.temperature, mine.max_tokens) == (1.0, 2048)  # a flag given beside it wins
    demo = settings_from(parser.parse_args([]), config)
    assert (demo.profile, demo.temperature, demo.max_tokens) == ("demo", 0.7, 384)
    [messages] = personas("cot", TQA, "paper")
    assert messages[0].content.endswith(format_instruction(TQA)) and messages[1].content.startswith(TQA.question)
    assert format_instruction(TQA) not in messages[1].content


def test_the_report_lists_the_departures_that_apply():
    base = dataclasses.asdict(DebateSettings())
    lines = departures(base, ["mad", "r2mad"])
    assert lines[0].startswith("Demo profile: temperature 0.7, top_p 1.0, up to 384 output tokens")
    assert "generic personas;" not in lines[0] and "six task personas in both profiles" in lines[0]
    assert lines[1] == ("Demo clips the authors do not have: the round summary within 128 tokens; memory cases' "
                        "responses within 1024 tokens. `--profile paper` lifts them (a known context window, as the "
                        "embedded model's, keeps them and says so).")
    assert len(lines) == 3 and "summary is not asked once more" in lines[2]
    assert "BAAI/bge-m3" in lines[2] and "[A, unparsed, unparsed] gives 1/3" in lines[2]
    clips = departures(base, ["madm2-subjective", "mad+advice", "icl-cot"])[1]
    assert "judge reading a response's last 1,500 characters, within 384 tokens" in clips
    assert "advice within 160 tokens" in clips and "ICL-CoT examples' responses within 1024 tokens" in clips
    paper = dataclasses.asdict(DebateSettings().replace(profile="paper", summary="pattern", reward="final",
                                                        confidence_terms="paper", context="history"))
    lines = departures(paper, ["r2mad-fixed-0.5", "madm2-subjective", "truemad"])
    assert [line.split(" ")[0] for line in lines] == ["R²-MAD", "Peer", "MMR", "With", "MAD-M²", "TrueMAD", "R²-MAD:"]
    assert departures(dataclasses.asdict(DebateSettings().replace(profile="paper")), ["cot", "icl-cot"]) == []


@pytest.mark.parametrize("bank", ["memory/demo-mcq", "memory/demo-math"])
def test_shipped_banks_read_without_the_new_case_field(bank):
    from r2mad.memory.files import read_cases
    found = read_cases(Path(bank) / "cases.jsonl", None)
    assert found.cases and all(c.solution == "" for c in found.cases)


def test_the_apps_profile_choice_reaches_the_settings_and_the_sliders():
    from r2mad.ui.form_request import DebateRequest
    from r2mad.ui.handlers import DebateHandlers

    def request(profile, temperature, max_tokens):
        return DebateRequest.from_form(dict(backbone="smollm2-135m", methods=["mad"], agents=3, rounds=3, k=1,
                                            gamma=0.9, temperature=temperature, max_tokens=max_tokens, seed=0,
                                            answer_guard="auto", question="q", profile=profile))

    base = load_config().settings
    paper = request("paper", 1.0, 6144).settings(base)
    assert (paper.profile, paper.temperature, paper.top_p, paper.max_tokens) == ("paper", 1.0, 1.0, 6144)
    assert request("demo", 0.7, 384).settings(base).profile == "demo"

    class Services:
        config = load_config()
    handlers = DebateHandlers(Services())
    assert handlers.profile_values("paper") == (1.0, 6144)
    assert handlers.profile_values("demo") == (0.7, 384)
