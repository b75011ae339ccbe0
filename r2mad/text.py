"""Values quoted back in error messages, clipped so that a long one never fills the line; not for display."""
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
