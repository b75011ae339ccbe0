"""Each seed paper's table layout with our numbers, by hand on scripted transcripts: TrueMAD's Agent/Vote ACC
(mean ± sample SD over seeds), round-wise and R1-stratified accuracy; Du et al.'s accuracy ± standard error
and biography factuality; MAD-M²'s accuracy; the profiles that set each protocol."""
import json

import pytest

from r2mad.evaluation.paper_tables import sections, write_paper_tables
from r2mad.evaluation.report import write_report
from r2mad.evaluation.results import Results, load_results
from r2mad.settings.config import ConfigError, DebateSettings, with_profile
from tests.helpers import EVAL_SETTINGS, evaluate, grid_debate, make_eval_run


def results(profile, dataset, seeds, agents=4, rounds=3):
    """seeds: {seed: {method: [grid, ...]}}; gold is A."""
    by_seed = {s: {name: [grid_debate(g) for g in grids] for name, grids in methods.items()}
               for s, methods in seeds.items()}
    first = next(iter(by_seed))
    run = {"settings": {"profile": profile, "agents": agents, "rounds": rounds}, "dataset": dataset,
           "methods": list(by_seed[first])}
    return Results(run, [], by_seed[first], by_seed, [])


TRUEMAD = results("truemad", "aime2024", {
    0: {"cot": [[["A"]], [["B"]]],
        "mad": [[list("ABBB"), list("AABB"), list("AAAB")],   # k=1 -> 3/4 at R3, strict majority
                [list("AABB"), list("AAAA"), list("AAAA")]]},  # k=2 -> 4/4
    1: {"cot": [[["A"]], [["A"]]],
        "mad": [[list("BBBB"), list("BBBB"), list("ABBB")],   # k=0 -> 1/4, no majority
                [list("AAAB"), list("AAAA")]]},               # k=3, stopped early: R2 carried to R3 -> 4/4
})


def test_truemad_layout_by_hand():
    text = "\n".join(sections([TRUEMAD]))
    # Agent ACC: seed 0 (3+4)/8 = 0.875, seed 1 (1+4)/8 = 0.625 -> 75.00 ± 17.68; Vote ACC 1.0 and 0.5 -> 75.00 ± 35.36
    assert "| MAD | 75.00 ± 17.68 | 75.00 ± 35.36 |" in text
    assert "| Single LLM | 75.00 ± 35.36 |  |" in text  # one agent: 0.5 and 1.0; no vote column
    assert "| Method | AIME 2024 Agent ACC | AIME 2024 Vote ACC |" in text
    # R2: seed 0 (2+4)/8 = 0.75, seed 1 (0+4)/8 = 0.5 -> 62.50 ± 17.68; R3 as Agent ACC
    assert "| Method | R2 | R3 |" in text and "| MAD | 62.50 ± 17.68 | 75.00 ± 17.68 |" in text
    # strata pooled over seeds: k<=1 {3/4, 1/4} = 50.0; k=2 {4/4}; k>=3 {4/4}; k<=2 {3,4,1}/12 = 66.7
    assert "| Method | Wrong maj. k ≤ 1 | Split k = 2 | Correct maj. k ≥ 3 | ≥ Half wrong k ≤ 2 |" in text
    assert "| MAD | 50.0 (n=2) | 100.0 (n=1) | 100.0 (n=1) | 66.7 (n=3) |" in text


def test_du_layout_with_standard_errors_and_biography_factuality(tmp_path):
    arith = results("du", "arithmetic", {0: {"mad": [[list("AAB")], [list("BBA")], [list("ABA")], [list("AAA")]],
                                             "cot": [[["A"]], [["B"]]]}}, agents=3, rounds=1)
    bios = results("du", "biographies", {0: {"mad": [[list("AAA")]]}}, agents=3, rounds=1)
    facts = {"biographies": [
        {"question_id": "q", "method": "mad", "seed": 0, "agent": 0, "verdicts": ["yes", "yes", "no"],
         "skipped": False},
        {"question_id": "q", "method": "mad", "seed": 0, "agent": 1, "verdicts": [], "skipped": True},
        {"question_id": "q", "method": "mad", "seed": 0, "agent": 2, "verdicts": ["yes", "uncertain", "no"],
         "skipped": False}]}
    text = "\n".join(sections([arith, bios], facts))
    # plurality: right, wrong, right, right -> 0.75, SE = sqrt(0.1875)/2 = 0.2165; biographies: yes 3 of 5 -> 0.6,
    # SE = sqrt(0.24/5) = 0.2191
    assert "| Method | Arithmetic (%) | Biographies (%) |" in text
    assert "| Multi-Agent (Debate) | 75.0 ± 21.7 | 60.0 ± 21.9 |" in text
    assert "| Single Agent | 50.0 ± 35.4 | run `factuality` |" in text  # no verdicts yet for it


def test_madm2_layout_and_the_profiles(tmp_path):
    runs = results("madm2", "gsm8k", {0: {"mad": [[list("AAB")], [list("BBA")]], "madm2-objective": [[list("AAA")]]}},
                   agents=3, rounds=1)
    text = "\n".join(sections([runs]))
    assert "| MAD | 50.0 |" in text and "| MAD-M² (O) | 100.0 |" in text
    assert sections([results("paper", "gsm8k", {0: {"mad": [[["A"]]]}})]) == []
    truemad = with_profile(DebateSettings(), "truemad")
    assert (truemad.agents, truemad.rounds, truemad.early_stop, truemad.temperature, truemad.max_tokens) == \
        (4, 5, False, 1.0, 6144)
    du = with_profile(DebateSettings(), "du")
    assert (du.agents, du.rounds, du.samples, du.profile) == (3, 2, 3, "du")
    assert with_profile(DebateSettings(), "madm2").rounds == 3
    with pytest.raises(ConfigError, match="choose one of: demo, paper, truemad, du, madm2"):
        with_profile(DebateSettings(), "tianmad")


def test_an_eval_under_a_paper_profile_prints_its_layout_in_report_and_combined(tmp_path):
    settings = with_profile(EVAL_SETTINGS, "du").replace(max_tokens=64)
    for name in ("a", "b"):
        evaluate(make_eval_run(("cot", "mad"), limit=2, settings=settings), tmp_path / name)
        report = write_report(tmp_path / name).read_text(encoding="utf-8")
        assert "## Du et al. 2024: results (Tables 1-2 layout)" in report and "| Multi-Agent (Debate) |" in report
    res = load_results(tmp_path / "a")
    assert res.run["settings"]["agents"] == 3 and res.run["settings"]["rounds"] == 2
    path = write_paper_tables([tmp_path / "a", tmp_path / "b"], tmp_path / "paper.md")
    table = path.read_text(encoding="utf-8")
    assert "| Method | demo-mcq (%) | demo-mcq (%) |" in table
    assert json.dumps(res.run["settings"]["profile"]) == '"du"'
