"""Identical prompts as one request for n samples (native_n) against the loopback test server: Self-Consistency's
9 samples, their token counts, seeds, a server that ignores n, and the provider header of each call."""
import asyncio

from r2mad.backends.openai_compat import OpenAICompatBackend, choice_tokens
from r2mad.engine.runner import Setup, run_debate
from r2mad.settings.config import load_config
from r2mad.types import Message, Task
from testing.scripted_server import FakeServer, ok

TASK = Task("mcq", "Which letter?", (("A", "a"), ("B", "b")), "B", "q1", "demo-mcq")
TASK_PROMPT = (Message("user", "Which letter? ((B)) or ((A))"),)
SETTINGS = load_config().settings.replace(samples=9, max_tokens=64, answer_guard="off", seed=5)


def sample_text(i):
    """Sample i: '((B))' and i words 'abcd', so 5 (i + 1) characters and i + 1 words (the fake's tokens)."""
    return "((B))" + " abcd" * i


def answer_n(body):
    return ok([sample_text(i) for i in range(int(body.get("n") or 1))])


def run_sc(srv, **kw):
    backend = OpenAICompatBackend(base_url=srv.base_url, model="fake-model", api_key=None, name="fake", **kw)
    return asyncio.run(run_debate(TASK, "sc", Setup(backend, SETTINGS)))


def test_nine_samples_go_as_one_request_and_keep_their_own_token_counts():
    with FakeServer(responder=answer_n, provider="together") as srv:
        t = run_sc(srv, native_n=True)
        assert srv.hits == 1
        body = srv.requests[0].body
        assert body["n"] == 9 and body["seed"] == 5  # the first sample's seed (seed + 1000·round + agent 0)
    turns = t.rounds[0].turns
    assert len(turns) == 9 and t.final.value == "B" and t.correct
    # characters are proportional to words, so each sample's share of the 45 completion tokens is its own
    # word count: 1, 2, ..., 9; the prompt's tokens are paid once, on the first sample
    assert [x.tokens_out for x in turns] == list(range(1, 10))
    assert turns[0].tokens_in > 0 and all(x.tokens_in == 0 for x in turns[1:])
    assert [x.text for x in turns] == [sample_text(i) for i in range(9)]
    assert {x.provider for x in turns} == {"together"}


def test_without_native_n_each_sample_is_its_own_request_with_its_own_seed():
    with FakeServer(responder=answer_n) as srv:
        t = run_sc(srv)
        assert srv.hits == 9
        assert sorted(r.body["seed"] for r in srv.requests) == list(range(5, 14))
        assert all("n" not in r.body for r in srv.requests)
    assert all(x.tokens_out == 1 and x.tokens_in > 0 for x in t.rounds[0].turns)
    assert all(x.provider is None for x in t.rounds[0].turns)


def test_a_server_that_ignores_n_is_asked_again_with_shifted_seeds():
    with FakeServer(responder=lambda body: ok("((B)) sure", ignore_n=True)) as srv:
        t = run_sc(srv, native_n=True)
        assert srv.hits == 9  # one choice per answer: 9, 8, ..., 1 asked in turn
        assert [r.body.get("n", 1) for r in srv.requests] == list(range(9, 0, -1))
        assert [r.body["seed"] for r in srv.requests] == list(range(5, 14))
    assert len(t.rounds[0].turns) == 9 and all(x.tokens_out == 2 for x in t.rounds[0].turns)


def test_choice_tokens_prefer_logprob_counts_and_always_sum_to_the_total():
    assert choice_tokens(7, ["a", "bb"], [(0.1,) * 3, (0.2,) * 4]) == [3, 4]
    # no logprobs: 10 tokens over 1 + 2 + 3 characters -> 1.67, 3.33, 5 -> floors 1, 3, 5 and the one left
    # goes to the largest remainder (0.67, the first)
    assert choice_tokens(10, ["a", "bb", "ccc"], [None, None, None]) == [2, 3, 5]
    # logprob counts that do not add up to the server's total are not trusted
    assert choice_tokens(10, ["a", "bb", "ccc"], [(0.1,), (0.1,), (0.1,)]) == [2, 3, 5]
    assert choice_tokens(4, ["one"], [None]) == [4]


def test_the_provider_header_is_kept_on_streamed_and_whole_answers():
    with FakeServer(responder=lambda body: ok("((B)) fine"), provider="nebius") as srv:
        for stream in (False, True):
            backend = OpenAICompatBackend(base_url=srv.base_url, model="fake-model", api_key=None, stream=stream)
            [c] = asyncio.run(backend.chat(list(TASK_PROMPT), n=1))
            assert c.provider == "nebius" and c.text == "((B)) fine"
        assert srv.requests[1].body.get("stream") is True
