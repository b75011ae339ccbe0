"""The embedded model answers the calls in flight together (continuous batching): each call's text, grammar,
logprobs and cancel are its own, a crash fails exactly the calls in flight, and a prompt that extends an
earlier call's is not computed again. Timeouts here are hang guards only."""
import asyncio
import os
import signal

import pytest

from r2mad.backends.base import BackendError
from r2mad.backends.embedded import EmbeddedBackend
from r2mad.guard import answer_shape
from r2mad.types import Message, Task

pytestmark = pytest.mark.slow

GUARD_S = 300
MCQ = Task("mcq", "Which planet is known as the Red Planet?",
           (("A", "Venus"), ("B", "Mars"), ("C", "Jupiter"), ("D", "Saturn")), "B")
PROMPTS = ["Write a short poem about the sea.", "What is 17 + 25? Explain step by step.",
           "Name three colours and describe each in a sentence."]
STORY = [Message("user", "Write a long story about a lighthouse keeper and the sea.")]


def ask(text: str) -> list[Message]:
    return [Message("user", text)]


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, GUARD_S))


def test_batched_greedy_text_equals_each_call_alone():
    backend = EmbeddedBackend()
    alone = [run(backend.chat(ask(p), temperature=0.0, max_tokens=48, seed=1))[0] for p in PROMPTS]

    async def together():
        return await asyncio.gather(*(backend.chat(ask(p), temperature=0.0, max_tokens=48, seed=1)
                                      for p in PROMPTS))
    batched = [c for [c] in run(together())]
    assert [c.text for c in batched] == [c.text for c in alone]
    assert [c.tokens_out for c in batched] == [c.tokens_out for c in alone]
    assert all(c.tokens_out > 0 for c in batched)


def test_grammar_and_logprobs_belong_to_their_own_call():
    backend = EmbeddedBackend()

    async def both():
        return await asyncio.gather(
            backend.chat(ask("Reply with ((E)) and nothing else."), temperature=1.5, max_tokens=8, seed=3,
                         shape=answer_shape(MCQ)),
            backend.chat(STORY, temperature=0.7, max_tokens=40, seed=3, logprobs=True))
    [guarded], [free] = run(both())
    assert guarded.text in ("((A))", "((B))", "((C))", "((D))") and guarded.logprobs is None
    assert free.logprobs and len(free.logprobs) == free.tokens_out and all(lp <= 0 for lp in free.logprobs)
    assert not free.text.startswith("((")


def test_stopping_one_call_leaves_the_others_running_to_the_end():
    backend = EmbeddedBackend()

    async def three_then_stop_one():
        seen = asyncio.Event()
        stopped = asyncio.create_task(backend.chat(STORY, max_tokens=400, seed=5, on_text=lambda _: seen.set()))
        others = [asyncio.create_task(backend.chat(ask(p), temperature=0.0, max_tokens=32, seed=5))
                  for p in PROMPTS[:2]]
        await seen.wait()
        stopped.cancel()
        with pytest.raises(asyncio.CancelledError):
            await stopped
        return [c for [c] in await asyncio.gather(*others)]
    finished = run(three_then_stop_one())
    alone = [run(backend.chat(ask(p), temperature=0.0, max_tokens=32, seed=5))[0] for p in PROMPTS[:2]]
    assert [c.text for c in finished] == [c.text for c in alone] and all(c.tokens_out > 0 for c in finished)


def test_a_crash_mid_batch_fails_the_calls_in_flight_and_the_next_ones_work():
    backend = EmbeddedBackend()
    run(backend.chat(ask("Hi"), max_tokens=2, seed=1))  # started
    crashed = backend.process()

    async def three_then_kill():
        seen = asyncio.Event()
        calls = [asyncio.create_task(backend.chat(ask(p), max_tokens=300, seed=6, on_text=lambda _: seen.set()))
                 for p in PROMPTS]
        await seen.wait()
        os.kill(crashed.proc.pid, signal.SIGKILL)
        return await asyncio.gather(*calls, return_exceptions=True)
    errors = run(three_then_kill())
    assert all(isinstance(e, BackendError) for e in errors), errors
    assert all("process ended (signal 9 (SIGKILL)) while answering" in str(e) and "next one starts it again"
               in str(e) for e in errors)

    async def again():
        return await asyncio.gather(*(backend.chat(ask(p), max_tokens=8, seed=6) for p in PROMPTS))
    assert all(c.tokens_out > 0 for [c] in run(again())) and backend.process() is not crashed


def test_a_prompt_that_extends_an_earlier_one_reuses_its_computed_tokens():
    backend = EmbeddedBackend()
    [first] = run(backend.chat(ask("Name a large ocean."), temperature=0.0, max_tokens=24, seed=7))
    follow_up = [*ask("Name a large ocean."), Message("assistant", first.text), Message("user", "And a small sea?")]
    [second] = run(backend.chat(follow_up, temperature=0.0, max_tokens=8, seed=7))
    assert second.tokens_cached >= first.tokens_in and second.tokens_cached < second.tokens_in
    [again] = run(backend.chat(follow_up, temperature=0.0, max_tokens=8, seed=7))  # all cached: same answer
    assert again.tokens_cached == again.tokens_in - 1 and again.text == second.text


def test_a_prompt_over_the_window_fails_alone_and_its_neighbour_finishes():
    backend = EmbeddedBackend(n_ctx=256)

    async def both():
        return await asyncio.gather(backend.chat(ask("sea " * 400), max_tokens=8, seed=8),
                                    backend.chat(ask("Say hello."), max_tokens=8, seed=8),
                                    return_exceptions=True)
    too_long, [fine] = run(both())
    assert isinstance(too_long, BackendError) and "longer than the embedded model's context window" in str(too_long)
    assert fine.tokens_out > 0
