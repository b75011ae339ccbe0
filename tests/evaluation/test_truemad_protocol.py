"""TrueMAD's Single LLM row two ways, by hand: one answer a question (cot), and the mean over Self-Consistency's
samples (sc), the reading TrueMAD's printed means suggest (docs/benchmarks.md); neither row has a Vote ACC."""
from r2mad.evaluation.paper_tables import sections
from r2mad.evaluation.report import write_report
from r2mad.evaluation.results import Results, load_results
from r2mad.settings.config import with_profile
from tests.helpers import EVAL_SETTINGS, evaluate, grid_debate, make_eval_run


def truemad_results(seeds):
    """seeds: {seed: {method: [grid, ...]}}; gold is A; four agents, one round."""
    by_seed = {s: {name: [grid_debate(g) for g in grids] for name, grids in methods.items()}
               for s, methods in seeds.items()}
    run = {"settings": {"profile": "truemad", "agents": 4, "rounds": 1}, "dataset": "aime2024",
           "methods": list(by_seed[0])}
    return Results(run, [], by_seed[0], by_seed, [])


def test_single_llm_as_the_mean_of_four_samples_by_hand():
    runs = truemad_results({
        0: {"cot": [[["A"]], [["B"]]], "sc": [[list("AABB")], [list("AAAB")]]},  # sc: (2 + 3) / 8 = 0.625
        1: {"cot": [[["A"]], [["A"]]], "sc": [[list("AAAA")], [list("AABB")]]},  # sc: (4 + 2) / 8 = 0.75
    })
    text = "\n".join(sections([runs]))
    # cot: 0.5 and 1.0 -> 75.00 ± 35.36; sc: 0.625 and 0.75 -> 68.75 ± 0.125/√2 = 8.84; no Vote ACC for either
    assert "| Single LLM | 75.00 ± 35.36 |  |" in text
    assert "| Single LLM (mean of samples) | 68.75 ± 8.84 |  |" in text
    assert text.index("| Single LLM |") < text.index("| Single LLM (mean of samples) |")
    assert text.count("Single LLM (mean of samples)") == 2  # its Table 1 row and the note; no round-wise rows


def test_an_eval_under_the_truemad_profile_with_four_samples(tmp_path):
    settings = with_profile(EVAL_SETTINGS, "truemad").replace(samples=4, max_tokens=64)
    evaluate(make_eval_run(("cot", "sc"), limit=2, settings=settings), tmp_path / "run")
    results = load_results(tmp_path / "run")
    assert [len(t.rounds[0].turns) for t in results.by_method["sc"]] == [4, 4]
    report = write_report(tmp_path / "run").read_text(encoding="utf-8")
    assert "| Single LLM (mean of samples) |" in report and "| Single LLM |" in report
