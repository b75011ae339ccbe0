"""`build-memory` as a user runs it: a real subprocess against the scripted server, killed with SIGKILL
mid-build, then rerun: no duplicate case, no partial case, every question complete."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from testing.scripted_server import FakeServer, ok
from tests.helpers import ROOT, jsonl_values

QUESTIONS = 6


def slow_answer(body):
    text = body["messages"][-1]["content"]
    if "Positions of the agents" in text:
        return ok("The agents are split.", latency_s=0.05)
    return ok("I reason carefully. ((B))" if len(body["messages"]) % 2 else "Hmm. ((A))", latency_s=0.05)


def write_data(path: Path) -> None:
    rows = [{"id": f"k{i}", "question": f"Kill test question {i}?", "options": {"A": "yes", "B": "no"},
             "answer": "B", "split": "train", "topic": "test"} for i in range(QUESTIONS)]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")


def build_cmd(config_dir, data, out):
    return [sys.executable, "-m", "r2mad", "--config-dir", str(config_dir), "build-memory", "--task", "mcq",
            "--data", str(data), "--split", "train", "--backbone", "fake", "--out", str(out)]


def case_ids(out: Path) -> list[str]:
    return [row["id"] for row in jsonl_values(out / "cases.jsonl")]


@pytest.mark.slow
def test_killed_build_resumes_without_duplicates_or_partial_cases(config_dir, tmp_path):
    data, out = tmp_path / "data.jsonl", tmp_path / "bank"
    write_data(data)
    with FakeServer(models=["fake-model"], responder=slow_answer) as srv:
        backbones = yaml.safe_load((config_dir / "backbones.yaml").read_text())
        backbones["backbones"]["fake"]["base_url"] = srv.base_url
        (config_dir / "backbones.yaml").write_text(yaml.safe_dump(backbones))
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        proc = subprocess.Popen(build_cmd(config_dir, data, out), cwd=ROOT, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 600  # a hang guard: start-up on busy cores is slow
        while time.monotonic() < deadline and not (out / "cases.jsonl").exists() or \
                len((out / "cases.jsonl").read_text().splitlines()) < 6:
            assert proc.poll() is None, "build finished before it could be killed"
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        before = case_ids(out)
        assert 0 < len(before) < QUESTIONS * 6
        done = subprocess.run(build_cmd(config_dir, data, out), cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    ids = case_ids(out)
    assert len(ids) == len(set(ids)) == QUESTIONS * 2 * 3  # 2 debate rounds x 3 agents per question
    manifest = yaml.safe_load((out / "manifest.yaml").read_text())
    assert manifest["counts"]["questions"] == QUESTIONS
    assert "already there" in done.stdout
