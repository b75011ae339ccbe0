"""A bank folder's files, which are its truth: manifest.yaml and cases.jsonl (one case per line,
appended). Reading them strictly (every case checked) and writing them atomically. No index here."""
from __future__ import annotations

import dataclasses
import datetime
import json
import typing
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from r2mad import safewrite
from r2mad.types import Case

MANIFEST, CASES, QUARANTINE = "manifest.yaml", "cases.jsonl", "quarantine.txt"


class BankError(ValueError):
    """A bank problem a person can fix; the message names the thing and the fix."""


def check_case(case: Case, task_kind: str | None = None) -> None:
    """Raise ValueError naming what is wrong with a case."""
    n = len(case.responses)
    if not isinstance(case.id, str) or not case.id:
        raise ValueError("empty case id")
    if n == 0 or len(case.correct) != n or len(case.answers) != n:
        raise ValueError(f"{n} responses, {len(case.correct)} correctness flags and {len(case.answers)} "
                         "answers; need one of each per agent")
    if not isinstance(case.agent, int) or not 0 <= case.agent < n:
        raise ValueError(f"agent {case.agent!r} is not one of the {n} agents")
    if not all(isinstance(t, str) for t in (case.question, case.previous_response, case.summary, *case.responses)):
        raise ValueError("question, previous_response, summary and responses must be text")
    if not isinstance(case.reward, (int, float)) or not isinstance(case.consensus, (int, float)):
        raise ValueError("reward and consensus must be numbers")
    if task_kind is not None and case.task_kind != task_kind:
        raise ValueError(f"task_kind {case.task_kind!r} in a {task_kind} bank")


_FIELDS = {f.name for f in dataclasses.fields(Case)}
_REQUIRED = [f.name for f in dataclasses.fields(Case)
             if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
_TUPLES = {name for name, hint in typing.get_type_hints(Case).items() if typing.get_origin(hint) is tuple}


def parse_case(raw: bytes, task_kind: str) -> Case:
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"invalid JSON: {getattr(exc, 'msg', exc)}") from None
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object")
    missing = [name for name in _REQUIRED if name not in data]
    if missing:
        raise ValueError(f"missing field {missing[0]!r}")
    # Same result as types.from_dict(Case, data) for a well-formed line, but flat: ~4x faster on a big bank.
    case = Case(**{name: tuple(value) if name in _TUPLES and isinstance(value, list) else value
                   for name, value in data.items() if name in _FIELDS})
    check_case(case, task_kind)
    return case


@dataclass
class CasesFile:
    """What was read from cases.jsonl: the cases in order, and where the next append goes."""
    cases: list[Case] = field(default_factory=list)
    content: bytes = b""  # the valid bytes (an incomplete last line left out)
    needs_newline: bool = False  # the valid content does not end with a newline
    notices: list[str] = field(default_factory=list)


def read_cases(file: Path, task_kind: str | None) -> CasesFile:
    """Every case of the file; an incomplete last line (a write cut short) is left out with a notice, a
    bad line anywhere else is a BankError naming the line; a repeated id keeps the first."""
    data = file.read_bytes() if file.exists() else b""
    out = CasesFile()
    lines = data.split(b"\n")  # the last item is b"" when the file ends with a newline
    offset, valid_len, seen = 0, len(data), set()
    for number, raw in enumerate(lines, 1):
        if raw.strip():
            try:
                case = parse_case(raw, task_kind)
            except ValueError as exc:
                if number == len(lines):  # no newline after it: a write that was cut short
                    valid_len = offset
                    out.notices.append(f"{file}:{number}: ignored an incomplete last line (an "
                                       "interrupted write); the next add replaces it.")
                    break
                raise BankError(f"{file}:{number}: not a valid case ({exc}); fix or delete that line.") from None
            if case.id in seen:
                out.notices.append(f"{file}:{number}: case {case.id} appears twice; kept the first.")
            else:
                seen.add(case.id)
                out.cases.append(case)
        offset += len(raw) + 1
    out.content = data[:valid_len]
    out.needs_newline = 0 < valid_len == len(data) and not data.endswith(b"\n")
    return out


def read_manifest(path: Path) -> dict:
    if not (path / MANIFEST).is_file():
        raise BankError(f"No memory bank at {path}; build one with `python -m r2mad build-memory "
                        f"--task … --out {path}`.")
    try:
        manifest = yaml.safe_load((path / MANIFEST).read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise BankError(f"{path / MANIFEST} is not valid YAML ({exc.__class__.__name__}); restore it "
                        "from version control or rebuild the bank.") from None
    if not isinstance(manifest, dict):
        raise BankError(f"{path / MANIFEST} is not a bank manifest; restore it or rebuild the bank.")
    return manifest


def built_embedder(path: Path) -> str | None:
    """The embedder id a bank's manifest names; None where no bank is (yet)."""
    if not (Path(path) / MANIFEST).is_file():
        return None
    return (read_manifest(Path(path)).get("embedder") or {}).get("id")


def check_same_source(path: Path, source: dict) -> None:
    """Refuse to add to a bank debates from another dataset, split, split seed or model. A key the
    manifest lacks (a bank built before it was recorded) is unknown and not compared."""
    manifest = read_manifest(path)
    for key, value in source.items():
        if key in manifest and manifest[key] != value:
            flag = {"dataset": "--task", "split": "--split", "split_seed": "--split-seed",
                    "backbone": "--memory-backbone"}.get(key, key)
            raise BankError(f"Bank {path} was built with {key} {manifest[key]!r}, not {value!r}; pass "
                            f"{flag} {manifest[key]} to add to it, or choose another --out folder.")


def write_manifest(path: Path, manifest: dict) -> None:
    write_atomic(path / MANIFEST, yaml.safe_dump(manifest, sort_keys=False, allow_unicode=True))


def read_quarantine(path: Path) -> set[str]:
    file = path / QUARANTINE
    if not file.exists():
        return set()
    return {line.strip() for line in file.read_text(encoding="utf-8").splitlines()
            if line.strip() and not line.startswith("#")}


def write_quarantine(path: Path, case_ids: set[str]) -> None:
    write_atomic(path / QUARANTINE, "# case ids kept out of retrieval\n" + "".join(f"{c}\n" for c in sorted(case_ids)))


def write_atomic(path: Path, text: str) -> None:
    """Whole and fsynced, or not at all (a full disk is a BankError naming the file)."""
    try:
        safewrite.write_atomic(path, text, fsync=True)
    except safewrite.WriteFailed as exc:
        raise BankError(str(exc)) from None


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
