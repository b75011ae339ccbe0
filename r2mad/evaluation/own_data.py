"""A researcher's own questions for `eval --data FILE|HF_ID --columns question=Q,answer=A,choices=C --kind K`:
a CSV, TSV, JSON lines, JSON or Parquet file, or a hub dataset id read from the local hub cache (nothing is
downloaded), its columns mapped to question, answer, choices and id. Not for the papers' benchmarks."""
from __future__ import annotations

import json
import re
from pathlib import Path

from r2mad.evaluation.benchmarks.base import answer_kind, stable_id
from r2mad.evaluation.benchmarks.hub import cached_snapshot, columns_of, matching_files, read_table
from r2mad.evaluation.datasets import DataError, Split
from r2mad.types import Task

ROLES = ("question", "answer", "choices", "id")
HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")
SPLIT_FILES = ("{s}-*.parquet", "*/{s}-*.parquet", "{s}/*.parquet", "*/{s}/*.parquet", "{s}.parquet", "*/{s}.parquet",
               "{s}.jsonl", "*/{s}.jsonl", "{s}.json", "*/{s}.json", "{s}.csv", "*/{s}.csv")


def parse_columns(text: str) -> dict[str, str]:
    """"question=Q,answer=A,choices=C" -> {"question": "Q", "answer": "A", "choices": "C"}; question is required.
    Choices may name several columns, one option each, joined by | or + ("choices=A|B|C|D")."""
    mapping = {}
    for part in filter(None, (p.strip() for p in (text or "").split(","))):
        role, sep, column = (x.strip() for x in part.partition("="))
        if not sep or role not in ROLES or not column or not all(split_choices(column)):
            raise DataError(f"--columns takes ROLE=COLUMN pairs with roles {', '.join(ROLES)} (e.g. "
                            f"question=Q,answer=A, or choices=A|B|C|D for one option a column); {part!r} is not one.")
        mapping[role] = column
    if "question" not in mapping:
        raise DataError("--columns must name the question's column, e.g. --columns question=prompt,answer=label.")
    return mapping


def split_choices(column: str) -> list[str]:
    """"A|B|C|D" or "A+B+C+D" -> ["A", "B", "C", "D"]; one column -> [it]."""
    return [c.strip() for c in re.split(r"[|+]", column)]


def named_columns(mapping: dict[str, str]) -> list[str]:
    """Every column the mapping reads, each of several choice columns on its own."""
    return [c for role, column in mapping.items() for c in (split_choices(column) if role == "choices" else [column])]


def by_number(mapping: dict[str, str]) -> bool:
    """Whether the mapping names every column by its number from 0 ("question=0,answer=5"): a headerless file."""
    return all(c.isdigit() for c in named_columns(mapping))


def reads_like_data(names: list[str]) -> bool:
    """Whether a file's column names read like a row of data (a question, numbers): a CSV with no header row."""
    return any(re.fullmatch(r"-?\d+(?:[.,]\d+)?", n.strip()) or "?" in n or len(n) > 40 or len(n.split()) > 4
               for n in map(str, names))


def read_own(data: str, split: str, header: bool = True) -> tuple[str, list[dict]]:
    """(where, rows): a local file, else the split's files of a hub dataset in the local cache. With header=False
    a CSV's first row is data and its columns are named by number (hub.read_table)."""
    path = Path(data).expanduser()
    if path.is_file():
        return str(path), read_table(path, header=header)
    if path.exists() or not HUB_ID.fullmatch(data):
        raise DataError(f"--data {data} is neither a data file (csv, tsv, jsonl, json, parquet) nor a hub dataset "
                        "id like owner/name; pass one of those.")
    root = cached_snapshot(data)
    files = matching_files(root, [p.format(s=split) for p in SPLIT_FILES])
    if not files:
        held = ", ".join(str(f.relative_to(root)) for f in matching_files(root, ["**/*"])
                         if f.suffix in (".parquet", ".jsonl", ".json", ".csv")) or "no data files"
        raise DataError(f"{data} in the local hub cache has no files for the split {split!r}; it holds: {held}.")
    return f"{data} ({split})", [row for f in files for row in read_table(f, header=header)]


def _choices(value) -> list[str]:
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                return [str(x) for x in json.loads(text)]
            except json.JSONDecodeError:
                pass
        return [c.strip() for c in text.split("|") if c.strip()]
    return [str(x) for x in (value or [])]


def gold_text(answer) -> str | None:
    """A reference answer as the kinds read it: a list of accepted answers (a list column, as TriviaQA's aliases)
    joined with " | "; None when empty."""
    if answer is None or isinstance(answer, str) and not answer.strip():
        return None
    if isinstance(answer, (list, tuple)):
        kept = [str(a).strip() for a in answer if str(a).strip()]
        return " | ".join(kept) or None
    return str(answer).strip()


def _gold_letter(answer, choices: list[str]) -> str | None:
    """An option letter, a 0-based index or the text of a choice -> its letter."""
    text = str(answer).strip()
    letters = [chr(ord("A") + i) for i in range(len(choices))]
    if text.upper() in letters:
        return text.upper()
    if text.isdigit() and int(text) < len(choices):
        return letters[int(text)]
    return next((letters[i] for i, c in enumerate(choices) if c.strip().casefold() == text.casefold()), None)


def check_columns(rows: list[dict], columns: dict[str, str], where: str) -> None:
    """Refuse a mapping that names a column the rows lack, listing the file's columns, or saying the file looks
    headerless when its column names read like data."""
    held = columns_of(rows)
    missing = [c for c in named_columns(columns) if c not in held]
    if not missing:
        return
    if reads_like_data(held) and not by_number(columns):
        first = ",".join(map(str, held))
        first = first if len(first) <= 60 else first[:60] + "…"
        raise DataError(f"{where} has no column {missing[0]!r} and looks headerless (its first row reads like data: "
                        f"{first!r}); add a header row, or name the columns by number from 0, e.g. --columns "
                        "question=0,answer=5.")
    raise DataError(f"{where} has no column {missing[0]!r}; its columns are: {', '.join(held) or 'none'}.")


def row_choices(row: dict, column: str) -> list[str]:
    """A row's options: from one column (a list, a JSON list or |-separated text), or one option a column from
    several columns (their order kept, blank cells left out)."""
    names = split_choices(column)
    if len(names) == 1:
        return _choices(row[column])
    return [str(row[c]).strip() for c in names if row.get(c) is not None and str(row[c]).strip()]


def to_tasks(rows: list[dict], columns: dict[str, str], kind: str, where: str) -> list[Task]:
    check_columns(rows, columns, where)
    out = []
    for index, row in enumerate(rows, 1):
        question = str(row[columns["question"]] or "").strip()
        if not question:
            raise DataError(f"{where} row {index} has an empty question; fill it or remove the row.")
        answer = row.get(columns["answer"]) if "answer" in columns else None
        options, gold = (), gold_text(answer)
        if "choices" in columns:
            choices = row_choices(row, columns["choices"])
            options = tuple((chr(ord("A") + i), c) for i, c in enumerate(choices))
            if gold is not None and (gold := _gold_letter(gold, choices)) is None:
                raise DataError(f"{where} row {index}: the answer {answer!r} is neither an option letter, a 0-based "
                                "index nor the text of one of its choices; fix it or map another column.")
        qid = str(row[columns["id"]]) if "id" in columns else stable_id(f"row{index}", question)
        out.append(Task(answer_kind(kind), question, options, gold, qid, "own-data"))
    return out


def load_own(data: str, columns: str, *, split: str = "test", kind: str | None = None,
             limit: int | None = None) -> Split:
    """The mapped rows as one split named after the file or the hub id (a file's rows are all of it). Columns
    given all by number ("question=0,answer=5") read a CSV as headerless: its first row is data."""
    mapping = parse_columns(columns)
    kind = kind or ("mcq" if "choices" in mapping else "short")
    answer_kind(kind)  # an unknown kind is refused before any file is read
    where, rows = read_own(data, split, header=not by_number(mapping))
    tasks = to_tasks(rows, mapping, kind, where)
    name = data if HUB_ID.fullmatch(data) and not Path(data).exists() else Path(data).name
    return Split(split, f"own:{name}", tuple(tasks), 0, tuple(t.id for t in tasks)).head(limit)


GUESSES = {"question": ("question", "prompt", "problem", "input", "query", "q"),
           "answer": ("answer", "label", "gold", "target", "output", "solution", "a"),
           "choices": ("choices", "options", "candidates", "opts"), "id": ("id", "uid", "question_id", "key")}


def guess_columns(columns: list[str]) -> dict[str, str | None]:
    """The column most likely to hold each role, by its name (None where none fits)."""
    lowered = {c.lower(): c for c in columns}
    return {role: next((lowered[n] for n in names if n in lowered), None) for role, names in GUESSES.items()}
