"""The embedded model runs in its own process: a crash or a hang there fails one call with one sentence,
the next call starts a fresh process, and the test session (like the app) lives on. Logprobs come
without llama.cpp's all-positions logits array and match llama.cpp's own."""
import asyncio
import os
import signal

import pytest

from r2mad.backends.base import BackendError
from r2mad.backends.embedded import EmbeddedBackend
from r2mad.debate import Debate
from r2mad.methods import make_method
from r2mad.settings.config import DebateSettings
from r2mad.types import Message, Task

pytestmark = pytest.mark.slow

STORY = [Message("user", "Write a long story about a lighthouse keeper and the sea.")]
TASK = Task("mcq", "Which planet is known as the Red Planet?",
            (("A", "Venus"), ("B", "Mars"), ("C", "Jupiter"), ("D", "Saturn")), "B")
ONE = DebateSettings(agents=1, rounds=1, max_tokens=200, seed=1, answer_guard="off")
LONG = Task("math", "Explain step by step, showing every partial product, how to compute 12345 * 6789.", (),
            "83810205")  # an answer long enough to be streamed before it ends


def test_a_crash_of_the_model_fails_one_debate_and_the_next_one_works():
    backend = EmbeddedBackend()
    killed = []

    def crash_on_first_text(event):
        if event.kind == "delta" and not killed:
            os.kill(backend.process().proc.pid, signal.SIGSEGV)
            killed.append(True)

    failed = asyncio.run(Debate(backend, make_method("cot", ONE), emit=crash_on_first_text).run(LONG))
    assert killed and failed.status == "failed"
    [error] = [turn.error for turn in failed.rounds[0].turns]
    assert "SIGSEGV" in error and "next one starts it again" in error and "\n" not in error
    again = asyncio.run(Debate(backend, make_method("cot", ONE.replace(max_tokens=24))).run(TASK))
    assert again.status == "done" and again.rounds[0].turns[0].tokens_out > 0


def test_a_hung_model_process_is_replaced_after_the_stall_limit():
    asyncio.run(EmbeddedBackend().chat(STORY, max_tokens=4, seed=1))  # started and warm (shared process)
    backend = EmbeddedBackend(stall_s=2)
    stopped = backend.process()
    os.kill(stopped.proc.pid, signal.SIGSTOP)
    with pytest.raises(BackendError, match="stopped responding for 2 s"):
        asyncio.run(backend.chat(STORY, max_tokens=8, seed=1))
    assert not stopped.alive
    [c] = asyncio.run(backend.chat(STORY, max_tokens=8, seed=1))
    assert c.tokens_out > 0 and backend.process() is not stopped


def test_a_slow_answer_is_not_a_stall():
    """The stall limit counts the process's heartbeats, not its tokens: prompt chunks that take longer than
    the limit (a long prompt on a busy machine) finish."""
    backend = EmbeddedBackend(stall_s=1.5)
    long = [Message("user", "Summarise this. " + "The keeper climbed the stairs and lit the lamp. " * 300)]
    [c] = asyncio.run(backend.chat(long, max_tokens=4, seed=1))
    assert c.tokens_in > 3000 and c.tokens_out > 0


def test_a_damaged_or_missing_model_file_is_one_sentence(tmp_path):
    damaged = tmp_path / "model.gguf"
    damaged.write_bytes(b"GGUF" + os.urandom(4096))
    with pytest.raises(BackendError, match=r"could not be loaded \(missing or damaged\); reinstall it"):
        asyncio.run(EmbeddedBackend(model_path=damaged).chat(STORY, max_tokens=4))
    with pytest.raises(BackendError, match="is missing; reinstall it"):
        asyncio.run(EmbeddedBackend(model_path=tmp_path / "absent.gguf").chat(STORY, max_tokens=4))
    assert damaged.exists()  # nothing deleted


def test_stopping_a_call_ends_the_generation_early():
    backend = EmbeddedBackend()

    async def stop_after_first_text():
        seen = asyncio.Event()
        job = asyncio.create_task(backend.chat(STORY, max_tokens=400, seed=2, on_text=lambda _: seen.set()))
        await seen.wait()
        job.cancel()
        with pytest.raises(asyncio.CancelledError):
            await job
    asyncio.run(stop_after_first_text())
    [c] = asyncio.run(backend.chat(STORY, max_tokens=6, seed=2))  # the process serves the next call
    assert c.tokens_out == 6 and c.finish_reason == "length"


@pytest.mark.parametrize("max_tokens", [6, 64])
def test_logprobs_cover_every_generated_token(max_tokens):
    [c] = asyncio.run(EmbeddedBackend().chat(STORY, max_tokens=max_tokens, seed=4, logprobs=True))
    assert len(c.logprobs) == c.tokens_out and all(lp <= 0 for lp in c.logprobs)
