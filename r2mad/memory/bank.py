"""The experience memory bank: <bank>/cases.jsonl + manifest.yaml are the truth (files.py); a Qdrant index
derived from them (index.py, adapters in stores.py) finds candidates; and `retrieve` does one agent-round of
R²-MAD retrieval (recall.py; the policy maths in retrieval.py/confidence.py)."""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import threading
from collections import Counter
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from r2mad.backends.embedder import Embedder, load_embedder
from r2mad.memory.files import (
    CASES,
    MANIFEST,
    BankError,
    built_embedder,
    check_case,
    now,
    read_cases,
    read_manifest,
    read_quarantine,
    write_manifest,
    write_quarantine,
)
from r2mad.memory.index import BankIndex, point_id
from r2mad.memory.recall import Candidate, Recalling, Retrieval
from r2mad.memory.stores import STORES, IndexStoreError
from r2mad.safewrite import is_disk_full
from r2mad.text import quoted
from r2mad.types import Case, to_dict

__all__ = ["BankError", "Candidate", "MemoryBank", "Retrieval", "STORES"]


class MemoryBank(Recalling):
    """Cases of past debates for every agent of one task kind. Make one with `create` or `open`.

    Thread-safe: one lock guards the files, the in-memory cases and every index call (qdrant-client
    local mode is not thread-safe). One writing process per bank."""

    def __init__(self, path: Path, embedder: Embedder, manifest: dict, *, index_root: Path | str,
                 url: str | None = None, api_key: str | None = None, store: str = "edge"):
        if store not in STORES:
            raise BankError(f"Unknown index store {store!r}; choose one of {', '.join(STORES)}.")
        self.path, self.embedder, self.manifest = path, embedder, manifest
        self.name = path.name
        self.notices: list[str] = []  # said in the debates that read it
        self.log: list[str] = []  # the operator's news (the index built, and how long it took)
        self._index = BankIndex(path, embedder, index_root=Path(index_root), url=url, api_key=api_key,
                                store_kind=store)
        self._lock = threading.RLock()
        self._cases: dict[str, Case] = {}
        self._slots: dict[tuple[str, int, int], Case] = {}  # (question id, agent, round) -> case
        self._vectors: dict[str, np.ndarray] = {}  # embedded earlier responses, by text
        self._questions: set[str] = set()
        self._per_agent: Counter = Counter()
        self._positive = 0
        self._quarantined: set[str] = set()

    # --- opening -----------------------------------------------------------------------------
    @classmethod
    def create(cls, path: Path | str, *, task_kind: str, split: str, backbone: str, embedder: Embedder,
               code_version: str, index_root: Path | str, url: str | None = None,
               api_key: str | None = None, store: str = "edge", dataset: str | None = None,
               split_seed: int | None = None) -> MemoryBank:
        """Start an empty bank folder (manifest + empty cases.jsonl) and open it. `dataset` and
        `split_seed` record where its questions come from, so `eval` can refuse to test on them."""
        path = Path(path)
        if (path / MANIFEST).exists():
            raise BankError(f"A memory bank already exists at {path}; open it to add cases or choose "
                            "another folder.")
        path.mkdir(parents=True, exist_ok=True)
        manifest = {"name": path.name, "task": task_kind, "split": split, "backbone": backbone,
                    "embedder": {"id": embedder.id, "dim": embedder.dim},
                    "counts": {"questions": 0, "cases": 0, "cases_per_agent": {}, "positive_share": 0.0},
                    "created_at": now(), "code_version": code_version}
        if dataset is not None:
            manifest |= {"dataset": dataset, "split_seed": split_seed, "question_ids": []}
        (path / CASES).touch()
        write_manifest(path, manifest)
        return cls.open(path, embedder, index_root=index_root, url=url, api_key=api_key, store=store)

    @classmethod
    def open(cls, path: Path | str, embedder: Embedder, *, index_root: Path | str, url: str | None = None,
             api_key: str | None = None, expected_task: str | None = None, store: str = "edge",
             progress: Callable[[int, int], None] | None = None) -> MemoryBank:
        """Read a bank, check it fits this embedder and task, and open (or rebuild) its index;
        `progress(done, total)` hears how many cases an index build has embedded so far."""
        path = Path(path)
        manifest = read_manifest(path)
        built = manifest.get("embedder") or {}
        if built.get("id") != embedder.id or built.get("dim") != embedder.dim:
            raise BankError(f"Bank {path} was built with embedder {built.get('id')} (dim {built.get('dim')}) "
                            f"but {embedder.id} is loaded; rebuild the bank or choose {built.get('id')}.")
        if expected_task is not None and manifest.get("task") != expected_task:
            raise BankError(f"Bank {path} holds {manifest.get('task')} cases but this task is "
                            f"{expected_task}; choose a bank built for {expected_task} tasks.")
        bank = cls(path, embedder, manifest, index_root=index_root, url=url, api_key=api_key, store=store)
        bank._load_cases()
        bank._quarantined |= read_quarantine(path)
        try:
            bank._index.open(list(bank._cases.values()), bank._file_sha, progress)
        except BaseException as exc:
            bank.close()  # release the index locks so that a retry in this process can open it
            if isinstance(exc, IndexStoreError):
                raise BankError(str(exc)) from None
            raise
        bank.notices += bank._index.notices
        bank.log += bank._index.log
        return bank

    @classmethod
    def set_embedder(cls, path: Path | str, embedder: Embedder) -> None:
        """Re-key a bank to another embedder (the cases stay; the index is rebuilt at the next open)."""
        path = Path(path)
        manifest = read_manifest(path)
        manifest["embedder"] = {"id": embedder.id, "dim": embedder.dim}
        write_manifest(path, manifest)

    def _load_cases(self) -> None:
        found = read_cases(self.path / CASES, self.manifest.get("task"))
        for case in found.cases:
            self._remember(case)
        self.notices += found.notices
        self._valid_len, self._needs_newline = len(found.content), found.needs_newline
        self._hasher = hashlib.sha256(found.content)  # an ignored partial line is not content
        self._file_sha = self._hasher.hexdigest()

    def _remember(self, case: Case) -> None:
        self._cases[case.id] = case
        self._slots[(case.question_id, case.agent, case.round)] = case
        self._questions.add(case.question_id)
        self._per_agent[case.agent] += 1
        self._positive += case.reward > 0
        if case.quarantined:
            self._quarantined.add(case.id)

    def close(self) -> None:
        with self._lock:
            self._index.close()

    def __enter__(self) -> MemoryBank:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- writing -------------------------------------------------------------------------------
    def add(self, cases: Sequence[Case]) -> int:
        """Append new cases (ids already present are skipped); returns how many were added.

        Checks every case before writing anything; the lines go out in one fsynced append."""
        for case in cases:
            try:
                check_case(case, self.manifest.get("task"))
            except ValueError as exc:
                raise BankError(f"Case {case.id!r} cannot go into bank {self.path}: {exc}.") from None
        with self._lock:
            fresh = list({c.id: c for c in cases if c.id not in self._cases}.values())
        if not fresh:
            return 0
        vectors = self._index.embed(fresh)  # outside the lock: encoding is the slow part
        with self._lock:
            fresh = [c for c in fresh if c.id not in self._cases]  # another thread may have won
            if not fresh:
                return 0
            data = "".join(json.dumps(to_dict(c), ensure_ascii=False) + "\n" for c in fresh).encode()
            if self._needs_newline:
                data = b"\n" + data
            self._append(data)
            self._valid_len += len(data)
            self._needs_newline = False
            self._hasher.update(data)
            self._file_sha = self._hasher.hexdigest()
            for case in fresh:
                self._remember(case)
            try:
                self._index.upsert(fresh, vectors)
                self._index.store.flush()
            except Exception as exc:  # cases.jsonl holds them; the index is rebuilt from it when next opened
                if not is_disk_full(exc):
                    raise
                raise BankError(f"The index of bank {self.path} could not take the new cases because the disk is "
                                "full; they are saved in cases.jsonl and the index is rebuilt from it when the bank "
                                "is next opened, so free some space and open it again.") from None
            self._write_manifest()
            self._index.mark(self._file_sha, complete=True)
        return len(fresh)

    def _append(self, data: bytes) -> None:
        """One fsynced append after the valid lines; a failed one (a full disk) is cut off again."""
        with open(self.path / CASES, "r+b" if (self.path / CASES).exists() else "wb") as handle:
            handle.truncate(self._valid_len)  # drops an incomplete line left by a killed writer
            handle.seek(self._valid_len)
            try:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            except OSError as exc:
                with contextlib.suppress(OSError):
                    handle.truncate(self._valid_len)
                why = "because the disk is full" if is_disk_full(exc) else f"({exc.strerror or exc})"
                raise BankError(f"Bank {self.path} could not take new cases {why}; it keeps its earlier ones, so "
                                "free some space (or fix the folder) and run build-memory again, which skips "
                                "the questions already in it.") from None

    def _write_manifest(self) -> None:
        total = len(self._cases)
        self.manifest["counts"] = {
            "questions": len(self._questions), "cases": total,
            "cases_per_agent": {int(a): n for a, n in sorted(self._per_agent.items())},
            "positive_share": round(self._positive / total, 4) if total else 0.0}
        self.manifest["question_ids"] = sorted(self._questions)
        self.manifest["updated_at"] = now()
        write_manifest(self.path, self.manifest)

    def quarantine(self, case_id: str) -> None:
        """Keep a case out of every retrieval (recorded in quarantine.txt; cases.jsonl is untouched)."""
        self._set_quarantined(case_id, True)

    def unquarantine(self, case_id: str) -> None:
        self._set_quarantined(case_id, False)

    def _set_quarantined(self, case_id: str, flag: bool) -> None:
        with self._lock:
            if case_id not in self._cases:
                raise BankError(f"No case {quoted(case_id)} in bank {self.path}; pick an id from its cases.")
            if flag:
                self._quarantined.add(case_id)
            else:
                self._quarantined.discard(case_id)
            write_quarantine(self.path, self._quarantined)

    # --- reading -------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._cases)

    @property
    def is_empty(self) -> bool:
        return not self._cases

    def has_question(self, question_id: str) -> bool:
        return question_id in self._questions

    @property
    def question_ids(self) -> frozenset[str]:
        """Every question the bank's cases come from (quarantined ones included)."""
        with self._lock:
            return frozenset(self._questions)

    def _shown(self, case: Case) -> Case:
        quarantined = case.id in self._quarantined
        return case if case.quarantined == quarantined else dataclasses.replace(case, quarantined=quarantined)

    def cases(self) -> list[Case]:
        with self._lock:
            return [self._shown(c) for c in self._cases.values()]

    def case(self, case_id: str) -> Case | None:
        """One case by id (quarantined ones too: a person naming one means it), or None."""
        with self._lock:
            case = self._cases.get(case_id)
            return None if case is None else self._shown(case)

    def search(self, text: str | None = None, agent: int | None = None, round: int | None = None,
               correct: bool | None = None, limit: int = 50) -> list[Case]:
        """Cases for the audit view: a case-insensitive substring over every text field, plus filters
        (`correct` is the agent's own correctness at that round)."""
        needle = (text or "").strip().lower()
        found = []
        for case in self.cases():
            if ((agent is None or case.agent == agent) and (round is None or case.round == round)
                    and (correct is None or case.own_correct == correct)
                    and (not needle or needle in _haystack(case))):
                found.append(case)
                if len(found) >= limit:
                    break
        return found

    def candidates(self, agent: int, query_vector: np.ndarray, limit: int) -> list[Candidate]:
        """The `limit` cases of this agent whose states are most similar (cosine) to the query;
        quarantined cases never appear."""
        with self._lock:
            hidden = sum(1 for cid in self._quarantined if cid in self._cases and self._cases[cid].agent == agent)
            hits = self._index.store.query(agent, np.asarray(query_vector, dtype=np.float32), limit + hidden)
            found = []
            for payload, score, state, responses in hits:
                case = self._cases.get(payload.get("case_id"))
                if case is not None and case.id not in self._quarantined:
                    found.append(Candidate(self._shown(case), float(score), np.asarray(state, np.float32),
                                           np.asarray(responses, np.float32)))
        return found[:limit]

    def response_vectors(self, case_id: str) -> np.ndarray:
        """Embeddings of the case's responses Z^(t), one row per agent, as stored at add time."""
        with self._lock:
            case = self._cases.get(case_id)
            vectors = None if case is None else self._index.store.responses(case.agent, point_id(case_id))
        if vectors is None:
            raise BankError(f"No case {quoted(case_id)} in the index of bank {self.path}; reopen the bank to "
                            "rebuild it.")
        return np.asarray(vectors, dtype=np.float32)


def own_embedder(path: Path | str, default: str) -> Embedder:
    """The embedder a bank at `path` was built with, loaded (a bank is queried only with its own);
    `default` where no bank is yet."""
    return load_embedder(built_embedder(Path(path)) or default)


def _haystack(case: Case) -> str:
    parts = (case.id, case.question_id, case.question, case.previous_response, case.summary, case.gold,
             *case.responses)
    return "\n".join(parts).lower()
