"""Who&When and MP-Bench records: hand-written records in each benchmark's own schema come into the label
book and go back out with every field they had; our labels (several labels, blame on several turns, the
adjudicated ones) survive a trip through either format; the CLI writes one file per run."""
import json

import pytest

from r2mad.annotation.book import LabelBook
from r2mad.cli import main
from r2mad.exports import mpbench, whowhen
from r2mad.runs.counterfactuals import corrections_of
from r2mad.runs.store import RunStore
from r2mad.settings.config import load_config
from tests.helpers import STORED_MCQ, make_transcript, save_run

QUESTION = "Which is right?\n(A) this\n(B) that"  # format_task(STORED_MCQ)


def saved(tmp_path):
    store = RunStore(tmp_path / "runs.db")
    t = make_transcript(STORED_MCQ, [["A", "B", "B"], ["A", "A", "B"]], "A", True)
    return store, save_run(store, t)


def steps():
    """The run's history, written out by hand: the question, then 3 turns of round 0 and 3 of round 1."""
    turns = [("Agent 1", "A"), ("Agent 2", "B"), ("Agent 3", "B"), ("Agent 1", "A"), ("Agent 2", "A"),
             ("Agent 3", "B")]
    return [{"content": QUESTION, "role": "user", "name": "question"},
            *({"content": f"I think (({v}))", "role": "assistant", "name": who} for who, v in turns)]


def test_a_hand_written_who_and_when_record_comes_in_and_goes_out_whole(tmp_path):
    store, run = saved(tmp_path)
    record = {"is_correct": True, "question": QUESTION, "question_ID": "q1", "level": "", "ground_truth": "A",
              "history": steps(), "mistake_agent": "Agent 2", "mistake_step": "5",
              "mistake_reason": "Agent 2 dropped B for the majority's A without a new argument.",
              "system_prompt": {}}
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / f"{run}.json").write_text(json.dumps(record))
    assert whowhen.import_files(store, [tmp_path / "in" / f"{run}.json"], annotator="kim") == 1
    [kim] = store.get_run(run).annotations
    assert (kim.annotator, kim.labels, kim.note) == ("kim", ("other",), record["mistake_reason"])
    assert kim.blame == {"other": {"round": 1, "agent": 1}}  # step 5 = round 1's second turn
    [path] = whowhen.export_runs(store, [run], tmp_path / "out", "kim")
    back = json.loads(path.read_text())
    assert {k: back[k] for k in record} == record
    assert back["run_id"] == run and back["labels"] == ["other"]


def test_our_labels_survive_a_trip_through_who_and_when(tmp_path):
    store, run = saved(tmp_path)
    book = LabelBook(store)
    blame = {"majority_persuaded_correct_agent": {"round": 1, "agent": 1},
             "other": [{"round": 0, "agent": 2}, {"round": 1, "agent": 2}]}
    book.save_labels(run, "ada", ["majority_persuaded_correct_agent", "other"], "two things went wrong", blame)
    [path] = whowhen.export_runs(store, [run], tmp_path / "ww", "ada")
    rec = json.loads(path.read_text())
    assert (rec["mistake_agent"], rec["mistake_step"]) == ("Agent 3", "3")  # the earliest blamed turn: (0, 2)
    before = store.get_run(run).annotations[0]
    book.save_labels(run, "ada", ["parse_failure"], "changed my mind", {})
    whowhen.import_files(store, [path])
    after = store.get_run(run).annotations[0]
    assert (after.labels, after.note, after.blame) == (before.labels, before.note, before.blame)


def test_a_mistake_moved_in_another_tool_moves_the_blame(tmp_path):
    store, run = saved(tmp_path)
    LabelBook(store).save_labels(run, "ada", ["other"], "", {"other": {"round": 0, "agent": 0}})
    [path] = whowhen.export_runs(store, [run], tmp_path / "ww")
    rec = json.loads(path.read_text())
    rec.update(mistake_agent="Agent 3", mistake_step="6", mistake_reason="Agent 3 never checked (B).")
    path.write_text(json.dumps(rec))
    whowhen.import_files(store, [path])
    ada = store.get_run(run).annotations[0]
    assert ada.blame == {"other": {"round": 1, "agent": 2}} and ada.note == "Agent 3 never checked (B)."
    rec.update(mistake_agent="Agent 1")
    path.write_text(json.dumps(rec))
    with pytest.raises(ValueError, match="step 6 is Agent 3's turn, not Agent 1's"):
        whowhen.import_files(store, [path])


def test_a_hand_written_mp_bench_folder_comes_in_and_goes_out_whole(tmp_path):
    store, run = saved(tmp_path)
    history = []
    for i, step in enumerate(steps()):
        failed = i == 5
        history.append({**step, "step": str(i), "fail_annotation": "1" if failed else "0",
                        "fail_category": "majority_persuaded_correct_agent" if failed else "",
                        "fail_reason": "It gave up B for the majority." if failed else "",
                        "ideal_action": "B holds: the others never checked it. The answer is (B)." if failed else ""})
    record = {"is_correct": True, "question": QUESTION, "ground_truth": "A", "history": history, "system_prompt": {}}
    (tmp_path / "mp" / "kim").mkdir(parents=True)
    (tmp_path / "mp" / "kim" / f"{run}.json").write_text(json.dumps(record))
    assert mpbench.import_folder(store, tmp_path / "mp") == 1
    [kim] = store.get_run(run).annotations
    assert kim.labels == ("majority_persuaded_correct_agent",) and kim.note == "It gave up B for the majority."
    assert kim.blame == {"majority_persuaded_correct_agent": {"round": 1, "agent": 1}}
    [ideal] = corrections_of(store, run)  # the ideal action is kept as kim's correction of that turn
    assert (ideal.round, ideal.agent, ideal.annotator, ideal.verified) == (1, 1, "kim", False)
    [path] = mpbench.export_runs(store, [run], tmp_path / "out")
    assert path == tmp_path / "out" / "kim" / f"{run}.json"
    back = json.loads(path.read_text())
    assert {k: back[k] for k in record} == record


def test_our_labels_survive_a_trip_through_mp_bench_one_folder_per_annotator(tmp_path):
    store, run = saved(tmp_path)
    book = LabelBook(store)
    book.save_labels(run, "ada", ["other", "stalled_split"], "split twice",
                     {"other": [{"round": 0, "agent": 1}, {"round": 1, "agent": 1}]})
    book.save_labels(run, "bo", ["parse_failure"], "", {})
    book.set_final(run, ["other"], "cy", {"other": {"round": 1, "agent": 1}})
    written = mpbench.export_runs(store, [run], tmp_path / "mp")
    assert sorted(p.parent.name for p in written) == ["ada", "bo", "final"]
    before = {a.annotator: (a.labels, a.note, a.blame) for a in store.get_run(run).annotations}
    final_before = book.finals()[run]
    fresh = RunStore(tmp_path / "other.db")
    from r2mad.runs.io import export_jsonl, import_jsonl
    export_jsonl(store, tmp_path / "runs.jsonl", [run])
    import_jsonl(fresh, tmp_path / "runs.jsonl")
    with fresh.transaction() as conn:  # the runs alone: the labels come from the MP-Bench folders
        conn.execute("DELETE FROM annotations")
        conn.execute("DELETE FROM final_labels")
    assert mpbench.import_folder(fresh, tmp_path / "mp") == 3
    after = {a.annotator: (a.labels, a.note, a.blame) for a in fresh.get_run(run).annotations}
    assert after == before
    final = LabelBook(fresh).finals()[run]
    assert (final.labels, final.blame) == (final_before.labels, final_before.blame)


def test_the_commands_write_one_file_per_run_and_read_them_back(tmp_path, capsys):
    store = RunStore(load_config().app.runs_db)
    t = make_transcript(STORED_MCQ, [["A", "B", "B"], ["A", "A", "B"]], "A", True)
    runs = [save_run(store, t), save_run(store, t)]
    for run in runs:
        LabelBook(store).save_labels(run, "ada", ["other"], "", {"other": {"round": 1, "agent": 1}})
    assert main(["export-whowhen", *(r[:8] for r in runs), "--out", str(tmp_path / "ww")]) == 0
    assert sorted(p.stem for p in (tmp_path / "ww").glob("*.json")) == sorted(runs)
    assert main(["import-whowhen", str(tmp_path / "ww")]) == 0
    assert main(["export-mpbench", *runs, "--out", str(tmp_path / "mp")]) == 0
    assert sorted(p.stem for p in (tmp_path / "mp" / "ada").glob("*.json")) == sorted(runs)
    assert main(["import-mpbench", str(tmp_path / "mp")]) == 0
    assert main(["import-mpbench", str(tmp_path / "nowhere")]) == 2
    assert "holds no annotator folder" in capsys.readouterr().err
