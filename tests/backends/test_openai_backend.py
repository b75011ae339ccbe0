"""OpenAICompatBackend against the scripted loopback server: results, forwarding, retries, errors, secrecy."""
from __future__ import annotations

import asyncio
import socket
import time
import traceback

import pytest

from r2mad.backends import openai_compat
from r2mad.backends.base import BackendError, Capabilities
from r2mad.backends.openai_compat import OpenAICompatBackend
from r2mad.types import Completion, Message
from testing.scripted_server import (
    FakeServer,
    burst,
    content_null,
    context_length,
    drip,
    hang,
    ok,
    short_body,
    sse_cut,
    sse_error,
    status,
    truncated_json,
    unauthorized,
)

KEY = "sk-test-SECRET-4242"
ASK = [Message("system", "You are careful."), Message("user", "What is 2+2?")]
BACKOFF_START_S = openai_compat.BACKOFF_START_S


@pytest.fixture(autouse=True)
def quick_backoff(monkeypatch):
    """Retries here wait 10 ms; the tests of the backoff schedule itself put the real start back."""
    monkeypatch.setattr(openai_compat, "BACKOFF_START_S", 0.01)


@pytest.fixture
def real_backoff(monkeypatch):
    monkeypatch.setattr(openai_compat, "BACKOFF_START_S", BACKOFF_START_S)


def backend(srv: FakeServer, **kw) -> OpenAICompatBackend:
    kw.setdefault("model", "fake-model")
    kw.setdefault("api_key", KEY)
    kw.setdefault("timeout_s", 30.0)  # a hang guard: a busy machine answers slowly, not never
    return OpenAICompatBackend(base_url=srv.base_url, **kw)


def chat(b: OpenAICompatBackend, **kw) -> list[Completion]:
    return asyncio.run(b.chat(ASK, **kw))


def failure(b: OpenAICompatBackend, **kw) -> tuple[BackendError, float]:
    start = time.monotonic()
    with pytest.raises(BackendError) as info:
        chat(b, **kw)
    return info.value, time.monotonic() - start


def test_chat_returns_text_usage_logprobs_and_latency():
    with FakeServer() as srv:
        srv.script([ok("The answer is 4", logprobs=[-0.1, -0.2, -0.3], prompt_tokens=12, latency_s=0.1)])
        start = time.monotonic()
        [c] = chat(backend(srv), logprobs=True)
        elapsed = time.monotonic() - start
        sent = srv.requests[0]
    assert c.text == "The answer is 4" and c.finish_reason == "stop"
    assert (c.tokens_in, c.tokens_out) == (12, 3)
    assert c.logprobs == (-0.1, -0.2, -0.3)
    assert 0.1 <= c.latency_s <= elapsed  # the call's own time: the server's 0.1 s, within the whole chat()
    assert sent.body["messages"] == [{"role": "system", "content": "You are careful."},
                                     {"role": "user", "content": "What is 2+2?"}]
    assert sent.body["logprobs"] is True
    assert sent.authorization == f"Bearer {KEY}"  # the key is sent to the endpoint...


def test_n_choices_in_one_request_put_prompt_tokens_on_the_first():
    with FakeServer() as srv:
        srv.script([ok(["a", "b", "c"], prompt_tokens=9, completion_tokens=2)])  # usage: 9 in, 6 out
        out = chat(backend(srv), n=3)
        assert srv.hits == 1 and srv.requests[0].body["n"] == 3
    assert [c.text for c in out] == ["a", "b", "c"]
    assert [c.tokens_in for c in out] == [9, 0, 0]
    assert [c.tokens_out for c in out] == [2, 2, 2]


def test_server_ignoring_n_gets_the_rest_in_further_requests_with_shifted_seeds():
    with FakeServer(responder=lambda body: ok("x", ignore_n=True, prompt_tokens=4)) as srv:
        out = chat(backend(srv), n=3, seed=5)
        bodies = [r.body for r in srv.requests]
    assert len(out) == 3 and srv.hits == 3
    assert [b.get("n") for b in bodies] == [3, 2, None]
    assert [b["seed"] for b in bodies] == [5, 6, 7]
    assert [c.tokens_in for c in out] == [4, 4, 4]  # the prompt was really sent three times


def test_sampling_settings_are_forwarded():
    with FakeServer() as srv:
        b = backend(srv)
        b.extra_body = {"top_k": 20}
        chat(b, temperature=0.2, top_p=0.9, max_tokens=64, seed=11)
        body = srv.requests[0].body
    assert body["model"] == "fake-model" and body["seed"] == 11 and body["temperature"] == 0.2
    assert body["top_p"] == 0.9 and body["max_tokens"] == 64 and body["top_k"] == 20
    assert "logprobs" not in body and "n" not in body and body.get("stream") in (None, False)


def test_missing_logprobs_give_none_and_unsupported_logprobs_are_not_asked_for():
    with FakeServer() as srv:
        srv.script([ok("4"), ok("4", logprobs=[-0.5])])
        [plain] = chat(backend(srv), logprobs=True)
        [off] = chat(backend(srv, capabilities=Capabilities(supports_logprobs=False)), logprobs=True)
        assert "logprobs" not in srv.requests[1].body
    assert plain.logprobs is None and off.logprobs is None


def test_model_is_discovered_once_from_the_models_list():
    with FakeServer(models=["m-first", "m-second"]) as srv:
        b = backend(srv, model=None)

        async def twice():
            await b.chat(ASK)
            await b.chat(ASK)
        asyncio.run(twice())
        assert srv.model_hits == 1
        assert [r.body["model"] for r in srv.requests] == ["m-first", "m-first"]
    assert b.describe()["model"] == "m-first" and b.name == "m-first"


def test_empty_models_list_is_a_clear_error():
    with FakeServer(models=[]) as srv:
        err, _ = failure(backend(srv, model=None))
        assert srv.hits == 0
    assert "lists no models" in str(err) and not err.transient


def test_429_with_retry_after_is_honoured_then_succeeds():
    with FakeServer() as srv:
        srv.script([status(429, retry_after=0.3), ok("fine")])
        start = time.monotonic()
        [c] = chat(backend(srv))
        assert srv.hits == 2
    assert c.text == "fine" and 0.3 <= time.monotonic() - start  # it waited as long as the server asked


def test_retry_after_beyond_the_deadline_gives_up_at_once():
    with FakeServer() as srv:
        srv.script([status(429, retry_after=30)])
        err, elapsed = failure(backend(srv, deadline_s=20))
        assert srv.hits == 1
    assert err.transient and "30s" in str(err) and elapsed < 10  # neither 30 s nor the deadline's 20 s


def test_5xx_burst_within_retries_succeeds():
    with FakeServer() as srv:
        srv.script([*burst(502, 2), ok("after the storm")])
        [c] = chat(backend(srv, max_retries=2))
        assert srv.hits == 3
    assert c.text == "after the storm"


def test_5xx_forever_fails_transiently_after_max_retries_plus_one(real_backoff):
    with FakeServer(responder=lambda body: status(503)) as srv:
        err, elapsed = failure(backend(srv, max_retries=2))
        assert srv.hits == 3
    assert err.transient and "HTTP 503" in str(err) and "3 attempts" in str(err)
    assert elapsed >= 1.4  # it backed off 0.5 s, then 1 s, between the attempts


@pytest.mark.slow  # seconds by design (worker processes, deadlines, threads)
def test_deadline_bounds_many_retries(real_backoff):
    with FakeServer(responder=lambda body: status(500)) as srv:
        err, elapsed = failure(backend(srv, max_retries=10, deadline_s=3))
        assert 2 <= srv.hits <= 4  # backoff 0.5, 1, 2 s... cut at the deadline, far from 11 attempts
    assert err.transient and elapsed < 20  # 11 attempts with their backoff would take about a minute


def test_401_is_not_retried_and_never_shows_the_key():
    with FakeServer() as srv:
        srv.script([unauthorized(echo_key=True)])
        b = backend(srv)
        err, _ = failure(b)
        assert srv.hits == 1
    assert not err.transient
    assert "API key" in str(err) and "token" in str(err)
    assert KEY not in str(err) and KEY not in "".join(traceback.format_exception(err))
    assert KEY not in repr(b) and KEY not in str(b.describe())


def test_context_length_is_not_retried_and_says_what_to_lower():
    with FakeServer() as srv:
        srv.script([context_length()])
        err, _ = failure(backend(srv))
        assert srv.hits == 1
    assert str(err) == ("The prompt is longer than the model's context window; lower max tokens, rounds or "
                        "retrieved cases.")


@pytest.mark.parametrize("behaviour", [status(402, message="You have exceeded your monthly included credits."),
                                       status(429, error_code="insufficient_quota",
                                              message="You exceeded your current quota.")])
def test_out_of_credits_is_permanent(behaviour):
    with FakeServer() as srv:
        srv.script([behaviour])
        err, _ = failure(backend(srv))
        assert srv.hits == 1
    assert not err.transient and "credits or quota" in str(err)


def test_hang_longer_than_timeout_fails_within_the_timeout_budget():
    with FakeServer(responder=lambda body: hang(20)) as srv:
        err, elapsed = failure(backend(srv, timeout_s=0.5, max_retries=1))
        assert srv.hits == 2
    assert err.transient and "did not answer within 0.5s" in str(err)
    assert elapsed < 15  # two 0.5 s timeouts and a backoff; waiting out the 20 s hang would fail this


def test_truncated_json_is_retried():
    with FakeServer() as srv:
        srv.script([truncated_json(), ok("whole")])
        [c] = chat(backend(srv))
        assert srv.hits == 2
    assert c.text == "whole"


def test_content_null_is_retried_then_reported():
    with FakeServer(responder=lambda body: content_null()) as srv:
        srv.script([content_null(), ok("there it is")])
        [c] = chat(backend(srv))
        assert c.text == "there it is" and srv.hits == 2
        err, _ = failure(backend(srv, max_retries=1))
        assert srv.hits == 4
    assert err.transient and "content null" in str(err)


def test_an_empty_finished_answer_is_retried_then_an_abstention_never_an_answer():
    with FakeServer(responder=lambda body: ok("")) as srv:
        srv.script([ok("   "), ok("there it is")])
        [c] = chat(backend(srv))
        assert c.text == "there it is" and srv.hits == 2
        err, _ = failure(backend(srv, max_retries=1))
        assert srv.hits == 4
    assert err.transient and "\n" not in str(err)


def test_content_null_at_the_length_limit_is_an_empty_answer_not_a_retry():
    with FakeServer() as srv:
        srv.script([content_null(finish_reason="length")])
        [c] = chat(backend(srv))
        assert srv.hits == 1
    assert c.text == "" and c.finish_reason == "length"


def test_body_shorter_than_its_content_length_is_retried_and_said_to_be_cut_not_unreachable():
    with FakeServer(responder=lambda body: short_body()) as srv:
        srv.script([short_body(), ok("whole")])
        [c] = chat(backend(srv))
        assert c.text == "whole" and srv.hits == 2
        err, _ = failure(backend(srv, max_retries=1))
        assert srv.hits == 4
    assert err.transient and "closed its answer before it was complete after 2 attempts" in str(err)
    assert "Could not reach" not in str(err) and "check the server's logs" in str(err)


def test_unreachable_port_fails_quickly_naming_the_url():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again below: nothing listens there
    url = f"http://127.0.0.1:{port}/v1"
    b = OpenAICompatBackend(base_url=url, model="m", api_key=KEY, timeout_s=1, max_retries=1)
    err, elapsed = failure(b)
    assert str(err).startswith(f"Could not reach {url} after 2 attempts within")
    assert err.transient and KEY not in str(err) and elapsed < 60  # a hang guard; refused at once normally


# --- streaming ------------------------------------------------------------------------------------

def test_stream_gives_the_text_live_with_usage_and_logprobs():
    seen = []
    with FakeServer() as srv:
        srv.script([ok("The answer is 4", logprobs=[-0.1, -0.2, -0.3])])
        [c] = chat(backend(srv, stream=True), logprobs=True, on_text=seen.append)
        sent = srv.requests[0].body
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}
    assert c.text == "The answer is 4" and c.finish_reason == "stop" and c.logprobs == (-0.1, -0.2, -0.3)
    assert c.tokens_out == 3 and c.tokens_in == 6  # the fake counts prompt words
    assert seen == ["The a", "The answer", "The answer is 4"]  # growing text, one update per chunk


def test_stream_cut_before_finish_reason_is_retried_and_never_an_answer():
    with FakeServer() as srv:
        srv.script([sse_cut("The answer is (A"), ok("The answer is ((B))")])
        [c] = chat(backend(srv, stream=True, max_retries=1))
        assert srv.hits == 2
    assert c.text == "The answer is ((B))"


def test_stream_cut_every_time_fails_transiently_with_one_sentence():
    with FakeServer() as srv:
        srv.script([sse_cut("partial")] * 3)
        err, _ = failure(backend(srv, stream=True, max_retries=2))
        assert srv.hits == 3
    assert err.transient and "kept ending its answer stream before it was complete" in str(err)
    assert "partial" not in str(err) and KEY not in str(err)


@pytest.mark.slow  # seconds by design (worker processes, deadlines, threads)
def test_error_event_inside_a_stream_is_retried_then_named():
    with FakeServer(responder=lambda body: sse_error("The answer", "upstream overloaded")) as srv:
        srv.script([sse_error(), sse_error(), ok("The answer is ((B))")])
        [c] = chat(backend(srv, stream=True, max_retries=2))
        assert c.text == "The answer is ((B))" and srv.hits == 3
        err, _ = failure(backend(srv, stream=True, max_retries=1))
        assert srv.hits == 5
    assert err.transient and "kept sending an error inside its answer stream ('upstream overloaded')" in str(err)
    assert KEY not in str(err) and "\n" not in str(err)


@pytest.mark.slow  # seconds by design (worker processes, deadlines, threads)
def test_a_stalled_stream_is_cut_at_timeout_s_between_tokens_and_retried():
    with FakeServer(responder=lambda body: drip("one two three four", 3.0)) as srv:
        srv.script([drip("one two", 3.0), ok("The answer is 4")])
        [c] = chat(backend(srv, stream=True, max_retries=1, timeout_s=1))
        assert c.text == "The answer is 4" and srv.hits == 2
        err, _ = failure(backend(srv, stream=True, max_retries=0, timeout_s=1))
        assert srv.hits == 3
    assert err.transient and "stopped sending its answer: no new token came for 1s" in str(err)
    assert "timeout_s" in str(err)


def test_a_steady_but_slow_stream_ends_at_its_total_bound_without_a_retry():
    seen = []
    with FakeServer(responder=lambda body: drip("one two three four five six seven eight nine ten", 0.3)) as srv:
        err, _ = failure(backend(srv, stream=True, total_timeout_s=1.5, max_retries=2), on_text=seen.append)
        assert srv.hits == 1  # a retry would be as slow
    assert 0 < len(seen) < 10  # tokens kept coming, each well within timeout_s, until the total bound
    assert err.transient and "was still sending its answer after 1.5s" in str(err) and "total_timeout_s" in str(err)


def test_the_default_total_bound_grows_with_max_tokens():
    b = OpenAICompatBackend(base_url="http://127.0.0.1:9/v1", model="m", api_key=None, timeout_s=5)
    assert b.total_bound(100) < b.total_bound(1000)
    assert b.total_bound(16) > 5  # never tighter than a whole answer's own timeout
    assert OpenAICompatBackend(base_url="http://x/v1", model="m", api_key=None, timeout_s=5,
                               total_timeout_s=30).total_bound(1000) == 30


def test_several_samples_are_not_streamed():
    with FakeServer() as srv:
        srv.script([ok(["a", "b"])])
        out = chat(backend(srv, stream=True), n=2)
        assert "stream" not in srv.requests[0].body
    assert [c.text for c in out] == ["a", "b"]
