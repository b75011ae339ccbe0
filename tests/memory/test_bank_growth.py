"""Labels become memory: saved debates written into a bank with their provenance, the bank's history and
undo, and the leakage rule that refuses runs on questions an eval of the bank tests (CLI and library)."""
import json

import pytest

from r2mad.annotation.book import LabelBook
from r2mad.backends.embedder import load_embedder
from r2mad.cli import main
from r2mad.evaluation.datasets import load_split
from r2mad.evaluation.leakage import eval_tasks
from r2mad.memory.bank import MemoryBank
from r2mad.memory.files import BankError
from r2mad.memory.growth import add_runs, history, undo
from r2mad.runs.store import RunStore
from r2mad.settings.config import load_config
from r2mad.types import Task
from tests.helpers import make_transcript, save_run

TRAINED = Task("mcq", "Which gas do plants take in?", (("A", "oxygen"), ("B", "carbon dioxide")), gold="B",
               id="own-1")
OTHER = Task("mcq", "Which metal is liquid at room temperature?", (("A", "iron"), ("B", "mercury")), gold="B",
             id="own-2")
NO_GOLD = Task("mcq", "Is this a question without an answer key?", (("A", "yes"), ("B", "no")), id="own-3")
TESTED = load_split("demo-mcq", "test").tasks[0]  # an eval of a demo-mcq bank tests this question


def new_bank(tmp_path):
    return MemoryBank.create(tmp_path / "grown", task_kind="mcq", split="demo-mcq:train", backbone="test",
                             embedder=load_embedder("hash-64"), code_version="test", index_root=tmp_path / "index")


def three_rounds(task):
    # agent 1 right throughout, agent 2 wrong then right, agent 3 wrong throughout: final B (right)
    return make_transcript(task, [["B", "A", "A"], ["B", "B", "A"], ["B", "B", "A"]], "B", True)


@pytest.fixture
def store(tmp_path):
    return RunStore(tmp_path / "runs.db")


def test_runs_become_cases_with_provenance_and_undo_takes_them_out(tmp_path, store):
    labelled, plain = save_run(store, three_rounds(TRAINED)), save_run(store, three_rounds(OTHER))
    LabelBook(store).set_final(labelled, [], adjudicator="ada")
    bank = new_bank(tmp_path)
    batch, refused = add_runs(bank, [store.get_run(labelled), store.get_run(plain)], by="bo",
                              tested=eval_tasks(bank), finals=LabelBook(store).finals())
    assert refused == []
    assert (batch.number, len(batch.case_ids)) == (1, 12)  # 2 runs × rounds 1–2 × 3 agents
    assert len(bank) == 12 and bank.has_question("own-1") and bank.has_question("own-2")
    case = bank.case(f"run:{labelled}:a2:r1")
    assert case.provenance["run"] == labelled and case.provenance["annotator"] == "ada"  # the adjudicator's
    assert case.provenance["added_by"] == "bo" and case.provenance["labels"] == []
    assert bank.case(f"run:{plain}:a0:r2").provenance["annotator"] == "bo"  # no final labels: who added it
    assert case.answers == ("B", "B", "A") and case.correct == (True, True, False) and case.reward == 0.0
    from r2mad.ui.render.tables import case_markdown
    shown = case_markdown(case)  # the Memory bank tab's audit view says where the case came from
    assert f"**From run** {labelled} (mad on smollm2-135m) · annotator ada · added by bo on" in shown
    assert "adjudicated labels: none" in shown
    bank.close()
    assert [(b.number, b.by, len(b.runs), b.undone_at) for b in history(tmp_path / "grown")] == [(1, "bo", 2, None)]

    reopen = lambda p: MemoryBank.open(p, load_embedder("hash-64"), index_root=tmp_path / "index")  # noqa: E731
    assert undo(tmp_path / "grown", 1, by="cy", reopen=reopen) == 12
    [entry] = history(tmp_path / "grown")
    assert entry.undone_by == "cy" and entry.undone_at
    with reopen(tmp_path / "grown") as again:
        assert len(again) == 0 and not again.has_question("own-1")
        assert again.manifest["question_ids"] == [] and again.manifest["counts"]["cases"] == 0
    with pytest.raises(BankError, match="already undone"):
        undo(tmp_path / "grown", 1, by="cy")


def test_leakage_unfinished_no_gold_and_repeats_are_refused_with_a_reason(tmp_path, store):
    leak = save_run(store, make_transcript(TESTED, [["D", "D", "A"], ["D", "D", "D"]], "D", True))
    no_gold = save_run(store, make_transcript(NO_GOLD, [["A", "B", "A"], ["A", "A", "A"]], "A", None))
    failed = save_run(store, make_transcript(OTHER, [["A", "B", "A"]], "A", False, status="failed"))
    good = save_run(store, three_rounds(TRAINED))
    twice = save_run(store, three_rounds(TRAINED))
    bank = new_bank(tmp_path)
    batch, refused = add_runs(bank, [store.get_run(r) for r in (leak, no_gold, failed, good, twice)], by="bo",
                              tested=eval_tasks(bank))
    reasons = {r.run_id: r.reason for r in refused}
    assert set(reasons) == {leak, no_gold, failed, twice}
    assert f"question {TESTED.id}, which an eval of bank grown tests" in reasons[leak]
    assert "no gold answer" in reasons[no_gold] and "did not finish" in reasons[failed]
    assert "same question" in reasons[twice]
    assert [r["run"] for r in batch.runs] == [good] and not bank.has_question(TESTED.id)
    _, again = add_runs(bank, [store.get_run(twice)], by="bo", tested=[])
    assert "already holds" in again[0].reason
    bank.close()


def test_bank_cli_adds_lists_and_undoes(tmp_path, capsys):
    config = load_config()
    store = RunStore(config.app.runs_db)
    run_id = save_run(store, three_rounds(TRAINED))
    leak = save_run(store, make_transcript(TESTED, [["D", "D", "A"], ["D", "D", "D"]], "D", True))
    new_bank(tmp_path).close()
    folder = str(tmp_path / "grown")
    assert main(["bank", "add-runs", folder, "--gold", "--annotator", "bo"]) == 0
    out = capsys.readouterr().out
    assert f"refused: run {leak[:8]} asks question {TESTED.id}" in out
    assert "Batch 1: 1 runs, 6 cases added" in out
    lines = [json.loads(x) for x in (tmp_path / "grown" / "cases.jsonl").read_text().splitlines()]
    assert {x["provenance"]["run"] for x in lines} == {run_id}
    assert main(["bank", "history", folder]) == 0
    assert f"run {run_id}  question own-1  annotator bo" in capsys.readouterr().out
    assert main(["bank", "undo", folder, "1", "--annotator", "cy"]) == 0
    assert (tmp_path / "grown" / "cases.jsonl").read_text() == ""
    assert main(["bank", "history", folder]) == 0
    assert "(undone" in capsys.readouterr().out


@pytest.mark.slow  # the app's services (gradio, the admission line): seconds
def test_the_annotate_button_adds_the_open_run_for_annotators_only(tmp_path):
    import dataclasses
    from types import SimpleNamespace

    import gradio as gr

    from r2mad.serving.services import Services
    from r2mad.ui.annotate_handlers import AnnotateHandlers
    from r2mad.ui.bank_growth import BankGrowth

    base = load_config(env={"R2MAD_DATA_DIR": str(tmp_path / "var")})
    app = dataclasses.replace(base.app, memory_dirs=(str(tmp_path),), default_bank=None, private_runs="on",
                              annotators=("ann",))
    services = Services(dataclasses.replace(base, app=app))
    new_bank(tmp_path).close()
    folder = str(tmp_path / "grown")
    assert services.bank_choices() == [folder]
    run = save_run(services.store, three_rounds(TRAINED))
    growth = BankGrowth(services, AnnotateHandlers(services)._me)
    req = SimpleNamespace(session_hash="s1", query_params={})
    with pytest.raises(gr.Error, match="annotators"):  # a visitor, signed in or not, writes no bank
        growth.add_run(folder, run, "ann", "x" * 32, req, SimpleNamespace(username="visitor"))
    assert len(services.bank(folder)) == 0
    said = growth.add_run(folder, run, "", "x" * 32, req, SimpleNamespace(username="ann"))
    assert said.startswith(f"Added run {run[:8]} to **grown** as 6 cases (batch 1, by ann)")
    assert services.bank(folder).case(f"run:{run}:a0:r1").provenance["annotator"] == "ann"
    assert "already holds" in growth.add_run(folder, run, "", "x" * 32, req, SimpleNamespace(username="ann"))
    services.bank(folder).close()


@pytest.mark.slow  # three evals and two builds against a loopback server: seconds
def test_eval_measures_accuracy_as_a_copy_of_the_bank_grows(tmp_path, config_dir, capsys):
    new_bank(tmp_path).close()
    out = tmp_path / "curve"
    args = ["--config-dir", str(config_dir), "eval", "--task", "demo-mcq", "--limit", "2", "--methods", "cot,r2mad",
            "--bank", str(tmp_path / "grown"), "--grow-batch", "2", "--grow-steps", "2", "--rounds", "2",
            "--no-progress", "--out", str(out)]
    assert main(args) == 0
    printed = capsys.readouterr().out
    # the fake server answers B to everything: cases per question = 1 debate round after round 0 × 3 agents
    assert "step 0: 0 cases (0 questions added)" in printed
    assert "step 1: 6 cases (2 questions added)" in printed and "step 2: 12 cases (4 questions added)" in printed
    curve = (out / "learning_curve.md").read_text()
    assert curve.count("\n| ") == 4 and "R²-MAD" in curve and "CoT" not in curve  # header + 3 steps; bank methods
    assert (out / "learning_curve.png").is_file() and 'src="data:image/png' in (out / "learning_curve.html").read_text()
    assert len(MemoryBank.open(tmp_path / "grown", load_embedder("hash-64"), index_root=tmp_path / "i2")) == 0
    assert main(args) == 0  # resumed: the same points, no question debated twice
    assert "step 2: 12 cases (4 questions added)" in capsys.readouterr().out


@pytest.mark.slow  # two evals, two debates and a plot: about two seconds on a shared machine
def test_the_learning_curve_evaluates_before_and_after_each_batch(tmp_path):
    import asyncio

    from r2mad.engine.learning_curve import learning_curve
    from r2mad.engine.resources import Given
    from tests.helpers import EVAL_SETTINGS, make_eval_run
    from tests.scripted import ScriptedBackend

    bank = new_bank(tmp_path)
    run = make_eval_run(methods=("r2mad",), limit=1)
    train = load_split("demo-mcq", "train").tasks
    backend = ScriptedBackend(lambda m: "Thinking. ((B))")
    points = asyncio.run(learning_curve(run, Given(backend, bank=bank), tmp_path / "curve", train=train, batch=2,
                                        steps=1, build_settings=EVAL_SETTINGS))
    # each training question: a full 3-round debate, cases from rounds 1 and 2 for 3 agents = 6
    assert [(p.step, p.questions_added, p.bank_questions, p.bank_cases) for p in points] == [
        (0, 0, 0, 0), (1, 2, 2, 12)]
    assert [p.accuracy["r2mad"].n for p in points] == [1, 1]
    assert bank.has_question(train[0].id) and bank.has_question(train[1].id) and not bank.has_question(train[2].id)
    assert (tmp_path / "curve" / "step-1" / "rows.jsonl").is_file()
    bank.close()
