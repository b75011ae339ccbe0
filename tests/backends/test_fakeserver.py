"""The test harness itself: each scripted behaviour produces the HTTP result it advertises, quickly."""
from __future__ import annotations

import http.client
import json
import socket
import time

import pytest

from testing.scripted_server import (
    CONTEXT_ERROR,
    MAX_SLEEP_S,
    FakeServer,
    burst,
    content_null,
    context_length,
    hang,
    ok,
    sse_cut,
    status,
    truncated_json,
    unauthorized,
)

MESSAGES = [{"role": "user", "content": "What is two plus two"}]  # 5 words = 5 fake prompt tokens


def post(srv: FakeServer, body: dict, timeout: float = 60.0, token: str = "sk-test") -> tuple[int, dict, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=timeout)
    try:
        conn.request("POST", "/v1/chat/completions", json.dumps(body),
                     {"Content-Type": "application/json", "Authorization": f"Bearer {token}"})
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def chat_body(**kw: object) -> dict:
    return {"model": "fake-model", "messages": MESSAGES, **kw}


def test_ok_follows_the_chat_completion_schema_with_usage_and_logprobs():
    with FakeServer() as srv:
        srv.script([ok("four is it", logprobs=[-0.5, -1.0])])
        code, _, raw = post(srv, chat_body(logprobs=True))
    assert code == 200
    obj = json.loads(raw)
    assert obj["object"] == "chat.completion" and obj["id"] and obj["created"] > 0
    assert obj["model"] == "fake-model"
    choice = obj["choices"][0]
    assert choice["index"] == 0 and choice["finish_reason"] == "stop"
    assert choice["message"] == {"role": "assistant", "content": "four is it"}
    # two logprobs -> the text is cut into two tokens that join back to the text
    tokens = choice["logprobs"]["content"]
    assert [t["logprob"] for t in tokens] == [-0.5, -1.0]
    assert "".join(t["token"] for t in tokens) == "four is it"
    assert all(t["top_logprobs"] == [] for t in tokens)
    assert obj["usage"] == {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}


def test_logprobs_are_sent_only_when_asked_for():
    with FakeServer() as srv:
        srv.script([ok("four", logprobs=[-0.5])])
        _, _, raw = post(srv, chat_body())
    assert json.loads(raw)["choices"][0]["logprobs"] is None


def test_n_returns_n_choices_and_sums_completion_tokens_unless_ignored():
    with FakeServer() as srv:
        srv.script([ok(["a b", "c", "d e f"], prompt_tokens=10), ok("x y", ignore_n=True)])
        first = json.loads(post(srv, chat_body(n=3))[2])
        second = json.loads(post(srv, chat_body(n=3))[2])
    assert [c["message"]["content"] for c in first["choices"]] == ["a b", "c", "d e f"]
    assert [c["index"] for c in first["choices"]] == [0, 1, 2]
    assert first["usage"] == {"prompt_tokens": 10, "completion_tokens": 6, "total_tokens": 16}
    assert len(second["choices"]) == 1


def test_script_is_consumed_in_order_then_the_responder_answers():
    seen = []

    def responder(body: dict):
        seen.append(body["messages"][-1]["content"])
        return ok("echo: " + body["messages"][-1]["content"])

    with FakeServer(responder=responder) as srv:
        srv.script(burst(503, 2))
        codes = [post(srv, chat_body())[0] for _ in range(3)]
        last = json.loads(post(srv, chat_body())[2])
        assert srv.hits == 4 and len(srv.requests) == 4
    assert codes == [503, 503, 200]
    assert last["choices"][0]["message"]["content"] == "echo: What is two plus two"
    assert len(seen) == 2


def test_requests_record_body_and_authorization_header():
    with FakeServer() as srv:
        post(srv, chat_body(seed=7, temperature=0.3), token="sk-secret")
        received = srv.requests[0]
    assert received.body["seed"] == 7 and received.body["temperature"] == 0.3
    assert received.authorization == "Bearer sk-secret"


def test_status_429_carries_retry_after_and_an_openai_error_body():
    with FakeServer() as srv:
        srv.script([status(429, retry_after=1.5)])
        code, headers, raw = post(srv, chat_body())
    assert code == 429 and headers["retry-after"] == "1.5"
    assert json.loads(raw)["error"]["message"]


def test_context_length_and_unauthorized_errors():
    with FakeServer() as srv:
        srv.script([context_length(), unauthorized(), unauthorized(echo_key=True)])
        c1, _, r1 = post(srv, chat_body())
        c2, _, r2 = post(srv, chat_body(), token="sk-abc")
        c3, _, r3 = post(srv, chat_body(), token="sk-abc")
    assert (c1, c2, c3) == (400, 401, 401)
    assert json.loads(r1)["error"]["message"] == CONTEXT_ERROR
    assert "maximum context length" in CONTEXT_ERROR
    assert "sk-abc" not in r2.decode() and "sk-abc" in r3.decode()


def test_truncated_json_is_a_200_whose_body_does_not_parse():
    with FakeServer() as srv:
        srv.script([truncated_json()])
        code, _, raw = post(srv, chat_body())
    assert code == 200 and raw.startswith(b'{"id"')
    with pytest.raises(ValueError):
        json.loads(raw)


def test_content_null_keeps_the_schema_but_no_text():
    with FakeServer() as srv:
        srv.script([content_null()])
        code, _, raw = post(srv, chat_body())
    assert code == 200
    assert json.loads(raw)["choices"][0]["message"]["content"] is None


def test_hang_closes_without_response_after_its_delay():
    with FakeServer() as srv:
        srv.script([hang(0.3)])
        start = time.monotonic()
        with pytest.raises((http.client.RemoteDisconnected, ConnectionError)):  # the server closed it, not a
            post(srv, chat_body(), timeout=20)  # client timeout (which would raise TimeoutError)
        assert 0.25 <= time.monotonic() - start


def test_hang_longer_than_client_timeout_times_out_and_exit_is_prompt():
    start = time.monotonic()
    with FakeServer() as srv:
        srv.script([hang(MAX_SLEEP_S)])
        with pytest.raises((socket.timeout, TimeoutError)):
            post(srv, chat_body(), timeout=0.3)
    assert time.monotonic() - start < MAX_SLEEP_S / 2  # exiting woke the sleeping handler instead of waiting


def test_streams_end_with_done_unless_cut():
    with FakeServer() as srv:
        srv.script([ok("two words"), sse_cut("never finished")])
        _, h1, full = post(srv, chat_body(stream=True))
        _, _, cut = post(srv, chat_body(stream=True))
    assert h1["content-type"] == "text/event-stream"
    assert full.decode().rstrip().endswith("data: [DONE]") and b'"finish_reason": "stop"' in full
    assert b"[DONE]" not in cut and b'"finish_reason": "stop"' not in cut
    assert b"never" in cut


def test_models_list_is_configurable_and_counted():
    with FakeServer(models=["m-one", "m-two"]) as srv:
        conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=60)
        conn.request("GET", "/v1/models")
        obj = json.loads(conn.getresponse().read())
        conn.close()
        assert srv.model_hits == 1 and srv.hits == 0
    assert obj["object"] == "list" and [m["id"] for m in obj["data"]] == ["m-one", "m-two"]


def test_port_is_closed_after_exit():
    with FakeServer() as srv:
        port = srv.port
    with pytest.raises(ConnectionError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
