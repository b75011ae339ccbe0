"""The answer guard: when an agent's free reasoning holds no answer in the task's format, one short
follow-up call asks for the answer alone, kept to the task's own answer set by the backend where it
can (a llama.cpp grammar, vLLM's structured outputs, a JSON schema), else by the prompt alone.
Extraction itself stays in answers.py."""
from __future__ import annotations

import json
from typing import Sequence

from r2mad.backends.base import BackendError, ChatBackend
from r2mad.grading.answers import extract_answer, strip_think
from r2mad.grading.kinds import kind_of
from r2mad.prompts.common import final_answer_request
from r2mad.types import UNPARSED, Answer, AnswerShape, AuxCall, Message, Task


def answer_shape(task: Task) -> AnswerShape | None:
    """The valid final answers of `task`, as its kind states them (None: the prompt alone holds them)."""
    return kind_of(task).shape(task)


def _answer_text(text: str) -> str:
    """The answer field of a JSON-schema reply, or the text as it is."""
    try:
        data = json.loads(text)
    except ValueError:
        return text
    return str(data.get("answer", text)) if isinstance(data, dict) else text


async def guard_answer(backend: ChatBackend, prompt: Sequence[Message], text: str, task: Task, *,
                       round_index: int, agent: int, seed: int | None) -> tuple[Answer, AuxCall]:
    """(answer, the recorded call): the guarded answer ("guarded") or UNPARSED when even that fails.
    A server that rejects the constraint gets the same question once more without it."""
    messages = [*prompt, Message("assistant", text), Message("user", final_answer_request(task))]
    shape = answer_shape(task)
    wants_shape = backend.capabilities.structured_output is not None and shape is not None
    base = dict(n=1, temperature=0.0, top_p=1.0, max_tokens=kind_of(task).guard_tokens, seed=seed)
    try:
        try:
            [c] = await backend.chat(messages, **base, **({"shape": shape} if wants_shape else {}))
        except BackendError as exc:
            if not wants_shape or exc.transient:
                raise
            [c] = await backend.chat(messages, **base)
    except BackendError as exc:
        return UNPARSED, AuxCall("guard", round_index, "", target=agent, label="failed", error=str(exc))
    found = extract_answer(_answer_text(strip_think(c.text)), task)
    answer = Answer(found.value, "guarded") if found.parsed else UNPARSED
    return answer, AuxCall("guard", round_index, c.text, c.tokens_in, c.tokens_out, c.latency_s, target=agent,
                           label="guarded" if found.parsed else "unparsed", provider=c.provider,
                           tokens_cached=c.tokens_cached)
