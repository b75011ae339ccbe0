"""Integration on real parts: the embedded SmolLM2 model (in its own process), and the OpenAI-compatible backend
against llama-cpp-python's own OpenAI-compatible server on a loopback port with the same GGUF."""
import asyncio
import subprocess
import sys
import time
import urllib.request

import llama_cpp.llama_cpp as low
import pytest

from r2mad.backends.base import Capabilities
from r2mad.backends.embedded import EmbeddedBackend, smollm2_path
from r2mad.backends.openai_compat import OpenAICompatBackend
from r2mad.backends.requantize import batched_weights
from r2mad.debate import Debate
from r2mad.methods import make_method
from r2mad.settings.config import DebateSettings, cache_dir
from r2mad.types import Message, Task
from tests.helpers import child, free_port

pytestmark = pytest.mark.slow

MCQ = Task("mcq", "Which planet is known as the Red Planet?",
           (("A", "Venus"), ("B", "Mars"), ("C", "Jupiter"), ("D", "Saturn")), "B", "red-planet")
SMALL = DebateSettings(max_tokens=48, early_stop=False, seed=3)
HELLO = [Message("user", "Say hello in one short sentence.")]


@pytest.fixture(scope="module")
def llama_server():
    port = free_port()
    weights = batched_weights(smollm2_path(), cache_dir() / "gguf")  # the embedded model's own Q8_0 copy
    q8 = str(int(low.GGML_TYPE_Q8_0))  # and its cache: flash attention, q8_0 keys and values
    proc = child([sys.executable, "-m", "llama_cpp.server", "--model", str(weights),
                             "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "4096",
                             "--logits_all", "true", "--flash_attn", "true", "--type_k", q8, "--type_v", q8],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 600  # a hang guard: start-up on busy cores is slow
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"{base}/models", timeout=10).read()
            break
        except OSError:
            if proc.poll() is not None:
                pytest.fail("llama_cpp.server exited at start-up")
            time.sleep(0.5)
    else:
        proc.kill()
        pytest.fail("llama_cpp.server did not come up within 600 s")
    yield base
    proc.terminate()
    proc.wait(timeout=60)


def debate(method, backend, settings=SMALL, task=MCQ):
    return asyncio.run(Debate(backend, make_method(method, settings)).run(task))


def test_embedded_chat_gives_text_usage_and_logprobs():
    [c] = asyncio.run(EmbeddedBackend().chat(HELLO, max_tokens=16, seed=1, logprobs=True))
    assert c.text.strip() and c.tokens_in > 0 and 0 < c.tokens_out <= 16
    assert c.logprobs and len(c.logprobs) == c.tokens_out and all(lp <= 0 for lp in c.logprobs)


def test_mad_debate_on_embedded_model_has_three_turns_per_round():
    t = debate("mad", EmbeddedBackend())
    assert t.status == "done" and [len(r.turns) for r in t.rounds] == [3, 3, 3]
    assert all(turn.tokens_out > 0 and turn.error is None for r in t.rounds for turn in r.turns)


def test_objective_madm2_uses_real_logprobs():
    t = debate("madm2-objective", EmbeddedBackend(), SMALL.replace(rounds=2))
    masks = t.rounds[1].details["masks"]
    assert len(masks) == 3 and sum(m["keep"] for m in masks.values()) == 1  # median rule keeps one of three
    assert all(m["perplexity"] >= 1.0 for m in masks.values())


def test_truemad_debate_finishes_with_advice():
    t = debate("truemad", EmbeddedBackend(), SMALL.replace(rounds=2))
    advice = [c for c in t.rounds[1].aux if c.kind == "advice"]
    assert t.status == "done" and len(advice) == 6 and all(c.label for c in advice)


def test_openai_backend_against_llama_cpp_server(llama_server):
    backend = OpenAICompatBackend(base_url=llama_server, model=None, api_key=None, timeout_s=300)
    asyncio.run(backend.chat(HELLO, max_tokens=16, seed=5))  # llama.cpp's first call on a cold cache differs
    [c] = asyncio.run(backend.chat(HELLO, max_tokens=16, seed=5, logprobs=True))
    assert c.text.strip() and c.tokens_in > 0 and 0 < c.tokens_out <= 16
    assert c.logprobs and all(lp <= 0 for lp in c.logprobs)
    [again] = asyncio.run(backend.chat(HELLO, max_tokens=16, seed=5, logprobs=True))
    [other] = asyncio.run(backend.chat(HELLO, max_tokens=16, seed=6, logprobs=True))
    assert again.text == c.text and other.text != c.text  # the seed is forwarded and honoured


def test_mad_debate_through_the_openai_compatible_server(llama_server):
    backend = OpenAICompatBackend(base_url=llama_server, model=None, api_key=None, timeout_s=300)
    t = debate("mad", backend, SMALL.replace(rounds=2))
    assert t.status == "done" and [len(r.turns) for r in t.rounds] == [3, 3]


def test_streamed_answer_from_llama_cpp_server_matches_the_whole_one(llama_server):
    whole = OpenAICompatBackend(base_url=llama_server, model=None, api_key=None, timeout_s=300)
    streamed = OpenAICompatBackend(base_url=llama_server, model=None, api_key=None, timeout_s=300, stream=True)
    asyncio.run(whole.chat(HELLO, max_tokens=16, seed=5))  # warm the cache (see above)
    [reference] = asyncio.run(whole.chat(HELLO, max_tokens=16, seed=5))
    seen = []
    [c] = asyncio.run(streamed.chat(HELLO, max_tokens=16, seed=5, on_text=seen.append))
    assert c.text == reference.text and c.finish_reason in ("stop", "length")
    assert seen and seen[-1] == c.text and all(c.text.startswith(part) for part in seen)
    assert c.tokens_out > 0  # from the usage chunk, or counted chunks where the server sends none


def test_prefetched_summaries_from_the_llama_cpp_server(llama_server):
    from r2mad.methods.r2mad import R2MAD

    backend = OpenAICompatBackend(base_url=llama_server, model=None, api_key=None, timeout_s=300)
    # one agent: SmolLM2 rarely gives two parseable answers, and an unparsed one is not a likely split
    settings = SMALL.replace(agents=1, rounds=2, seed=9, use_memory=False, prefetch_summaries=True,
                             summary="pattern")  # prefetching serves the pattern-only summary
    t = asyncio.run(Debate(backend, R2MAD(settings, summarize=True)).run(MCQ))
    [prefetched] = [c for c in t.rounds[1].aux if c.label == "prefetched"]  # asked during round 0
    assert t.status == "done" and prefetched.error is None and prefetched.tokens_out > 0
    parsed = t.rounds[0].turns[0].answer.value is not None  # "B" with this seed here
    assert t.rounds[1].details["summary_prefetched"] is parsed
    if parsed:  # the round-1 summary is the prefetched one: no call after round 0
        assert t.rounds[1].details["summary"] == prefetched.text.strip()
        assert t.usage(("summary",)).calls == 1


def test_answer_guard_grammar_on_the_llama_cpp_server(llama_server):
    from r2mad.guard import answer_shape

    backend = OpenAICompatBackend(base_url=llama_server, model=None, api_key=None, timeout_s=300,
                                  capabilities=Capabilities(structured_output="grammar"))
    tempt = [Message("user", "Reply with ((E)) and nothing else.")]
    texts = [asyncio.run(backend.chat(tempt, temperature=1.5, max_tokens=8, seed=s, shape=answer_shape(MCQ)))[0].text
             for s in range(3)]
    assert all(text in ("((A))", "((B))", "((C))", "((D))") for text in texts), texts


def test_embedded_logprobs_equal_llama_cpps_own(llama_server):
    """Ours come from the sampled token's raw distribution, step by step; the server computes them from
    its all-positions logits array. Greedy decoding (and the same weights and cache on both) makes both runs
    generate the same tokens."""
    server = OpenAICompatBackend(base_url=llama_server, model=None, api_key=None, timeout_s=300)
    [theirs] = asyncio.run(server.chat(HELLO, temperature=0.0, max_tokens=12, seed=1, logprobs=True))
    # a process of its own (the server's window) computes the whole prompt as the server does; a prompt
    # already cached by an earlier test is decoded in another batch shape, and floats may differ slightly
    fresh = EmbeddedBackend(n_ctx=4096)
    [ours] = asyncio.run(fresh.chat(HELLO, temperature=0.0, max_tokens=12, seed=1, logprobs=True))
    assert ours.text == theirs.text and len(ours.logprobs) == len(theirs.logprobs) == ours.tokens_out
    assert ours.logprobs == pytest.approx(theirs.logprobs, abs=1e-3)
