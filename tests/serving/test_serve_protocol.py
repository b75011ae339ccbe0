"""What `serve` tells its caller and what it honours: the answer kind a request names (body, model name, the server's
default), every change made to a request (header and extra field), the answer line alone as content, `n` debates at
once, the caller's sampling settings, a true finish_reason, and bodies nested too deep; on a scripted backbone."""
from __future__ import annotations

import json
import re
import threading

import pytest

from testing.scripted_server import FakeServer, ok, status
from tests.helpers import make_bank, post, scripted_config, serve_on_loopback, two_rounds

LONG_SUM = ("Three apples and four apples make seven apples, counted one by one and checked again twice over, "
            "so the total is \\boxed{7}")  # 20 words: a max_tokens of 16 cuts it
PLANETS = "Which planet is largest?\nA) Mars\nB) Jupiter\nC) Venus"
RACE = "What is 3 + 4 when two debates race?"
ASSUMED = ("No answer kind was named, so the question was debated as math (the server's default); name one with "
           "\"kind\" in the body or ?kind= in the model name.")


class Backbone:
    """The scripted backbone's replies: a math question gets LONG_SUM, cut at the call's max_tokens as a server cuts
    it; the first two calls about RACE are answered only once both are in flight (else they fail)."""

    def __init__(self):
        self.lock, self.race_calls, self.overlapped = threading.Lock(), 0, False
        self.barrier = threading.Barrier(2, timeout=5)

    def __call__(self, body):
        if RACE in json.dumps(body["messages"]):
            with self.lock:
                self.race_calls += 1
                first_two = self.race_calls <= 2
            if first_two:
                try:
                    self.barrier.wait()
                except threading.BrokenBarrierError:
                    return status(500, message="the two debates did not overlap")
                self.overlapped = True
        if "(A)" in json.dumps(body["messages"]):
            return two_rounds(body)
        words = LONG_SUM.split()
        if body["max_tokens"] < len(words):
            return ok(" ".join(words[:body["max_tokens"]]), finish_reason="length")
        return ok(LONG_SUM)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("serve-protocol")
    make_bank(tmp / "memory")  # the default bank: multiple choice
    with FakeServer(responder=(script := Backbone())) as backbone:
        config = scripted_config(backbone.base_url, tmp / "var", memory_dir=tmp / "memory", rounds=2)
        with serve_on_loopback(config) as (url, services):
            yield url, services, backbone, script


def ask(url, **body):
    got, headers, reply = post(url, json.dumps({"messages": [{"role": "user", "content": "What is 3 + 4?"}],
                                                **body}).encode())
    changes = json.loads(headers.get("x-r2mad-changes", "[]"))
    return got, changes, reply


def kind_of(services, reply) -> str:
    return services.store.get_run(reply["r2mad"]["run_ids"][0]).transcript.task.kind


def test_the_kind_from_the_body_beats_the_model_name_and_the_default_is_math_said_as_a_change(served):
    url, services, _, _ = served
    question = [{"role": "user", "content": "Is 7 a prime number?"}]  # guessed yes/no, but served as math
    got, changes, reply = ask(url, model="cot@fake", messages=question)
    assert got == 200 and kind_of(services, reply) == "math" and changes == reply["r2mad"]["changes"] == [ASSUMED]
    got, changes, reply = ask(url, model="cot@fake?kind=yesno", messages=question)
    assert got == 200 and kind_of(services, reply) == "yesno" and changes == []
    got, changes, reply = ask(url, model="cot@fake?kind=yesno", kind="short", messages=question)
    assert got == 200 and kind_of(services, reply) == "short" and changes == []


def test_memory_turned_off_and_an_unapplied_stop_are_changes_in_the_header_and_the_extra_field(served):
    url, services, _, _ = served
    got, changes, reply = ask(url, model="r2mad@fake", stop=["Q:"])
    assert got == 200 and changes == reply["r2mad"]["changes"]
    assert changes[0] == ASSUMED and changes[1].startswith("stop was not applied")
    assert changes[2].startswith("Memory off: bank ") and "holds mcq cases but this question is math" in changes[2]


def test_without_any_bank_r2mad_runs_with_memory_off_said_as_a_change(tmp_path):
    import dataclasses

    with FakeServer(responder=two_rounds) as backbone:
        config = scripted_config(backbone.base_url, tmp_path / "var")
        config = dataclasses.replace(config, app=dataclasses.replace(config.app, default_bank=None))
        with serve_on_loopback(config) as (url, _):
            got, changes, reply = ask(url, model="r2mad@fake", kind="math")
    assert got == 200 and changes == reply["r2mad"]["changes"] == [
        "Memory off: no memory bank was given; this runs without retrieved cases."]


def test_the_content_is_the_answer_line_alone_and_the_rationale_is_reasoning(served):
    url, _, _, _ = served
    got, _, reply = ask(url, model="mad@fake", messages=[{"role": "user", "content": (
        "What is 3 + 4? End your reply with #### and the number.")}])
    message = reply["choices"][0]["message"]
    assert got == 200 and message["content"] == "#### 7"
    assert message["reasoning_content"].startswith("mad on fake, 1 round: 3 of 3 agents chose 7 in round 0.")
    got, _, reply = ask(url, model="mad@fake", messages=[{"role": "user", "content": PLANETS}])
    assert reply["choices"][0]["message"]["content"] == "The answer is (B)."  # no "3 of 3", no "round 1"
    assert not re.search(r"\d", reply["choices"][0]["message"]["content"])


def test_n_debates_run_at_once(served):
    url, _, _, script = served
    got, _, reply = ask(url, model="cot@fake", n=2, messages=[{"role": "user", "content": RACE}])
    assert got == 200, reply
    assert script.overlapped and len(reply["choices"]) == 2 and len(set(reply["r2mad"]["run_ids"])) == 2


def test_temperature_max_tokens_and_seed_reach_every_call(served):
    url, services, backbone, _ = served
    before = len(backbone.requests)
    got, _, reply = ask(url, model="mad@fake", temperature=0.2, max_tokens=100, seed=41, top_p=0.9)
    assert got == 200
    calls = [r.body for r in backbone.requests[before:]]
    assert len(calls) == 3  # 3 agents agree in round 0: the debate stops early
    assert {(c["temperature"], c["max_tokens"], c["top_p"]) for c in calls} == {(0.2, 100, 0.9)}
    assert sorted(c["seed"] for c in calls) == [41, 42, 43]  # seed + 1000 x round + agent
    settings = services.store.get_run(reply["r2mad"]["run_ids"][0]).transcript.settings
    assert (settings["temperature"], settings["max_tokens"], settings["seed"]) == (0.2, 100, 41)


@pytest.mark.parametrize("field, value, problem", [
    ("temperature", 5, "temperature: 5.0 is out of range; allowed 0.0 to 2.0."),
    ("max_tokens", 4, "max_tokens: 4 is out of range; allowed 16 to 32768."),
    ("seed", "x", "seed: expected a whole number, got 'x'."),
    ("logprobs", True, "logprobs cannot be served"),
])
def test_sampling_settings_out_of_bounds_are_refused_in_one_sentence(served, field, value, problem):
    url, _, backbone, _ = served
    hits = backbone.hits
    got, _, reply = ask(url, model="mad@fake", **{field: value})
    assert got == 400 and reply["error"]["message"].startswith(problem) and backbone.hits == hits


def test_finish_reason_says_length_when_a_turn_was_cut(served):
    url, _, _, _ = served
    got, _, reply = ask(url, model="cot@fake", max_tokens=16)
    assert got == 200 and reply["choices"][0]["finish_reason"] == "length"
    got, _, reply = ask(url, model="cot@fake", max_tokens=64)
    assert got == 200 and reply["choices"][0]["finish_reason"] == "stop"


@pytest.mark.parametrize("body, problem", [
    (b"[" * 100_000 + b"]" * 100_000, "The request body nests deeper than 64 levels"),
    (b'{"model": "mad@fake", "x": ' + b"[" * 500 + b"]" * 500 + b"}", "The request body nests deeper than 64 levels"),
    (b'{"model": "mad@fake", "messages": [', "The request body is not JSON"),
])
def test_deep_or_malformed_json_is_a_400_in_one_sentence(served, body, problem):
    url, _, backbone, _ = served
    hits = backbone.hits
    got, _, reply = post(url, body)
    assert got == 400 and reply["error"]["message"].startswith(problem) and "\n" not in reply["error"]["message"]
    assert backbone.hits == hits


def test_a_stream_says_its_changes_in_the_header_and_its_last_chunk(served):
    import httpx

    body = {"model": "cot@fake", "stream": True, "max_tokens": 16,
            "messages": [{"role": "user", "content": "What is 3 + 4?"}]}
    with httpx.stream("POST", served[0] + "/chat/completions", json=body, timeout=60) as response:
        header = json.loads(response.headers["x-r2mad-changes"])
        chunks = [json.loads(line.removeprefix("data: ")) for line in response.iter_lines()
                  if line.startswith("data: {")]
    assert header == chunks[-1]["r2mad"]["changes"] == [ASSUMED]
    assert [c["choices"][0]["finish_reason"] for c in chunks if c["choices"] and c["choices"][0]["finish_reason"]
            ] == ["length"]
