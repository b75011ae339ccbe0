"""Reading config files and checking their values: YAML loading with yaml.safe_load, and `validate`, which builds
a dataclass from a mapping and names the file, the key and the allowed values in one sentence when a value is
wrong. The settings dataclasses themselves live in r2mad/settings/config.py and r2mad/settings/serving.py."""
from __future__ import annotations

import dataclasses
import types
import typing
from pathlib import Path
from typing import Any

import yaml

from r2mad.text import quoted


class ConfigError(ValueError):
    """A configuration problem, phrased as one sentence with the file, key and fix."""


def _limits(lo: float | None = None, hi: float | None = None, choices: tuple = ()) -> dict:
    return {"lo": lo, "hi": hi, "choices": choices}


def load_mapping(path: Path) -> dict:
    """A YAML file whose top level must be a mapping of keys (an empty file reads as {})."""
    data = load_yaml(path)
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level is a {type(data).__name__}, not a mapping of keys; write "
                          "it as `key: value` lines (see the shipped file for the layout).")
    return data


def load_yaml(path: Path) -> Any:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"Config file {path} does not exist; create it or pass another path.") from None
    try:
        return yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise ConfigError(f"{where}: {problem}; fix the YAML syntax there.") from None


def validate(cls: type, data: Any, where: str) -> Any:
    """Build dataclass `cls` from a mapping, rejecting unknown keys, wrong types and values out of range."""
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected a mapping of keys to values, got {type(data).__name__}.")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise ConfigError(f"{where}: unknown key {quoted(unknown[0])}; allowed keys: {', '.join(fields)}.")
    hints = typing.get_type_hints(cls)
    values = {}
    for name, value in data.items():
        values[name] = _check(f"{where}.{name}", hints[name], value, fields[name].metadata)
    return cls(**values)


def _check(where: str, hint: Any, value: Any, limits: Any) -> Any:
    optional = typing.get_origin(hint) in (typing.Union, types.UnionType)
    if value is None:
        if optional:
            return None
        raise ConfigError(f"{where}: a value is required.")
    base = next(a for a in typing.get_args(hint) if a is not type(None)) if optional else hint
    if typing.get_origin(base) is tuple:
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{where}: expected a list.")
        return tuple(str(v) for v in value)
    if dataclasses.is_dataclass(base):
        return value if isinstance(value, base) else validate(base, value, where)
    if base is bool and not isinstance(value, bool):
        raise ConfigError(f"{where}: expected true or false, got {quoted(value)}.")
    if base is int and isinstance(value, float) and value.is_integer():  # a form's number field sends 3.0
        value = int(value)
    if base is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise ConfigError(f"{where}: expected a whole number, got {quoted(value)}.")
    if base is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{where}: expected a number, got {quoted(value)}.")
        value = float(value)
    if base is str and not isinstance(value, str):
        raise ConfigError(f"{where}: expected text, got {quoted(value)}.")
    lo, hi, choices = limits.get("lo"), limits.get("hi"), limits.get("choices", ())
    if choices and value not in choices:
        raise ConfigError(f"{where}: {quoted(value)} is not allowed; choose one of {', '.join(choices)}.")
    if lo is not None and not (lo <= value <= hi):
        raise ConfigError(f"{where}: {quoted(value)} is out of range; allowed {lo} to {hi}.")
    return value


def whole_number(value: Any, where: str, lo: int, hi: int) -> int:
    """A whole number from a form or an API call (3.0 counts) within lo..hi, else one ConfigError sentence."""
    return _check(where, int, value, _limits(lo, hi))
