"""`r2mad eval`: rows per question x method, shared round 0, resuming an interrupted run, refusing to
mix runs, and one end-to-end run on the embedded model."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from r2mad import __version__
from r2mad.cli import main
from r2mad.evaluation.report import write_report
from r2mad.evaluation.rows import ROWS, RUN, read_rows
from r2mad.settings.config import ConfigError
from r2mad.types import Transcript, from_dict
from tests.helpers import EVAL_SETTINGS as SETTINGS
from tests.helpers import answer_from, evaluate
from tests.helpers import make_eval_run as make_run
from tests.scripted import ScriptedBackend, fail

ROOT = Path(__file__).resolve().parents[2]


def canonical(rows):
    """Rows without wall-clock fields, as a comparable set."""
    def strip(x):
        if isinstance(x, dict):
            return {k: strip(v) for k, v in x.items() if k not in ("seconds", "started_at", "ended_at")}
        return [strip(v) for v in x] if isinstance(x, list) else x
    return sorted(json.dumps(strip(r), sort_keys=True) for r in rows)


def zero_times(folder):
    """Set the wall-clock fields to 0 so two folders' reports can be compared byte for byte."""
    rows = read_rows(folder / ROWS)
    for r in rows:
        r["seconds"] = r["transcript"]["seconds"] = 0
    (folder / ROWS).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_one_row_per_question_and_method_with_the_run_recorded(tmp_path):
    run = make_run()
    evaluate(run, tmp_path)
    rows = read_rows(tmp_path / ROWS)
    assert len(rows) == 3 * 4
    assert {(r["question_id"], r["method"]) for r in rows} == {
        (q, m) for q in run.split.ids for m in run.methods}
    recorded = json.loads((tmp_path / RUN).read_text())
    assert recorded["question_ids"] == list(run.split.ids)
    assert recorded["methods"] == ["cot", "sc", "mad", "madm2-subjective"]
    assert (recorded["dataset"], recorded["split"], recorded["split_seed"]) == ("demo-mcq", "test", 0)
    assert recorded["settings"]["max_tokens"] == 64 and recorded["seed"] == 0
    assert recorded["code_version"] == __version__ and recorded["started"]
    for r in rows:
        t = from_dict(Transcript, r["transcript"])
        assert t.task.id == r["question_id"] and r["correct"] == t.correct and r["final"] == t.final.value
        assert r["tokens"]["debate"] == t.usage(("debate",)).tokens == 15 * sum(len(x.turns) for x in t.rounds)
        assert (r["backbone"], r["split"], r["seed"]) == ("scripted", "test", 0)
    cot = [r for r in rows if r["method"] == "cot"]
    assert all(len(r["transcript"]["rounds"]) == 1 and len(r["transcript"]["rounds"][0]["turns"]) == 1 for r in cot)


def test_debate_methods_share_round0_unless_told_otherwise(tmp_path):
    shared = evaluate(make_run(limit=2), tmp_path / "shared")
    independent = evaluate(make_run(limit=2, share=False), tmp_path / "independent")
    rows = read_rows(tmp_path / "shared" / ROWS)
    for qid in {r["question_id"] for r in rows}:
        mad, masked = (next(r["transcript"] for r in rows if r["question_id"] == qid and r["method"] == m)
                       for m in ("mad", "madm2-subjective"))
        assert mad["rounds"][0]["details"].get("shared") and masked["rounds"][0]["details"].get("shared")
        assert [t["text"] for t in mad["rounds"][0]["turns"]] == [t["text"] for t in masked["rounds"][0]["turns"]]
    # Independent: the second debate method makes its own 3 round-0 calls for each of the 2 questions.
    assert len(independent.calls) - len(shared.calls) == 2 * 3
    assert not any(r["transcript"]["rounds"][0]["details"].get("shared")
                   for r in read_rows(tmp_path / "independent" / ROWS))


def test_an_interrupted_run_resumes_to_the_same_rows_and_report(tmp_path):
    run = make_run(limit=4)
    full = evaluate(run, tmp_path / "full")

    count = {"calls": 0}

    def dies_after_40_calls(messages):
        count["calls"] += 1
        if count["calls"] > 40:
            raise RuntimeError("killed")
        return answer_from(messages)

    with pytest.raises(RuntimeError, match="killed"):
        evaluate(run, tmp_path / "resumed", ScriptedBackend(reply=dies_after_40_calls))
    partial = read_rows(tmp_path / "resumed" / ROWS)
    assert 0 < len(partial) < 16
    with open(tmp_path / "resumed" / ROWS, "a", encoding="utf-8") as f:
        f.write('{"question_index": 3, "question_id": "mcq-0')  # a line cut by the kill

    second = evaluate(run, tmp_path / "resumed")
    rows = read_rows(tmp_path / "resumed" / ROWS)
    assert len(rows) == 16 and canonical(rows) == canonical(read_rows(tmp_path / "full" / ROWS))
    assert len(second.calls) < len(full.calls)  # finished rows were not recomputed
    assert len(evaluate(run, tmp_path / "resumed").calls) == 0  # nothing left to do
    for folder in ("full", "resumed"):
        zero_times(tmp_path / folder)
    assert (write_report(tmp_path / "resumed").read_text(encoding="utf-8")
            == write_report(tmp_path / "full").read_text(encoding="utf-8"))


def test_refuses_to_continue_a_run_with_other_settings_or_methods(tmp_path):
    evaluate(make_run(limit=2), tmp_path)
    with pytest.raises(ConfigError, match=r"other settings \(rounds 3 -> 2\); rerun with the same options"):
        evaluate(make_run(limit=2, settings=SETTINGS.replace(rounds=2)), tmp_path)
    with pytest.raises(ConfigError, match=r"other methods \(cot,sc,mad,madm2-subjective -> cot,mad\)"):
        evaluate(make_run(("cot", "mad"), limit=2), tmp_path)
    assert len(read_rows(tmp_path / ROWS)) == 8  # nothing was added or lost
    # The same methods in another order, and a larger --limit, continue the run.
    more = evaluate(make_run(("mad", "madm2-subjective", "sc", "cot"), limit=3), tmp_path)
    assert len(read_rows(tmp_path / ROWS)) == 12 and len(more.calls) > 0
    assert len(json.loads((tmp_path / RUN).read_text())["question_ids"]) == 3


def test_failed_debates_are_kept_and_retried_on_request(tmp_path):
    run = make_run(("cot", "mad"), limit=2)
    evaluate(run, tmp_path, ScriptedBackend(reply=lambda m: fail()))
    assert {r["status"] for r in read_rows(tmp_path / ROWS)} == {"failed"}
    assert len(evaluate(run, tmp_path).calls) == 0  # kept as they are by default
    evaluate(run, tmp_path, retry_failed=True)
    report = write_report(tmp_path).read_text(encoding="utf-8")
    assert "debates failed" not in report  # the retried rows replace the failed ones


def test_report_only_rebuilds_the_report(tmp_path, capsys):
    evaluate(make_run(("cot", "mad"), limit=2), tmp_path)
    assert main(["eval", "--report-only", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "report.md").read_text(encoding="utf-8").startswith("# demo-mcq (test) on scripted")
    assert main(["eval", "--report-only", "--out", str(tmp_path / "nothing")]) == 2
    assert "has no run.json" in capsys.readouterr().err


def test_unknown_method_is_refused_before_any_call(tmp_path, capsys):
    code = main(["eval", "--task", "demo-mcq", "--methods", "cot,madd", "--out", str(tmp_path)])
    assert code == 2 and "Unknown method 'madd'" in capsys.readouterr().err
    assert not (tmp_path / RUN).exists()


@pytest.mark.slow
def test_end_to_end_on_the_embedded_model(tmp_path):
    out = tmp_path / "results"
    env = {**os.environ, "R2MAD_DATA_DIR": str(tmp_path / "var")}
    proc = subprocess.run([sys.executable, "-m", "r2mad", "eval", "--task", "demo-mcq", "--split", "test",
                           "--limit", "2", "--methods", "cot,mad", "--backbone", "smollm2-135m",
                           "--max-tokens", "48", "--rounds", "2", "--no-progress", "--out", str(out)],
                          cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=1800)  # a hang guard: the embedded model on 2 busy cores is slow, not broken
    assert proc.returncode == 0, proc.stderr
    rows = read_rows(out / ROWS)
    assert sorted((r["question_index"], r["method"]) for r in rows) == [(0, "cot"), (0, "mad"), (1, "cot"), (1, "mad")]
    assert all(r["tokens"]["debate"] > 0 and r["backbone"] == "smollm2-135m" for r in rows)
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "## Accuracy (Table 1 layout)" in report and "| MAD |" in report
    # the embedded model decodes calls together: the report says wall time includes sharing it
    assert "ran concurrently on one backbone" in report
    assert all(r["call_seconds"] > 0 and r["seconds"] > 0 for r in rows)  # agents' calls overlap: no order
    for name in ("accuracy_vs_tokens.png", "consensus.png"):
        assert (out / name).read_bytes()[:4] == b"\x89PNG"
