"""A pre-registered eval (issue 29): `--prereg` writes the plan under its sha256 before the first model call,
the hash is the same for the same plan, and the report says whether the run kept to it."""
import json

import pytest

from r2mad.evaluation.prereg import ALPHA, PREREG, plan_hash
from r2mad.evaluation.report import write_report
from r2mad.evaluation.rows import RUN
from r2mad.settings.config import ConfigError
from tests.helpers import EVAL_SETTINGS, answer_from, evaluate, make_eval_run
from tests.scripted import ScriptedBackend

METHODS = ("cot", "mad")


def registered(out) -> dict:
    return json.loads((out / PREREG).read_text())


def test_the_plan_is_written_before_the_first_call_and_the_report_says_it_was_kept(tmp_path):
    out = tmp_path / "run"
    seen = []

    def reply(messages):
        seen.append((out / PREREG).is_file())
        return answer_from(messages)

    evaluate(make_eval_run(METHODS, limit=2), out, ScriptedBackend(reply), prereg=True)
    assert seen and all(seen)  # every call, the first one included, found the plan on disk
    record = registered(out)
    plan = record["plan"]
    assert record["sha256"] == plan_hash(plan) and len(record["sha256"]) == 64
    assert plan["methods"] == list(METHODS) and plan["seeds"] == [EVAL_SETTINGS.seed]
    assert (plan["dataset"], plan["split"], plan["split_seed"]) == ("demo-mcq", "test", 0)
    assert len(plan["question_ids"]) == 2 and len(plan["data_digest"]) == 64
    assert plan["settings"]["temperature"] == EVAL_SETTINGS.temperature
    assert plan["decision_rule"]["alpha"] == ALPHA and "McNemar" in plan["decision_rule"]["test"]
    assert json.loads((out / RUN).read_text())["data_digest"] == plan["data_digest"]
    report = write_report(out).read_text()
    assert f"Plan `{PREREG}` (sha256 `{record['sha256']}`)" in report
    assert "The run kept to the registered plan." in report and "did not keep" not in report


def test_the_same_plan_has_the_same_hash_and_another_plan_another(tmp_path):
    hashes = []
    for name, settings in (("a", EVAL_SETTINGS), ("b", EVAL_SETTINGS),
                           ("c", EVAL_SETTINGS.replace(temperature=0.2))):
        evaluate(make_eval_run(METHODS, limit=1, settings=settings), tmp_path / name, prereg=True)
        hashes.append(registered(tmp_path / name)["sha256"])
    assert hashes[0] == hashes[1] != hashes[2]


def test_a_rerun_that_adds_seeds_keeps_the_plan_and_the_report_says_it_was_not_kept(tmp_path):
    out = tmp_path / "run"
    evaluate(make_eval_run(METHODS, limit=1), out, prereg=True)
    before = (out / PREREG).read_text()
    run = make_eval_run(METHODS, limit=1)
    evaluate(type(run)(run.split, run.methods, run.backbone, run.settings, run.share_round0, seeds=2), out,
             prereg=True)
    assert (out / PREREG).read_text() == before  # the registered plan is never rewritten
    report = write_report(out).read_text()
    assert "**The run did not keep to the registered plan:** seeds (0 registered, 0,1 run)." in report


def test_an_edited_plan_no_longer_matches_its_hash(tmp_path):
    out = tmp_path / "run"
    evaluate(make_eval_run(METHODS, limit=1), out, prereg=True)
    record = registered(out)
    record["plan"]["decision_rule"]["alpha"] = 0.1
    (out / PREREG).write_text(json.dumps(record))
    assert "no longer matches its sha256 (it was edited after it was written)" in write_report(out).read_text()


def test_a_plan_for_a_run_already_started_is_refused_in_one_sentence(tmp_path):
    out = tmp_path / "run"
    backend = evaluate(make_eval_run(METHODS, limit=1), out)
    calls = len(backend.calls)
    with pytest.raises(ConfigError) as caught:
        evaluate(make_eval_run(METHODS, limit=2), out, backend, prereg=True)
    assert str(caught.value) == (f"{out} holds a run started without --prereg, so a plan written now would not be "
                                 "pre-registered; pass another --out folder to register one before the first call.")
    assert len(backend.calls) == calls and not (out / PREREG).exists()
    assert "Pre-registration" not in write_report(out).read_text()
