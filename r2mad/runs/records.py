"""What the run store holds: the SQLite schema and its migrations, the row dataclasses, the failure
label taxonomy, and the scrubbing that keeps secrets out of every stored byte. No connections here."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from r2mad.settings.config import CONFIG_DIR, ConfigError, load_mapping
from r2mad.types import Task, Transcript

STATUSES = ("running", "done", "failed", "cancelled")
REDACTED = "[redacted]"
DEFAULT_TAXONOMY = CONFIG_DIR / "annotation.yaml"
# "token" but not token counts/tokenizers (max_tokens stays: reruns need it).
_SECRET_KEY = re.compile(r"token(?!s|iz)|api[_-]?key|secret|password|passwd|authorization", re.I)
_MIN_SECRET_LEN = 8  # shorter "secrets" would redact ordinary words
# Hugging Face tokens are recognisable even when nobody configured them (a visitor's, one echoed back)
_HF_TOKEN = re.compile(r"\bhf_[A-Za-z0-9]{20,}\b")
NOTE_LIMIT = 4096  # bytes of an annotation note
NAME_CHARS = 100  # an annotator's name

# MIGRATIONS[i] takes a database from user_version i to i + 1; append, never edit a shipped step.
MIGRATIONS: list[tuple[str, ...]] = [(
    """CREATE TABLE runs (
        id TEXT PRIMARY KEY, created_at REAL NOT NULL, updated_at REAL NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('running', 'done', 'failed', 'cancelled')),
        status_note TEXT, source TEXT NOT NULL, method TEXT NOT NULL, backbone TEXT NOT NULL,
        bank TEXT, seed INTEGER, code_version TEXT NOT NULL, settings TEXT NOT NULL,
        task TEXT NOT NULL, task_id TEXT, question TEXT NOT NULL, gold TEXT, final_answer TEXT,
        correct INTEGER, tokens INTEGER NOT NULL DEFAULT 0, seconds REAL NOT NULL DEFAULT 0,
        rounds INTEGER NOT NULL DEFAULT 0, shared_misconception INTEGER, flip INTEGER,
        parse_failures INTEGER NOT NULL DEFAULT 0, transcript TEXT, pid INTEGER, hostname TEXT)""",
    "CREATE INDEX runs_created ON runs (created_at)",
    "CREATE INDEX runs_method ON runs (method, backbone)",
    "CREATE INDEX runs_status ON runs (status)",
    """CREATE TABLE annotations (
        id INTEGER PRIMARY KEY, run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        annotator TEXT NOT NULL, labels TEXT NOT NULL, note TEXT NOT NULL DEFAULT '',
        created_at REAL NOT NULL, updated_at REAL NOT NULL, UNIQUE (run_id, annotator))""",
    """CREATE TABLE annotation_edits (
        annotation_id INTEGER NOT NULL REFERENCES annotations (id) ON DELETE CASCADE,
        seq INTEGER NOT NULL, edited_at REAL NOT NULL, labels TEXT NOT NULL, note TEXT NOT NULL,
        PRIMARY KEY (annotation_id, seq))""",
)]
MIGRATIONS.append((  # 2: who may read a run (a Space's visitor or login; NULL: everyone, as before)
    "ALTER TABLE runs ADD COLUMN owner TEXT",
    "CREATE INDEX runs_owner ON runs (owner, created_at)",
))
MIGRATIONS.append((  # 3: the annotation workbench: blame per label, detector suggestions, final labels, queues
    "ALTER TABLE annotations ADD COLUMN blame TEXT NOT NULL DEFAULT '{}'",
    """CREATE TABLE suggestions (
        id INTEGER PRIMARY KEY, run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        label TEXT NOT NULL, detector TEXT NOT NULL, round INTEGER, agents TEXT NOT NULL,
        summary TEXT NOT NULL, evidence TEXT NOT NULL)""",
    "CREATE INDEX suggestions_run ON suggestions (run_id)",
    """CREATE TABLE detected (run_id TEXT PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
        version INTEGER NOT NULL, updated_at REAL NOT NULL)""",
    """CREATE TABLE suggestion_reviews (
        suggestion_id INTEGER NOT NULL REFERENCES suggestions (id) ON DELETE CASCADE,
        annotator TEXT NOT NULL, verdict TEXT NOT NULL CHECK (verdict IN ('confirmed', 'rejected')),
        reviewed_at REAL NOT NULL, PRIMARY KEY (suggestion_id, annotator))""",
    """CREATE TABLE final_labels (
        run_id TEXT PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE, labels TEXT NOT NULL,
        blame TEXT NOT NULL DEFAULT '{}', adjudicator TEXT NOT NULL, decided_at REAL NOT NULL)""",
    """CREATE TABLE queues (
        name TEXT PRIMARY KEY, filters TEXT NOT NULL, annotators_per_run INTEGER NOT NULL DEFAULT 1,
        blind INTEGER NOT NULL DEFAULT 0, created_at REAL NOT NULL)""",
))
MIGRATIONS.append((  # 4: forks link to the run they replay (r2mad/steer); blame: counterfactual replays
    "ALTER TABLE runs ADD COLUMN parent_id TEXT REFERENCES runs (id) ON DELETE SET NULL",
    "ALTER TABLE runs ADD COLUMN fork TEXT",  # JSON: from_round, changes, method, backbone
    "CREATE INDEX runs_parent ON runs (parent_id)",
    """CREATE TABLE blame (
        run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE, round INTEGER NOT NULL,
        agent INTEGER NOT NULL, neutraliser TEXT NOT NULL, fork_id TEXT REFERENCES runs (id) ON DELETE SET NULL,
        final_answer TEXT, correct INTEGER, calls INTEGER NOT NULL, tokens INTEGER NOT NULL,
        created_at REAL NOT NULL, PRIMARY KEY (run_id, round, agent, neutraliser))""",
))
MIGRATIONS.append((  # 5: the LLM judge (annotation/judge.py): which runs each judge read, and its raw reply
    """CREATE TABLE judged (
        run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE, judge TEXT NOT NULL,
        judged_at REAL NOT NULL, reply TEXT NOT NULL, dropped INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (run_id, judge))""",
))
MIGRATIONS.append((  # 6: blame by sets of turns (`blame --pairs`): one replay with several turns neutralised
    """CREATE TABLE blame_sets (
        run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE, turns TEXT NOT NULL,
        fork_id TEXT REFERENCES runs (id) ON DELETE SET NULL, final_answer TEXT, correct INTEGER,
        calls INTEGER NOT NULL, tokens INTEGER NOT NULL, created_at REAL NOT NULL, PRIMARY KEY (run_id, turns))""",
))
MIGRATIONS.append((  # 7: counterfactuals with intervals (steer/sampling.py) and annotators' verified corrections
    """CREATE TABLE blame_samples (
        run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE, turns TEXT NOT NULL, samples INTEGER NOT NULL,
        correct INTEGER NOT NULL, base_samples INTEGER NOT NULL, base_correct INTEGER NOT NULL, change REAL,
        low REAL, high REAL, calls INTEGER NOT NULL, fork_ids TEXT NOT NULL, cut INTEGER NOT NULL,
        deterministic INTEGER NOT NULL, created_at REAL NOT NULL, PRIMARY KEY (run_id, turns))""",
    """CREATE TABLE corrections (
        run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE, round INTEGER NOT NULL,
        agent INTEGER NOT NULL, annotator TEXT NOT NULL, ideal TEXT NOT NULL, written_at REAL NOT NULL,
        fork_id TEXT REFERENCES runs (id) ON DELETE SET NULL, final_answer TEXT, correct INTEGER,
        verified_at REAL, PRIMARY KEY (run_id, round, agent, annotator))""",
))
BOOL_COLUMNS = ("correct", "shared_misconception", "flip")
SUMMARY_COLUMNS = ("id", "created_at", "updated_at", "status", "status_note", "source", "method",
                    "backbone", "bank", "question", "gold", "final_answer", "correct", "tokens",
                    "seconds", "rounds", "shared_misconception", "flip", "parse_failures")


@dataclass(frozen=True)
class AnnotationEdit:
    """The labels and note an annotation had before edit number `seq`."""
    seq: int
    edited_at: float
    labels: tuple[str, ...]
    note: str


@dataclass(frozen=True)
class Annotation:
    id: int
    run_id: str
    annotator: str
    labels: tuple[str, ...]
    note: str
    created_at: float
    updated_at: float
    history: tuple[AnnotationEdit, ...] = ()
    blame: dict[str, dict[str, int]] = field(default_factory=dict)  # label -> {"round", "agent"}


@dataclass(frozen=True)
class RunSummary:
    """One row of the run list: what filters and the Inspect table need, without the transcript."""
    id: str
    created_at: float
    updated_at: float
    status: str
    status_note: str | None
    source: str
    method: str
    backbone: str
    bank: str | None
    question: str
    gold: str | None
    final_answer: str | None
    correct: bool | None
    tokens: int
    seconds: float
    rounds: int
    shared_misconception: bool | None
    flip: bool | None
    parse_failures: int
    annotation_count: int = 0
    labels: tuple[str, ...] = ()  # every annotator's labels, a label once per annotator who gave it
    final_labels: tuple[str, ...] = ()  # the adjudicated labels, when decided


@dataclass(frozen=True)
class RunRecord(RunSummary):
    """A whole run: summary columns, config, task, transcript (None before round 0), labels."""
    seed: int | None = None
    code_version: str = ""
    settings: dict[str, Any] = field(default_factory=dict)
    task: Task | None = None
    transcript: Transcript | None = None
    pid: int | None = None
    hostname: str | None = None
    owner: str | None = None
    annotations: tuple[Annotation, ...] = ()


def load_taxonomy(path: str | Path = DEFAULT_TAXONOMY) -> dict[str, str]:
    """Failure labels as {id: one-line description}, in file order. A bad file raises ConfigError."""
    data = load_mapping(Path(path))
    labels = data.get("labels") or []
    if not isinstance(labels, list):
        raise ConfigError(f"{path}: 'labels' must be a list of `- id: ...` / `description: ...` entries.")
    taxonomy: dict[str, str] = {}
    for item in labels:
        if not isinstance(item, dict) or not item.get("id") or not item.get("description"):
            raise ConfigError(f"{path}: every label needs an 'id' and a 'description'; "
                              f"fix {item!r}.")
        if item["id"] in taxonomy:
            raise ConfigError(f"{path}: label id {item['id']!r} appears twice; keep one.")
        taxonomy[str(item["id"])] = str(item["description"])
    if not taxonomy:
        raise ConfigError(f"{path} defines no labels; add a 'labels:' list of id/description pairs.")
    return taxonomy


def scrub(value: Any, secrets: Iterable[str] = (), *, keys: bool = True) -> Any:
    """Copy of `value` with secret-named keys (when `keys`), every occurrence of a known secret string
    and anything shaped like a Hugging Face token replaced by "[redacted]"; tuples become lists."""
    secrets = [s for s in secrets if isinstance(s, str) and len(s) >= _MIN_SECRET_LEN]
    def walk(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: REDACTED if keys and _SECRET_KEY.search(str(k)) and v[k] not in (None, "")
                    else walk(v[k]) for k in v}
        if isinstance(v, (list, tuple)):
            return [walk(x) for x in v]
        if isinstance(v, str):
            for s in secrets:
                v = v.replace(s, REDACTED)
            v = _HF_TOKEN.sub(REDACTED, v)
        return v
    return walk(value)


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def derived_flags(t: Transcript) -> tuple[bool | None, bool | None, int]:
    """(shared misconception, any correct->wrong flip, parse failures) for the filter columns."""
    from r2mad.evaluation import metrics
    t = t.finished()
    if not t.rounds:
        return None, None, 0
    if t.task.gold is None:
        return None, None, metrics.parse_failures(t)
    return (metrics.shared_misconception(t), metrics.transitions(t).c2w > 0,
            metrics.parse_failures(t))


def where_clause(*, method: str | None = None, backbone: str | None = None, bank: str | None = None,
           status: str | None = None, correct: bool | None = None,
           shared_misconception: bool | None = None, flip: bool | None = None,
           parse_failures: bool | int | None = None, owner: str | None = None,
           ids: Sequence[str] | None = None, source: str | None = None,
           scored: bool | None = None) -> tuple[str, list[Any]]:
    """The WHERE clause of a run query (RunStore.list_runs, count_runs), and its parameters. None means "any";
    parse_failures=True/False means some/none, an int n at least n; `owner` keeps one visitor's runs, `ids` these
    runs, `source` those started there (cli, app, api, eval, serve, ...), `scored` those with (or without) a gold
    answer to score."""
    clauses, params = [], []
    if scored is not None:
        clauses.append("correct IS NOT NULL" if scored else "correct IS NULL")
    for col, value in (("method", method), ("backbone", backbone), ("bank", bank), ("source", source),
                       ("status", status), ("correct", correct), ("owner", owner),
                       ("shared_misconception", shared_misconception), ("flip", flip)):
        if value is not None:
            clauses.append(f"{col} = ?")
            params.append(int(value) if isinstance(value, bool) else value)
    if isinstance(parse_failures, bool):
        clauses.append("parse_failures > 0" if parse_failures else "parse_failures = 0")
    elif parse_failures is not None:
        clauses.append("parse_failures >= ?")
        params.append(int(parse_failures))
    if ids is not None:
        clauses.append(f"id IN ({', '.join('?' * len(ids))})" if ids else "0")
        params.extend(ids)
    return ("WHERE " + " AND ".join(clauses)) if clauses else "", params
