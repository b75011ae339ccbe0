"""The scripted backend: a ChatBackend whose replies a function writes, with no model and no network. The tests
script the loop's logic with it, and a backbone of kind `scripted` runs on it (a stand-in, as Inspect's mockllm:
it shows that the plumbing works, never what a model would say)."""
from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Callable

from r2mad.backends.base import Capabilities
from r2mad.types import Completion, Message


@dataclass
class Call:
    messages: tuple[Message, ...]
    seed: int | None
    logprobs: bool
    started: float
    ended: float = 0.0
    shape: object = None  # the answer shape asked for (answer guard), when the backend takes one
    max_tokens: int | None = None  # the output budget asked for


@dataclass
class ScriptedBackend:
    """`reply(messages) -> str | Exception | (str, logprobs)`; every call is recorded with its times."""
    reply: Callable[[tuple[Message, ...]], object]
    delay_s: float = 0.0
    name: str = "scripted"
    model: str | None = None
    # streams_text: the text reaches on_text word by word while delay_s passes; structured_output: chat()
    # takes an answer `shape` and records it
    capabilities: Capabilities = Capabilities(supports_logprobs=True)
    calls: list[Call] = field(default_factory=list)
    record: bool = True  # keep every call in `calls` (tests read them); a `scripted` backbone keeps none (no growth)

    async def chat(self, messages, *, n=1, temperature=0.7, top_p=1.0, max_tokens=512, seed=None,
                   logprobs=False, on_text=None, shape=None):
        if on_text is not None and not self.capabilities.streams_text:
            raise TypeError("this scripted backend takes no on_text")
        if shape is not None and self.capabilities.structured_output is None:
            raise TypeError("this scripted backend takes no answer shape")
        call = Call(tuple(messages), seed, logprobs, time.monotonic(), shape=shape, max_tokens=max_tokens)
        if self.record:
            self.calls.append(call)
        out = self.reply(call.messages)
        if on_text is not None and isinstance(out, str):
            words = out.split(" ")
            for i in range(1, len(words) + 1):
                await asyncio.sleep(self.delay_s / len(words))
                on_text(" ".join(words[:i]))
        else:
            await asyncio.sleep(self.delay_s)
        call.ended = time.monotonic()
        if isinstance(out, Exception):
            raise out
        text, lps = out if isinstance(out, tuple) else (out, None)
        return [Completion(text, 10, 5, self.delay_s, tuple(lps) if lps and logprobs else None, "stop")
                for _ in range(n)]


def answer_in_form(messages) -> str:
    """A scripted backbone's reply: a short answer in the form the prompt asks for (a boxed number, a letter in
    double round brackets, or a final-answer line), so that a debate on it parses."""
    asked = " ".join(m.content for m in messages)
    if "\\boxed{}" in asked:
        return "A scripted reply, not a model's. \\boxed{1}"
    if "round brackets" in asked:
        return "A scripted reply, not a model's. ((A))"
    return "A scripted reply, not a model's.\nFinal answer: yes"
