"""Thinking models (Qwen3, DeepSeek-R1…): a <think>…</think> span is reasoning, never the answer, in every path
that reads a model's text (answers, MAD-M² judges, TrueMAD advice, R²-MAD summaries, the answer guard), and the
page shows it folded apart from the reply."""
import asyncio

import pytest

from r2mad.debate import Debate
from r2mad.grading.answers import extract_answer, split_think, strip_think
from r2mad.methods import make_method
from r2mad.settings.config import DebateSettings
from r2mad.types import UNPARSED, Task
from r2mad.ui.render.chat import thinking_folded, turn_body
from tests import helpers
from tests.helpers import PLANET_TASKS, SYSTEMS
from tests.scripted import ScriptedBackend, last_user, persona_of

bank = helpers.bank  # the scripted bank fixture
MCQ = Task("mcq", "Largest planet?", (("A", "Mars"), ("B", "Jupiter"), ("C", "Venus")), "B", "q")
MATH = Task("math", "What is 2+3?", (), "5", "m")


@pytest.mark.parametrize("text, reasoning, reply", [
    ("<think>maybe ((A))</think>So ((B)).", "maybe ((A))", "So ((B))."),
    ("Let me see ((A))</think>((C))", "Let me see ((A))", "((C))"),  # the template ate the opening tag
    ("<think>first ((A)) and still going", "first ((A)) and still going", ""),  # unclosed at the start
    ("((B)) <think>an afterthought", "an afterthought", "((B))"),
    ("<think>one</think>x <think>two</think> y", "one\n\ntwo", "x  y"),
    ("plain ((B))", "", "plain ((B))"),
])
def test_split_think(text, reasoning, reply):
    assert split_think(text) == (reasoning, reply)
    assert strip_think(text) == reply


def test_the_answer_is_never_read_from_the_reasoning():
    assert extract_answer("<think>It is ((A)), no wait</think>The answer is ((C)).", MCQ).value == "C"
    assert extract_answer("<think>\\boxed{7} maybe", MATH) == UNPARSED  # cut inside the reasoning
    assert extract_answer("<think>hmm \\boxed{7}</think> so \\boxed{5}", MATH).value == "5"


def agent(messages):
    return SYSTEMS.index(persona_of(messages)) if persona_of(messages) in SYSTEMS else None


def debate(method, reply, task=MCQ, **kw):
    backend = ScriptedBackend(reply)
    settings = DebateSettings().replace(seed=1, rounds=2, early_stop=False)
    t = asyncio.run(Debate(backend, make_method(method, settings, **kw)).run(task))
    return t, backend


def test_madm2_judges_read_the_reply_and_their_verdict_outside_their_reasoning():
    def reply(messages):
        text = last_user(messages)
        if "verdict word" in text:
            return "<think>Looks wrong: <label>NO</label> NO</think> On reflection it holds. <label>YES</label>"
        return "<think>secret-plan ((C))</think>((" + "ABC"[agent(messages)] + "))"
    t, backend = debate("madm2-subjective", reply)
    judged = [last_user(c.messages) for c in backend.calls if "verdict word" in last_user(c.messages)]
    assert judged and not any("secret-plan" in j for j in judged)  # the agent's reasoning is not judged
    masks = t.rounds[1].details["masks"]["all"]
    assert {m["label"] for m in masks.values()} == {"YES"} and all(m["keep"] for m in masks.values())
    assert [turn.answer.value for turn in t.rounds[0].turns] == ["A", "B", "C"]


def test_truemad_advice_type_and_text_leave_the_reasoning_out():
    def reply(messages):
        text = last_user(messages)
        if "Write advice" in text:
            return "<think>REBUTTAL would be rude; hidden-musing</think>SUPPORT keep going."
        return "((B))"
    t, backend = debate("truemad", reply)
    assert not any("hidden-musing" in last_user(c.messages) for c in backend.calls)  # no target read it
    advice = [c for c in t.rounds[1].aux if c.kind == "advice"]
    assert advice and {c.label for c in advice} == {"support"}
    assert all("<think>" in c.text for c in advice)  # the record keeps the whole reply


def test_r2mad_summary_h_is_the_reply_after_the_reasoning(bank):
    def reply(messages):
        if "Positions of the agents" in last_user(messages):
            return "<think>Agent 1 said Jupiter, I should mention it</think>Two positions remain."
        return helpers.r2mad_reply(messages)
    backend = ScriptedBackend(reply)
    strategy = make_method("r2mad", DebateSettings().replace(seed=2, early_stop=False), bank=bank)
    t = asyncio.run(Debate(backend, strategy).run(PLANET_TASKS[1]))
    assert t.rounds[1].details["summary"] == "Two positions remain."
    prompts = [last_user(c.messages) for c in backend.calls]
    assert not any("I should mention it" in p for p in prompts)


def test_the_page_folds_the_reasoning_above_the_reply():
    shown = thinking_folded("<think>a < b & so ((A))</think>The answer is ((B)).")
    head, _, rest = shown.partition("</details>")
    assert head.startswith('<details class="thinking"><summary>Thinking (6 words, not read as the answer)')
    assert "a &lt; b &amp; so ((A))" in head and rest.strip() == "The answer is ((B))."
    unclosed = thinking_folded("<think>still thinking")
    assert "no answer after the reasoning" in unclosed.split("</details>")[1]
    assert thinking_folded("plain ((B))") == "plain ((B))"
    t, _ = debate("cot", lambda m: "<think>hm</think>((B))")
    assert "<details" in turn_body(t.rounds[0].turns[0], "mcq")


def test_the_answer_guard_reads_the_json_after_the_reasoning():
    from r2mad.guard import guard_answer
    from r2mad.types import Message

    backend = ScriptedBackend(lambda m: '<think>{"answer": "((A))"} would be wrong</think>{"answer": "((B))"}')
    answer, call = asyncio.run(guard_answer(backend, [Message("user", "q")], "no format", MCQ, round_index=0,
                                            agent=0, seed=None))
    assert (answer.value, answer.how, call.label) == ("B", "guarded", "guarded")
