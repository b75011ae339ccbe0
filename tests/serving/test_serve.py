"""`python -m r2mad serve`: the debate as an OpenAI-compatible model, through the `openai` client and plain HTTP
against the server on loopback, debates on a scripted OpenAI-compatible server; every reply checked against the
run it saved."""
from __future__ import annotations

import json

import pytest

from r2mad.methods import METHODS
from testing.scripted_server import FakeServer, status
from tests.helpers import post, scripted_config, serve_on_loopback, two_rounds

PLANETS = "Which planet is largest?\nA) Mars\nB) Jupiter\nC) Venus"
INSPECT_STYLE = ("Answer the following multiple choice question. The entire content of your response should be of "
                 "the following format: 'ANSWER: $LETTER' (without quotes) where LETTER is one of A,B,C.\n\n"
                 "Which planet is largest?\n\nA) Mars\nB) Jupiter\nC) Venus")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("serve")
    with FakeServer(responder=two_rounds) as backbone:
        with serve_on_loopback(scripted_config(backbone.base_url, tmp / "var", rounds=3)) as (url, services):
            yield url, services, backbone


@pytest.fixture(scope="module")
def client(served):
    from openai import OpenAI

    return OpenAI(base_url=served[0], api_key="unused-on-loopback", max_retries=0)


def test_models_lists_every_method_on_every_backbone(client, served):
    names = {m.id for m in client.models.list()}
    assert {f"{m}@fake" for m in METHODS} <= names and "r2mad@smollm2-135m" in names
    assert len(names) == len(METHODS) * len(served[1].config.backbones)


def test_a_chat_completion_is_a_saved_debate_with_its_usage(client, served):
    raw = client.chat.completions.with_raw_response.create(model="mad@fake",
                                                           messages=[{"role": "user", "content": PLANETS}])
    reply = raw.parse()
    run_id = raw.headers["x-r2mad-run-id"]
    record = served[1].store.get_run(run_id)
    t = record.transcript
    assert record.source == "serve" and t.task.options == (("A", "Mars"), ("B", "Jupiter"), ("C", "Venus"))
    assert t.task.question == "Which planet is largest?" and len(t.rounds) == 2 and t.final.value == "B"
    message = reply.choices[0].message
    assert message.content == "The answer is (B)." and reply.choices[0].finish_reason == "stop"
    assert "3 of 3 agents chose B in round 1" in message.model_extra["reasoning_content"]
    usage = t.usage()
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (usage.tokens_in, usage.tokens_out) != (0, 0)
    extra = reply.model_extra["r2mad"]
    assert extra["run_ids"] == [run_id] and [len(r["turns"]) for r in extra["runs"][0]["rounds"]] == [3, 3]
    assert extra["runs"][0]["usage_by_model"]["fake"]["calls"] == 6


def test_the_answer_comes_in_the_form_the_prompt_asks_for(client, served):
    reply = client.chat.completions.create(model="mad@fake", messages=[{"role": "user", "content": INSPECT_STYLE}])
    content = reply.choices[0].message.content
    assert content.splitlines()[-1] == "ANSWER: B" and content.count("ANSWER") == 1
    [record] = served[1].store.list_runs(limit=1)
    assert record.question == "Which planet is largest?"  # the harness's instruction is not debated
    math = client.chat.completions.create(model="cot@fake?kind=math", messages=[
        {"role": "user", "content": "What is 3 + 4? Put the final answer in \\boxed{}."}])
    assert math.choices[0].message.content == "The answer is \\boxed{7}."
    hashes = client.chat.completions.create(model="mad@fake", extra_body={"kind": "math"}, messages=[
        {"role": "user", "content": "What is 3 + 4?\nEnd your reply with #### and the number."}])
    assert hashes.choices[0].message.content == "#### 7"
    assert served[1].store.list_runs(limit=1)[0].question == "What is 3 + 4?"


def test_streaming_sends_each_round_as_reasoning_then_the_answer(client, served):
    chunks = list(client.chat.completions.create(model="mad@fake", messages=[{"role": "user", "content": PLANETS}],
                                                 stream=True, stream_options={"include_usage": True}))
    reasoning = [c.choices[0].delta.model_extra.get("reasoning_content") for c in chunks if c.choices]
    rounds = [text for text in reasoning if text]
    assert [text.splitlines()[0].split(" (")[0] for text in rounds[:-1]] == ["Round 0", "Round 1"]
    assert "Agent 1 -> A: Mars is red. A" in rounds[0]
    content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert content == "The answer is (B)." and rounds[-1].startswith("mad on fake, 2 rounds: 3 of 3 agents chose B")
    last = chunks[-1]
    run_id = last.model_extra["r2mad"]["run_ids"][0]
    usage = served[1].store.get_run(run_id).transcript.usage()
    assert (last.usage.prompt_tokens, last.usage.completion_tokens) == (usage.tokens_in, usage.tokens_out)


def test_n_runs_n_debates(client, served):
    reply = client.chat.completions.create(model="cot@fake", n=2, messages=[{"role": "user", "content": PLANETS}])
    ids = reply.model_extra["r2mad"]["run_ids"]
    assert len(reply.choices) == 2 and len(set(ids)) == 2
    seeds = [served[1].store.get_run(i).transcript.settings["seed"] for i in ids]
    assert seeds[1] == seeds[0] + 1


@pytest.mark.parametrize("model, content, code, problem", [
    ("nope@fake", PLANETS, 404, "Unknown method 'nope' in the model name"),
    ("mad@gpt-9", PLANETS, 404, "Unknown backbone 'gpt-9' in the model name"),
    ("mad@fake?temperature=2", PLANETS, 404, "The model name sets 'temperature', which is not a setting here"),
    ("mad@fake", "   ", 400, "The question is empty"),
    ("mad@fake", "x" * 1_000_001, 413, "The request is over 1 MB"),
])
def test_bad_input_gets_openais_error_shape_in_one_sentence_and_runs_nothing(served, model, content, code, problem):
    url, services, backbone = served
    hits, runs = backbone.hits, len(services.store.list_runs(limit=200))
    got, _, body = post(url, json.dumps({"model": model, "messages": [{"role": "user", "content": content}]}).encode())
    assert got == code and set(body["error"]) == {"message", "type", "param", "code"}
    assert body["error"]["message"].startswith(problem) and "\n" not in body["error"]["message"]
    assert backbone.hits == hits and len(services.store.list_runs(limit=200)) == runs


def test_a_failing_backbone_is_an_error_naming_the_saved_run(served):
    url, services, backbone = served
    backbone.script([status(500)] * 3)
    got, _, body = post(url, json.dumps({"model": "mad@fake", "messages": [{"role": "user",
                                                                            "content": PLANETS}]}).encode())
    assert got == 502 and body["error"]["code"] == "backbone_failed"
    run_id = body["error"]["message"].rstrip(".").rsplit(" ", 1)[-1]
    assert services.store.get_run(run_id).status == "failed"  # nothing lost: the run and its errors are kept


def test_a_wrong_or_missing_key_is_refused(tmp_path):
    with FakeServer(responder=two_rounds) as backbone:
        config = scripted_config(backbone.base_url, tmp_path / "var")
        with serve_on_loopback(config, key="s3cret-key") as (url, services):
            body = json.dumps({"model": "mad@fake", "messages": [{"role": "user", "content": PLANETS}]}).encode()
            for headers in ({}, {"authorization": "Bearer wrong"}):
                got, _, reply = post(url, body, headers)
                assert got == 401 and reply["error"]["code"] == "invalid_api_key"
            assert backbone.hits == 0
            got, headers, reply = post(url, body, {"authorization": "Bearer s3cret-key"})
            assert got == 200 and headers["x-r2mad-run-id"] == reply["r2mad"]["run_ids"][0]
        hits = backbone.hits
        with serve_on_loopback(config, key_required=True) as (url, services):  # beyond loopback with no key set
            got, _, reply = post(url, body, {"authorization": "Bearer anything"})
            assert got == 401 and "set R2MAD_SERVE_KEY where it runs" in reply["error"]["message"]
        assert backbone.hits == hits


def test_serving_beyond_loopback_without_a_key_is_refused_before_it_starts(capsys):
    from r2mad.cli import main

    assert main(["serve", "--host", "0.0.0.0", "--port", "1"]) == 2
    assert "give an API key with --api-key or R2MAD_SERVE_KEY, or bind 127.0.0.1" in capsys.readouterr().err


def test_a_full_line_is_refused_with_429_and_the_others_still_answer(tmp_path):
    import dataclasses
    import threading
    import time

    def slow(body):
        reply = two_rounds(body)
        reply.latency_s = 0.5
        return reply
    with FakeServer(responder=slow) as backbone:
        config = scripted_config(backbone.base_url, tmp_path / "var", rounds=1)
        config = dataclasses.replace(config, app=dataclasses.replace(config.app, remote_concurrency_limit=1,
                                                                     max_queue=1))
        with serve_on_loopback(config) as (url, services):
            body = json.dumps({"model": "mad@fake", "messages": [{"role": "user", "content": PLANETS}]}).encode()
            answers = []
            threads = [threading.Thread(target=lambda: answers.append(post(url, body)[0])) for _ in range(2)]

            def wait_for(condition) -> None:
                deadline = time.monotonic() + 30
                while not condition():
                    assert time.monotonic() < deadline, "the line never reached the state the test needs"
                    time.sleep(0.01)
            threads[0].start()
            wait_for(lambda: services.admission.running_count("remote") == 1)
            threads[1].start()
            wait_for(lambda: services.admission.waiting_count("remote") == 1)
            got, _, reply = post(url, body)
            assert got == 429 and reply["error"]["message"].startswith("The line is full (1 debates waiting)")
            for thread in threads:
                thread.join(timeout=60)
            assert answers == [200, 200]


def test_a_debate_past_its_deadline_is_a_504_naming_the_saved_run(tmp_path):
    def stalls(body):
        reply = two_rounds(body)
        reply.latency_s = 20  # the server wakes early when the test ends
        return reply
    with FakeServer(responder=stalls) as backbone:
        with serve_on_loopback(scripted_config(backbone.base_url, tmp_path / "var", deadline_s=1)) as (url, services):
            got, _, body = post(url, json.dumps({"model": "cot@fake", "messages": [{"role": "user",
                                                                                    "content": PLANETS}]}).encode())
            assert got == 504 and body["error"]["code"] == "deadline"
            assert "Round 0 did not finish within 1.5 times the time limit of 1 s" in body["error"]["message"]
            run_id = body["error"]["message"].rstrip(".").rsplit(" ", 1)[-1]
            assert services.store.get_run(run_id).status == "failed"
