"""Values quoted back in error messages or shown in a status line, clipped so that a long one never fills the
line, and the length limits of what a person types (checked where it enters: the page, the API, the CLI)."""
from __future__ import annotations

from typing import Any

QUOTE_CHARS = 80  # the most of a value an error message repeats


def quoted(value: Any, limit: int = QUOTE_CHARS) -> str:
    """`value` as repr() writes it; a longer one is cut to `limit` characters, an ellipsis and its size."""
    text = repr(value)
    if len(text) <= limit:
        return text
    if isinstance(value, (bytes, list, tuple, dict, set)):
        size = f"{len(value):,} {'bytes' if isinstance(value, bytes) else 'items'}"
    else:
        size = f"{len(value if isinstance(value, str) else text):,} characters"
    return f"{text[:limit]}… ({size})"


STATUS_CHARS = 40  # the most of an answer, a gold answer or an option a status line shows
GOLD_CHARS = 200  # a gold answer: a letter, a number or a short expression
FIELD_CHARS = 500  # a page's short fields: ids, names, addresses, searches (the browser stops typing there)


def clip(text: object, limit: int = STATUS_CHARS) -> str:
    """`text` on one line for a status line: cut to `limit` characters with an ellipsis."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[:limit - 1] + "…"


def too_long(what: str, text: str, limit: int, fix: str = "shorten it") -> str | None:
    """The one sentence refusing `text` over `limit` characters ("The gold answer is 1,048,576 characters long,
    over the limit of 200; give the answer alone."), or None when it fits."""
    if len(text) <= limit:
        return None
    return f"{what} is {len(text):,} characters long, over the limit of {limit:,}; {fix}."
