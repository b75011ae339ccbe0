"""Reading an OpenAI-compatible response (each choice's share of the tokens, its logprobs, whether it is an
answer at all, the prompt tokens a prefix cache served, who served it) and the request fields that keep an
answer to a shape. Pure helpers of openai_compat.py; no transport here."""
from __future__ import annotations

from typing import Any, Sequence

from r2mad.backends.affinity import served_by
from r2mad.types import AnswerShape


def choice_tokens(total: int, texts: Sequence[str], logprobs: Sequence[tuple[float, ...] | None]) -> list[int]:
    """Each choice's share of a request's `total` completion tokens: its own logprob count when every choice
    has logprobs adding up to the total, otherwise shares in proportion to the characters (largest
    remainder, ties to the earliest), so the counts always sum to `total`."""
    if len(texts) == 1:
        return [total]
    if all(logprobs) and sum(len(lp) for lp in logprobs) == total:
        return [len(lp) for lp in logprobs]
    weights = [max(len(t), 1) for t in texts]
    exact = [total * w / sum(weights) for w in weights]
    counts = [int(x) for x in exact]
    order = sorted(range(len(texts)), key=lambda i: (-(exact[i] - counts[i]), i))
    for i in order[:total - sum(counts)]:
        counts[i] += 1
    return counts


def provider(raw: Any) -> str | None:
    """Who served a call: the HF router's provider, or the replica behind a router that names itself."""
    return served_by(getattr(raw, "headers", None))


def cached_tokens(usage: Any) -> int:
    """Prompt tokens a prefix cache served (vLLM's and OpenAI's usage.prompt_tokens_details.cached_tokens;
    0 where a server does not say)."""
    details = getattr(usage, "prompt_tokens_details", None)
    if isinstance(details, dict):
        return int(details.get("cached_tokens") or 0)
    return int(getattr(details, "cached_tokens", 0) or 0)


def usable(choice: Any) -> bool:
    """A choice with text, or an empty one that honestly ran out of tokens (retrying would not help);
    an empty answer that claims to have finished is a failed attempt, never an answer."""
    message = getattr(choice, "message", None)
    return message is not None and (bool((message.content or "").strip())
                                    or getattr(choice, "finish_reason", None) == "length")


def token_logprobs(choice: Any) -> tuple[float, ...] | None:
    """Per-token logprobs from the chat format (content[].logprob) or the legacy one (token_logprobs)."""
    raw = getattr(choice, "logprobs", None)
    if raw is None:
        return None
    data = raw.model_dump() if hasattr(raw, "model_dump") else dict(raw)
    if data.get("content"):
        values = [t.get("logprob") for t in data["content"]]
    else:
        values = data.get("token_logprobs") or []
    floats = tuple(float(v) for v in values if v is not None)
    return floats or None


def constraint(kind: str | None, shape: AnswerShape) -> dict[str, Any]:
    """Request fields that make a server keep to `shape`: a llama.cpp grammar (llama.cpp's server),
    vLLM's structured outputs (a choice of strings, or a regular expression), or an OpenAI-style JSON
    schema whose one string field holds the answer."""
    if kind == "grammar":
        return {"grammar": shape.grammar}
    if kind == "vllm":
        return {"structured_outputs": {"choice": list(shape.choices)} if shape.choices else {"regex": shape.regex}}
    if kind == "json_schema":
        field = {"enum": list(shape.choices)} if shape.choices else {"pattern": shape.regex}
        return {"response_format": {"type": "json_schema", "json_schema": {"name": "final_answer", "strict": True,
                "schema": {"type": "object", "properties": {"answer": {"type": "string", **field}},
                           "required": ["answer"], "additionalProperties": False}}}}
    return {}
