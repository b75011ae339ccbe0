"""`eval` end to end on the loopback test server with two methods and two sampling seeds: the rows per seed,
Self-Consistency's samples as one request each, cost in money, the paired table, the seed spread, the
compute-matched curve and its plot, and the provider of each call."""
import hashlib
import json

import pytest
import yaml

from r2mad.cli import main
from r2mad.evaluation.costs import format_dollars
from r2mad.evaluation.rows import ROWS, RUN, read_rows
from testing.scripted_server import FakeServer, ok

PRICE_IN, PRICE_OUT = 0.5, 2.0  # $ per million tokens


def answer(body):
    """A letter that depends on the seed and the prompt, so two seeds give two different runs."""
    def letter(seed):
        digest = hashlib.sha1(f"{seed}|{json.dumps(body['messages'])}".encode()).digest()
        return "ABCD"[digest[0] % 4]
    seed, n = body.get("seed") or 0, int(body.get("n") or 1)
    return ok([f"Weighed it. The answer is (({letter(seed + i)}))." for i in range(n)])


@pytest.fixture
def priced_config(tmp_path, config_dir):
    server = FakeServer(responder=answer, provider="fake-provider")
    with server:
        path = config_dir / "backbones.yaml"
        data = yaml.safe_load(path.read_text())
        data["backbones"]["priced"] = {"base_url": server.base_url, "model": "fake-model", "native_n": True,
                                       "price_input_per_m": PRICE_IN, "price_output_per_m": PRICE_OUT}
        path.write_text(yaml.safe_dump(data))
        yield config_dir, server


@pytest.mark.slow  # eval end to end with its report and plots: seconds, not milliseconds
def test_eval_with_two_methods_and_two_seeds_writes_paired_table_curve_and_costs(priced_config, tmp_path):
    config_dir, server = priced_config
    out = tmp_path / "res"
    assert main(["--config-dir", str(config_dir), "eval", "--task", "demo-mcq", "--limit", "4",
                 "--methods", "sc,mad", "--samples", "3", "--seeds", "2", "--backbone", "priced",
                 "--no-progress", "--out", str(out)]) == 0
    rows = read_rows(out / ROWS)
    assert sorted((r["method"], r["seed"]) for r in rows) == sorted([(m, s) for m in ("sc", "mad")
                                                                     for s in (0, 1)] * 4)
    assert json.loads((out / RUN).read_text())["seeds"] == [0, 1]
    # Self-Consistency's 3 identical prompts went as one request for n = 3: one per question and seed
    assert sum(r.body.get("n") == 3 for r in server.requests) == 4 * 2
    for r in rows:
        cost = (r["tokens"]["input"] * PRICE_IN + r["tokens"]["output"] * PRICE_OUT) / 1e6
        assert r["cost_usd"] == pytest.approx(cost) and cost > 0
        assert r["call_seconds"] >= 0 and r["seconds"] >= 0
    report = (out / "report.md").read_text(encoding="utf-8")
    paired = report.split("## Paired comparisons", 1)[1].split("\n## ", 1)[0]
    assert "| Self-Consistency − MAD | 4 |" in paired and "McNemar" in paired
    seeds = report.split("## Sampling seeds", 1)[1].split("\n## ", 1)[0]
    assert "| Seed 0 | Seed 1 | Mean | SD |" in seeds and "seed spread" in seeds
    matched = report.split("## Compute-matched baselines", 1)[1].split("\n## ", 1)[0]
    # MAD spends more tokens than all 3 samples: compared with them, and said so
    assert "| 3 |" in matched and "| MAD |" in matched and "voting with all 3 samples, at" in matched
    assert (out / "compute_matched.png").stat().st_size > 1000 and (out / "ledger.md").exists()
    costs = report.split("## Cost per query", 1)[1].split("\n## ", 1)[0]
    assert "| Self-Consistency |" in costs and "$" in costs.split("| Self-Consistency |", 1)[1].split("\n")[0]
    assert "Providers that served the calls: fake-provider" in costs


@pytest.mark.slow  # eval end to end with its report and plots: seconds, not milliseconds
def test_the_ledger_debates_go_to_the_run_store_once(priced_config, tmp_path, capsys):
    from r2mad.evaluation import paired
    from r2mad.evaluation.results import load_results
    from r2mad.runs.store import RunStore
    from r2mad.settings.config import load_config

    config_dir, _ = priced_config
    out = tmp_path / "res"
    assert main(["--config-dir", str(config_dir), "eval", "--task", "demo-mcq", "--limit", "6",
                 "--methods", "mad,madm2-subjective", "--backbone", "priced", "--no-progress",
                 "--out", str(out)]) == 0
    res = load_results(out)
    changed = {(name, e.question_id) for name, ts in res.by_method.items() for e in paired.ledger(ts)
               if e.kind in ("helped", "hurt")}
    assert changed  # this scripted run has debates that changed the round-0 vote
    for _ in range(2):  # the second time finds them there
        assert main(["--config-dir", str(config_dir), "eval", "--report-only", "--to-store", "--out", str(out)]) == 0
    store = RunStore(load_config(config_dir).app.runs_db)
    runs = store.list_runs()
    assert {(r.method, store.get_run(r.id).task.id) for r in runs} == changed and len(runs) == len(changed)
    ledger = (out / "ledger.md").read_text(encoding="utf-8")
    assert all(r.id in ledger for r in runs)
    opened = store.get_run(runs[0].id)
    assert opened.transcript is not None and opened.source == "eval"


def test_debate_prints_its_cost(priced_config, capsys):
    config_dir, _ = priced_config
    assert main(["--config-dir", str(config_dir), "debate", "--backbone", "priced", "--method", "cot",
                 "--question", "Largest planet?", "--option", "A=Mars", "--option", "B=Jupiter"]) == 0
    usage = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("Usage:"))
    # one call: "Usage: 1 calls, I tokens in, O out ($C), ..." with C = (I * 0.5 + O * 2) / 1e6
    tokens_in, tokens_out = int(usage.split()[3]), int(usage.split()[6])
    cost = (tokens_in * PRICE_IN + tokens_out * PRICE_OUT) / 1e6
    assert f"({format_dollars(cost)})" in usage and cost > 0


def test_more_seeds_extend_a_finished_run_and_need_a_base_seed(tmp_path):
    import dataclasses

    from r2mad.settings.config import ConfigError
    from tests.helpers import EVAL_SETTINGS as SETTINGS
    from tests.helpers import evaluate
    from tests.helpers import make_eval_run as make_run

    one = make_run(("cot", "mad"), limit=2)
    evaluate(one, tmp_path)
    backend = evaluate(dataclasses.replace(one, seeds=2), tmp_path)
    rows = read_rows(tmp_path / ROWS)
    assert sorted((r["question_id"], r["method"], r["seed"]) for r in rows) == sorted(
        (q, m, s) for q in one.split.ids for m in ("cot", "mad") for s in (0, 1))
    assert all(r["transcript"]["settings"]["seed"] == r["seed"] for r in rows)
    # the rerun made only seed 1's calls, every one with seed 1's seeds (1 + 1000 * round + agent)
    assert backend.calls and all(c.seed % 1000 in (1, 2, 3) for c in backend.calls)
    assert json.loads((tmp_path / RUN).read_text())["seeds"] == [0, 1]
    with pytest.raises(ConfigError, match="pass --seed N"):
        dataclasses.replace(one, seeds=2, settings=SETTINGS.replace(seed=None))
    with pytest.raises(ConfigError, match="1 or more"):
        dataclasses.replace(one, seeds=0)
