"""The `debate` command end to end against the scripted OpenAI-compatible server."""
import json
import re

import pytest

from r2mad.types import Transcript
from tests.helpers import debate_cli as cli


def test_debate_prints_rounds_and_writes_json(config_dir, server, tmp_path, capsys):
    out = tmp_path / "t.json"
    assert cli(config_dir, "--question", "Largest planet?", "--option", "A=Mars", "--option", "B=Jupiter",
               "--gold", "B", "--no-early-stop", "--json", str(out)) == 0
    printed = capsys.readouterr().out
    assert printed.count("Round ") == 3 and printed.count("Agent 3 (Skeptic): answer B [strict: ((letter))") == 3
    assert "Final answer: B — correct" in printed and "tokens" in printed
    [run_id] = re.findall(r"^Saved as run ([0-9a-f]{32})$", printed, re.M)  # the id fork, blame and rerun take
    assert cli(config_dir, "--question", "Smallest planet?", "--option", "A=Mercury", "--option", "B=Mars") == 0
    assert run_id not in capsys.readouterr().out  # each debate is a run of its own
    t = Transcript.from_json(out.read_text())
    assert t.method == "mad" and [len(r.turns) for r in t.rounds] == [3, 3, 3] and t.correct is True
    assert json.loads(out.read_text())["task"]["options"] == [["A", "Mars"], ["B", "Jupiter"]]


@pytest.mark.parametrize("method, calls", [("cot", 1), ("sc", 9)])
def test_single_agent_baselines_from_the_command_line(config_dir, server, capsys, method, calls):
    assert cli(config_dir, "--method", method, "--question", "What is 2+2?", "--option", "A=3",
               "--option", "B=4", "--gold", "B") == 0
    assert server.hits == calls and "Final answer: B — correct" in capsys.readouterr().out


def test_export_import_round_trip_from_the_command_line(config_dir, server, tmp_path, capsys, monkeypatch):
    from r2mad.cli import main

    assert cli(config_dir, "--question", "Largest planet?", "--option", "A=Mars", "--option", "B=Jupiter") == 0
    export = tmp_path / "runs.jsonl"
    assert main(["--config-dir", str(config_dir), "export", "--out", str(export), "--csv",
                 str(tmp_path / "labels.csv")]) == 0
    assert "Exported 1 runs" in capsys.readouterr().out
    monkeypatch.setenv("R2MAD_DATA_DIR", str(tmp_path / "other"))
    assert main(["--config-dir", str(config_dir), "import", str(export)]) == 0
    assert "Imported 1 new or newer runs" in capsys.readouterr().out
    again = tmp_path / "again.jsonl"
    main(["--config-dir", str(config_dir), "export", "--out", str(again)])
    assert again.read_bytes() == export.read_bytes()


def test_detail_lines_spell_out_retrieval_confidence_and_masks():
    from r2mad.commands.common import detail_lines

    lines = detail_lines({"consensus": 1 / 3, "lambda": 0.7, "candidates": [{}, {}, {}],
                          "retrieved": [{"case_id": "q:a0:r1", "similarity": 0.61, "reward": 1.0, "mmr": 0.427,
                                         "correct": False}],
                          "confidence": {"2": {"c": 0.2, "label": "low"}}, "shown": [], "resolved_alone": True})
    assert lines == ["consensus 0.33, lambda 0.70, 3 candidates",
                     "retrieved q:a0:r1: similarity 0.610, reward 1, MMR 0.427 (that agent was wrong)",
                     "confidence in agent 3: 0.20 -> low", "shown after masking: none (solved again alone)"]


def test_cli_keeps_round_summaries_in_the_data_dir(config_dir, server, tmp_path, monkeypatch):
    from r2mad.memory.summaries import SummaryCache

    made, original = [], SummaryCache.__init__
    monkeypatch.setattr(SummaryCache, "__init__", lambda self, file=None: made.append(file) or original(self, file))
    monkeypatch.setenv("R2MAD_DATA_DIR", str(tmp_path / "data"))
    assert cli(config_dir, "--method", "cot", "--question", "What is 2+2?") == 0
    assert made == [tmp_path / "data" / "summaries.json"]  # handed to the debate, no process-wide cache
