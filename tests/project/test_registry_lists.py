"""Every list a person reads (CLI help, the API's docstring, the docs, TaskKind, configs' choices) names every
entry of its registry: adding an answer kind, a task set or a backend kind without updating one fails here."""
from __future__ import annotations

import ast
import re
import typing
from dataclasses import fields
from pathlib import Path

from r2mad.backends import BACKENDS
from r2mad.cli import build_parser
from r2mad.evaluation import benchmarks, datasets
from r2mad.grading.kinds import KIND_NAMES
from r2mad.methods import METHODS
from r2mad.settings.config import Backbone
from r2mad.types import TaskKind

ROOT = Path(__file__).resolve().parents[2]


def help_of(command: str, flag: str) -> str:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices[command]
    return " ".join(next(a for a in sub._actions if flag in a.option_strings).help.split())


def missing(names, text: str) -> list[str]:
    return [n for n in names if not re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", text)]


def kind_lists(text: str, kinds=KIND_NAMES) -> list[set[str]]:
    """The kinds each list of answer kinds in `text` names ("math, mcq, integer", "`a`, `b` or `c`"); a list that
    names all the kinds but one or more is one meant to name every kind (shorter ones are chosen subsets)."""
    name = r"(?<![\w-])`?(?:[a-z]+)`?(?![\w-])"
    found = []
    for m in re.finditer(rf"{name}(?:(?:,\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+){name})+", text):
        words = [w for w in re.findall(r"[a-z]+", m.group()) if w not in ("and", "or")]
        named = [w for w in words if w in kinds]
        if len(named) >= len(kinds) - 1 and len(named) >= len(words) - 1:  # a toy kind's name is the one other
            found.append(set(words))
    return found


def test_the_kind_list_finder_sees_a_list_missing_a_kind():
    six = ("math", "mcq", "integer", "yesno", "short", "open")
    assert kind_lists("kinds: `math`, `mcq`, `integer`, `yesno`, `short`, `open`.", six) == [set(six)]
    assert kind_lists("one of math, mcq, integer, yesno, short or open", six) == [set(six)]
    assert kind_lists("(math, mcq, integer, yesno, short)", six) == [set(six) - {"open"}]
    assert kind_lists("math, integer, mcq and yesno have a fixed form", six) == []  # a chosen subset


def test_every_list_of_answer_kinds_names_every_kind():
    places = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md", *sorted((ROOT / "r2mad").rglob("*.py"))]
    lists = [(p.relative_to(ROOT).as_posix(), named) for p in places for named in kind_lists(p.read_text())]
    assert len(lists) >= 5  # docs/cli.md, docs/api.md, docs/own-data.md, README.md, r2mad/ui/api.py
    stale = [f"{where} lacks {', '.join(sorted(set(KIND_NAMES) - named))}" for where, named in lists
             if not set(KIND_NAMES) <= named]
    assert stale == []


def test_help_and_types_name_every_kind():
    assert set(typing.get_args(TaskKind)) == set(KIND_NAMES)
    assert missing(KIND_NAMES, help_of("eval", "--kind")) == []
    debate_kind = next(a for a in next(a for a in build_parser()._actions if a.dest == "command")
                       .choices["debate"]._actions if "--kind" in a.option_strings)
    assert tuple(debate_kind.choices) == KIND_NAMES


def test_the_docs_count_and_describe_every_kind():
    text = (ROOT / "docs" / "kinds.md").read_text()
    words = ("one two three four five six seven eight nine ten eleven twelve").split()
    count = re.search(r"There are (\w+) kinds", text).group(1)
    assert count == words[len(KIND_NAMES) - 1]
    table = text.split("| kind |")[1].split("\n\n")[0]
    assert re.findall(r"^\| `([a-z]+)` \|", table, re.MULTILINE) == list(KIND_NAMES)  # the table, a row per kind
    assert missing([f"## {k}" for k in KIND_NAMES], text) == []


def test_task_help_names_every_task_set():
    everything = [*datasets.DATASETS, *benchmarks.names()]
    short = {full: alias for alias, full in datasets.ALIASES.items()}
    shown = [short.get(name, name) for name in everything]
    for command in ("eval", "build-memory"):
        assert missing(shown, help_of(command, "--task")) == [], command


def test_api_docstring_names_every_kind_and_only_real_methods():
    tree = ast.parse((ROOT / "r2mad" / "ui" / "api.py").read_text())
    doc = next(ast.get_docstring(n) for n in ast.walk(tree)
               if isinstance(n, ast.AsyncFunctionDef) and n.name == "run_debate")
    kinds = re.search(r"kind: the answer kind \(([^)]*)\)", doc).group(1)
    assert [k.strip() for k in kinds.split(",")] == list(KIND_NAMES)
    methods = re.search(r"method: one of the debate methods or baselines \(([^)]*)\)", doc).group(1)
    assert [m for m in re.findall(r"[\w-]+", methods) if m not in METHODS] == []


def test_every_backend_kind_is_a_choice_of_the_config_and_in_the_docs():
    choices = next(f for f in fields(Backbone) if f.name == "kind").metadata["choices"]
    assert set(choices) == set(BACKENDS)
    assert "scripted" in BACKENDS
    text = (ROOT / "docs" / "backbones.md").read_text().split("## Kinds of backbone")[1].split("\n## ")[0]
    assert missing([f"`{k}`" for k in BACKENDS], text) == []
