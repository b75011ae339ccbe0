"""Run store: round trips, filters, concurrency, crash safety, secrets, taxonomy, migrations."""
from __future__ import annotations

import csv
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from contextlib import closing
from pathlib import Path

import pytest

from r2mad.runs import database
from r2mad.runs.io import (
    export_annotations_csv,
    export_jsonl,
    import_jsonl,
    push_to_hub,
)
from r2mad.runs.store import RunStore, load_taxonomy
from r2mad.types import Task
from tests.helpers import HF_SECRET as SECRET
from tests.helpers import STORED_MCQ as MCQ
from tests.helpers import make_transcript, save_run

ROOT = Path(__file__).resolve().parents[2]
MATH = Task("math", "What is 3 + 4?", gold="7", id="m1", source="demo-math")
TAXONOMY = ["majority_persuaded_correct_agent", "misleading_retrieved_case", "wrong_confidence",
            "mask_removed_correct_answer", "advice_misled", "parse_failure", "backend_error",
            "shared_misconception_unrecovered", "other", "oscillation", "stalled_split",
            "answer_changed_no_new_argument", "correct_answer_outvoted", "premature_consensus_stop",
            "judge_endorsed_wrong_answer", "problem_drift"]  # appended: ids in use never move


def test_export_import_round_trip_is_byte_identical(tmp_path):
    a = RunStore(tmp_path / "a" / "runs.db")
    t1 = make_transcript(MCQ, [["A", "B", "A"], ["A", "A", "A"]], "A", True,
                         settings={"agents": 3, "temperature": 0.7, "note": "ünïcode ✓"})
    first = save_run(a, t1, bank="demo")
    partial = a.start_run(method="r2mad", backbone="qwen", bank=None, task=MATH, settings={},
                          seed=None, code_version="test", source="app")
    a.annotate(first, annotator="ana", labels=["other"], note="first look")
    a.annotate(first, annotator="ana", labels=["wrong_confidence", "other"], note="second look")
    a.annotate(first, annotator="bo", labels=["parse_failure"])
    export = tmp_path / "a.jsonl"
    assert export_jsonl(a, export) == 2

    b = RunStore(tmp_path / "b.db")
    assert import_jsonl(b, export) == 2
    assert import_jsonl(b, export) == 0  # a second import adds nothing
    again = tmp_path / "b.jsonl"
    export_jsonl(b, again)
    assert again.read_bytes() == export.read_bytes()

    def rows(store):
        return store._conn().execute("SELECT * FROM runs ORDER BY id").fetchall()
    assert [tuple(r) for r in rows(a)] == [tuple(r) for r in rows(b)]
    record = b.get_run(first)
    assert record.transcript == t1 and record.bank == "demo" and record.seed == 1
    assert [x.annotator for x in record.annotations] == ["ana", "bo"]
    ana = record.annotations[0]
    assert ana.labels == ("wrong_confidence", "other") and ana.note == "second look"
    assert [(e.seq, e.labels, e.note) for e in ana.history] == [(1, ("other",), "first look")]
    assert b.get_run(partial).transcript is None and b.get_run(partial).source == "app"
    assert b.get_run(partial).task == MATH


def test_filters_find_hand_made_failure_modes(tmp_path):
    store = RunStore(tmp_path / "runs.db")
    # round 0: two of three wrong -> shared misconception; recovered to A.
    shared = save_run(store, make_transcript(MCQ, [["A", "B", "B"], ["A", "A", "A"]], "A", True))
    # agents 0 and 1 go from right to wrong.
    flipped = save_run(store, make_transcript(MCQ, [["A", "A", "B"], ["B", "B", "B"]], "B", False))
    # one UNPARSED answer in round 0; method r2mad.
    unparsed = save_run(store, make_transcript(MATH, [["7", None, "7"], ["7", "7", "7"]], "7", True,
                                               method="r2mad"))
    no_gold = save_run(store, make_transcript(Task("mcq", "?", (("A", "x"),)), [["A", "A"]],
                                              "A", None))
    def ids(**kw):
        return {r.id for r in store.list_runs(**kw)}
    assert ids(shared_misconception=True) == {shared}
    assert ids(shared_misconception=False) == {flipped, unparsed}
    assert ids(flip=True) == {flipped}
    assert ids(parse_failures=True) == {unparsed}
    assert ids(parse_failures=False) == {shared, flipped, no_gold}
    assert ids(correct=False) == {flipped}
    assert ids(correct=True) == {shared, unparsed}
    assert ids(method="r2mad") == {unparsed}
    assert ids(method="mad", correct=True) == {shared}
    assert store.count_runs(correct=True) == 2
    row = {r.id: r for r in store.list_runs()}[flipped]
    # 6 turns x 15 tokens + one 10-token summary
    assert (row.final_answer, row.correct, row.tokens, row.rounds) == ("B", False, 100, 2)
    assert row.gold == "A" and row.question == "Which is right?" and row.status == "done"
    assert [r.id for r in store.list_runs(limit=2, offset=1)] == [unparsed, flipped]


def test_partial_transcripts_keep_the_rounds_done_so_far(tmp_path):
    store = RunStore(tmp_path / "runs.db")
    t = make_transcript(MCQ, [["A", "B", "A"]], None, None, status="running")
    run_id = save_run(store, t)
    assert store.get_run(run_id).rounds == 1 and store.get_run(run_id).status == "running"
    store.save_transcript(run_id, make_transcript(MCQ, [["A", "B", "A"], ["A", "A", "A"]], "A",
                                                  True), "cancelled")
    record = store.get_run(run_id)
    assert (record.status, record.rounds, record.transcript.status) == ("cancelled", 2, "cancelled")
    with pytest.raises(ValueError, match="running, done, failed, cancelled"):
        store.save_transcript(run_id, t, "finished")


def test_eight_threads_writing_at_once_lose_nothing(tmp_path):
    path = tmp_path / "runs.db"
    stores = [RunStore(path), RunStore(path)]  # like the app and a CLI on the same file
    shared = save_run(stores[0], make_transcript(MCQ, [["A", "A", "A"]], "A", True))
    t = make_transcript(MCQ, [["A", "B", "A"], ["A", "A", "A"]], "A", True)
    errors = []

    def work(n: int) -> None:
        store = stores[n % 2]
        try:
            for i in range(50):
                run_id = save_run(store, t)
                store.annotate(run_id, annotator=f"t{n}", labels=["other"], note=str(i))
                store.annotate(shared, annotator=f"t{n}", labels=["other"], note=str(i))
        except Exception as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    check = RunStore(path)
    assert check.count_runs() == 401
    assert check.count_runs(status="done") == 401
    summaries = check.list_runs(limit=1000)
    assert sum(s.annotation_count for s in summaries if s.id != shared) == 400
    edited = check.get_run(shared).annotations
    assert len(edited) == 8 and all(len(a.history) == 49 and a.note == "49" for a in edited)


WRITER = """
import sys
from r2mad.runs.store import RunStore
from r2mad.types import Task
sys.path.insert(0, sys.argv[2])
from test_runs import MCQ, make_transcript
store = RunStore(sys.argv[1])
rounds = [["A", "B", "A"], ["A", "A", "B"], ["A", "A", "A"]]
while True:
    run_id = store.start_run(method="mad", backbone="x", bank=None, task=MCQ, settings={},
                             seed=0, code_version="t")
    for r in range(1, 4):
        store.save_transcript(run_id, make_transcript(MCQ, rounds[:r], None, None, status="running",
                                                      text="x" * 5000), "running")
    store.save_transcript(run_id, make_transcript(MCQ, rounds, "A", True), "done")
"""


def test_writer_killed_mid_write_leaves_a_readable_database(tmp_path):
    path = tmp_path / "runs.db"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(Path(__file__).parent)],
                            env=env, cwd=ROOT)
    deadline, count = time.time() + 60, 0
    while time.time() < deadline and count < 15 and proc.poll() is None:
        time.sleep(0.2)
        if path.exists():
            with closing(sqlite3.connect(path, timeout=30)) as probe:
                try:
                    count = probe.execute("SELECT COUNT(*) FROM runs "
                                          "WHERE status = 'done'").fetchone()[0]
                except sqlite3.OperationalError:  # the writer has not created its tables yet
                    continue
    assert proc.poll() is None, "the writer process died on its own"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    with closing(sqlite3.connect(path)) as probe:
        assert probe.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    store = RunStore(path)  # marks the dead writer's run failed
    summaries = store.list_runs(limit=10000)
    assert len(summaries) >= 15 and store.count_runs(status="running") == 0
    for summary in summaries:
        record = store.get_run(summary.id)
        if record.status == "done":
            assert record.rounds == 3 and record.transcript.final.value == "A"
        else:
            assert record.status == "failed" and "interrupted" in record.status_note
        if record.transcript is not None:
            assert len(record.transcript.rounds) == record.rounds
            assert record.transcript.status == record.status


def test_runs_of_dead_or_silent_processes_become_failed_on_reopen(tmp_path):
    path = tmp_path / "runs.db"
    store = RunStore(path)
    alive = save_run(store, make_transcript(MCQ, [["A", "B", "A"]], None, None, status="running"))
    dead = save_run(store, make_transcript(MCQ, [["A", "B", "A"]], None, None, status="running"))
    silent = store.start_run(method="mad", backbone="x", bank=None, task=MCQ, settings={},
                             seed=None, code_version="t")
    busy = store.start_run(method="mad", backbone="x", bank=None, task=MCQ, settings={},
                           seed=None, code_version="t")
    finished = subprocess.Popen([sys.executable, "-c", "pass"])
    finished.wait()
    with store.transaction() as conn:
        conn.execute("UPDATE runs SET pid = ? WHERE id = ?", (finished.pid, dead))
        conn.execute("UPDATE runs SET hostname = 'elsewhere', updated_at = ? WHERE id = ?",
                     (time.time() - 7200, silent))
        conn.execute("UPDATE runs SET hostname = 'elsewhere' WHERE id = ?", (busy,))
    store.close()
    store = RunStore(path)
    status = {r.id: r.status for r in store.list_runs()}
    assert status == {alive: "running", dead: "failed", silent: "failed", busy: "running"}
    record = store.get_run(dead)
    assert f"process {finished.pid}" in record.status_note
    assert record.rounds == 1 and record.transcript.status == "failed"
    assert "nothing saved for 7200 s" in store.get_run(silent).status_note


def test_no_secret_reaches_any_stored_or_exported_byte(tmp_path):
    settings = {"hf_token": SECRET, "HF_TOKEN": SECRET, "apiKey": SECRET, "x-api-key": SECRET,
                "client_secret": SECRET, "max_tokens": 256, "endpoint": SECRET,
                "nested": {"Authorization": f"Bearer {SECRET}", "db_password": SECRET,
                           "headers": [{"access_token": SECRET}, {"label": f"key {SECRET} used"}]}}
    path = tmp_path / "runs.db"
    store = RunStore(path, secrets=lambda: {SECRET})
    t = make_transcript(MCQ, [["A", "B", "A"]], "A", True, settings=settings,
                        text=f"401 with {SECRET}: ")
    run_id = save_run(store, t)
    store.annotate(run_id, annotator="ana", labels=["backend_error"], note=f"{SECRET} leaked?")
    store.set_status(run_id, "failed", note=f"error: bad key {SECRET}")
    export_jsonl(store, tmp_path / "out.jsonl")
    export_annotations_csv(store, tmp_path / "out.csv")
    stored = store.get_run(run_id)
    assert stored.settings["max_tokens"] == 256 and stored.settings["hf_token"] == "[redacted]"
    assert stored.transcript.settings["nested"]["headers"][1]["label"] == "key [redacted] used"
    files = [p for p in tmp_path.iterdir() if p.is_file()]
    assert {p.name for p in files} >= {"runs.db", "runs.db-wal", "out.jsonl", "out.csv"}
    for p in files:  # with the WAL still open
        assert SECRET.encode() not in p.read_bytes(), p.name
    store.close()
    for p in tmp_path.iterdir():
        assert SECRET.encode() not in p.read_bytes(), p.name
    # Secret-named keys are scrubbed even when the store is given no secret values.
    plain = RunStore(tmp_path / "plain.db")
    other = save_run(plain, make_transcript(MCQ, [["A"]], "A", True, settings={"hf_token": SECRET}))
    assert plain.get_run(other).settings == {"hf_token": "[redacted]"}
    assert plain.get_run(other).transcript.settings == {"hf_token": "[redacted]"}


def test_annotations_use_the_taxonomy_and_keep_edit_history(tmp_path):
    assert list(load_taxonomy(ROOT / "configs" / "annotation.yaml")) == TAXONOMY
    store = RunStore(tmp_path / "runs.db")
    run_id = save_run(store, make_transcript(MCQ, [["A", "B", "A"]], "A", True))
    with pytest.raises(ValueError, match="'nonsense'.*majority_persuaded_correct_agent.*other"):
        store.annotate(run_id, annotator="ana", labels=["other", "nonsense"])
    with pytest.raises(ValueError, match="No label"):
        store.annotate(run_id, annotator="ana", labels=[])
    first = store.annotate(run_id, annotator="ana", labels=["advice_misled"], note="a")
    created = store.get_run(run_id).annotations[0].created_at
    time.sleep(0.01)
    assert store.annotate(run_id, annotator="ana", labels=["advice_misled"], note="a") == first
    assert store.get_run(run_id).annotations[0].history == ()  # a repeated save is not an edit
    assert store.annotate(run_id, annotator="ana", labels=["other"], note="b") == first
    store.annotate(run_id, annotator="bo", labels=["wrong_confidence"])
    ana, bo = store.get_run(run_id).annotations
    assert ana.created_at == created and ana.updated_at > created
    assert (ana.labels, ana.note, bo.labels) == (("other",), "b", ("wrong_confidence",))
    assert [(e.labels, e.note) for e in ana.history] == [(("advice_misled",), "a")]
    export_annotations_csv(store, tmp_path / "labels.csv")
    with open(tmp_path / "labels.csv", newline="", encoding="utf-8") as fh:
        table = list(csv.DictReader(fh))
    assert [(r["annotator"], r["labels"], r["correct"]) for r in table] == [
        ("ana", "other", "1"), ("bo", "wrong_confidence", "1")]
    bad = tmp_path / "bad.yaml"
    bad.write_text("labels:\n  - {id: other, description: x}\n  - {id: other, description: y}\n")
    with pytest.raises(ValueError, match="appears twice"):
        load_taxonomy(bad)


def test_older_schemas_are_migrated_and_newer_ones_refused(tmp_path, monkeypatch):
    path = tmp_path / "runs.db"
    sqlite3.connect(path).close()  # an empty v0 file
    store = RunStore(path)
    shipped = len(database.MIGRATIONS)
    assert store._conn().execute("PRAGMA user_version").fetchone()[0] == shipped >= 2
    assert store._conn().execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    run_id = save_run(store, make_transcript(MCQ, [["A"]], "A", True))
    store.close()
    monkeypatch.setattr(database, "MIGRATIONS",
                        database.MIGRATIONS + [("ALTER TABLE runs ADD COLUMN reviewer TEXT",)])
    store = RunStore(path)
    conn = store._conn()
    assert conn.execute("PRAGMA user_version").fetchone()[0] == shipped + 1
    assert conn.execute("SELECT reviewer FROM runs WHERE id = ?", (run_id,)).fetchone()[0] is None
    assert store.get_run(run_id).correct is True
    store.close()
    newer = tmp_path / "newer.db"
    with sqlite3.connect(newer) as conn:
        conn.execute("PRAGMA user_version = 99")
    with pytest.raises(RuntimeError, match="upgrade r2mad"):
        RunStore(newer)


def test_push_to_hub_needs_a_token_and_an_export(tmp_path):
    with pytest.raises(ValueError, match="HF_TOKEN"):
        push_to_hub(tmp_path / "out.jsonl", "me/runs", None)
    with pytest.raises(FileNotFoundError, match="run export first"):
        push_to_hub(tmp_path / "missing.jsonl", "me/runs", SECRET)


def test_a_short_id_finds_its_run_only_when_one_run_has_it(tmp_path):
    store = RunStore(tmp_path / "runs.db")
    ids = [save_run(store, make_transcript(MCQ, [["A"]], "A", True)) for _ in range(2)]
    assert store.full_id(ids[0][:8]) == ids[0] and store.full_id(ids[1][:8]) == ids[1]
    assert store.get_run(ids[1][:8]).id == ids[1]  # so every command and tab takes the short id
    assert store.full_id("") == "" and store.full_id("zz%") == "zz%"  # no run, no pattern: unchanged
    common = next((n for n in range(8, 0, -1) if ids[0][:n] == ids[1][:n]), 0)
    assert store.full_id(ids[0][:common]) == ids[0][:common]  # several runs share it: unchanged


def test_the_run_list_carries_each_annotators_labels_and_the_adjudicated_ones(tmp_path):
    from r2mad.annotation.book import LabelBook
    from r2mad.ui.render.tables import label_chips, outcome_chip, run_rows

    store = RunStore(tmp_path / "runs.db")
    labelled = save_run(store, make_transcript(MCQ, [["A", "B", "B"]], "B", False))
    bare = save_run(store, make_transcript(MCQ, [["A", "A", "A"]], "A", True))
    store.annotate(labelled, annotator="ana", labels=["advice_misled", "other"])
    store.annotate(labelled, annotator="bo", labels=["advice_misled"])
    LabelBook(store).set_final(labelled, ["wrong_confidence"], "cy")
    runs = {r.id: r for r in store.list_runs()}
    assert sorted(runs[labelled].labels) == ["advice_misled", "advice_misled", "other"]
    assert runs[labelled].final_labels == ("wrong_confidence",)
    assert (runs[bare].labels, runs[bare].final_labels) == ((), ())

    chips = label_chips(runs[labelled].labels, runs[labelled].final_labels, {"other": "None of <these>"})
    texts = re.findall(r">([^<]*)</span>", chips)
    assert texts == ["wrong confidence", "advice misled ×2", "other"]  # the final label first
    assert chips.count("2px solid") == 1 and "None of &lt;these&gt;" in chips
    assert label_chips((), ()) == "—"
    rows = {row[-1]: row for row in run_rows(store.list_runs())}
    assert rows[labelled[:8]][1] == outcome_chip("wrong") and "chip-wrong" in outcome_chip("wrong")
    assert "chip-gold" in rows[bare[:8]][1] and rows[bare[:8]][6] == "—"


def test_the_listed_runs_export_as_one_csv_row_each(tmp_path):
    from r2mad.runs.io import RUNS_CSV_HEADER, export_runs_csv

    store = RunStore(tmp_path / "runs.db")
    wrong = save_run(store, make_transcript(MCQ, [["A", "B", "B"]], "B", False))
    right = save_run(store, make_transcript(MATH, [["7", "7", "7"]], "7", True))
    save_run(store, make_transcript(MCQ, [["A", "A", "A"]], "A", True))  # not listed: not exported
    store.annotate(wrong, annotator="ana", labels=["advice_misled", "other"])
    assert export_runs_csv(store, tmp_path / "runs.csv", [wrong, right]) == 2
    with open(tmp_path / "runs.csv", newline="", encoding="utf-8") as fh:
        rows = {r["run_id"]: r for r in csv.DictReader(fh)}
    assert set(rows) == {wrong, right} and list(next(iter(rows.values()))) == RUNS_CSV_HEADER
    assert (rows[wrong]["correct"], rows[wrong]["final_answer"]) == ("0", "B")
    assert rows[wrong]["labels"] == "advice_misled;other"
    assert (rows[right]["correct"], rows[right]["question"], rows[right]["labels"]) == ("1", "What is 3 + 4?", "")
    assert store.list_runs(ids=[]) == [] and [r.id for r in store.list_runs(ids=[right])] == [right]
