"""The run store owns its SQL: no statement on one of its tables is written outside r2mad/runs/."""
from __future__ import annotations

import ast
import re
from pathlib import Path

LIBRARY = Path(__file__).resolve().parents[2] / "r2mad"
STORE = "runs"
_CREATED = re.compile(r"\bCREATE TABLE (?:IF NOT EXISTS )?(\w+)")
_STATEMENT = re.compile(r"\b(SELECT|INSERT|UPDATE|DELETE|CREATE TABLE|ALTER TABLE|CREATE INDEX)\b")
_TABLE_AFTER = r"\b(?:FROM|INTO|UPDATE|JOIN|TABLE|ON)\s+({})\b"


def literal_texts(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, text) of every string literal; an f-string reads as one text with {} where its values go."""
    inside_f = {id(v) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for v in node.values}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            found.append((node.lineno, "".join(v.value if isinstance(v, ast.Constant) else "{}"
                                               for v in node.values)))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in inside_f:
            found.append((node.lineno, node.value))
    return found


def store_tables(library: Path) -> set[str]:
    """The tables the run store creates (its migrations, and any table a module of runs/ makes itself)."""
    return {name for path in (library / STORE).glob("*.py")
            for _, text in literal_texts(ast.parse(path.read_text(encoding="utf-8")))
            for name in _CREATED.findall(text)}


def sql_outside_store(library: Path) -> list[str]:
    """'path:line: statement' for each string literal outside runs/ that is SQL on a table of the store."""
    tables = store_tables(library)
    on_table = re.compile(_TABLE_AFTER.format("|".join(sorted(tables))))
    offenders = []
    for path in sorted(library.rglob("*.py")):
        relative = path.relative_to(library)
        if relative.parts[0] == STORE:
            continue
        for line, text in literal_texts(ast.parse(path.read_text(encoding="utf-8"))):
            if _STATEMENT.search(text) and on_table.search(text):
                offenders.append(f"r2mad/{relative.as_posix()}:{line}: {' '.join(text.split())[:90]}")
    return sorted(offenders, key=lambda o: (o.split(":")[0], int(o.split(":")[1])))


def test_the_store_tables_are_found():
    assert {"runs", "annotations", "suggestions", "final_labels", "queues", "blame", "blame_sets", "judged",
            "detected", "suggestion_reviews", "votes"} <= store_tables(LIBRARY)


def test_no_sql_on_the_store_outside_runs():
    offenders = sql_outside_store(LIBRARY)
    assert not offenders, "SQL on the run store's tables belongs in r2mad/runs/:\n" + "\n".join(offenders)


def test_the_check_sees_a_statement(tmp_path):
    """The check can fail: a copy of the library with one query written in a caller is caught."""
    (tmp_path / STORE).mkdir()
    (tmp_path / STORE / "records.py").write_text('SCHEMA = "CREATE TABLE queues (name TEXT)"\n')
    (tmp_path / "caller.py").write_text('where = "x"\nQ = f"SELECT * FROM queues {where} ORDER BY name"\n'
                                        'PROSE = "Select the queues you want."\n')
    assert sql_outside_store(tmp_path) == ["r2mad/caller.py:2: SELECT * FROM queues {} ORDER BY name"]
