"""Labels become memory: finished debates from the run store written into a bank as cases, each case
keeping its provenance (run, annotator, time), and the bank's history (history.jsonl) of what was added,
with undo. The caller passes the questions an eval of the bank tests; a run on one is refused (see
evaluation/leakage.eval_tasks). Not for building banks from a split (from_debates.py)."""
from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from r2mad.memory.files import CASES, BankError, now, read_cases, write_atomic
from r2mad.memory.from_debates import cases_from_transcript
from r2mad.prompts.common import format_task
from r2mad.types import Case, Task

HISTORY = "history.jsonl"


@dataclass(frozen=True)
class Refused:
    run_id: str
    reason: str  # one sentence: why this run did not enter the bank


@dataclass(frozen=True)
class Batch:
    """One `add-runs` (or annotator's button press): the runs it wrote and their case ids."""
    number: int
    added_at: str
    by: str
    runs: tuple[dict, ...]  # {"run", "question_id", "annotator", "labels", "cases": [ids]}
    undone_at: str | None = None
    undone_by: str | None = None

    @property
    def case_ids(self) -> list[str]:
        return [cid for run in self.runs for cid in run["cases"]]


def _same_text(a: str, b: str) -> bool:
    return " ".join(a.casefold().split()) == " ".join(b.casefold().split())


def refusal(record: Any, bank: Any, tested: Sequence[Task]) -> str | None:
    """Why a saved run cannot become memory in `bank`, or None when it can. A run qualifies when it
    finished (status done, no failed turn, at least two rounds: round 0 gives no case) with a gold answer,
    on a question of the bank's task kind that neither the bank holds nor an eval of the bank tests."""
    t, short = record.transcript, record.id[:8]
    if record.status != "done" or t is None:
        return f"run {short} did not finish ({record.status}); only finished debates become memory."
    if t.task.gold is None:
        return (f"run {short} has no gold answer, so its cases could not say which answers were right; "
                "rerun the question with --gold.")
    if len(t.rounds) < 2:
        return f"run {short} has one round only; cases come from rounds after the first, so it adds none."
    if any(turn.error is not None for r in t.rounds for turn in r.turns):
        return f"run {short} has a failed turn; only whole debates become memory."
    if t.task.kind != bank.manifest.get("task"):
        return f"run {short} is a {t.task.kind} question and bank {bank.name} holds {bank.manifest.get('task')} cases."
    for task in tested:
        if task.id == t.task.id or _same_text(task.question, t.task.question):
            return (f"run {short} asks question {task.id}, which an eval of bank {bank.name} tests; its cases would "
                    "leak that answer into the eval, so it was refused.")
    shown = format_task(t.task)  # as the bank's cases hold their questions
    if bank.has_question(t.task.id) or any(_same_text(c.question, shown) for c in bank.cases()):
        return f"bank {bank.name} already holds run {short}'s question."
    return None


def run_cases(record: Any, provenance: dict) -> list[Case]:
    """Eq. 6 cases of a saved run, with ids of their own (run:<id>:a<i>:r<t>) and the provenance."""
    return [dataclasses.replace(c, id=f"run:{record.id}:a{c.agent}:r{c.round}", provenance=provenance)
            for c in cases_from_transcript(record.transcript.finished())]


def add_runs(bank: Any, records: Sequence[Any], *, by: str, tested: Sequence[Task],
             finals: Mapping[str, Any] | None = None) -> tuple[Batch | None, list[Refused]]:
    """Write each qualifying run into `bank` as cases and record one history batch; `by` is the person
    who asked (their name goes on every case, or the adjudicator's where the run has final labels)."""
    if not by.strip():
        raise BankError("Annotator name is empty; say who adds these runs (--annotator NAME).")
    refused, entries, cases = [], [], []
    stamp = now()
    for record in records:
        why = refusal(record, bank, tested)
        if why is None and record.task.id in {e["question_id"] for e in entries}:
            why = f"run {record.id[:8]} asks the same question as another run of this batch."
        if why is not None:
            refused.append(Refused(record.id, why))
            continue
        final = (finals or {}).get(record.id)
        annotator = final.adjudicator if final is not None else by.strip()
        provenance = {"run": record.id, "annotator": annotator, "added_by": by.strip(), "added_at": stamp,
                      "labels": list(final.labels) if final is not None else None,
                      "method": record.method, "backbone": record.backbone}
        found = run_cases(record, provenance)
        cases += found
        entries.append({"run": record.id, "question_id": record.task.id, "annotator": annotator,
                        "labels": provenance["labels"], "cases": [c.id for c in found]})
    if not entries:
        return None, refused
    bank.add(cases)
    batch = Batch(len(history(bank.path)) + 1, stamp, by.strip(), tuple(entries))
    _append(bank.path, {"action": "add", **dataclasses.asdict(batch)})
    return batch, refused


def _append(path: Path, entry: dict) -> None:
    with open(Path(path) / HISTORY, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(entry, ensure_ascii=False) + "\n")


def history(path: Path | str) -> list[Batch]:
    """Every batch added to the bank at `path`, oldest first, each marked when it was undone."""
    file = Path(path) / HISTORY
    batches: dict[int, Batch] = {}
    lines = file.read_text(encoding="utf-8").splitlines() if file.exists() else []
    for number, line in enumerate(lines, 1):
        try:
            entry = json.loads(line)
            if entry["action"] == "add":
                batches[entry["number"]] = Batch(entry["number"], entry["added_at"], entry["by"],
                                                 tuple(entry["runs"]))
            elif entry["action"] == "undo" and entry["number"] in batches:
                batches[entry["number"]] = dataclasses.replace(batches[entry["number"]], undone_at=entry["at"],
                                                               undone_by=entry["by"])
        except (ValueError, KeyError, TypeError):
            raise BankError(f"{file}:{number} is not a history entry; restore the file from a copy or "
                            "delete that line.") from None
    return list(batches.values())


def undo(path: Path | str, number: int, *, by: str, reopen: Callable[[Path], Any] | None = None) -> int:
    """Take batch `number`'s cases out of cases.jsonl (rewritten atomically; the index is rebuilt from it
    at the next open, which `reopen(path)` does now and returns the bank) and mark the batch undone.
    Returns how many cases were removed."""
    path = Path(path)
    batch = next((b for b in history(path) if b.number == number), None)
    if batch is None:
        raise BankError(f"Bank {path} has no batch {number}; `bank history {path}` lists them.")
    if batch.undone_at is not None:
        raise BankError(f"Batch {number} of bank {path} was already undone on {batch.undone_at}.")
    gone = set(batch.case_ids)
    file = read_cases(path / CASES, None)
    kept = [line for line in file.content.decode("utf-8").splitlines(keepends=True)
            if line.strip() and json.loads(line)["id"] not in gone]
    write_atomic(path / CASES, "".join(kept))
    _append(path, {"action": "undo", "number": number, "at": now(), "by": by.strip() or "unknown",
                   "when": time.time()})
    if reopen is not None:
        bank = reopen(path)
        bank._write_manifest()  # counts and question ids from the cases kept (leakage reads them)
        bank.close()
    return len(file.cases) - len(kept)
