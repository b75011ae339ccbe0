"""Several replicas behind a real router (vllm-router from PyPI): debate affinity, who served each call, a
replica killed mid-eval; and the prefix cache's cached-token counting by hand on a small scripted debate."""
from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
import urllib.request
from collections import Counter
from pathlib import Path

import pytest

from r2mad.backends.affinity import affinity_headers, debate_key, served_by
from r2mad.backends.openai_compat import OpenAICompatBackend
from r2mad.bench.fleet import SETTINGS, replica_reply, run_through, synthetic_split
from r2mad.bench.router import Router, routes_in_log
from r2mad.bench.speed import TASK
from r2mad.engine.runner import Setup, run_debate
from testing.replicas import PrefixCache, Replicas, prompt_tokens
from tests.helpers import child, free_port


def backend_for(url: str, **kw) -> OpenAICompatBackend:
    return OpenAICompatBackend(base_url=url, model="replica-model", api_key=None, name="fleet", **kw)


def replicas_of(t) -> Counter:
    return Counter(x.provider for r in t.rounds for x in (*r.turns, *r.aux))


# --- fast: the key, the headers, the cache ----------------------------------------------------------------

def test_calls_carry_the_enclosing_debate_key_and_none_outside():
    assert affinity_headers() == {}
    with debate_key("question-7:1"):
        with debate_key() as inner:  # a debate inside an eval question keeps the question's key
            assert inner == "question-7:1"
            assert affinity_headers() == {"X-Session-ID": "question-7:1", "X-SMG-Routing-Key": "question-7:1"}
    with debate_key() as a, debate_key(None):
        assert len(a) == 16
    with debate_key() as b:
        assert b != a  # a debate of its own gets a new key
    assert served_by({"x-served-by": " replica-2 "}) == "replica-2" and served_by({}) is None


def test_prefix_cache_counts_words_of_the_longest_shared_prefix():
    cache = PrefixCache()
    first = prompt_tokens([{"role": "system", "content": "you are a judge"},
                           {"role": "user", "content": "is two plus two four"}])
    assert cache.cached(first) == 0
    longer = prompt_tokens([{"role": "system", "content": "you are a judge"},
                            {"role": "user", "content": "is two plus two four"},
                            {"role": "assistant", "content": "yes"}, {"role": "user", "content": "sure?"}])
    assert cache.cached(longer) == 4 + 5  # both messages of the first prompt; the assistant marker then differs
    other = prompt_tokens([{"role": "system", "content": "you are a critic"}])
    assert cache.cached(other) == 3  # "you are a"
    assert cache.cached(first) == 8  # a prompt seen whole: all but its last word (recomputed to decode)
    assert cache.cached(prompt_tokens([{"role": "user", "content": "you are a judge"}])) == 0  # the role differs


def test_streamed_and_batched_calls_carry_the_key_and_read_cached_tokens_and_the_replica():
    from r2mad.types import Message
    from testing.scripted_server import ok

    prompt = [Message("system", "you are terse"), Message("user", "name a planet")]
    with Replicas(1, responder=lambda body: ok("Mars is one")) as fleet:
        url = fleet.servers[0].base_url

        async def calls():
            with debate_key("streamed"):
                [first] = await backend_for(url, stream=True).chat(prompt, max_tokens=16)
                [again] = await backend_for(url, stream=True).chat(prompt, max_tokens=16)
            batching = backend_for(url, native_n=True)
            with debate_key("batched"):  # three samples of one prompt go as one request with n = 3
                samples = await asyncio.gather(*(batching.chat(prompt, seed=1 + i) for i in range(3)))
            return first, again, samples
        first, again, samples = asyncio.run(calls())
    assert (first.tokens_cached, again.tokens_cached) == (0, 5)  # "you are terse name a planet": all but the last
    assert first.provider == again.provider == "replica-0"
    assert [s.key for s in fleet.log] == ["streamed", "streamed", "batched"]
    assert sum(c.tokens_cached for [c] in samples) == 5  # on the request's first completion only


def test_cached_tokens_of_a_small_scripted_mad_debate_counted_by_hand():
    """2 agents x 2 rounds of MAD on one replica. By hand: in round 0 the second agent's prompt shares the
    personas' common opening words with the first; in round 1 each agent's prompt repeats its round-0 prompt
    and its own answer, which the replica keeps cached (as vLLM keeps a finished request's blocks)."""
    answers = {0: "Jupiter is the largest planet. ((B))", 1: "Mars looks big to me. ((A))"}

    def reply(body):
        from testing.scripted_server import ok
        from tests.helpers import SYSTEMS
        return ok(answers[SYSTEMS.index(body["messages"][0]["content"])])

    settings = SETTINGS.replace(agents=2, rounds=2)
    with Replicas(1, responder=reply) as fleet:
        t = asyncio.run(run_debate(TASK, "mad", Setup(backend_for(fleet.servers[0].base_url), settings)))
    words = [[len(m.content.split()) for m in turn.prompt] for turn in t.rounds[0].turns]
    sys0, sys1 = (turn.prompt[0].content.split() for turn in t.rounds[0].turns)
    common = next(i for i, (a, b) in enumerate(zip(sys0 + [None], sys1 + [""])) if a != b)
    by_hand = common + sum(w[0] + w[1] + len(answers[i].split()) for i, w in enumerate(words))
    assert t.usage().tokens_cached == by_hand
    assert [turn.tokens_cached for turn in t.rounds[1].turns] == [
        w[0] + w[1] + len(answers[i].split()) for i, w in enumerate(words)]
    assert replicas_of(t) == Counter({"replica-0": 4})


# --- slow: the real router ----------------------------------------------------------------------------

@pytest.mark.slow
def test_each_debate_stays_on_one_of_three_replicas_behind_the_router():
    with Replicas(3, responder=replica_reply) as fleet, Router(fleet.urls) as router:
        backend = backend_for(router.base_url)

        async def debates():
            async def one(i, method):
                with debate_key(f"debate-{i}"):
                    return await run_debate(TASK, method, Setup(backend, SETTINGS))
            return await asyncio.gather(*(one(i, m) for i, m in enumerate(["mad", "truemad", "r2mad-no-memory",
                                                                            "madm2-subjective"] * 2)))
        transcripts = asyncio.run(debates())
        by_key = fleet.calls_by_key()
    served = [replicas_of(t) for t in transcripts]
    assert all(len(s) == 1 and None not in s for s in served)  # every call of a debate: one replica
    assert len({next(iter(s)) for s in served}) > 1  # another debate may land elsewhere
    assert all(len({c.replica for c in calls}) == 1 for calls in by_key.values())  # as the replicas saw it
    assert set(by_key) == {f"debate-{i}" for i in range(8)}  # summaries, judges, advice carried the key too
    assert sum(t.usage().calls for t in transcripts) == sum(len(c) for c in by_key.values())


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["consistent_hash", "sticky_least_loaded"])
def test_a_replica_killed_mid_eval_loses_no_row_and_the_eval_resumes(tmp_path, policy):
    split = synthetic_split(12)
    with Replicas(3, responder=replica_reply, per_token_s=0.004, slots=4) as fleet, \
            Router(fleet.urls, policy=policy) as router:
        def kill_the_busiest():
            while len(fleet.log) < 40:  # bounded by the eval below finishing: checked against its calls
                time.sleep(0.02)
                if done.is_set():
                    return
            busiest = Counter(s.replica for s in fleet.log).most_common(1)[0][0]
            fleet.kill(int(busiest.rsplit("-", 1)[1]))
            killed.append(busiest)

        done, killed = threading.Event(), []
        killer = threading.Thread(target=kill_the_busiest, daemon=True)
        killer.start()
        figures = run_through(router.base_url, ("mad",), split, tmp_path, concurrency=6, max_retries=6)
        done.set()
        killer.join(timeout=10)
        again = run_through(router.base_url, ("mad",), split, tmp_path, concurrency=6)
    assert killed, "the eval ended before a replica could be killed"
    assert sorted(r["question_id"] for r in figures.rows) == sorted(split.ids)
    assert all(r["status"] == "done" for r in figures.rows)
    turns = [turn for r in figures.rows for rnd in r["transcript"]["rounds"] for turn in rnd["turns"]]
    assert len(turns) == 12 * 9 and not [turn["error"] for turn in turns if turn["error"]]
    after = {turn["provider"] for r in figures.rows for rnd in r["transcript"]["rounds"][-1:] for turn in rnd["turns"]}
    assert after - set(killed)  # the survivors answered
    assert len(again.rows) == 12  # resumed: every row was there, none run twice


@pytest.mark.slow
def test_a_router_that_is_down_is_one_sentence():
    from r2mad.backends.base import BackendError
    from r2mad.types import Message

    url = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(BackendError) as err:
        asyncio.run(backend_for(url, max_retries=1).chat([Message("user", "hi")], max_tokens=4))
    text = str(err.value)
    assert url in text and text.count(". ") == 0 and text[-1] in ".?"


LLAMA_START_S = 600  # a hang guard: three model processes starting on busy cores are slow


@pytest.fixture(scope="module")
def llama_servers():
    from r2mad.backends.embedded import smollm2_path

    ports = [free_port() for _ in range(3)]
    script = Path(__file__).resolve().parents[1] / "llama_health_server.py"  # llama_cpp.server plus a /health
    procs = [child([sys.executable, str(script), str(smollm2_path()), str(p)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for p in ports]
    try:
        deadline = time.monotonic() + LLAMA_START_S
        for port, proc in zip(ports, procs):
            while True:
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=10).read()
                    break
                except OSError:
                    if proc.poll() is not None or time.monotonic() > deadline:
                        pytest.fail(f"llama_cpp.server on port {port} did not come up")
                    time.sleep(0.5)
        yield [f"http://127.0.0.1:{p}" for p in ports]
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(timeout=60)


DEBATES = 8  # debate keys spread over the three servers


@pytest.mark.slow
def test_debates_on_three_llama_cpp_servers_behind_the_router_keep_to_one_each(llama_servers, tmp_path):
    """llama-cpp-python's server names no replica: the router's own log says where each key went."""
    log = tmp_path / "router.log"
    small = SETTINGS.replace(max_tokens=16, rounds=2)
    with Router(llama_servers, log_file=str(log), log_level="info") as router:
        backend = OpenAICompatBackend(base_url=router.base_url, model=None, api_key=None, timeout_s=300)

        async def debates():
            out = []
            for i in range(DEBATES):
                with debate_key(f"llama-{i}"):
                    out.append(await run_debate(TASK, "mad", Setup(backend, small)))
            return out
        transcripts = asyncio.run(debates())
    routes = routes_in_log(log.read_text(errors="replace"))
    assert all(t.status == "done" and t.usage().calls == 6 for t in transcripts)
    for i in range(DEBATES):
        assert len(routes[f"llama-{i}"]) == 6 and len(set(routes[f"llama-{i}"])) == 1  # one server each
    # and not all on the same one: the ring follows the servers' free ports, so with 4 keys all landed on one
    # server now and then; with 8 that chance is (1/3)^7, under 0.05 %
    assert len({routes[f"llama-{i}"][0] for i in range(DEBATES)}) > 1


@pytest.mark.slow
def test_eval_rows_and_report_add_up_the_cached_tokens(tmp_path):
    from r2mad.evaluation.report import write_report

    with Replicas(1, responder=replica_reply) as fleet:
        figures = run_through(fleet.servers[0].base_url, ("mad",), synthetic_split(2), tmp_path, concurrency=2)
    per_row = [sum(turn["tokens_cached"] for rnd in r["transcript"]["rounds"]
                   for turn in [*rnd["turns"], *rnd["aux"]]) for r in figures.rows]
    assert [r["tokens"]["cached"] for r in figures.rows] == per_row and all(per_row)
    cached, prompt = sum(per_row), sum(r["tokens"]["input"] for r in figures.rows)
    assert cached == sum(s.cached for s in fleet.log)  # what the replica reported, call by call
    report = write_report(tmp_path).read_text()
    assert f"mad {cached / prompt:.1%} ({cached:,} of {prompt:,})" in report
