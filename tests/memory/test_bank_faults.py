"""A damaged or busy index never takes the app down: the bank rebuilds from cases.jsonl or memory is
switched off with a visible notice, and the bank folder itself is never deleted."""
import dataclasses
import logging
import subprocess
import sys
import time
from pathlib import Path

import pytest

from r2mad.backends.embedder import HashEmbedder
from r2mad.engine.resources import open_bank
from r2mad.memory.bank import MemoryBank
from r2mad.settings.config import load_config
from r2mad.types import Case
from tests.helpers import child

ROOT = Path(__file__).resolve().parents[2]


def small_bank(folder: Path, index_root: Path) -> Path:
    bank = MemoryBank.create(folder, task_kind="mcq", split="train", backbone="x", embedder=HashEmbedder(64),
                             code_version="t", index_root=index_root)
    bank.add([Case(f"c{i}:a{a}:r1", f"c{i}", "mcq", a, 1, f"Question {i}?", "((A))", "split", 1 / 3,
                   ("((A))", "((B))", "((A))"), ("A", "B", "A"), "B", (False, True, False), float(a == 1))
              for i in range(4) for a in range(3)])
    bank.close()
    return folder


def config_for(tmp_path):
    config = load_config()
    return dataclasses.replace(config, app=dataclasses.replace(config.app, embedder="hash-64",
                                                                data_dir=str(tmp_path / "var")))


@pytest.mark.slow  # seconds by design (worker processes, deadlines, threads)
def test_corrupt_index_is_rebuilt_or_memory_turns_off_and_the_bank_survives(tmp_path, caplog):
    config = config_for(tmp_path)
    folder = small_bank(tmp_path / "bank", Path(config.app.data_dir) / "index")
    cases_before = (folder / "cases.jsonl").read_bytes()
    for f in (Path(config.app.data_dir) / "index").rglob("*"):
        if f.is_file() and f.suffix != ".json":
            f.write_bytes(b"\x00garbage" * 64)
    with caplog.at_level(logging.WARNING, logger="r2mad.memory.index"):
        bank, notices = open_bank(folder, config, task_kind="mcq")
    try:  # the operator's news, in the log; a debate reading the bank (a visitor's chat) never says it
        assert len(bank) == 12 and "rebuilt it from cases.jsonl" in bank.log[0]
        assert "rebuilt it from cases.jsonl" in caplog.text
        assert not any("rebuilt" in n for n in [*notices, *bank.notices])
        found = bank.retrieve(1, "Question 2?", {0: "((A))"}, consensus=1 / 3)
        assert found.cases and found.cases[0].reward == 1.0  # the rebuilt index answers
    finally:
        bank.close()
    assert (folder / "cases.jsonl").read_bytes() == cases_before  # the source of truth is untouched


def test_a_bank_held_by_another_process_turns_memory_off_with_a_notice(tmp_path):
    config = config_for(tmp_path)
    folder = small_bank(tmp_path / "bank", Path(config.app.data_dir) / "index")
    holder = child([sys.executable, "-c", (
        "import sys, time; from r2mad.memory.bank import MemoryBank; from r2mad.backends.embedder import HashEmbedder\n"
        f"b = MemoryBank.open({str(folder)!r}, HashEmbedder(64), "
        f"index_root={str(Path(config.app.data_dir) / 'index')!r})\n"
        "print('open', flush=True); time.sleep(900)")], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "open"
        started = time.monotonic()
        bank, notices = open_bank(folder, config, task_kind="mcq")
        # it does not wait for the holder to let go (900 s): a bound on that, not a speed figure
        assert bank is None and notices[0].startswith("Memory off") and time.monotonic() - started < 300
    finally:
        holder.kill()
        holder.wait()
    assert (folder / "manifest.yaml").exists()
