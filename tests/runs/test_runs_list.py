"""`python -m r2mad runs` lists a store's saved runs (filtered by method, outcome and source) and shows one; `python
app.py --config-dir DIR` (or R2MAD_CONFIG_DIR) serves DIR's backbones in the app's Backbone choices."""
import shutil

import pytest
import yaml

from r2mad.cli import main
from r2mad.runs.store import RunStore
from r2mad.settings.config import load_config
from tests.helpers import ROOT, STORED_MCQ, make_transcript


@pytest.fixture
def runs():
    """Four saved runs: mad from the CLI (correct, wrong), cot from the app (correct), mad from the API (no gold)."""
    store = RunStore(load_config().app.runs_db)
    made = {}
    for name, method, source, correct in (("mad-right", "mad", "cli", True), ("mad-wrong", "mad", "cli", False),
                                          ("cot-app", "cot", "app", True), ("mad-api", "mad", "api", None)):
        t = make_transcript(STORED_MCQ, [["A", "B"]], "A" if correct else "B", correct, method=method)
        run_id = store.start_run(method=method, backbone=t.backbone, bank=None, task=t.task, settings={}, seed=1,
                                 code_version="test", source=source)
        store.save_transcript(run_id, t, "done")
        made[name] = run_id
    return store, made


def listed(capsys, *flags) -> list[str]:
    assert main(["runs", *flags]) == 0
    out = capsys.readouterr().out.splitlines()
    return out


def ids(lines, made) -> set[str]:
    return {name for name, run_id in made.items() for line in lines if line.startswith(run_id[:12])}


def test_runs_lists_every_saved_run_and_filters_by_method_outcome_and_source(runs, capsys):
    _, made = runs
    lines = listed(capsys)
    assert lines[0].startswith("id") and ids(lines, made) == set(made) and len(lines) == 5
    assert ids(listed(capsys, "--method", "mad"), made) == {"mad-right", "mad-wrong", "mad-api"}
    assert ids(listed(capsys, "--outcome", "correct"), made) == {"mad-right", "cot-app"}
    assert ids(listed(capsys, "--outcome", "wrong"), made) == {"mad-wrong"}
    assert ids(listed(capsys, "--outcome", "unscored"), made) == {"mad-api"}
    assert ids(listed(capsys, "--source", "cli", "--outcome", "correct"), made) == {"mad-right"}
    row = next(line for line in listed(capsys, "--source", "app") if line.startswith(made["cot-app"][:12]))
    assert row.split()[3:8] == ["cot", "smollm2-135m", "app", "done", "correct"]
    assert listed(capsys, "--method", "r2mad") == ["No saved run matches these filters; drop one to see more."]
    more = listed(capsys, "--limit", "2")
    assert len(ids(more, made)) == 2 and more[-1] == "(2 of 4; --limit shows more)"


def test_runs_show_prints_one_run_by_its_short_id_and_a_missing_id_gets_one_sentence(runs, capsys):
    _, made = runs
    assert main(["runs", "show", made["mad-wrong"][:8]]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"Run {made['mad-wrong']} · mad on smollm2-135m · from cli · done")
    assert "Question: Which is right?" in out and "Gold: A · final: B · wrong" in out
    assert "Round 0" in out and "Final answer: B" in out
    assert main(["runs", "show", "nosuchrun"]) == 2
    captured = capsys.readouterr()
    assert captured.err == "error: No saved run has the id 'nosuchrun'; `python -m r2mad runs` lists them.\n"
    assert captured.out == ""


def test_runs_on_an_empty_store_says_how_to_start_one(capsys):
    assert listed(capsys) == ["No saved runs yet; `python -m r2mad debate` starts one."]


def test_the_app_serves_the_backbones_of_its_config_dir_flag_or_environment_variable(tmp_path):
    from app import load_app_config
    from r2mad.ui.debate_form import backbone_choices

    folder = tmp_path / "mine"
    shutil.copytree(ROOT / "configs", folder)
    (folder / "backbones.yaml").write_text(yaml.safe_dump({"default": "my-llama", "backbones": {
        "my-llama": {"base_url": "http://127.0.0.1:8080/v1", "model": "llama", "label": "My llama.cpp server"}}}))
    for config in (load_app_config(["--config-dir", str(folder)]),
                   load_app_config([], {"R2MAD_CONFIG_DIR": str(folder)})):
        assert backbone_choices(config) == [("My llama.cpp server", "my-llama")]
        assert config.default_backbone == "my-llama"
    shipped = dict((name, label) for label, name in backbone_choices(load_app_config([], {})))
    assert "smollm2-135m" in shipped and "my-llama" not in shipped
