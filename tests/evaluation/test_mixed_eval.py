"""`eval --agent-backbones` against two scripted OpenAI-compatible servers on loopback: each agent's calls
reach its own server (counted there), rows and the report name the mix, tokens and cost are counted per
model (a model without a price reads "unknown"), and a resume with another mix is refused."""
import json
import shutil

import pytest
import yaml

from r2mad.cli import main
from r2mad.prompts.common import PERSONAS
from testing.scripted_server import FakeServer, ok
from tests.helpers import ROOT, jsonl_values

pytestmark = pytest.mark.slow  # two loopback servers

SYSTEMS = [text for _, text in PERSONAS["mcq"]]


def answer(body):
    return ok("I pick ((A))", prompt_tokens=100, completion_tokens=10)


def test_an_eval_with_agent_backbones_runs_each_agent_on_its_server_and_reports_the_mix(tmp_path, capsys):
    with FakeServer(responder=answer) as left, FakeServer(responder=answer) as right:
        folder = tmp_path / "configs"
        shutil.copytree(ROOT / "configs", folder, dirs_exist_ok=True)
        (folder / "backbones.yaml").write_text(yaml.safe_dump({"default": "left", "backbones": {
            "left": {"base_url": left.base_url, "model": "m", "timeout_s": 5, "max_retries": 0,
                     "price_input_per_m": 1.0, "price_output_per_m": 2.0},
            "right": {"base_url": right.base_url, "model": "m", "timeout_s": 5, "max_retries": 0}}}))
        out = tmp_path / "results"
        args = ["--config-dir", str(folder), "eval", "--task", "demo-mcq", "--limit", "2", "--methods", "cot,mad",
                "--no-early-stop", "--no-progress", "--out", str(out)]  # --out last (replaced below)
        assert main([*args, "--agent-backbones", "left,right,left"]) == 0
        # per question: MAD's 3 rounds × 3 agents (agent 2 on right) and CoT's one call on agent 1's backbone
        assert (left.hits, right.hits) == (2 * (6 + 1), 2 * 3)
        assert {r.body["messages"][0]["content"] for r in right.requests} == {SYSTEMS[1]}

        rows = jsonl_values(out / "rows.jsonl")
        mad = [r for r in rows if r["method"] == "mad"]
        cot = [r for r in rows if r["method"] == "cot"]
        assert all(r["backbone"] == "left,right,left" for r in rows)
        assert all(r["agent_backbones"] == ["left", "right", "left"] for r in mad)
        assert all(r["agent_backbones"] == ["left"] for r in cot)
        # left: 100 in × $1/M + 10 out × $2/M = $0.00012 a call; right has no price
        assert mad[0]["usage_by_model"] == {"left": {"calls": 6, "input": 600, "output": 60},
                                            "right": {"calls": 3, "input": 300, "output": 30}}
        assert mad[0]["cost_by_model"] == {"left": pytest.approx(0.00072), "right": None}
        assert mad[0]["cost_usd"] is None  # one model's price is unknown: so is the total
        assert cot[0]["cost_usd"] == pytest.approx(0.00012)
        run = json.loads((out / "run.json").read_text())
        assert run["agent_backbones"] == ["left", "right", "left"] and run["aux_backbone"] == "left"

        report = (out / "report.md").read_text()
        assert report.splitlines()[0] == "# demo-mcq (test) on left,right,left"  # the backbone names the mix
        assert ("Mixed models: agent 1 on left, agent 2 on right, agent 3 on left; summaries, judges and advice "
                "on left; single-agent baselines on agent 1's (left).") in report
        assert "| left | 14 | 1400 | 140 | $0.00168 |" in report  # 14 calls × $0.00012
        assert "| right | 6 | 600 | 60 | unknown |" in report
        assert "No price in configs/backbones.yaml for right" in report
        cost_rows = {line.split(" | ")[0].strip("| "): line for line in report.splitlines()
                     if line.startswith(("| MAD |", "| CoT |"))}
        assert "| unknown |" in cost_rows["MAD"] and "| $0.000120 |" in cost_rows["CoT"]

        capsys.readouterr()
        assert main([*args, "--agent-backbones", "right,right,left"]) == 2
        err = capsys.readouterr().err
        assert "agent backbones (left,right,left -> right,right,left)" in err and err.count("\n") == 1
        assert main(args) == 2  # nor without the mix
        assert main([*args, "--agent-backbones", "left,right,left"]) == 0  # the same mix continues (all done)
        assert (left.hits, right.hits) == (14, 6)

        left.hits = right.hits = 0  # two debate methods share round 0: the per-model totals count it once
        assert main([*args[:-1], str(tmp_path / "shared"), "--methods", "mad,truemad", "--agent-backbones",
                     "left,right,left"]) == 0
        report = (tmp_path / "shared" / "report.md").read_text()
        assert f"| left | {left.hits} | {left.hits * 100} |" in report
        assert f"| right | {right.hits} | {right.hits * 100} |" in report
