"""Values quoted back in error messages or shown in a status line, clipped so that a long one never fills the
line, and the length limits of what a person types (checked where it enters: the page, the API, the CLI)."""
from __future__ import annotations

import functools
import os
import re
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


_NAME = r"\.*[\w@+-]+(?:\.+[\w@+-]+)*"  # a file or folder name (a sentence's full stop after it is no part)
_ABSOLUTE_PATH = re.compile(rf"(?<![\w:/.~-])(/{_NAME})(?:/{_NAME})*/?")
_SYSTEM_FOLDERS = ("/proc", "/sys", "/dev")  # what they hold says more than where (a process id in /proc/<pid>)


@functools.lru_cache(maxsize=64)
def _is_top_folder(name: str) -> bool:
    return os.path.isdir(name)


def without_paths(text: str) -> str:
    """`text` as a visitor may see it: each absolute path of this machine's file system (its top folder exists
    here: /home/…, /tmp/…) cut to its last name, one under /proc, /sys or /dev said as "a system path"; other
    slashes ("/v1/models", "1/2", a URL) stay."""
    def shorten(found: re.Match) -> str:
        top, path = found.group(1), found.group(0).rstrip("/")
        if not _is_top_folder(top):
            return found.group(0)
        return "a system path" if top in _SYSTEM_FOLDERS else path.rsplit("/", 1)[-1]
    return _ABSOLUTE_PATH.sub(shorten, str(text))


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
