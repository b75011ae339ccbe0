"""Run-store faults and secrets through the CLI and the store: a damaged file, a lock held too long, a key
echoed back by the endpoint, a token typed into a question, a malformed taxonomy. Each is one sentence
and loses nothing."""
import json
import sqlite3
from pathlib import Path

import pytest
import yaml

from r2mad.cli import main
from r2mad.runs.store import RunStore
from r2mad.settings.config import ConfigError, load_config
from testing.scripted_server import ok
from tests.helpers import STORED_MCQ as MCQ
from tests.helpers import make_transcript

SECRET = "sk-TESTSECRET-9f8e7d6c5b4a"
TYPED_TOKEN = "hf_" + "TypedIntoTheQuestion" + "1" * 12  # token-shaped, built


def cli(config_dir, *args):
    return main(["--config-dir", str(config_dir), "debate", *args])


def data_dir(config_dir) -> Path:
    return Path(load_config(config_dir).app.data_dir)


def test_a_damaged_store_is_moved_aside_and_a_fresh_one_started(config_dir, capsys):
    db = data_dir(config_dir) / "runs.sqlite"
    db.parent.mkdir(parents=True)
    db.write_bytes(b"this is not a database, but someone's runs might be recoverable from it" * 50)
    assert cli(config_dir, "--question", "Largest planet?", "--option", "A=Mars", "--option", "B=Jupiter",
               "--rounds", "1") == 0
    notes = [line for line in capsys.readouterr().err.splitlines() if "damaged" in line]
    assert len(notes) == 1 and "moved to runs.sqlite.damaged-" in notes[0]
    aside = [p for p in db.parent.glob("runs.sqlite.damaged-*") if not p.name.endswith(("-wal", "-shm"))]
    assert len(aside) == 1 and aside[0].read_bytes().startswith(b"this is not a database")  # kept as it was
    assert RunStore(db).count_runs() == 1  # the debate was saved in the fresh store


def hold_lock(db: Path) -> sqlite3.Connection:
    """Another program writing: it holds the write lock until closed."""
    other = sqlite3.connect(db, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    return other


def test_a_lock_held_too_long_keeps_the_debate_in_a_recovery_file_saved_at_the_next_opening(tmp_path):
    db = tmp_path / "runs.sqlite"
    store = RunStore(db, lock_wait_s=0.2)
    t = make_transcript(MCQ, [["A", "B"], ["B", "B"]], "B", True)
    run_id = store.start_run(method="mad", backbone="fake", bank=None, task=MCQ, settings={}, seed=0,
                             code_version="test")
    record = store.recorder(run_id)
    other = hold_lock(db)
    record(t)  # the debate ends while the store is locked
    notices = store.take_notices()
    assert len(notices) == 1 and "stayed locked" in notices[0] and "recovery/" in notices[0]
    assert json.loads((tmp_path / "recovery" / f"{run_id}.jsonl").read_text())["status"] == "done"
    other.close()
    store.close()
    reopened = RunStore(db)
    saved = reopened.get_run(run_id)
    assert saved.status == "done" and saved.correct is True and len(saved.transcript.rounds) == 2
    assert not list((tmp_path / "recovery").glob("*.json"))


def test_a_lock_that_frees_during_the_debate_costs_nothing(tmp_path):
    db = tmp_path / "runs.sqlite"
    store = RunStore(db, lock_wait_s=0.2)
    run_id = store.start_run(method="mad", backbone="fake", bank=None, task=MCQ, settings={}, seed=0,
                             code_version="test")
    record = store.recorder(run_id)
    other = hold_lock(db)
    record(make_transcript(MCQ, [["A", "B"]], None, None, status="running"))  # round 0 ends while locked
    other.close()
    record(make_transcript(MCQ, [["A", "B"], ["B", "B"]], "B", True))  # the end: saved whole
    assert store.get_run(run_id).rounds == 2 and store.take_notices() == []
    assert not (tmp_path / "recovery").exists()


def test_a_store_locked_at_start_is_one_sentence_before_any_call(config_dir, server, capsys):
    app = yaml.safe_load((config_dir / "app.yaml").read_text())
    (config_dir / "app.yaml").write_text(yaml.safe_dump({**app, "store_lock_wait_s": 0.2}))
    db = data_dir(config_dir) / "runs.sqlite"
    RunStore(db).close()
    other = hold_lock(db)
    try:
        assert cli(config_dir, "--question", "Largest planet?", "--option", "A=Mars", "--option", "B=Jupiter") == 2
    finally:
        other.close()
    err = capsys.readouterr().err
    assert err.startswith("error: The run store") and "close that program and try again" in err
    assert err.count("\n") == 1 and server.hits == 0


def test_an_echoed_key_and_a_typed_token_reach_no_output_file_or_store(config_dir, server, tmp_path, capsys,
                                                                       monkeypatch):
    monkeypatch.setenv("R2MAD_TEST_TOKEN", SECRET)
    monkeypatch.setenv("HF_TOKEN", "hf_" + "OwnerTokenInTheEnvironment" + "5" * 5)
    server.responder = lambda body: ok(f"Using key {SECRET} I checked: ((B))")
    out = tmp_path / "t.json"
    assert cli(config_dir, "--question", f"Largest planet? my token is {TYPED_TOKEN}", "--option", "A=Mars",
               "--option", "B=Jupiter", "--gold", "B", "--json", str(out), "--show-text") == 0
    printed = capsys.readouterr()
    assert "[redacted]" in printed.out  # the echoed key was there, and is gone
    blobs = [out.read_bytes(), (printed.out + printed.err).encode(),
             *(p.read_bytes() for p in data_dir(config_dir).glob("runs.sqlite*"))]
    for blob in blobs:
        assert SECRET.encode() not in blob and TYPED_TOKEN.encode() not in blob


def test_a_malformed_taxonomy_in_the_config_dir_is_one_sentence(config_dir, capsys):
    (config_dir / "annotation.yaml").write_text("labels:\n  - id: x\n    description: [unclosed\n")
    assert main(["--config-dir", str(config_dir), "export", "--out", str(config_dir / "x.jsonl"),
                 "--csv", str(config_dir / "x.csv")]) == 0  # the taxonomy is not needed to export
    store = RunStore(data_dir(config_dir) / "runs.sqlite", taxonomy=config_dir / "annotation.yaml")
    with pytest.raises(ConfigError, match=r"annotation\.yaml:\d+: .*fix the YAML syntax there"):
        store.taxonomy
    (config_dir / "annotation.yaml").write_text("labels:\n  - id: only-mine\n    description: Our own label.\n")
    store = RunStore(data_dir(config_dir) / "runs.sqlite", taxonomy=load_config(config_dir).taxonomy_file)
    assert list(store.taxonomy) == ["only-mine"]  # the config folder's taxonomy, not the shipped one
