"""A full disk or a failing run store loses nothing: one sentence to the user, the debate kept in a recovery
file (or in memory) and saved once the store can take it, no run left "running", no half-written file."""
import errno
import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from r2mad.cli import main
from r2mad.runs.faults import StoreFailed
from r2mad.runs.store import RunStore
from r2mad.settings.config import load_config
from r2mad.types import AgentTurn, Answer, Case, Message, Round, Task, Transcript
from testing.scripted_server import ok
from tests import helpers

QUESTION = ["--question", "Largest planet?", "--option", "A=Mars", "--option", "B=Jupiter", "--gold", "B"]
TASK = Task("mcq", "Which is right?", (("A", "this"), ("B", "that")), gold="B", id="q1")


def transcript(status: str = "done") -> Transcript:
    turns = tuple(AgentTurn(agent=a, round=0, persona="careful", prompt=(Message("user", "q"),),
                            text="I think ((B))", seconds=0.5, tokens_in=10, tokens_out=5,
                            answer=Answer("B", "double_paren")) for a in range(2))
    return Transcript(task=TASK, method="mad", backbone="fake", settings={}, rounds=(Round(0, turns, 1.0),),
                      final=Answer("B", "double_paren"), correct=True, status=status, notices=(), seconds=1.0)


def start(store: RunStore) -> str:
    return store.start_run(method="mad", backbone="fake", bank=None, task=TASK, settings={}, seed=0,
                           code_version="test")


def data_dir(config_dir) -> Path:
    return Path(load_config(config_dir).app.data_dir)


def real_full_disk(monkeypatch):
    """SQLite's own "database or disk is full": every connection opened from now on may not grow the file."""
    connect = sqlite3.connect

    def capped(*args, **kwargs):
        conn = connect(*args, **kwargs)
        conn.execute(f"PRAGMA max_page_count = {conn.execute('PRAGMA page_count').fetchone()[0]}")
        return conn
    monkeypatch.setattr(sqlite3, "connect", capped)


@pytest.fixture
def full_disk(monkeypatch):
    yield helpers.full_disk(monkeypatch)
    helpers.FullDisk.full = False


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", ""])
    child.wait()
    return child.pid


def test_a_full_disk_mid_debate_is_one_sentence_and_the_run_is_saved_when_the_store_next_opens(
        config_dir, server, capsys, monkeypatch, tmp_path):
    db = data_dir(config_dir) / "runs.sqlite"
    RunStore(db).close()
    server.responder = lambda body: ok("Let me reason at length. " * 400 + "((B))")  # more than the file can grow
    with monkeypatch.context() as patch:
        real_full_disk(patch)
        assert main(["--config-dir", str(config_dir), "debate", *QUESTION]) == 0
    printed = capsys.readouterr()
    assert "Final answer: B" in printed.out and "Traceback" not in printed.err
    notes = printed.err.splitlines()
    assert len(notes) == 1 and "disk is full" in notes[0] and "recovery" in notes[0] and "free some space" in notes[0]
    [kept] = (db.parent / "recovery").glob("*.jsonl")
    # the recovery file is an export: another store imports it as it is
    monkeypatch.setenv("R2MAD_DATA_DIR", str(tmp_path / "elsewhere"))
    assert main(["--config-dir", str(config_dir), "import", str(kept)]) == 0
    assert RunStore(tmp_path / "elsewhere" / "runs.sqlite").get_run(kept.stem).status == "done"
    reopened = RunStore(db)  # the disk has room again: the next opening saves it
    run = reopened.get_run(kept.stem)
    assert run.status == "done" and run.correct is True and run.rounds == len(run.transcript.rounds) > 0
    assert reopened.count_runs(status="running") == 0 and not kept.exists()


def test_a_store_that_cannot_be_written_opens_for_reading_and_marks_interrupted_runs_once_it_can(tmp_path, full_disk):
    db = tmp_path / "runs.sqlite"
    with RunStore(db) as store:
        ended = start(store)
        with store.transaction() as conn:
            conn.execute("UPDATE runs SET pid = ? WHERE id = ?", (dead_pid(), ended))
    full_disk.full = True
    store = RunStore(db)  # mark_interrupted cannot write: the store still opens
    [notice] = store.take_notices()
    assert "disk is full, so it opens for reading" in notice
    assert store.get_run(ended).status == "running" and len(store.list_runs()) == 1
    with pytest.raises(StoreFailed, match=r"disk is full; free some space in .* and try again\.$"):
        start(store)
    full_disk.full = False
    start(store)  # the first write that succeeds catches up
    assert store.get_run(ended).status == "failed" and "interrupted" in store.get_run(ended).status_note


def test_a_run_no_disk_takes_is_kept_in_memory_and_saved_at_the_stores_next_write(tmp_path, full_disk):
    store = RunStore(tmp_path / "runs.sqlite")
    run_id = start(store)
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    store.recovery_dirs = [blocked / "recovery"]  # no recovery folder can be made either
    record = store.recorder(run_id)
    full_disk.full = True
    record(transcript("running"))  # a save in the middle fails quietly: the next one retries
    assert store.take_notices() == []
    record(transcript("done"))
    [notice] = store.take_notices()
    assert "disk is full" in notice and f"run {run_id[:8]} was kept in memory only" in notice
    assert store.get_run(run_id).status == "running"  # not even the small status change fitted
    full_disk.full = False
    start(store)
    saved = store.get_run(run_id)
    assert saved.status == "done" and saved.final_answer == "B" and store.take_notices() == []


class FullWriter:
    """A file handle on a disk that fills after `room` bytes."""

    def __init__(self, handle, room: int):
        self.handle, self.room = handle, room

    def write(self, text):
        if len(text) > self.room:
            self.handle.write(text[:self.room])
            self.room = 0
            raise OSError(errno.ENOSPC, "No space left on device")
        self.room -= len(text)
        return self.handle.write(text)

    def __getattr__(self, name):
        return getattr(self.handle, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.handle.close()


def fill_after(monkeypatch, module, room: int):
    monkeypatch.setattr(module, "open", lambda *a, **k: FullWriter(open(*a, **k), room), raising=False)


def test_an_export_to_a_full_disk_is_one_sentence_and_leaves_the_old_file_whole(config_dir, tmp_path, capsys,
                                                                                monkeypatch):
    import r2mad.safewrite

    with RunStore(data_dir(config_dir) / "runs.sqlite") as store:
        store.save_transcript(start(store), transcript(), "done")
    out = tmp_path / "out" / "runs.jsonl"
    out.parent.mkdir()
    out.write_text("an earlier export\n")
    fill_after(monkeypatch, r2mad.safewrite, 100)
    assert main(["--config-dir", str(config_dir), "export", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{out} could not be written because the disk is full" in err
    assert out.read_text() == "an earlier export\n" and [p.name for p in out.parent.iterdir()] == ["runs.jsonl"]


def test_a_bank_append_on_a_full_disk_is_one_sentence_and_keeps_the_bank_whole(tmp_path, monkeypatch):
    import r2mad.memory.bank
    from r2mad.backends.embedder import HashEmbedder
    from r2mad.memory.bank import MemoryBank
    from r2mad.memory.files import BankError

    def cases(q):
        return [Case(f"{q}:a{a}:r1", q, "mcq", a, 1, f"Question {q}?", "((A))", "split", 0.5, ("((A))", "((B))"),
                     ("A", "B"), "B", (False, True), float(a == 1)) for a in range(2)]
    bank = MemoryBank.create(tmp_path / "bank", task_kind="mcq", split="train", backbone="x",
                             embedder=HashEmbedder(64), code_version="t", index_root=tmp_path / "index")
    try:
        bank.add(cases("q1"))
        before = (tmp_path / "bank" / "cases.jsonl").read_bytes()
        with monkeypatch.context() as patch:
            fill_after(patch, r2mad.memory.bank, 50)
            with pytest.raises(BankError, match=r"because the disk is full; it keeps its earlier ones"):
                bank.add(cases("q2"))
        assert (tmp_path / "bank" / "cases.jsonl").read_bytes() == before and len(bank) == 2
        assert bank.add(cases("q2")) == 2  # room again: the same add goes through
    finally:
        bank.close()
    assert len(MemoryBank.open(tmp_path / "bank", HashEmbedder(64), index_root=tmp_path / "index")) == 4


def test_an_index_build_on_a_full_disk_is_one_sentence_and_removes_the_partial_index(tmp_path, monkeypatch):
    from r2mad.backends.embedder import HashEmbedder
    from r2mad.memory.bank import MemoryBank
    from r2mad.memory.files import BankError
    from r2mad.memory.index import BankIndex

    bank = MemoryBank.create(tmp_path / "bank", task_kind="mcq", split="train", backbone="x",
                             embedder=HashEmbedder(64), code_version="t", index_root=tmp_path / "index")
    bank.add([Case("q:a0:r1", "q", "mcq", 0, 1, "Q?", "((A))", "s", 0.5, ("((A))",), ("A",), "A", (True,), 1.0)])
    bank.close()
    for folder in (tmp_path / "index").glob("bank-*"):  # the index must be built again
        shutil.rmtree(folder)

    def no_room(self, cases, vectors):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(BankIndex, "upsert", no_room)
    with pytest.raises(BankError, match=r"could not be built .* because the disk is full, and the partial index "
                                        r"was removed"):
        MemoryBank.open(tmp_path / "bank", HashEmbedder(64), index_root=tmp_path / "index")
    assert not [p for p in (tmp_path / "index").iterdir() if p.is_dir()]


def test_an_index_write_the_disk_has_no_room_for_is_refused_before_qdrant_maps_it(tmp_path, monkeypatch):
    """Qdrant Edge writes through mmap: on a full disk the process would die of SIGBUS, so room is checked first."""
    from collections import namedtuple

    import r2mad.memory.index
    from r2mad.backends.embedder import HashEmbedder
    from r2mad.memory.bank import MemoryBank
    from r2mad.memory.files import BankError

    bank = MemoryBank.create(tmp_path / "bank", task_kind="mcq", split="train", backbone="x",
                             embedder=HashEmbedder(64), code_version="t", index_root=tmp_path / "index")
    usage = namedtuple("usage", "total used free")
    try:
        with monkeypatch.context() as patch:
            patch.setattr(r2mad.memory.index.shutil, "disk_usage", lambda path: usage(10**6, 10**6 - 300_000, 300_000))
            with pytest.raises(BankError, match=r"needs about 1\.\d MB in .* but its disk has 0\.3 MB free; free "
                                                r"some space there and open the bank again"):
                bank.add([Case("q:a0:r1", "q", "mcq", 0, 1, "Q?", "((A))", "s", 0.5, ("((A))",), ("A",), "A",
                               (True,), 1.0)])
    finally:
        bank.close()
    reopened = MemoryBank.open(tmp_path / "bank", HashEmbedder(64), index_root=tmp_path / "index")
    try:  # the case reached cases.jsonl; the index is rebuilt from it once there is room
        assert len(reopened) == 1 and reopened.retrieve(0, "Q?", {0: "((A))"}, consensus=1.0).cases
    finally:
        reopened.close()


def test_importing_what_is_no_export_names_the_file_and_the_line(config_dir, tmp_path, capsys):
    garbage = tmp_path / "photo.jpg"
    garbage.write_bytes(b"\x95\xff\xd8 binary" * 1000)
    assert main(["--config-dir", str(config_dir), "import", str(garbage)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{garbage} is not a JSONL export of runs (line 1:" in err
    assert "export it again with `python -m r2mad export" in err
    half = tmp_path / "half.jsonl"
    with RunStore(tmp_path / "source.sqlite") as source:
        from r2mad.runs.io import export_jsonl
        source.save_transcript(start(source), transcript(), "done")
        export_jsonl(source, half)
    half.write_text(half.read_text() + '{"id": "x"}\n')  # a second line that is no run
    assert main(["--config-dir", str(config_dir), "import", str(half)]) == 2
    assert f"{half} is not a JSONL export of runs (line 2:" in capsys.readouterr().err
    assert RunStore(data_dir(config_dir) / "runs.sqlite").count_runs() == 0  # all or nothing


@pytest.mark.slow  # seconds by design (worker processes, deadlines, threads)
def test_an_import_reads_one_line_at_a_time(tmp_path):
    import tracemalloc

    from r2mad.runs.io import export_jsonl, import_jsonl

    with RunStore(tmp_path / "source.sqlite") as source:
        source.save_transcript(start(source), transcript(), "done")
        export_jsonl(source, tmp_path / "one.jsonl")
    line = json.loads((tmp_path / "one.jsonl").read_text())
    big = tmp_path / "big.jsonl"
    with open(big, "w") as fh:
        for n in range(3000):
            fh.write(json.dumps({**line, "id": f"run{n}", "question": "padding " * 300}) + "\n")
    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(b"\x95" * 20_000_000)  # no newline at all
    store = RunStore(tmp_path / "runs.sqlite")
    tracemalloc.start()
    try:
        assert import_jsonl(store, big) == 3000
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        with pytest.raises(ValueError, match="is not a JSONL export"):
            import_jsonl(store, garbage)
        _, garbage_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < big.stat().st_size / 10 and garbage_peak < 1_000_000


def test_a_waiting_cli_says_what_it_waits_for_then_goes_on(config_dir, capsys, monkeypatch):
    import threading

    import yaml

    from r2mad.runs.database import QUICK_WAIT_S, StoreFile
    app = yaml.safe_load((config_dir / "app.yaml").read_text())
    (config_dir / "app.yaml").write_text(yaml.safe_dump({**app, "store_lock_wait_s": 30}))
    db = data_dir(config_dir) / "runs.sqlite"
    RunStore(db).close()
    other = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")  # another program writing, until the CLI has said it waits
    said = StoreFile._begin_within

    def waited(self, conn, seconds):  # the long wait after the note: the other program ends a moment later
        if seconds > QUICK_WAIT_S:
            threading.Timer(0.2, other.close).start()
        return said(self, conn, seconds)
    monkeypatch.setattr(StoreFile, "_begin_within", waited)
    assert main(["--config-dir", str(config_dir), "debate", *QUESTION]) == 0
    notes = capsys.readouterr().err.splitlines()
    assert notes == [f"note: Waiting up to 30 s for another program that is writing to the run store {db}."]
    assert RunStore(db).count_runs(status="done") == 1


def test_the_app_says_a_full_store_in_one_sentence_and_keeps_serving(config_dir, server, full_disk, monkeypatch):
    import asyncio
    from types import SimpleNamespace

    from r2mad.serving.services import Services
    from r2mad.ui import handlers

    said: list[str] = []
    monkeypatch.setattr(handlers, "warn", lambda message, secret=None: said.append(message))
    form = dict(backbone="fake", methods=["mad"], bank="", agents=2, rounds=1, k=1, gamma=0.9, temperature=0.7,
                max_tokens=32, seed=0, answer_guard="off", question="Largest planet?", option_a="Mars",
                option_b="Jupiter", gold="B")

    def debate(session):
        async def collect():
            return [u async for u in handlers.DebateHandlers(services).run_debate(
                **form, visitor_id="f" * 32, request=SimpleNamespace(session_hash=session))]
        return asyncio.run(collect())

    full_disk.full = True
    services = Services(load_config(config_dir))  # the store cannot be written: the app still starts
    updates = debate("s1")
    assert said == []  # a refusal before the start is said once, on the outcome line, not also as a toast
    assert updates[-1][0].startswith("Not started: ") and "could not be written because the disk is full" in \
        updates[-1][0] and server.hits == 0  # refused before any call
    full_disk.full = False
    said.clear()
    recorder = services.store.recorder

    def filling_at_the_end(run_id):  # the disk fills while the next debate runs
        save = recorder(run_id)

        def record(t):
            full_disk.full = t.status != "running"
            save(t)
        return record
    monkeypatch.setattr(services.store, "recorder", filling_at_the_end)
    updates = debate("s2")
    assert len(said) == 1 and "so run" in said[0] and "recovery" in said[0] and "Jupiter" in str(updates[-1])
    assert "Final answer: B" in str(updates[-1][0]) and "**Not saved yet** — kept and saved when space returns." \
        in str(updates[-1][0])  # the visitor's own line says it, not a toast only
    full_disk.full = False
    [kept] = (data_dir(config_dir) / "recovery").glob("*.jsonl")
    start(services.store)  # the next write saves it
    assert services.store.get_run(kept.stem).status == "done" and not kept.exists()


def test_a_run_kept_while_the_store_disk_is_full_goes_to_the_persistent_volume(tmp_path, full_disk, monkeypatch):
    """On a Space the data folder may be full while /data has room: the recovery file goes there, not to the
    system's temp folder (which a restart loses); when only the temp folder takes it, the sentence says so."""
    from r2mad.runs import faults

    volume = tmp_path / "volume"
    volume.mkdir()
    monkeypatch.setattr(faults, "PERSISTENT", volume)
    store = RunStore(tmp_path / "data" / "runs.sqlite")
    (tmp_path / "data" / "recovery").write_text("a file where the folder would go")  # beside the store: no room
    run_id = start(store)
    full_disk.full = True
    store.recorder(run_id)(transcript())
    [kept] = (volume / "r2mad-recovery").glob("*/*.jsonl")
    assert kept.stem == run_id and store.unsaved([run_id, "other"]) == [run_id]
    [said] = store.take_notices()
    assert str(kept) in said and "temp folder" not in said
    monkeypatch.setattr(faults, "PERSISTENT", tmp_path / "no-volume")
    store2 = RunStore(tmp_path / "data2" / "runs.sqlite")
    (tmp_path / "data2" / "recovery").write_text("no room")
    full_disk.full = False
    other = start(store2)
    full_disk.full = True
    store2.recorder(other)(transcript())
    assert "the system's temp folder, which a restart may lose" in store2.take_notices()[0]
    full_disk.full = False
    start(store2)  # the next write imports it, wherever it waited
    assert store2.get_run(other).status == "done" and store2.unsaved([other]) == []
