"""The experience memory bank: <bank>/cases.jsonl + manifest.yaml are the truth; a Qdrant index derived
from them (adapters in index_store.py) finds candidates; and `retrieve` does one agent-round of R²-MAD
retrieval. The policy maths lives in retrieval.py/confidence.py."""
from __future__ import annotations

import dataclasses
import datetime
import hashlib
import json
import os
import re
import shutil
import threading
import time
import typing
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import yaml

from r2mad.confidence import confidence_label, peer_confidence
from r2mad.embedder import Embedder
from r2mad.index_store import STORES, IndexStoreError, open_local, open_server
from r2mad.retrieval import policy_lambda, render_state, select_cases
from r2mad.types import Case, to_dict

MANIFEST, CASES, QUARANTINE, MARKER = "manifest.yaml", "cases.jsonl", "quarantine.txt", "r2mad-index.json"
_POINT_NAMESPACE = uuid.UUID("5b0d3f52-8a4e-4c1e-9d0a-2f6c1e7a9b10")


class BankError(ValueError):
    """A bank problem a person can fix; the message names the thing and the fix."""


@dataclass(frozen=True)
class Candidate:
    case: Case
    similarity: float  # cosine between the query state and the case's state
    state_vector: np.ndarray
    response_vectors: np.ndarray | None = None  # n_agents x dim, embeddings of Z^(t)


@dataclass(frozen=True)
class Retrieval:
    """What one agent retrieved in one round, and the peer confidences derived from it."""
    lam: float | None
    candidates: tuple[tuple[str, float, float], ...]  # (case id, similarity, reward), top-3K
    picked: tuple[tuple[str, float, float, float], ...]  # (case id, similarity, reward, policy score)
    cases: tuple[Case, ...]
    confidence: dict[int, tuple[float | None, str | None]]  # peer -> (c, "high" | "low" | None)
    seconds: float = 0.0


def point_id(case_id: str) -> str:
    return str(uuid.uuid5(_POINT_NAMESPACE, case_id))


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
_REQUIRED = [f.name for f in dataclasses.fields(Case) if f.default is dataclasses.MISSING]
_TUPLES = {name for name, hint in typing.get_type_hints(Case).items() if typing.get_origin(hint) is tuple}


def _parse_case(raw: bytes, task_kind: str) -> Case:
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


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")




class MemoryBank:
    """Cases of past debates for every agent of one task kind. Make one with `create` or `open`.

    Thread-safe: one lock guards the files, the in-memory cases and every index call (qdrant-client
    local mode is not thread-safe). One writing process per bank."""

    def __init__(self, path: Path, embedder: Embedder, manifest: dict, *, index_root: Path | str,
                 url: str | None = None, api_key: str | None = None, store: str = "edge"):
        if store not in STORES:
            raise BankError(f"Unknown index store {store!r}; choose one of {', '.join(STORES)}.")
        self.path, self.embedder, self.manifest = path, embedder, manifest
        self.name = path.name
        self.index_root, self.url, self.store_kind = Path(index_root), url, store
        self.notices: list[str] = []
        self.index_path: Path | None = None
        self._api_key = api_key
        self._lock = threading.RLock()
        self._cases: dict[str, Case] = {}
        self._questions: set[str] = set()
        self._per_agent: Counter = Counter()
        self._positive = 0
        self._quarantined: set[str] = set()
        self._store = None
        self._index_lock = None

    # --- opening -----------------------------------------------------------------------------
    @classmethod
    def create(cls, path: Path | str, *, task_kind: str, split: str, backbone: str, embedder: Embedder,
               code_version: str, index_root: Path | str, url: str | None = None,
               api_key: str | None = None, store: str = "edge") -> MemoryBank:
        """Start an empty bank folder (manifest + empty cases.jsonl) and open it."""
        path = Path(path)
        if (path / MANIFEST).exists():
            raise BankError(f"A memory bank already exists at {path}; open it to add cases or choose "
                            "another folder.")
        path.mkdir(parents=True, exist_ok=True)
        manifest = {"name": path.name, "task": task_kind, "split": split, "backbone": backbone,
                    "embedder": {"id": embedder.id, "dim": embedder.dim},
                    "counts": {"questions": 0, "cases": 0, "cases_per_agent": {}, "positive_share": 0.0},
                    "created_at": _now(), "code_version": code_version}
        (path / CASES).touch()
        _write_atomic(path / MANIFEST, yaml.safe_dump(manifest, sort_keys=False, allow_unicode=True))
        return cls.open(path, embedder, index_root=index_root, url=url, api_key=api_key, store=store)

    @classmethod
    def open(cls, path: Path | str, embedder: Embedder, *, index_root: Path | str, url: str | None = None,
             api_key: str | None = None, expected_task: str | None = None, store: str = "edge") -> MemoryBank:
        """Read a bank, check it fits this embedder and task, and open (or rebuild) its index."""
        path = Path(path)
        manifest = cls.read_manifest(path)
        built = manifest.get("embedder") or {}
        if built.get("id") != embedder.id or built.get("dim") != embedder.dim:
            raise BankError(f"Bank {path} was built with embedder {built.get('id')} (dim {built.get('dim')}) "
                            f"but {embedder.id} is loaded; rebuild the bank or choose {built.get('id')}.")
        if expected_task is not None and manifest.get("task") != expected_task:
            raise BankError(f"Bank {path} holds {manifest.get('task')} cases but this task is "
                            f"{expected_task}; choose a bank built for {expected_task} tasks.")
        bank = cls(path, embedder, manifest, index_root=index_root, url=url, api_key=api_key, store=store)
        bank._load_cases()
        bank._load_quarantine()
        try:
            bank._open_index()
        except BaseException as exc:
            bank.close()  # release the index locks so that a retry in this process can open it
            if isinstance(exc, IndexStoreError):
                raise BankError(str(exc)) from None
            raise
        return bank

    @staticmethod
    def read_manifest(path: Path | str) -> dict:
        path = Path(path)
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

    @classmethod
    def set_embedder(cls, path: Path | str, embedder: Embedder) -> None:
        """Re-key a bank to another embedder (the cases stay; the index is rebuilt at the next open)."""
        path = Path(path)
        manifest = cls.read_manifest(path)
        manifest["embedder"] = {"id": embedder.id, "dim": embedder.dim}
        _write_atomic(path / MANIFEST, yaml.safe_dump(manifest, sort_keys=False, allow_unicode=True))

    def _load_cases(self) -> None:
        file = self.path / CASES
        data = file.read_bytes() if file.exists() else b""
        lines = data.split(b"\n")  # the last item is b"" when the file ends with a newline
        offset, self._valid_len = 0, len(data)
        for number, raw in enumerate(lines, 1):
            if raw.strip():
                try:
                    case = _parse_case(raw, self.manifest.get("task"))
                except ValueError as exc:
                    if number == len(lines):  # no newline after it: a write that was cut short
                        self._valid_len = offset
                        self.notices.append(f"{file}:{number}: ignored an incomplete last line (an "
                                            "interrupted write); the next add replaces it.")
                        break
                    raise BankError(f"{file}:{number}: not a valid case ({exc}); fix or delete that "
                                    "line.") from None
                if case.id in self._cases:
                    self.notices.append(f"{file}:{number}: case {case.id} appears twice; kept the first.")
                else:
                    self._remember(case)
            offset += len(raw) + 1
        self._needs_newline = 0 < self._valid_len == len(data) and not data.endswith(b"\n")
        self._hasher = hashlib.sha256(data[:self._valid_len])  # an ignored partial line is not content
        self._file_sha = self._hasher.hexdigest()

    def _remember(self, case: Case) -> None:
        self._cases[case.id] = case
        self._questions.add(case.question_id)
        self._per_agent[case.agent] += 1
        self._positive += case.reward > 0
        if case.quarantined:
            self._quarantined.add(case.id)

    def _load_quarantine(self) -> None:
        file = self.path / QUARANTINE
        if file.exists():
            for line in file.read_text(encoding="utf-8").splitlines():
                if line.strip() and not line.startswith("#"):
                    self._quarantined.add(line.strip())

    # --- the derived index ---------------------------------------------------------------------
    def _fingerprint(self) -> str:
        parts = (self.name, str(self.path.resolve()), self._file_sha, self.embedder.id, self.store_kind)
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()

    def _marker(self, folder: Path) -> dict | None:
        try:
            marker = json.loads((folder / MARKER).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return marker if isinstance(marker, dict) and marker.get("bank") == str(self.path.resolve()) else None

    def _write_marker(self, complete: bool) -> None:
        _write_atomic(self.index_path / MARKER, json.dumps({
            "made_by": "r2mad", "bank": str(self.path.resolve()), "fingerprint": self._fingerprint(),
            "cases_sha256": self._file_sha, "embedder": self.embedder.id, "store": self.store_kind,
            "complete": complete, "updated_at": _now()}, indent=1))

    def _open_index(self) -> None:
        if self.url:
            prefix = f"r2mad-{re.sub(r'[^A-Za-z0-9_-]', '_', self.name)}-{self._fingerprint()[:12]}-"
            self._store = open_server(self.url, self._api_key, prefix, self.embedder.dim)
            if self._store.count() != len(self._cases):
                self._store.drop()
                self._build_index()
            return
        self.index_root.mkdir(parents=True, exist_ok=True)
        stem = re.sub(r"[^A-Za-z0-9_.-]", "_", self.name)
        self._hold_index_lock(self.index_root / f"{stem}.lock")
        target = self.index_root / f"{stem}-{self._fingerprint()[:16]}"
        ours = {d: m for d in self.index_root.glob(f"{stem}-*") if (m := self._marker(d)) is not None}
        ready = next((d for d, m in ours.items() if m.get("complete") and m.get("cases_sha256") ==
                      self._file_sha and m.get("embedder") == self.embedder.id
                      and m.get("store") == self.store_kind), None)
        for folder in ours:  # stale indexes we built for this bank: other content or embedder
            if folder != ready:
                shutil.rmtree(folder)
        if target.exists() and target != ready:
            raise BankError(f"{target} exists but was not built by r2mad for {self.path}; remove it or "
                            "choose another index folder.")
        if ready is not None and ready != target:
            ready.rename(target)  # an index we kept current through add(): its name follows the content
        self.index_path = target
        target.mkdir(exist_ok=True)
        if ready is None:
            self._write_marker(complete=False)
        try:
            self._store = open_local(self.store_kind, target, self.embedder.dim)
        except IndexStoreError as exc:
            if ready is None:
                raise
            # our own derived index is damaged and we hold its lock: rebuild it from cases.jsonl
            shutil.rmtree(target)
            target.mkdir()
            self._write_marker(complete=False)
            self._store = open_local(self.store_kind, target, self.embedder.dim)
            self.notices.append(f"The index of {self.path} could not be read ({exc}); rebuilt it from "
                                "cases.jsonl.")
            ready = None
        if ready is None:
            started = time.perf_counter()
            self._build_index()
            if self._cases:
                self.notices.append(f"Built the index of {self.path} ({len(self._cases)} cases) in "
                                    f"{time.perf_counter() - started:.1f} s.")
        self._write_marker(complete=True)

    def _hold_index_lock(self, file: Path) -> None:
        """One open bank per embedded index: a second opener would rename or delete files in use."""
        try:
            import fcntl
        except ImportError:  # not POSIX: no lock
            return
        handle = open(file, "a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            raise BankError(f"Bank {self.path} is already open (in this or another process); share that "
                            "MemoryBank or close it first, or serve the bank from a Qdrant server with url=.")
        self._index_lock = handle

    def _build_index(self) -> None:
        cases = list(self._cases.values())
        for start in range(0, len(cases), 256):
            batch = cases[start:start + 256]
            self._upsert(batch, self._embed(batch))
        self._store.flush()

    def _embed(self, cases: Sequence[Case]) -> dict[str, np.ndarray]:
        """Vectors of every state text and response in `cases`, each distinct text encoded once."""
        texts = list(dict.fromkeys(t for c in cases for t in (_state_text(c), *c.responses)))
        return dict(zip(texts, self.embedder.encode(texts)))

    def _upsert(self, cases: Sequence[Case], vectors: dict[str, np.ndarray]) -> None:
        rows: dict[int, list] = {}
        for c in cases:
            payload = {"case_id": c.id, "question_id": c.question_id, "agent": c.agent, "round": c.round,
                       "reward": float(c.reward)}
            rows.setdefault(c.agent, []).append((point_id(c.id), vectors[_state_text(c)],
                                                 np.stack([vectors[r] for r in c.responses]), payload))
        with self._lock:
            for agent, agent_rows in rows.items():
                self._store.upsert(agent, agent_rows)

    def close(self) -> None:
        with self._lock:
            if self._store is not None:
                self._store.flush()
                self._store.close()
                self._store = None
            if self._index_lock is not None:
                self._index_lock.close()  # releases the flock
                self._index_lock = None

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
        vectors = self._embed(fresh)  # outside the lock: encoding is the slow part
        with self._lock:
            fresh = [c for c in fresh if c.id not in self._cases]  # another thread may have won
            if not fresh:
                return 0
            data = "".join(json.dumps(to_dict(c), ensure_ascii=False) + "\n" for c in fresh).encode()
            if self._needs_newline:
                data = b"\n" + data
            with open(self.path / CASES, "r+b" if (self.path / CASES).exists() else "wb") as handle:
                handle.truncate(self._valid_len)  # drops an incomplete line left by a killed writer
                handle.seek(self._valid_len)
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            self._valid_len += len(data)
            self._needs_newline = False
            self._hasher.update(data)
            self._file_sha = self._hasher.hexdigest()
            for case in fresh:
                self._remember(case)
            self._upsert(fresh, vectors)
            self._store.flush()
            self._write_manifest()
            if self.index_path is not None:
                self._write_marker(complete=True)
        return len(fresh)

    def _write_manifest(self) -> None:
        total = len(self._cases)
        self.manifest["counts"] = {
            "questions": len(self._questions), "cases": total,
            "cases_per_agent": {int(a): n for a, n in sorted(self._per_agent.items())},
            "positive_share": round(self._positive / total, 4) if total else 0.0}
        self.manifest["updated_at"] = _now()
        _write_atomic(self.path / MANIFEST, yaml.safe_dump(self.manifest, sort_keys=False, allow_unicode=True))

    def quarantine(self, case_id: str) -> None:
        """Keep a case out of every retrieval (recorded in quarantine.txt; cases.jsonl is untouched)."""
        self._set_quarantined(case_id, True)

    def unquarantine(self, case_id: str) -> None:
        self._set_quarantined(case_id, False)

    def _set_quarantined(self, case_id: str, flag: bool) -> None:
        with self._lock:
            if case_id not in self._cases:
                raise BankError(f"No case {case_id!r} in bank {self.path}; pick an id from its cases.")
            if flag:
                self._quarantined.add(case_id)
            else:
                self._quarantined.discard(case_id)
            lines = "".join(f"{cid}\n" for cid in sorted(self._quarantined))
            _write_atomic(self.path / QUARANTINE, "# case ids kept out of retrieval\n" + lines)

    # --- reading -------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._cases)

    @property
    def is_empty(self) -> bool:
        return not self._cases

    def has_question(self, question_id: str) -> bool:
        return question_id in self._questions

    def _shown(self, case: Case) -> Case:
        quarantined = case.id in self._quarantined
        return case if case.quarantined == quarantined else dataclasses.replace(case, quarantined=quarantined)

    def cases(self) -> list[Case]:
        with self._lock:
            return [self._shown(c) for c in self._cases.values()]

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
            hits = self._store.query(agent, np.asarray(query_vector, dtype=np.float32), limit + hidden)
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
            vectors = None if case is None else self._store.responses(case.agent, point_id(case_id))
        if vectors is None:
            raise BankError(f"No case {case_id!r} in the index of bank {self.path}; reopen the bank to rebuild it.")
        return np.asarray(vectors, dtype=np.float32)

    def retrieve(self, agent: int, state_text: str, peer_responses: dict[int, str], consensus: float,
                 k: int = 1, policy: str = "state-aware", gamma: float = 0.9, rng=None) -> Retrieval:
        """One agent-round: embed the state and the peers' responses (one encode call), take the top-3K
        candidates, pick K by `policy`, and estimate each peer's confidence from the picked cases."""
        started = time.perf_counter()
        peers = sorted(peer_responses)
        vectors = self.embedder.encode([state_text] + [peer_responses[j] for j in peers])
        found = self.retrieve_vectors(agent, vectors[0], dict(zip(peers, vectors[1:])), consensus, k,
                                      policy, gamma, rng)
        return dataclasses.replace(found, seconds=time.perf_counter() - started)

    def retrieve_vectors(self, agent: int, state_vector: np.ndarray, peer_vectors: dict[int, np.ndarray],
                         consensus: float, k: int = 1, policy: str = "state-aware", gamma: float = 0.9,
                         rng=None) -> Retrieval:
        """`retrieve` for vectors already encoded."""
        started = time.perf_counter()
        pool = self.candidates(agent, state_vector, 3 * k)
        picks = []
        if pool:
            states = np.stack([c.state_vector for c in pool])
            picks = select_cases(policy, [c.similarity for c in pool], [c.case.reward for c in pool],
                                 states @ states.T, consensus, k, gamma, rng)
        chosen = [pool[i] for i, _ in picks]
        confidence = {}
        for peer, vector in peer_vectors.items():
            usable = [c for c in chosen if peer < len(c.response_vectors)]
            value = peer_confidence([float(c.response_vectors[peer] @ vector) for c in usable],
                                    [c.case.correct[peer] for c in usable])
            confidence[peer] = (value, confidence_label(value))
        return Retrieval(
            lam=policy_lambda(policy, consensus, gamma),
            candidates=tuple((c.case.id, c.similarity, float(c.case.reward)) for c in pool),
            picked=tuple((pool[i].case.id, pool[i].similarity, float(pool[i].case.reward), score)
                         for i, score in picks),
            cases=tuple(c.case for c in chosen), confidence=confidence,
            seconds=time.perf_counter() - started)


def _state_text(case: Case) -> str:
    return render_state(case.question, case.previous_response, case.summary, case.consensus)


def _haystack(case: Case) -> str:
    parts = (case.id, case.question_id, case.question, case.previous_response, case.summary, case.gold,
             *case.responses)
    return "\n".join(parts).lower()
