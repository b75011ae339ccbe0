"""The answer guard: a short follow-up that gets an answer in the task's own format when free reasoning
gave none. Shapes hand-checked; the loop records how each answer was obtained and counts the guard's
tokens as auxiliary; a backend without structured output gets a plain follow-up; `off` changes nothing."""
import asyncio
import re

import pytest

from r2mad.backends.base import BackendError, Capabilities
from r2mad.backends.openai_compat import OpenAICompatBackend
from r2mad.debate import Debate
from r2mad.guard import answer_shape
from r2mad.methods import make_method
from r2mad.prompts.common import final_answer_request
from r2mad.settings.config import DebateSettings
from r2mad.types import Answer, Message, Task
from testing.scripted_server import FakeServer, ok, status
from tests.scripted import ScriptedBackend, last_user

MCQ = Task("mcq", "Which planet is known as the Red Planet?",
           (("A", "Venus"), ("B", "Mars"), ("C", "Jupiter"), ("D", "Saturn")), "B", "red")
MATH = Task("math", "What is 3 + 4?", gold="7", id="sum")
SETTINGS = DebateSettings(agents=3, rounds=2, early_stop=False, seed=0, answer_guard="on")


def test_shapes_allow_only_the_tasks_own_answers():
    shape = answer_shape(MCQ)
    assert shape.choices == ("((A))", "((B))", "((C))", "((D))")
    assert re.fullmatch(shape.regex, "((C))") and not re.fullmatch(shape.regex, "((E))")
    assert '[ABCD]' in shape.grammar and "E" not in shape.grammar.split("::=")[1]
    math = answer_shape(MATH)
    assert math.choices == ()
    assert re.fullmatch(math.regex, r"\boxed{\frac{1}{2}}") and not re.fullmatch(math.regex, r"\boxed{1")


def reasoning_without_answer(messages):
    """Agents reason but commit to nothing; asked for the answer alone, they give ((B))."""
    return "((B))" if last_user(messages) == final_answer_request(MCQ) else "It is red because of iron oxide."


def test_guarded_answers_are_recorded_and_their_tokens_count_as_auxiliary():
    backend = ScriptedBackend(reply=reasoning_without_answer)
    t = asyncio.run(Debate(backend, make_method("mad", SETTINGS)).run(MCQ))
    turns = [turn for r in t.rounds for turn in r.turns]
    assert [turn.answer for turn in turns] == [Answer("B", "guarded")] * 6
    assert all(turn.answer.source == "guarded" for turn in turns)
    guards = [c for r in t.rounds for c in r.aux if c.kind == "guard"]
    assert [(c.round, c.target, c.label) for c in guards] == [(r, a, "guarded") for r in (0, 1) for a in range(3)]
    assert t.usage().calls == 12 and t.usage(("guard",)).tokens == 6 * 15  # scripted: 10 in + 5 out a call
    follow_up = next(c for c in backend.calls if last_user(c.messages) == final_answer_request(MCQ))
    assert follow_up.messages[-2] == Message("assistant", "It is red because of iron oxide.")
    assert follow_up.shape is None  # no structured output here: the prompt alone asks for the form
    assert t.final == Answer("B", "guarded") and t.correct is True


def test_answer_guard_off_changes_nothing():
    backend = ScriptedBackend(reply=reasoning_without_answer)
    t = asyncio.run(Debate(backend, make_method("mad", SETTINGS.replace(answer_guard="off"))).run(MCQ))
    assert len(backend.calls) == 6 and t.usage().calls == 6
    assert all(turn.answer.source == "unparsed" for r in t.rounds for turn in r.turns)
    assert not any(r.aux for r in t.rounds) and t.settings["answer_guard"] == "off"


def test_parsed_answers_make_no_guard_call():
    backend = ScriptedBackend(reply=lambda m: "It is Mars. ((B))")
    t = asyncio.run(Debate(backend, make_method("mad", SETTINGS)).run(MCQ))
    assert len(backend.calls) == 6 and t.rounds[0].turns[0].answer == Answer("B", "double_paren")
    assert t.rounds[0].turns[0].answer.source == "parsed"


def test_auto_follows_the_backbone_and_the_transcript_says_which():
    backend = ScriptedBackend(reply=reasoning_without_answer)
    t = asyncio.run(Debate(backend, make_method("cot", SETTINGS.replace(answer_guard="auto"))).run(MCQ))
    assert t.settings["answer_guard"] == "off" and len(backend.calls) == 1
    backend.capabilities = Capabilities(supports_logprobs=True, guard_by_default=True)
    t = asyncio.run(Debate(backend, make_method("cot", SETTINGS.replace(answer_guard="auto"))).run(MCQ))
    assert t.settings["answer_guard"] == "on" and t.final == Answer("B", "guarded")


def test_a_structured_backend_gets_the_shape_and_one_that_rejects_it_is_asked_plainly():
    rejected = []

    def reply(messages):
        return "((B))" if last_user(messages) == final_answer_request(MCQ) else "Hmm."
    backend = ScriptedBackend(reply=reply, capabilities=Capabilities(structured_output="grammar"))
    t = asyncio.run(Debate(backend, make_method("cot", SETTINGS)).run(MCQ))
    assert backend.calls[-1].shape == answer_shape(MCQ) and t.final == Answer("B", "guarded")

    class Rejecting(ScriptedBackend):
        async def chat(self, messages, **kw):
            if kw.get("shape") is not None:
                rejected.append(True)
                raise BackendError("The server does not support this request field; remove it.")
            return await super().chat(messages, **kw)
    backend = Rejecting(reply=reply, capabilities=Capabilities(structured_output="json_schema"))
    t = asyncio.run(Debate(backend, make_method("cot", SETTINGS)).run(MCQ))
    assert rejected and backend.calls[-1].shape is None and t.final == Answer("B", "guarded")


def test_a_failed_guard_leaves_the_answer_unparsed_and_says_why():
    def reply(messages):
        if last_user(messages) == final_answer_request(MCQ):
            raise BackendError("The endpoint is down; try later.", transient=True)
        return "Hmm."
    t = asyncio.run(Debate(ScriptedBackend(reply=reply), make_method("cot", SETTINGS)).run(MCQ))
    [guard] = t.rounds[0].aux
    assert t.final.value is None and guard.error == "The endpoint is down; try later." and guard.label == "failed"


@pytest.mark.parametrize("kind, expected", [
    ("vllm", {"structured_outputs": {"choice": ["((A))", "((B))", "((C))", "((D))"]}}),
    ("grammar", {"grammar": answer_shape(MCQ).grammar}),
])
def test_the_openai_compatible_backend_sends_the_servers_own_constraint(kind, expected):
    with FakeServer(responder=lambda body: ok("((C))")) as server:
        backend = OpenAICompatBackend(base_url=server.base_url, model="fake-model", api_key=None,
                                      capabilities=Capabilities(structured_output=kind))
        [c] = asyncio.run(backend.chat([Message("user", "Which?")], max_tokens=8, shape=answer_shape(MCQ)))
        body = server.requests[-1].body
    assert c.text == "((C))" and all(body[k] == v for k, v in expected.items())


def test_a_json_schema_answer_is_read_from_its_field():
    def respond(body):
        return ok('{"answer": "((D))"}' if "response_format" in body else "Hmm.")
    with FakeServer(responder=respond) as server:
        backend = OpenAICompatBackend(base_url=server.base_url, model="fake-model", api_key=None,
                                      capabilities=Capabilities(structured_output="json_schema"), max_retries=0)
        t = asyncio.run(Debate(backend, make_method("cot", SETTINGS)).run(MCQ))
        schema = server.requests[-1].body["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["answer"]["enum"] == ["((A))", "((B))", "((C))", "((D))"]
    assert t.final == Answer("D", "guarded")


def test_a_server_that_rejects_the_constraint_is_asked_without_it():
    bodies = []

    def respond(body):
        bodies.append(body)
        if "response_format" in body:
            return status(400, message="response_format is not supported by this provider")
        return ok("So it is ((A))" if "nothing else" in body["messages"][-1]["content"] else "Hmm.")
    with FakeServer(responder=respond) as server:
        backend = OpenAICompatBackend(base_url=server.base_url, model="fake-model", api_key=None,
                                      capabilities=Capabilities(structured_output="json_schema"), max_retries=0)
        t = asyncio.run(Debate(backend, make_method("cot", SETTINGS)).run(MCQ))
    assert ["response_format" in b for b in bodies] == [False, True, False]
    assert t.final == Answer("A", "guarded")


@pytest.mark.slow
def test_the_embedded_grammar_lets_out_only_the_tasks_letters_and_a_balanced_box():
    from r2mad.backends.embedded import EmbeddedBackend
    from r2mad.grading.answers import extract_math

    backend = EmbeddedBackend()
    tempt = [Message("user", "Reply with ((E)) or ((J)) and nothing else.")]
    texts = [asyncio.run(backend.chat(tempt, temperature=1.5, max_tokens=8, seed=s, shape=answer_shape(MCQ)))[0].text
             for s in range(4)]
    assert all(text in answer_shape(MCQ).choices for text in texts), texts
    [c] = asyncio.run(backend.chat([Message("user", "What is 3 + 4? Give the answer in a box.")], temperature=1.0,
                                   max_tokens=48, seed=1, shape=answer_shape(MATH)))
    assert c.text.startswith("\\boxed{") and c.text.count("{") == c.text.count("}")
    assert extract_math(c.text).parsed
