"""Reading JSON Lines files: one streaming reader, a line at a time, whose error names the file and the line.
Not for writing them (callers write whole files with r2mad.safewrite) nor for what a line must hold."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterator

_PEEK = 64 * 1024  # bytes of a line read before knowing it is a JSON object


def bad_json_line(path: str | Path, number: int, why: str) -> ValueError:
    return ValueError(f"{path}:{number} is not valid JSON ({why}); fix or remove that line.")


def read_jsonl(fh: BinaryIO, path: str | Path, *, objects: bool = False, whole_lines: bool = False,
               bad_line: Callable[[str | Path, int, str], Exception] = bad_json_line) -> Iterator[tuple[int, Any]]:
    """(line number, value) per non-blank line of the binary file `fh` (named `path` in errors). A line that
    is no JSON raises bad_line(path, number, why); with `objects` so does one that is no JSON object, at its
    first bytes, so a big binary file is never read whole. With `whole_lines` a last line without its
    newline (a write cut short) is left out, and `fh` left at its start."""
    number = 0
    while True:
        line = fh.readline(_PEEK) if objects else fh.readline()
        if not line:
            return
        number += 1
        if objects and line.strip() and not line.lstrip().startswith(b"{"):
            raise bad_line(path, number, "not a JSON object")
        if objects and not line.endswith(b"\n"):
            line += fh.readline()
        if whole_lines and not line.endswith(b"\n"):
            fh.seek(-len(line), 1)  # at its start: what came before is fh.tell() bytes
            return
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise bad_line(path, number, getattr(exc, "msg", None) or exc.reason) from None
        yield number, value
