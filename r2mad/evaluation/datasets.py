"""Dataset loaders and the R²-MAD paper's train/test splits for `eval` and `build-memory`: MATH500,
MMLU-Pro, TruthfulQA and the shipped demo sets, from the hub or a local file in the same schema."""
from __future__ import annotations

import hashlib
import json
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from r2mad.jsonl import read_jsonl
from r2mad.settings.config import ROOT
from r2mad.types import Task, TaskKind

DEMO_DIR = ROOT / "data" / "demo"
SPLITS = ("train", "test", "all")
DEFAULT_SPLIT_SEED = 0  # of the seeded 3:1 split, for eval and build-memory alike
HUB_TIMEOUT_S = 10.0  # seconds to wait for the hub before giving up
# rows, seed, file name -> [(task, its fixed split, or None for the seeded 3:1 split)]
Converter = Callable[[list[dict], int, str], list[tuple[Task, str | None]]]


class DataError(ValueError):
    """A data file or the hub could not give us usable rows; the message says what to do."""


@dataclass(frozen=True)
class Split:
    name: str  # "train" | "test" | "all"
    dataset: str  # canonical dataset name
    tasks: tuple[Task, ...]
    seed: int
    ids: tuple[str, ...]  # ids of the tasks, in order, for recording in results

    def head(self, limit: int | None) -> Split:
        """The first `limit` tasks (all of them for None)."""
        if limit is None:
            return self
        if limit < 0:
            raise ValueError(f"limit must be 0 or more, not {limit}.")
        return Split(self.name, self.dataset, self.tasks[:limit], self.seed, self.ids[:limit])


@dataclass(frozen=True)
class DatasetSpec:
    name: str
    title: str  # how people call it in messages
    kind: TaskKind
    columns: tuple[str, ...]  # required columns of a row
    to_tasks: Converter
    hub_repo: str = ""
    hub_file: str = ""
    demo_file: str = ""


# --- row -> Task converters ---------------------------------------------------------------------

def _math500(rows: list[dict], seed: int, origin: str) -> list[tuple[Task, str | None]]:
    out = []
    for row in rows:
        task = Task("math", str(row["problem"]), gold=str(row["answer"]), id=str(row["unique_id"]),
                    source="math500", solution=str(row.get("solution") or ""))
        out.append((task, "test" if _level(row["level"]) == 5 else "train"))
    return out


def _level(value: Any) -> int | None:
    digits = re.search(r"\d+", str(value))  # 5 or "Level 5"
    return int(digits.group()) if digits else None


def _mmlu_pro(category: str) -> Converter:
    def convert(rows: list[dict], seed: int, origin: str) -> list[tuple[Task, str | None]]:
        out = []
        for row in rows:
            if str(row["category"]).strip().lower() != category:
                continue
            options = tuple((_letter(i), str(text)) for i, text in enumerate(row["options"]))
            gold = str(row["answer"]).strip().upper()
            if gold not in dict(options):
                raise DataError(f"{origin}: question {row['question_id']} has answer {gold!r}, which is "
                                "not one of its option letters; pass the MMLU-Pro file unchanged.")
            out.append((Task("mcq", str(row["question"]), options, gold,
                             f"mmlu-pro-{row['question_id']}", f"mmlu-pro-{category}"), None))
        if not out:
            raise DataError(f"{origin} has no rows with category '{category}'; "
                            "pass the MMLU-Pro test file (TIGER-Lab/MMLU-Pro).")
        return out
    return convert


def _truthfulqa(rows: list[dict], seed: int, origin: str) -> list[tuple[Task, str | None]]:
    out = []
    for row in rows:
        question = str(row["question"])
        choices, labels = _mc1_choices(row["mc1_targets"], origin, question)
        if not 4 <= len(choices) <= 9:
            continue  # the paper keeps 4- to 9-choice questions
        if len(labels) != len(choices) or list(labels).count(1) != 1:
            raise DataError(f"{origin}: question {question[:60]!r} does not have exactly one true "
                            "mc1 choice; pass the TruthfulQA multiple_choice file unchanged.")
        order = list(range(len(choices)))
        random.Random(_stable_int(f"{seed}\x00{question}")).shuffle(order)
        options = tuple((_letter(i), str(choices[j])) for i, j in enumerate(order))
        gold = _letter(next(i for i, j in enumerate(order) if labels[j] == 1))
        qid = "tqa-" + hashlib.sha1(question.encode()).hexdigest()[:10]
        out.append((Task("mcq", question, options, gold, qid, "truthfulqa"), None))
    if not out:
        raise DataError(f"{origin} has no questions with 4 to 9 mc1 choices; pass the TruthfulQA "
                        "multiple_choice validation file (truthfulqa/truthful_qa).")
    return out


def _mc1_choices(targets: Any, origin: str, question: str) -> tuple[list[str], list[int]]:
    """(choices, labels) of an mc1_targets field in either layout: the hub's {"choices": [...],
    "labels": [...]} or the original mc_task.json's {choice text: 1 or 0}."""
    if isinstance(targets, dict) and set(targets) == {"choices", "labels"}:
        return list(targets["choices"]), list(targets["labels"])
    if isinstance(targets, dict) and targets and all(v in (0, 1) for v in targets.values()):
        return [str(c) for c in targets], [int(v) for v in targets.values()]
    raise DataError(f"{origin}: question {question[:60]!r} has mc1_targets that are neither "
                    '{"choices": [...], "labels": [...]} (the hub\'s multiple_choice file) nor {choice text: '
                    "1 or 0} (the original mc_task.json); pass one of those files unchanged.")


def _demo(kind: TaskKind, source: str) -> Converter:
    def convert(rows: list[dict], seed: int, origin: str) -> list[tuple[Task, str | None]]:
        out = []
        for line, row in enumerate(rows, 1):
            split = str(row["split"])
            if split not in ("train", "test"):
                raise DataError(f"{origin} row {line} has split {split!r}; use 'train' or 'test'.")
            if kind == "mcq" and not isinstance(row["options"], dict):
                raise DataError(f"{origin} row {line} has options that are not an object like "
                                '{"A": "...", "B": "..."}; write them that way.')
            options = tuple((str(k), str(v)) for k, v in row["options"].items()) if kind == "mcq" else ()
            out.append((Task(kind, str(row["question"]), options, str(row["answer"]).strip(),
                             str(row["id"]), source), split))
        return out
    return convert


DATASETS: dict[str, DatasetSpec] = {spec.name: spec for spec in (
    DatasetSpec("math500", "MATH500", "math", ("problem", "answer", "level", "unique_id"), _math500,
                "HuggingFaceH4/MATH-500", "test.jsonl"),
    DatasetSpec("mmlu-pro-economics", "MMLU-Pro", "mcq",
                ("question_id", "question", "options", "answer", "category"), _mmlu_pro("economics"),
                "TIGER-Lab/MMLU-Pro", "data/test-00000-of-00001.parquet"),
    DatasetSpec("mmlu-pro-engineering", "MMLU-Pro", "mcq",
                ("question_id", "question", "options", "answer", "category"), _mmlu_pro("engineering"),
                "TIGER-Lab/MMLU-Pro", "data/test-00000-of-00001.parquet"),
    DatasetSpec("truthfulqa", "TruthfulQA", "mcq", ("question", "mc1_targets"), _truthfulqa,
                "truthfulqa/truthful_qa", "multiple_choice/validation-00000-of-00001.parquet"),
    DatasetSpec("demo-mcq", "demo-mcq", "mcq", ("id", "question", "options", "answer", "split"),
                _demo("mcq", "demo-mcq"), demo_file="mcq.jsonl"),
    DatasetSpec("demo-math", "demo-math", "math", ("id", "question", "answer", "split"),
                _demo("math", "demo-math"), demo_file="math.jsonl"),
)}
ALIASES = {"economics": "mmlu-pro-economics", "engineering": "mmlu-pro-engineering"}


def dataset_spec(name: str) -> DatasetSpec:
    """The registered dataset called `name` (aliases accepted)."""
    key = ALIASES.get(name.strip().lower(), name.strip().lower())
    if key not in DATASETS:
        known = ", ".join([*DATASETS, *ALIASES])
        raise ValueError(f"Unknown dataset {name!r}; choose one of: {known}.")
    return DATASETS[key]


# --- loading ------------------------------------------------------------------------------------

def load_split(dataset: str, split: str, *, data_file: str | Path | None = None,
               seed: int = DEFAULT_SPLIT_SEED, limit: int | None = None) -> Split:
    """Tasks of one split. MATH500: test = level 5; demo: the rows' own split field; the others: a
    seeded 3:1 train:test split, kept in shuffled order so `limit` takes a random sample."""
    spec = dataset_spec(dataset)
    if split not in SPLITS:
        raise ValueError(f"Unknown split {split!r}; choose one of: {', '.join(SPLITS)}.")
    path = _locate(spec, data_file)
    rows = read_rows(path)
    for line, row in enumerate(rows, 1):
        missing = [c for c in spec.columns if c not in row]
        if missing:
            raise DataError(f"{path} row {line} lacks the column {missing[0]!r}; {spec.title} rows "
                            f"need the columns: {', '.join(spec.columns)}.")
    pairs = spec.to_tasks(rows, seed, str(path))
    if split == "all":
        tasks = [task for task, _ in pairs]
    elif all(fixed is not None for _, fixed in pairs):
        tasks = [task for task, fixed in pairs if fixed == split]
    else:
        train, test = seeded_split([task for task, _ in pairs], seed)
        tasks = test if split == "test" else train
    return Split(split, spec.name, tuple(tasks), seed, tuple(t.id for t in tasks)).head(limit)


def seeded_split(items: Sequence[Any], seed: int) -> tuple[list[Any], list[Any]]:
    """(train, test) in 3:1 after a random.Random(seed) shuffle; test size is N/4 rounded half up."""
    shuffled = list(items)
    random.Random(seed).shuffle(shuffled)
    n_test = (len(shuffled) + 2) // 4  # round(N/4) with halves up: 844 -> 211, 969 -> 242
    return shuffled[n_test:], shuffled[:n_test]


def _locate(spec: DatasetSpec, data_file: str | Path | None) -> Path:
    if data_file is not None:
        path = Path(data_file)
        return path / spec.demo_file if spec.demo_file and path.is_dir() else path
    if spec.demo_file:
        return DEMO_DIR / spec.demo_file
    return _hub_download(spec)


def _hub_download(spec: DatasetSpec) -> Path:
    """The dataset file from the local hub cache, else from the hub (bounded by timeouts and the
    hub client's few retries, about 25 s in all when there is no network)."""
    from huggingface_hub import hf_hub_download
    fetch = dict(repo_type="dataset", etag_timeout=HUB_TIMEOUT_S)
    try:
        return Path(hf_hub_download(spec.hub_repo, spec.hub_file, local_files_only=True, **fetch))
    except Exception:
        pass  # not cached yet
    try:
        return Path(hf_hub_download(spec.hub_repo, spec.hub_file, **fetch))
    except Exception as err:  # offline mode, no route, DNS, HTTP errors: all mean "no hub"
        raise DataError(f"Could not load {spec.title} from the Hugging Face hub (offline?); pass "
                        "--data FILE with a local copy in the same schema (jsonl, json or parquet).") from err


def read_rows(path: str | Path) -> list[dict]:
    """Rows of a jsonl, json (a list of rows) or parquet file, as plain dicts."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"Data file {path} does not exist; pass --data with the path to a jsonl, "
                        "json or parquet file.")
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        rows = _read_parquet(path)
    elif suffix == ".json":
        rows = _read_json(path)
    elif suffix in (".jsonl", ".ndjson"):
        rows = _read_jsonl(path)
    else:
        raise DataError(f"Data file {path} has an unknown format; use a .jsonl, .json or .parquet file.")
    for line, row in enumerate(rows, 1):
        if not isinstance(row, dict):
            raise DataError(f"{path} row {line} is not an object with named columns; "
                            "each row must be a JSON object.")
    return rows


def _read_jsonl(path: Path) -> list[dict]:
    try:
        with path.open("rb") as handle:
            return [row for _, row in read_jsonl(handle, path, bad_line=_bad_line)]
    except DataError:
        utf8_text(path)  # a file in another encoding is said as such, not as a codec's words on one line
        raise


def _bad_line(path: str | Path, number: int, why: str) -> DataError:
    return DataError(f"{path}:{number} is not valid JSON ({why}); fix or remove that line.")


def utf8_text(path: Path) -> str:
    """The file's text as UTF-8 (a leading byte-order mark dropped); a file in another encoding (Latin-1, a
    spreadsheet's "CSV" on Windows) is refused in one sentence naming the file (not its folder: on the app it is
    the server's), since guessing its encoding could garble it."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise DataError(f"{path.name} is not UTF-8 text (byte 0x{data[err.start]:02x} on line {line} is not UTF-8, as "
                        "in a Latin-1 or Windows-1252 file); save it as UTF-8 (a spreadsheet's \"CSV UTF-8\", or "
                        f"`iconv -f latin1 -t utf-8 {path.name} > utf8-{path.name}`) and pass that file.") from None


def _read_json(path: Path) -> list[dict]:
    text = utf8_text(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        if err.msg == "Extra data":  # JSON lines saved with a .json name
            return _read_jsonl(path)
        raise DataError(f"{path}:{err.lineno} is not valid JSON ({err.msg}); fix the file.") from None
    if not isinstance(data, list):
        raise DataError(f"{path} must hold a JSON list of rows; found a {type(data).__name__}.")
    return data


def _read_parquet(path: Path) -> list[dict]:
    import pyarrow.parquet as pq
    try:
        return pq.read_table(path).to_pylist()
    except Exception as err:  # pyarrow raises several types for a damaged file
        raise DataError(f"{path} could not be read as parquet ({err}); check the file is complete.") from None


def _letter(index: int) -> str:
    return chr(ord("A") + index)


def _stable_int(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
